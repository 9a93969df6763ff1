"""PROSE_GATE's speed work (issue 20): each prefilter, index and memo agrees with the slow path
it stands for. The verdict-level check (every verdict byte for byte before and after, on the
benchmark, both labelled sets, the demo and perturbed texts) was run by hand for each step;
these hold the parts that can drift."""

from __future__ import annotations

import gc
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from effectors.prose import aggregate as A
from effectors.prose.nogc import no_cyclic_gc
from harness.pack import load_pack
from tests.conftest import FACILITY

_AGG_WORDS = [
    "more",
    "power",
    "than",
    "higher",
    "rating",
    "less",
    "lower",
    "in",
    "total",
    "all",
    "register",
    "together",
    "combined",
    "altogether",
    "of",
    "intervals",
    "interval",
    "the",
    "EQ-001",
    "draws",
    "kW",
    "48",
    "moreover",
    "thanks",
    "lessor",
    "é",
    "K",
]
_AGG_SEPS = [" ", "  ", "\n", "\t", ", ", ". ", "-", ""]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_AGG_WORDS), st.sampled_from(_AGG_SEPS)), max_size=20),
    st.sampled_from(["keep", "upper", "title"]),
)
def test_aggregate_rules_are_searched_wherever_they_can_match(
    parts: list[tuple[str, str]], case: str
) -> None:
    """`_may_match` (a rule's phrases' first words in the lower-cased ASCII sentence) is False
    only where the rule's regex finds nothing."""
    text = "".join(w + s for w, s in parts)
    text = text.upper() if case == "upper" else text.title() if case == "title" else text
    low = text.lower() if text.isascii() else None
    checker = A.AggregateChecker(load_pack(FACILITY))
    regexes = 0
    for rule in checker.rules:
        for regex in (rule.cues, rule.more, rule.less):
            if regex is None:
                continue
            regexes += 1
            if not A._may_match(rule.firsts[id(regex)], low):
                assert regex.search(text) is None, (regex.pattern, text)
    assert regexes >= 6


def test_aggregate_prefilter_is_off_for_phrases_that_are_not_ascii() -> None:
    assert A._first_words(["über", "more than"]) is None
    assert A._first_words(["More  power than", "in total"]) == ("in", "more")
    assert A._may_match(None, "anything") and A._may_match(("more",), None)
    assert not A._may_match(("more",), "less than")


def test_the_cyclic_collector_is_paused_and_restored() -> None:
    assert gc.isenabled()
    with no_cyclic_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), no_cyclic_gc():
        raise ValueError("judging failed")
    assert gc.isenabled()  # restored on error too
    gc.disable()
    try:
        with no_cyclic_gc():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()


def test_a_rule_regex_still_finds_its_phrase_across_white_space() -> None:
    checker = A.AggregateChecker(load_pack(FACILITY))
    compare = next(r for r in checker.rules if r.kind == "compare")
    assert compare.more is not None
    text = "EQ-001 draws MORE\tPOWER  than EQ-002."
    assert A._may_match(compare.firsts[id(compare.more)], text.lower())
    assert re.search(compare.more, text)

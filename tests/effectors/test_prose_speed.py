"""PROSE_GATE's speed work (issue 20): each prefilter, index and memo agrees with the slow path
it stands for. The verdict-level check (every verdict byte for byte before and after, on the
benchmark, both labelled sets, the demo and perturbed texts) was run by hand for each step;
these hold the parts that can drift."""

from __future__ import annotations

import functools
import itertools
import random
import re
from bisect import bisect_right
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from effectors.prose import aggregate as A
from effectors.prose import claims as C
from effectors.prose import subject as S
from effectors.prose.subject import AMBIGUOUS, RESPECTIVELY
from effectors.prose_gate import ProseGate
from harness.models import Artifact
from harness.pack import load_pack
from harness.pools import Pools
from tests.conftest import FACILITY
from tests.effectors.test_prose_gate import an_index

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


def test_a_rule_regex_still_finds_its_phrase_across_white_space() -> None:
    checker = A.AggregateChecker(load_pack(FACILITY))
    compare = next(r for r in checker.rules if r.kind == "compare")
    assert compare.more is not None
    text = "EQ-001 draws MORE\tPOWER  than EQ-002."
    assert A._may_match(compare.firsts[id(compare.more)], text.lower())
    assert re.search(compare.more, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789aZkW -.,é٠²\n")), max_size=40))
def test_a_digit_before_a_letter_is_found_as_the_regex_finds_it(text: str) -> None:
    assert C._digit_letter(text) == (C._DIGIT_LETTER.search(text) is not None)


# -- the claim loop: its inline cases against the general helpers -----------------------


def _slow_check(
    cc: C.ClaimChecker,
    artifact: Artifact,
    prose: str,
    mentions: Any,
    hits: Any,
    sentences: Any,
    index: C.ArtifactIndex,
) -> tuple[int, list[C.Mismatch], list[str]]:
    """`ClaimChecker.check` as it was before its usual cases were written out inline: every
    claim read by `_read`, its subject found by `_subject`, judged by `_verdict`."""
    hits = cc._attached(prose, hits)
    if not hits or not prose:
        return 0, [], []
    anchors = cc.anchors(mentions, index, prose)
    starts = [a[0] for a in anchors]
    sent_starts, sent_spans = sentences.starts, sentences.spans or [(0, len(prose))]
    judged, out, skipped = 0, [], []
    together = (
        C._sentences_with(RESPECTIVELY, prose, sent_spans) if "espectively" in prose else set()
    )
    pending: dict[int, list[Any]] = {}
    memo = C._Memo(prose, index)
    for payload, hs, he in hits:
        claim = cc._read(prose, hs, he, anchors, starts, cc.cue_entries[payload])
        if claim is None:
            continue
        source, cs, ce, value, obj = claim
        si = (bisect_right(sent_starts, cs) or 1) - 1
        if si in together:
            pending.setdefault(si, []).append(claim)
            continue
        rows = cc._subject(prose, source, cs, ce, anchors, starts, sent_spans, si, memo)
        if rows <= 0:
            skipped += [prose[cs:ce]] if rows == AMBIGUOUS else []
            continue
        verdict = cc._verdict(source, rows, value, obj, index)
        if verdict is None:
            continue
        judged += 1
        if not verdict:
            out.append(
                cc._mismatch(artifact, prose, source, (cs, ce, value, obj), sent_spans[si], rows)
            )
    judged += sum(
        cc._respectively(artifact, prose, claims, sent_spans[si], anchors, index, out, skipped)
        for si, claims in pending.items()
    )
    return judged, out, skipped


def _slow_joined(
    index: C.ArtifactIndex, table: str, through: tuple[str, ...]
) -> tuple[dict[str, int], dict[str, int]]:
    """`ArtifactIndex.joined` as first written: name by name over the source's lookups."""
    own = index.lookup.get(table) or ({}, {})
    target = index.keys.get(table, {})
    ents: dict[str, int] = {}
    keyed: dict[str, int] = {}
    for ref in through:
        src, _, col = ref.partition(".")
        masks = [target.get(str(c), 0) if c is not None else 0 for c in index.cells(src, col)]
        for names, into in ((index.ents.get(src, {}), ents), (index.keys.get(src, {}), keyed)):
            for name, rows in names.items():
                reached = 0
                for r in C._bits(rows):
                    reached |= masks[r] if r < len(masks) else 0
                if reached:
                    into[name] = into.get(name, 0) | reached
    ents.update(own[0])
    keyed.update(own[1])
    return ents, keyed


def _perturbed(rng: random.Random, a: Artifact) -> Artifact:
    """The artifact with its prose or one cell changed (numbers, words, units, order)."""
    d = a.model_dump(mode="json")
    p: str = d["prose"]
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(5)
        if op == 0 and (nums := list(re.finditer(r"\d+(?:\.\d+)?", p))):
            m = rng.choice(nums)
            p = (
                p[: m.start()]
                + str(round(float(m.group()) * rng.choice([0.5, 1.01, 2]), 1))
                + p[m.end() :]
            )
        elif op == 1:
            words = p.split(" ")
            del words[rng.randrange(len(words))]
            p = " ".join(words)
        elif op == 2:
            at = rng.choice([m.start() for m in re.finditer(" ", p)] or [0])
            p = (
                p[:at]
                + rng.choice(
                    [
                        " respectively",
                        "; while",
                        " It draws 45 kW.",
                        " 45kW",
                        " EQ-001 and EQ-002",
                        " not",
                        " under",
                    ]
                )
                + p[at:]
            )
        elif op == 3:
            p = p.replace("kW", rng.choice(["KW", "MW", "kilowatts"]), rng.randint(1, 3))
        else:
            rows = d["tables"]["equipment"]
            rows[rng.randrange(len(rows))]["room_id"] = rng.choice(
                [r["room_id"] for r in d["tables"]["rooms"]]
            )
    d["prose"] = p
    return Artifact.model_validate(d)


@pytest.fixture(scope="module")
def real_pools(tmp_path_factory: pytest.TempPathFactory) -> Pools:
    from ontology import load_pools

    return load_pools(load_pack(FACILITY), tmp_path_factory.mktemp("pools"))


@pytest.mark.java
def test_the_claim_loop_judges_as_its_general_helpers_do(
    real_pools: Pools, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On benchmark artifacts, the natural-style set and perturbed copies of both: the claim
    loop (relations, units, subjects and one-row verdicts inline) gives the claims judged,
    the mismatches and the skipped claims the general helpers give; the row-wise join gives
    the name-wise one."""
    from bench.prose_gate import long_artifacts
    from tests.effectors.prose_scoring import natural_set

    gate = ProseGate(load_pack(FACILITY), real_pools)
    cc = gate.claims
    fast = C.ClaimChecker.check
    compared = {"claims": 0, "mismatches": 0, "skipped": 0, "joins": 0}

    def both(
        self: C.ClaimChecker,
        artifact: Artifact,
        prose: str,
        mentions: Any,
        hits: Any,
        sentences: Any,
        index: C.ArtifactIndex | None = None,
    ) -> Any:
        assert index is not None
        slow = _slow_check(
            self, artifact, prose, mentions, hits, sentences, C.ArtifactIndex(self, artifact)
        )
        got = fast(self, artifact, prose, mentions, hits, sentences, index)
        assert (got[0], got[1], self.skipped) == slow, artifact.id
        for (table, column), through in self.through.items():
            fresh = C.ArtifactIndex(self, artifact)
            assert fresh.joined(table, through) == _slow_joined(fresh, table, through), column
            compared["joins"] += 1
        compared["claims"] += got[0]
        compared["mismatches"] += len(got[1])
        compared["skipped"] += len(self.skipped)
        return got

    monkeypatch.setattr(C.ClaimChecker, "check", both)
    rng = random.Random(20)
    samples = [*long_artifacts(40), *natural_set()[0]]
    samples += [_perturbed(rng, rng.choice(samples)) for _ in range(300)]
    gate.judge(samples)
    assert cc.cues is not None
    assert compared["claims"] > 3000 and compared["mismatches"] > 50, compared
    assert compared["skipped"] > 5 and compared["joins"] > 500, compared


def test_a_clause_break_is_looked_for_wherever_one_can_be() -> None:
    """`_Memo.cuts` (a sentence searched only where a break's word occurs, found once per
    text) finds what `subject.breaks` finds, sentence by sentence, in text made of the
    breaks' words and pieces of them."""
    rng = random.Random(7)
    words = ["but", "While", "whereas", "BUT", ";", ":", " ", ", ", "x", "b", "ut", "whe", "reas"]
    words += ["3", ": 4", ", while", " whereas "]
    for _ in range(3000):
        text = "".join(rng.choice(words) for _ in range(rng.randint(0, 14)))
        memo = C._Memo(text, an_index())
        cuts = sorted({0, len(text), *(rng.randrange(len(text) + 1) for _ in range(3))})
        for lo, hi in itertools.pairwise(cuts):
            assert memo.cuts(0, lo, hi) == S.breaks(text, lo, hi), (text, lo, hi)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["ab", "Z9", "a", " ", ".", "\n", "_", "-", ")", "é", "…"]), max_size=120
    ),
    st.sampled_from([0, 30, 170, 190, 200, 210]),
)
def test_the_last_word_is_read_as_the_regex_reads_it(parts: list[str], pad: int) -> None:
    """`text._last_token` (two `rstrip`s in ASCII text) gives the last of the words its
    regex finds in the last 200 characters, also where the last word starts before them or
    is farther from the end than 40 characters."""
    from effectors.prose import text as T

    text = ("x" * pad + "".join(parts)).rstrip()
    if not text:
        return
    at = max(0, len(text) - 40)
    m = T._LAST_TOKEN.search(text, at)
    if m is not None and (m.start() > at or at == 0):
        plain = m.group()
    else:
        tokens = T._TOKEN.findall(text, max(0, len(text) - 200))
        plain = tokens[-1] if tokens else ""
    assert T._last_token(text) == plain


@pytest.mark.parametrize(
    ("prefixes", "apart"),
    [
        (["R-B", "R-G", "EQ-", "R-"], True),
        (["R-1-", "R-"], False),
        (["R-1B", "R-"], True),
        (["R-_", "R-"], True),
        (["R--", "R-"], False),
    ],
)
def test_key_prefixes_are_searched_apart_only_where_no_two_can_start_together(
    prefixes: list[str], apart: bool
) -> None:
    """`_KeyFinder` keeps the longest occurrence at a start only where two prefixes' keys
    can start at one place ("R-1-" and "R-" both at "R-1- "); elsewhere it merges them."""
    finder = C._KeyFinder(prefixes)
    assert finder.apart is apart
    one = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, prefixes)) + r")[0-9]*(?!\w|-\w)")
    for text in ("R-1- and R-1B7, R-B2 R-G R-12 R-_3 R-- EQ-7;", "R-1-5 R-1- x", "(R-3)"):
        assert finder.spans(text) == [m.span() for m in one.finditer(text)], text


_NUMBER_PARTS = ["48", "1,200", "0.5", "5.", ".5", "-3", "−2", "R-12", "x.", "1.2.3", "٣", "²"]
_NUMBER_PARTS += [" ", "  ", "\n", "\u00a0", "-", "(", "a", "draws", "sixty"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(_NUMBER_PARTS),
        max_size=8,
    ),
    st.sampled_from([0, 1, 3, 60]),
)
def test_a_plain_number_before_a_unit_is_what_the_regex_finds(parts: list[str], back: int) -> None:
    """`_plain_number_before` answers only where `_NUM_BEFORE` matches, and as it does."""
    text = "".join(parts)
    for hi in range(len(text) + 1):
        lo = max(0, hi - back)
        plain = C._plain_number_before(text, lo, hi)
        if plain is not None:
            m = C._NUM_BEFORE.search(text, lo, hi)
            assert m is not None and plain == (m.start(1), m.group(1)), (text, lo, hi)
            assert C._number_before(C._NUM_BEFORE, text, lo, hi) == plain


@functools.cache
def _facility_aggregates() -> A.AggregateChecker:
    return A.AggregateChecker(load_pack(FACILITY))


_OVERLAPPING = ["in", "xin", "in_", "intotal", "total", "altogether", "together", "combinedin"]
_OVERLAPPING += ["register", "intervals", "more", "moreover", "less", "lower", "than", "all"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_OVERLAPPING), st.sampled_from([" ", "  ", "\n", "-", "", "_"])),
        max_size=12,
    )
)
def test_aggregate_phrases_start_where_the_regex_finds_them(parts: list[tuple[str, str]]) -> None:
    """`AggregateChecker._starts` (the phrases' first words by a leftmost-longest scan, not
    every overlapping occurrence, when they are made of word characters) finds the starts
    the phrase regex finds, also where first words hide inside each other."""
    checker = _facility_aggregates()
    assert not checker._overlapping
    low = "".join(w + s for w, s in parts)
    assert checker._lower is not None
    assert checker._starts(checker._lower, low) == [m.start() for m in checker._lower.finditer(low)]


def test_the_lower_case_memo_answers_for_the_text_asked() -> None:
    """`text.lower` keeps the last text's lower case: asked again for it, or for an equal
    text, or another, it answers `str.lower` of what it is asked."""
    from effectors.prose.text import lower

    a, b = "EQ-001 Draws 48 kW.", "The CHILLER"
    assert lower(a) == a.lower() and lower(a) is lower(a)
    assert lower(b) == b.lower() and lower(a) == a.lower()
    same = "".join(["EQ-001 Draws", " 48 kW."])  # equal to `a`, another object
    assert lower(same) == a.lower() and lower("") == ""

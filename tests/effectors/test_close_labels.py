"""The value gate's "did you mean" index gives difflib's answer exactly (issue 16)."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from effectors.close_labels import MEMO_SIZE, CloseLabels

words = st.text(alphabet="abcdeé -.0", max_size=14)


@settings(max_examples=300, deadline=None)
@given(labels=st.lists(words, max_size=60, unique=True), word=words,
       cutoff=st.sampled_from([0.5, 0.6, 0.3, 0.9, 1.0]), n=st.integers(1, 8))
def test_the_same_answer_as_difflib_over_every_label(
    labels: list[str], word: str, cutoff: float, n: int
) -> None:
    close = CloseLabels(labels, n=n, cutoff=cutoff)
    want = difflib.get_close_matches(word, labels, n=n, cutoff=cutoff)
    assert list(close(word)) == want
    assert list(close(word)) == want  # from the memo


def test_the_window_holds_every_length_difflib_can_keep() -> None:
    labels = ["x" * k for k in range(1, 40)]
    close = CloseLabels(labels)
    for a in range(1, 13):
        kept = {len(x) for x in close.window("y" * a)}
        for b in range(1, 40):
            if 2 * min(a, b) / (a + b) >= 0.5:
                assert b in kept, (a, b)
        assert kept < set(range(1, 40)) or a >= 13  # it does leave labels out


def test_the_memo_is_bounded() -> None:
    close = CloseLabels(["alpha", "beta"])
    for i in range(MEMO_SIZE + 5):
        close(f"w{i}")
    assert len(close._memo) <= MEMO_SIZE


def test_a_label_exactly_at_the_cutoff_is_kept() -> None:
    """difflib keeps a ratio equal to the cutoff; the prefilter's Indel similarity of the
    same pair is 0.30000000000000004 here, which rapidfuzz's own cutoff would drop."""
    close = CloseLabels(["0aaa00"], n=1, cutoff=0.3)
    assert close("000000000000a0") == ("0aaa00",)


@settings(max_examples=200, deadline=None)
@given(labels=st.lists(st.text(alphabet="ab0 ", min_size=5, max_size=40), max_size=40,
                       unique=True),
       word=st.text(alphabet="ab0 ", max_size=40), cutoff=st.sampled_from([0.5, 0.3, 0.7]))
def test_long_labels_of_few_letters_the_same_as_difflib(
    labels: list[str], word: str, cutoff: float
) -> None:
    """Few letters: many equal scores and ratios right at the cutoff."""
    assert list(CloseLabels(labels, n=8, cutoff=cutoff)(word)) == difflib.get_close_matches(
        word, labels, n=8, cutoff=cutoff
    )

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

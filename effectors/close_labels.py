"""VALUE_GATE's "did you mean" hint: `difflib.get_close_matches(word, labels, n, cutoff)` over
the pack's fixed label list, the same answer for less work (issue 16: one call compared the
word with every label, ~23% of a batch's profile).

Three things, none changing an answer:

* **A length window.** difflib keeps a label only if `real_quick_ratio`, `2·min(a, b) /
  (a + b)` for the two lengths, reaches `cutoff`; so only labels whose length lies in
  `[a·c / (2 − c), a·(2 − c) / c]` can be kept. The labels are sorted by length once, and
  each call hands difflib only that window (widened by one character each way against
  rounding). `get_close_matches` ranks with `heapq.nlargest` over `(score, label)` pairs,
  which does not depend on the order it is given them.
* **An exact prefilter** (rapidfuzz, compiled): difflib's ratio `2·M / (a + b)` counts the
  characters of matching blocks that keep their order, a common subsequence, so it never
  exceeds the Indel similarity `2·LCS / (a + b)`. Labels whose Indel similarity to the word
  is below `cutoff` (less a rounding margin) cannot be kept and are left out before difflib
  scores the rest (issue 16: each distinct misspelling cost ~20 ms of difflib over its
  length window).
* **A memo** of the answers by word (a corpus repeats its misspellings), bounded: cleared
  when it holds `MEMO_SIZE` words.

`tests/effectors/test_close_labels.py` checks both against difflib over the whole list.
"""

from __future__ import annotations

import difflib
import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from rapidfuzz import process
from rapidfuzz.distance import Indel

__all__ = ["MEMO_SIZE", "CloseLabels"]

MEMO_SIZE = 4096
_MARGIN = 1e-9  # the two similarities are computed differently: never cut at a rounding


class CloseLabels:
    """`difflib.get_close_matches(word, labels, n, cutoff)` for a fixed `labels`."""

    def __init__(self, labels: Sequence[str], n: int = 8, cutoff: float = 0.5) -> None:
        if not 0.0 < cutoff <= 1.0:
            raise ValueError(f"cutoff must be in (0, 1], not {cutoff}")
        self.n, self.cutoff = n, cutoff
        self._all = list(labels)
        self._by_len = sorted(self._all, key=len)
        self._lens = [len(x) for x in self._by_len]
        self._memo: dict[str, tuple[str, ...]] = {}

    def window(self, word: str) -> list[str]:
        """The labels whose length lets difflib keep them for `word`."""
        a, c = len(word), self.cutoff
        if a == 0:
            return self._all
        lo = math.floor(a * c / (2 - c)) - 1
        hi = math.ceil(a * (2 - c) / c) + 1
        return self._by_len[bisect_left(self._lens, lo) : bisect_right(self._lens, hi)]

    def __call__(self, word: str) -> tuple[str, ...]:
        hit = self._memo.get(word)
        if hit is not None:
            return hit
        # every score, cut here: rapidfuzz's own `score_cutoff` turns a normalised cutoff
        # into a distance one and, at the boundary, drops a label difflib keeps
        floor = self.cutoff - _MARGIN
        possible = [
            label
            for label, score, _i in process.extract(
                word, self.window(word), scorer=Indel.normalized_similarity, processor=None,
                limit=None,
            )
            if score >= floor
        ]
        found = tuple(difflib.get_close_matches(word, possible, n=self.n, cutoff=self.cutoff))
        if len(self._memo) >= MEMO_SIZE:
            self._memo.clear()
        self._memo[word] = found
        return found

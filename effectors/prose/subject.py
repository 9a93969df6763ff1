"""Which row a claim is about: its subject, found in the claim's clause.

* The clause: the claim's sentence cut at ";", ":" (not before a digit) and at ", while",
  ", whereas", ", but" (so "The CT scanner draws 120 kW, while the MRI scanner draws 80 kW"
  has two clauses). The subject is looked for in the clause first, then in the sentence.
* The names before the claim in the clause (row keys such as "EQ-002" and entities) narrow
  the rows down, nearest first, then those after it. The nearest row key before the claim
  must agree with what they name: "EQ-001 sits beside the AHU, which draws 40 kW" names two
  rows, and two keys coordinated right before the claim ("EQ-001 and EQ-002 draw 40 kW") do
  too: such a claim is ambiguous and not judged.
* "respectively": a sentence with it pairs its claims, in order, with the rows its keys and
  entities name before the first claim, in order; when the counts differ nothing in that
  sentence is judged.
* Easy coreference: a claim in a sentence that starts with "It", "Its", "This unit", "The
  unit" ... and names no row is about the row the previous sentence names (when it names
  exactly one); anything harder is skipped.

How (issue 20, speed): `Names` lists, once per artifact and table, the names of the prose
that name rows of that table (a mention or row key naming none is no part of any subject),
sorted by offset, with the rows each names and the nearest row key at or before each. A
claim's subject is then a bisect into that list and a walk over the few names of its
clause, kept per name and clause start; the sentence is never scanned back name by name.

A claim skipped as ambiguous is counted (`claims_skipped`) and listed in the evidence of the
artifact's value mismatches, so a proposer sees which statements were not checked.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate, compress, repeat

from effectors.prose.matcher import Anchor

__all__ = ["AMBIGUOUS", "RESPECTIVELY", "Names", "breaks", "clause"]

AMBIGUOUS = -1
_CLAUSE_BREAK = re.compile(
    r";|:(?!\s*-?\d)|,\s+(?:while|whereas|but)\b|\s(?:while|whereas)\s", re.IGNORECASE
)
_COORDINATION = re.compile(r"^\s*(?:,|and|or|&|,\s*and|,\s*or)\s*$", re.IGNORECASE)
_PRONOUN = re.compile(
    r"\W*(?:it|its|this\s+(?:unit|asset|item|one|machine)|the\s+(?:unit|asset|item|same\s+unit))\b",
    re.IGNORECASE,
)
RESPECTIVELY = re.compile(r"\brespectively\b", re.IGNORECASE)


def breaks(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """The clause breaks of the sentence text[lo:hi] (spans)."""
    return [m.span() for m in _CLAUSE_BREAK.finditer(text, lo, hi)]


def clause(
    lo: int, hi: int, cuts: Sequence[tuple[int, int]], start: int, end: int
) -> tuple[int, int]:
    """The clause of the sentence [lo, hi) with clause breaks `cuts` around a claim at
    [start, end)."""
    c_lo, c_hi = lo, hi
    for b_start, b_end in cuts:
        if b_end <= start:
            c_lo = b_end
        elif b_start >= end:
            c_hi = b_start
            break
    return c_lo, c_hi


class Names:
    """The names (anchors) of a text that name rows of one table, in text order: for each,
    the rows it names (a bit mask; `ents` for an entity, `keyed` for a row key). Built once
    per artifact and table; every question below is a bisect and a walk over the names of
    one clause.

    The anchor indices a caller passes (`mid`, `after`) index `anchors`, the text's anchors
    sorted by offset, of which these are the ones naming a row."""

    __slots__ = ("anchors", "at", "keys", "memo", "memo_lo", "pos", "rows", "starts", "text")

    def __init__(
        self,
        text: str,
        anchors: Sequence[Anchor],
        starts: Sequence[int],
        ents: dict[str, int],
        keyed: dict[str, int],
        names: Sequence[str] | None = None,
        is_key: Sequence[bool] | None = None,
    ) -> None:
        """`starts`, `names` and `is_key`: the anchors' starts, names and key flags (taken
        from `anchors` when not given; a caller building several shares them)."""
        self.text = text
        self.anchors = anchors
        if names is None or is_key is None:
            names, is_key = [a[2] for a in anchors], [a[3] for a in anchors]
        # the rows each anchor names: `keyed` for a row key, `ents` for an entity (in C:
        # these are built once per artifact and table, for every anchor)
        found = list(map(dict.get, map((ents, keyed).__getitem__, is_key), names, repeat(0)))
        # per anchor index, how many names come before it (the name before anchor `mid` is
        # `pos[mid]` - 1)
        self.pos = list(accumulate(map(bool, found), initial=0))
        self.at = list(compress(range(len(found)), found))  # the anchor index of each name
        self.rows: list[int] = list(filter(None, found))
        self.starts = list(compress(starts, found))
        self.keys = list(compress(is_key, found))
        # per name, the region start its `before` answer was worked out for, and the answer
        self.memo_lo = [-1] * len(self.at)
        self.memo = [0] * len(self.at)

    def before(self, mid: int, lo: int) -> int:
        """The subject rows the names before anchor `mid` (from offset `lo` on) give:
        narrowed nearest first (a name that would leave none is passed over) until one row
        is left, and held to the nearest row key's row; AMBIGUOUS when they disagree or that
        key is coordinated with another ("EQ-001 and EQ-002"); 0: no name there."""
        p = self.pos[mid] - 1
        if p < 0 or self.starts[p] < lo:
            return 0
        if self.memo_lo[p] == lo:
            return self.memo[p]
        out = self._key(p, lo)
        if out != AMBIGUOUS:
            rows = self._fold(p, lo)
            out = (rows & out or AMBIGUOUS) if out else rows
        self.memo_lo[p] = lo
        self.memo[p] = out
        return out

    def after(self, after: int, hi: int) -> int:
        """The rows the names from anchor `after` on (before offset `hi`) narrow down to,
        nearest first (0: none)."""
        q = self.pos[after]
        starts, rows, m = self.starts, self.rows, len(self.at)
        out = 0
        while q < m and starts[q] < hi:
            found = rows[q]
            if not out:
                out = found
            elif out & found:
                out &= found
            if not out & (out - 1):
                break
            q += 1
        return out

    def coreferent(self, sentence: tuple[int, int], previous: tuple[int, int] | None) -> int:
        """The one row the previous sentence names (its nearest row key, else its names
        narrowed from its end), when this sentence opens with "It" or the like; else 0."""
        if previous is None or not _PRONOUN.match(self.text, sentence[0], sentence[1]):
            return 0
        lo, hi = previous
        p = bisect_left(self.starts, hi) - 1
        if p < 0 or self.starts[p] < lo:
            return 0
        rows = self._key(p, lo) or self._fold(p, lo)
        return rows if rows > 0 and not rows & (rows - 1) else 0

    def respectively(self, lo: int, first: int, count: int) -> list[int]:
        """The rows named in [lo, first), one per name, in order, when there are `count` of
        them (distinct single rows); else []."""
        out: list[int] = []
        starts = self.starts
        for q in range(bisect_left(starts, lo), bisect_left(starts, first)):
            rows = self.rows[q]
            if not rows & (rows - 1) and rows not in out:
                out.append(rows)
        return out if len(out) == count else []

    def _key(self, p: int, lo: int) -> int:
        """The rows of the nearest row key among names `p`, `p` - 1, ... (from offset `lo`
        on); AMBIGUOUS when the key before it names other rows and is coordinated with it
        ("EQ-001 and EQ-002"); 0: none."""
        k = self._key_before(p, lo)
        if k < 0:
            return 0
        rows = self.rows[k]
        j = self._key_before(k - 1, lo)
        if j >= 0 and self.rows[j] != rows:
            anchors = self.anchors
            if _COORDINATION.match(self.text[anchors[self.at[j]][1] : self.starts[k]]):
                return AMBIGUOUS
        return rows

    def _key_before(self, p: int, lo: int) -> int:
        """The nearest of names `p`, `p` - 1, ... (from offset `lo` on) that is a row key;
        -1: none."""
        keys, starts = self.keys, self.starts
        while p >= 0 and starts[p] >= lo:
            if keys[p]:
                return p
            p -= 1
        return -1

    def _fold(self, p: int, lo: int) -> int:
        """The rows names `p`, `p` - 1, ... (from offset `lo` on) narrow down to."""
        rows = self.rows
        out = rows[p]
        starts = self.starts
        while out & (out - 1):
            p -= 1
            if p < 0 or starts[p] < lo:
                break
            if out & rows[p]:
                out &= rows[p]
        return out

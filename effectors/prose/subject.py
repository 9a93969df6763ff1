"""Which row a claim is about: its subject, found in the claim's clause.

* The clause: the claim's sentence cut at ";", ":" (not before a digit) and at ", while",
  ", whereas", ", but" (so "The CT scanner draws 120 kW, while the MRI scanner draws 80 kW"
  has two clauses). The subject is looked for in the clause first, then in the sentence.
* The names before the claim in the clause (row keys such as "EQ-002" and entities) narrow
  the rows down, nearest first, then those after it (`narrow`). The nearest row key before
  the claim must agree with what they name: "EQ-001 sits beside the AHU, which draws
  40 kW" names two rows, and two keys coordinated right before the claim ("EQ-001 and
  EQ-002 draw 40 kW") do too: such a claim is ambiguous and not judged.
* "respectively": a sentence with it pairs its claims, in order, with the rows its keys and
  entities name before the first claim, in order; when the counts differ nothing in that
  sentence is judged.
* Easy coreference: a claim in a sentence that starts with "It", "Its", "This unit", "The
  unit" ... and names no row is about the row the previous sentence names (when it names
  exactly one); anything harder is skipped.

A claim skipped as ambiguous is counted (`claims_skipped`) and listed in the evidence of the
artifact's value mismatches, so a proposer sees which statements were not checked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from effectors.prose.matcher import Anchor

__all__ = [
    "AMBIGUOUS",
    "COORDINATION",
    "breaks",
    "clause",
    "coreferent",
    "named_before",
    "narrow",
    "pair_respectively",
    "subject",
]

AMBIGUOUS = -1
_CLAUSE_BREAK = re.compile(
    r";|:(?!\s*-?\d)|,\s+(?:while|whereas|but)\b|\s(?:while|whereas)\s", re.IGNORECASE
)
COORDINATION = re.compile(r"^\s*(?:,|and|or|&|,\s*and|,\s*or)\s*$", re.IGNORECASE)
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


def narrow(
    anchors: Sequence[Anchor],
    side: range,
    lo: int,
    hi: int,
    ents: dict[str, int],
    keyed: dict[str, int],
) -> int:
    """The rows the anchors of `side` inside [lo, hi) name, nearest first, each narrowing
    the rows down (one that would leave none is passed over) until one is left."""
    rows = 0
    for i in side:
        a = anchors[i]
        if not lo <= a[0] < hi:
            break
        found = (keyed if a[3] else ents).get(a[2], 0)
        if found:
            if not rows:
                rows = found
            elif rows & found:
                rows &= found
            if not rows & (rows - 1):
                break
    return rows


def _keyed_before(
    text: str, anchors: Sequence[Anchor], mid: int, lo: int, keyed: dict[str, int]
) -> int:
    """The rows of the nearest row key before anchor `mid` inside [lo, ...); AMBIGUOUS when
    another key of a different row is coordinated with it ("EQ-001 and EQ-002"); 0: none."""
    for i in range(mid - 1, -1, -1):
        a = anchors[i]
        if a[0] < lo:
            return 0
        rows = keyed.get(a[2], 0) if a[3] else 0
        if not rows:
            continue
        for j in range(i - 1, -1, -1):
            b = anchors[j]
            if b[0] < lo:
                break
            other = keyed.get(b[2], 0) if b[3] else 0
            if other and other != rows and COORDINATION.match(text[b[1] : a[0]]):
                return AMBIGUOUS
            if other:
                break
        return rows
    return 0


def subject(
    text: str,
    anchors: Sequence[Anchor],
    mid: int,
    after: int,
    span: tuple[int, int],
    ents: dict[str, int],
    keyed: dict[str, int],
) -> int:
    """The subject rows of a claim whose first anchor at or after its start is `mid` and
    first after its end is `after`, in the region `span` (a clause or a sentence);
    AMBIGUOUS or 0 (no row named): those the names before it give (`named_before`), else
    those the names after it narrow down to."""
    return named_before(text, anchors, mid, span, ents, keyed) or narrow(
        anchors, range(after, len(anchors)), span[0], span[1], ents, keyed
    )


def named_before(
    text: str,
    anchors: Sequence[Anchor],
    mid: int,
    span: tuple[int, int],
    ents: dict[str, int],
    keyed: dict[str, int],
) -> int:
    """The subject rows the names before anchor `mid` in the region `span` give; AMBIGUOUS
    or 0 (none). One pass over them: `narrow`'s rows, and the nearest row key (with the key
    before it, for a coordination)."""
    lo = span[0]
    rows = by_key = 0
    key_at = -1  # the anchor of the nearest key; -2: the key before it was looked at too
    narrowed = False
    for i in range(mid - 1, -1, -1):
        a = anchors[i]
        if a[0] < lo:
            break
        found = (keyed if a[3] else ents).get(a[2], 0)
        if not found:
            continue
        if a[3] and key_at != -2:
            if key_at < 0:
                by_key, key_at = found, i
            else:
                if found != by_key and COORDINATION.match(text[a[1] : anchors[key_at][0]]):
                    return AMBIGUOUS
                key_at = -2
        if not narrowed:
            if not rows:
                rows = found
            elif rows & found:
                rows &= found
            narrowed = not rows & (rows - 1)
        elif key_at == -2:
            break
    if by_key and rows:
        # the key and the nearer names agree, or the claim is not judged ("EQ-001 sits
        # beside the AHU, which draws 40 kW": EQ-001 or the AHU?)
        return rows & by_key or AMBIGUOUS
    return by_key or rows


def coreferent(
    text: str,
    anchors: Sequence[Anchor],
    starts: Sequence[int],
    sentence: tuple[int, int],
    previous: tuple[int, int] | None,
    ents: dict[str, int],
    keyed: dict[str, int],
) -> int:
    """The one row the previous sentence names, when this sentence opens with "It" or the
    like; else 0."""
    if previous is None or not _PRONOUN.match(text, sentence[0], sentence[1]):
        return 0
    from bisect import bisect_left

    lo, hi = previous
    end = bisect_left(starts, hi)
    rows = _keyed_before(text, anchors, end, lo, keyed) or narrow(
        anchors, range(end - 1, -1, -1), lo, hi, ents, keyed
    )
    return rows if rows > 0 and not rows & (rows - 1) else 0


def pair_respectively(
    anchors: Sequence[Anchor],
    lo: int,
    first: int,
    ents: dict[str, int],
    keyed: dict[str, int],
    count: int,
) -> list[int]:
    """The rows named in [lo, first), one per naming anchor, in order, when there are
    `count` of them (distinct single rows); else []."""
    out: list[int] = []
    for a in anchors:
        if a[0] < lo:
            continue
        if a[0] >= first:
            break
        rows = (keyed if a[3] else ents).get(a[2], 0)
        if rows and not rows & (rows - 1) and rows not in out:
            out.append(rows)
    return out if len(out) == count else []

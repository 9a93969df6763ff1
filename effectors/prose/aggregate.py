"""Claims about several rows at once, as a pack declares them (`[[prose.aggregates]]`).

* `count`: "the register holds five assets": a number before one of `nouns` is the number
  of rows of `table`. Judged only in a sentence with one of `cues` ("register", "in
  total") and no row key or entity named (then it may be a part: "two assets sit in R-101").
* `sum`: "together they draw 350 kW": a quantity of `column` in a sentence with one of
  `cues` ("together", "in total") is the sum over the rows the sentence names by key, or
  over all rows when it names none (a sentence naming rows only by entity is skipped).
* `range`: "intervals run from 3 to 12 months": a range of `column` ("from A to B", "between
  A and B", "A-B" and a unit of the column) in a sentence with one of `cues` and no row named
  is the least and the greatest value of the column.
* `compare`: "EQ-001 draws more power than EQ-002": one of `more` / `less` between two names
  of one row each (keys or entities); the first row's `column` must be greater / smaller.

A mismatch is a `prose.value_mismatch` whose evidence names the rows and their values.
Numbers may be words ("five assets"); units are the column's `[[prose.quantities]]` units.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from effectors.prose.matcher import Anchor
from effectors.prose.quantity import Reading, numeric_view, qualifier
from effectors.prose.text import Sentences, lower
from harness.models import Artifact, Cell
from harness.pack import Pack, ProseAggregate

__all__ = ["AggregateChecker", "AggregateMismatch"]

_ahocorasick: ModuleType | None
try:  # one scan for the cues' first words (as the entity matcher uses it); else str.find
    import ahocorasick_rs as _ahocorasick
except ImportError:  # pragma: no cover - exercised where the package is missing
    _ahocorasick = None

_NUM = r"(-?\d+(?:,\d{3})*(?:\.\d+)?)"
_COUNT = re.compile(r"(?<![\w.])(\d+)\s+$")
_OTHER_ASCII_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"  # white space (`\s`) but " " in ASCII


@dataclass(frozen=True, slots=True)
class AggregateMismatch:
    kind: str
    table: str
    column: str | None
    span: tuple[int, int]
    text: str
    sentence: tuple[int, int]
    held: str  # what the rows hold, in words
    rows: tuple[str, ...]  # the rows' evidence lines


_WORD_THEN_SPACE = re.compile(r"\w+ ?")


def _occurrences(text: str, word: str) -> list[int]:
    """Where `word` starts in `text`, overlapping occurrences too."""
    out = []
    at = text.find(word)
    while at >= 0:
        out.append(at)
        at = text.find(word, at + 1)
    return out


def _words(phrases: Sequence[str]) -> str:
    items = sorted({p.strip() for p in phrases if p.strip()}, key=lambda p: (-len(p), p))
    return "|".join(r"\s+".join(map(re.escape, p.split())) for p in items)


def _first_words(phrases: Sequence[str]) -> tuple[str, ...] | None:
    """The lower-cased first words of `phrases` (None when one is not ASCII)."""
    if not all(p.isascii() for p in phrases):
        return None
    return tuple(sorted({p.split()[0].lower() for p in phrases if p.strip()}))


def _may_match(firsts: tuple[str, ...] | None, low: str | None) -> bool:
    """Can a rule's regex (an IGNORECASE alternation of phrases whose lower-cased first words
    are `firsts`) match in the sentence whose lower-cased text is `low`? Only where one of
    those words occurs: in ASCII text lower-casing is what IGNORECASE compares by (`low`
    None: the sentence is not ASCII, so the regex must be asked)."""
    if low is None or firsts is None:
        return True
    return any(w in low for w in firsts)


def _number(value: Cell) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        return None


def _fmt(v: float) -> str:
    return f"{v:g}"


class _Rule:
    def __init__(self, a: ProseAggregate, units: dict[str, float], tolerance: float) -> None:
        self.kind = a.kind
        self.table, _, self.column = (a.column or f"{a.table}.").partition(".")
        self.units = units
        self.tolerance = tolerance
        self.cues = re.compile(rf"\b(?:{_words(a.cues)})\b", re.IGNORECASE) if a.cues else None
        self.nouns = re.compile(rf"\b(?:{_words(a.nouns)})\b", re.IGNORECASE) if a.nouns else None
        self.more = re.compile(rf"\b(?:{_words(a.more)})\b", re.IGNORECASE) if a.more else None
        self.less = re.compile(rf"\b(?:{_words(a.less)})\b", re.IGNORECASE) if a.less else None
        # per regex above: the lower-cased first words of its phrases, when every phrase is
        # ASCII (`_may_match`); None: always search
        self.firsts = {id(r): _first_words(p) for r, p in
                       ((self.cues, a.cues), (self.more, a.more), (self.less, a.less)) if r}
        unit_words = _words(list(units))
        self.quantity = (
            re.compile(rf"(?<![\w.]){_NUM}[ \u00a0-]?({unit_words})(?!\w)", re.IGNORECASE)
            if units
            else None
        )

    def factor(self, unit: str) -> float | None:
        for declared, f in self.units.items():
            if declared == unit or (
                declared.casefold() == unit.casefold()
                and (declared[0] == unit[0] or declared[0].islower())
            ):
                return f
        return None


class AggregateChecker:
    """The pack's aggregate claims; `check` judges one artifact."""

    def __init__(self, pack: Pack) -> None:
        settings = pack.config.prose
        self.pack = pack
        units: dict[str, dict[str, float]] = {}
        tolerance: dict[str, float] = {}
        for q in settings.quantities:
            units.setdefault(q.column, {}).update(q.units)
            tolerance[q.column] = (
                q.tolerance if q.tolerance is not None else settings.value_tolerance
            )
        self.rules = [
            _Rule(
                a,
                units.get(a.column or "", {}),
                tolerance.get(a.column or "", settings.value_tolerance),
            )
            for a in settings.aggregates
        ]
        triggers = (
            [r.cues.pattern for r in self.rules if r.cues]
            + [r.more.pattern for r in self.rules if r.more]
            + [r.less.pattern for r in self.rules if r.less]
        )
        self.trigger = re.compile("|".join(triggers), re.IGNORECASE) if triggers else None
        # the same phrases as one alternation over lower-cased text: an IGNORECASE pattern of
        # alternations is tried at every position, ~3x slower than this on long prose
        phrases = sorted(
            {
                " ".join(p.lower().split())
                for a in pack.config.prose.aggregates
                for p in (*a.cues, *a.more, *a.less)
                if p.strip()
            },
            key=lambda p: (-len(p), p),
        )
        self._lower = (
            re.compile(
                r"\b(?:" + "|".join(r"\s+".join(map(re.escape, p.split())) for p in phrases) + r")\b"
            )
            if phrases
            else None
        )
        # the phrases' first words: a match of `_lower` starts with one of them; with " "
        # after those that only start phrases of several words (found so where " " is the
        # only white space: "in " is far rarer than "in")
        self._firsts = sorted({p.split()[0] for p in phrases})
        self._spaced = sorted(
            {w + " " if all(len(p.split()) > 1 for p in phrases if p.split()[0] == w) else w
             for w in self._firsts}
        )
        # every occurrence of those words (overlapping too) in one scan, when available;
        # when each is made of word characters (and the space after it), the leftmost-longest
        # ones suffice: one that starts inside another starts after a word character, where
        # `\b` lets no phrase start, and one that starts where another does adds no start
        self._overlapping = not all(_WORD_THEN_SPACE.fullmatch(w) for w in self._spaced)
        kind = None if self._overlapping else _ahocorasick and _ahocorasick.MatchKind.LeftmostLongest
        self._scans: dict[bool, Any] = (
            {
                spaced: _ahocorasick.AhoCorasick(words, **({"matchkind": kind} if kind else {}))
                for spaced, words in ((True, self._spaced), (False, self._firsts))
            }
            if _ahocorasick is not None and self._firsts
            else {}
        )

    def sentences_hit(self, prose: str, sentences: Sentences) -> list[int]:
        """The sentences (indexes) with a cue or a comparison phrase, in order."""
        if self.trigger is None:
            return []
        low = lower(prose)
        if self._lower is not None and len(low) == len(prose):  # offsets still agree
            found = self._starts(self._lower, low)
        else:
            found = [m.start() for m in self.trigger.finditer(prose)]
        return sorted({sentences.index(at) for at in found})

    def _starts(self, regex: re.Pattern[str], low: str) -> list[int]:
        """The starts of what `regex.finditer(low)` finds, found faster: the regex is tried
        only where a phrase's first word starts (`str.find`), in text order, past the end of
        the last match (as `finditer` does)."""
        where: set[int] = set()
        spaced = low.isascii() and not any(c in low for c in _OTHER_ASCII_SPACE)
        words = self._spaced if spaced else self._firsts
        scan = self._scans.get(spaced)
        found = (
            [(words[k], at) for k, at, _ in
             scan.find_matches_as_indexes(low, overlapping=self._overlapping)]
            if scan is not None
            else [(word, at) for word in words for at in _occurrences(low, word)]
        )
        for word, at in found:
            # a first word that starts with a word character: `\b` wants none before it
            if not (at and (word[0].isalnum() or word[0] == "_")
                    and ((c := low[at - 1]).isalnum() or c == "_")):
                where.add(at)
        out: list[int] = []
        end = 0
        for at in sorted(where):
            if at >= end and (m := regex.match(low, at)) is not None:
                out.append(at)
                end = m.end()
        return out

    def check(
        self,
        artifact: Artifact,
        prose: str,
        sentences: Sentences,
        anchors: Sequence[Anchor],
        rows_of: dict[str, tuple[dict[str, int], dict[str, int]]],
        hit: Sequence[int] | None = None,
        starts: Sequence[int] | None = None,
    ) -> list[AggregateMismatch]:
        """The aggregate claims of the prose that the rows do not hold. `anchors`: the
        mentions and row keys, sorted; `rows_of`: per table, the rows each entity / key
        names (bit masks); `hit`: `sentences_hit`, and `starts`: where each anchor starts,
        when the caller has them already."""
        if self.trigger is None:
            return []
        spans = sentences.spans or [(0, len(prose))]
        if hit is None:
            hit = self.sentences_hit(prose, sentences)
        out: list[AggregateMismatch] = []
        if starts is None:
            starts = [a[0] for a in anchors]
        for si in hit:  # only the sentences with a cue or a comparison
            lo, hi = spans[si]
            named = list(anchors[bisect_left(starts, lo):bisect_left(starts, hi)])
            text = prose[lo:hi]
            low = text.lower() if text.isascii() else None
            found: dict[int, bool] = {}  # a cue regex -> found in the sentence (rules share one)
            view: tuple[str, dict[int, int]] | None = None  # the sentence's numeric view
            for rule in self.rules:
                if rule.kind == "compare":
                    out += self._compare(artifact, prose, rule, (lo, hi), named, rows_of, low)
                    continue
                cues = rule.cues
                if cues is None:
                    continue
                hit_here = found.get(id(cues))
                if hit_here is None:
                    hit_here = found[id(cues)] = _may_match(rule.firsts[id(cues)], low) \
                        and cues.search(prose, lo, hi) is not None
                if not hit_here:
                    continue
                if rule.kind == "count":  # "five assets": the rows of the table
                    if not named and rule.nouns is not None:
                        view = view or numeric_view(text)
                        out += self._count(prose, rule, (lo, hi),
                                           len(artifact.tables.get(rule.table, [])), view)
                else:
                    out += self._whole(artifact, prose, rule, (lo, hi), named, rows_of)
        return out

    # -- kinds -------------------------------------------------------------------------

    def _whole(
        self,
        artifact: Artifact,
        prose: str,
        rule: _Rule,
        sentence: tuple[int, int],
        named: list[Anchor],
        rows_of: dict[str, tuple[dict[str, int], dict[str, int]]],
    ) -> list[AggregateMismatch]:
        rows = artifact.tables.get(rule.table, [])
        if rule.quantity is None:
            return []
        ents, keyed = rows_of.get(rule.table, ({}, {}))
        picked = 0
        for a in named:
            if a[3] and (found := keyed.get(a[2], 0)):
                picked |= found
            elif not a[3] and ents.get(a[2], 0):
                return []  # rows named by entity only: which ones?
        idx = [i for i in range(len(rows)) if picked >> i & 1] if picked else list(range(len(rows)))
        values = [v for i in idx if (v := _number(rows[i].get(rule.column))) is not None]
        if not values or (rule.kind == "range" and picked):
            return []
        out = []
        for m in rule.quantity.finditer(prose, *sentence):
            factor = rule.factor(m.group(2))
            if factor is None:
                continue
            value = float(m.group(1).replace(",", "")) * factor
            if rule.kind == "sum":
                held = (
                    None
                    if Reading(value, value).holds(sum(values), rule.tolerance)
                    else f"sum {_fmt(sum(values))}"
                )
            else:
                held = self._range(prose, rule, m.start(), sentence[0], value, factor, values)
            if held is not None:
                lines = self._lines(rule, rows, idx) if rule.kind == "sum" else []
                out.append(self._mismatch(rule, prose, m.span(), sentence, held, lines))
        return out

    def _count(
        self,
        prose: str,
        rule: _Rule,
        sentence: tuple[int, int],
        count: int,
        numeric: tuple[str, dict[int, int]],
    ) -> list[AggregateMismatch]:
        """ "five assets" where the table has another number of rows (`numeric`: the
        sentence's `numeric_view`)."""
        if rule.nouns is None:
            return []
        lo, _ = sentence
        view, moved = numeric
        out = []
        for m in rule.nouns.finditer(view):
            n = _COUNT.search(view, max(0, m.start() - 12), m.start())
            if n is not None and int(n.group(1)) != count:
                start = lo + moved.get(n.start(1), n.start(1))
                out.append(
                    self._mismatch(
                        rule, prose, (start, lo + m.end()), sentence, f"{count} rows", []
                    )
                )
        return out

    @staticmethod
    def _range(
        prose: str, rule: _Rule, at: int, lo: int, value: float, factor: float, values: list[float]
    ) -> str | None:
        """What the rows hold when "from A to B <unit>" at `at` is not their least and
        greatest value (None: it is, or it is no range)."""
        reading = qualifier(prose[max(lo, at - 60) : at], value, factor)
        if (
            reading is None
            or reading.low == reading.high
            or math.isinf(reading.low)
            or math.isinf(reading.high)
        ):
            return None
        low, high = min(values), max(values)
        if Reading(reading.low, reading.low).holds(low, rule.tolerance) and Reading(
            reading.high, reading.high
        ).holds(high, rule.tolerance):
            return None
        return f"{_fmt(low)} to {_fmt(high)}"

    def _compare(
        self,
        artifact: Artifact,
        prose: str,
        rule: _Rule,
        sentence: tuple[int, int],
        named: list[Anchor],
        rows_of: dict[str, tuple[dict[str, int], dict[str, int]]],
        low: str | None = None,
    ) -> list[AggregateMismatch]:
        """`low`: the sentence lower-cased when it is ASCII (else None)."""
        lo, hi = sentence
        out: list[AggregateMismatch] = []
        if not any(r is not None and _may_match(rule.firsts[id(r)], low)
                   for r in (rule.more, rule.less)):
            return out
        ents, keyed = rows_of.get(rule.table, ({}, {}))
        rows = artifact.tables.get(rule.table, [])
        for regex, sign in ((rule.more, 1), (rule.less, -1)):
            if regex is None or not _may_match(rule.firsts[id(regex)], low):
                continue
            for m in regex.finditer(prose, lo, hi):
                before = [a for a in named if a[1] <= m.start()]
                after = [a for a in named if a[0] >= m.end()]
                if not before or not after or len(prose[m.end() : after[0][0]].split()) > 2:
                    continue
                a, b = before[-1], after[0]
                ra = (keyed if a[3] else ents).get(a[2], 0)
                rb = (keyed if b[3] else ents).get(b[2], 0)
                if not ra or not rb or ra & (ra - 1) or rb & (rb - 1) or ra == rb:
                    continue  # each side must name one row
                ia, ib = ra.bit_length() - 1, rb.bit_length() - 1
                va, vb = _number(rows[ia].get(rule.column)), _number(rows[ib].get(rule.column))
                if va is None or vb is None or va == vb:
                    continue
                if (va - vb) * sign < 0:
                    out.append(
                        self._mismatch(
                            rule,
                            prose,
                            m.span(),
                            sentence,
                            f"{_fmt(va)} vs {_fmt(vb)}",
                            self._lines(rule, rows, [ia, ib]),
                        )
                    )
        return out

    # -- evidence ----------------------------------------------------------------------

    def _lines(self, rule: _Rule, rows: list[dict[str, Cell]], idx: list[int]) -> list[str]:
        return [
            f"{rule.table}[{i}].{rule.column} = {rows[i].get(rule.column)} "
            f"({self.pack.row_key(rule.table, dict(rows[i]))})"
            for i in idx[:10]
        ]

    def _mismatch(
        self,
        rule: _Rule,
        prose: str,
        span: tuple[int, int],
        sentence: tuple[int, int],
        held: str,
        rows: list[str],
    ) -> AggregateMismatch:
        return AggregateMismatch(
            rule.kind,
            rule.table,
            rule.column or None,
            span,
            prose[span[0] : span[1]],
            sentence,
            held,
            tuple(rows),
        )

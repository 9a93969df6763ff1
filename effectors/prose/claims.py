"""Value claims in prose, checked against the artifact's rows.

The pack declares what a claim looks like (`[prose] quantities` and `relations`):

* a quantity: a number with a unit ("48.5 kW", "1,200 kW", "0.5 MW") or after a prefix word
  ("floor -3"), stated about a row of the quantity's table; the claim is converted into the
  cell's unit and matches when it is within the relative tolerance (`tolerance`, else
  `value_tolerance`) of the cell's value. The cell is never rounded to the claim's
  precision: "1 g" is 1000 mg, which a 500 mg or 600 mg cell does not hold, though 600 mg
  "is 1 g" to the gram; "48 kW" passes for 48.3 kW only because it is within a 1% tolerance;
* a relation: a phrase ("complies with", "is installed in") followed within a few words by a
  mention, stated about a row; the mention must be the row's value of the relation's column
  (an object column: the same individual; an id column: the same key, or an entity of the
  row that key names).

The row a claim is about (its subject) is found in the claim's sentence: the mentions of row
keys ("EQ-001") and pool entities before the claim, nearest first (then those after it),
each narrowing the rows of the claim's table to those it names, until one row is left. A
claim whose sentence names no row is not judged. A claim is a mismatch only when no subject
row holds a matching value, so the check errs on the side of silence.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import NamedTuple

from effectors.prose.matcher import Anchor, CueSet, Hit
from effectors.prose.quantity import Reading, Tolerance, numeric_view, qualifier
from effectors.prose.subject import (
    AMBIGUOUS,
    COORDINATION,
    RESPECTIVELY,
    breaks,
    clause,
    coreferent,
    named_before,
    narrow,
    pair_respectively,
    subject,
)
from effectors.prose.text import Sentences, lower
from effectors.prose.units import check_words, is_symbol_unit, symbol_unit, symbol_units_regex
from effectors.prose.view import class_names
from effectors.ri_gate.ddl import _INTEGER_TYPES as INTEGER_TYPES
from effectors.ri_gate.ddl import parse_spine
from harness.errors import PackError
from harness.models import Artifact, Cell
from harness.pack import Pack, ProseQuantity, ProseRelation
from harness.pools import Pools, normalize_label

__all__ = ["Claim", "ClaimChecker", "Mismatch"]

_NUMBER = r"([-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)"
# a number right before a unit ("48 kW", "48kW", "48-kilowatt", the 60 of "40-60 kW"), not
# the digits of a key ("R-101 kW")
_NUM_BEFORE = re.compile(rf"(?<![\w.−])(?<![^\W\d_]-){_NUMBER}[ \u00a0-]?$")
_ORD_BEFORE = re.compile(r"(?<![\w.])(\d+)(?:st|nd|rd|th)[ \u00a0]+$")
_NUM_AFTER = re.compile(rf"\s+{_NUMBER}(?![\w\-−]|\.\d)")
_BREAK = re.compile(r"[.;:!?\n]")
_SEPARATORS = frozenset(" \u00a0-\n")
_ONE_SEPARATOR = " \u00a0-"  # what `_NUM_BEFORE` admits between a number and its unit
_NUMBER_CHARS = frozenset(",.-− \u00a0")  # with the digits: what `_NUM_BEFORE` matches
_MAX_GAP_WORDS = 3  # words allowed between a relation's phrase and its object ("the", "room")
_MAX_KEYS = 10_000
_DIGIT_LETTER = re.compile(r"\d[A-Za-z]")
# the same in ASCII text, as bytes: a digit becomes "0", a letter "a", anything else " "
# (one C pass; the regex tries its class at every position, ~5x slower on 4,000 characters)
_DIGITS_LETTERS = bytes(48 if chr(b).isdigit() and b < 128 else
                        97 if b < 128 and chr(b).isalpha() else 32 for b in range(256))
_NO_READING = Reading(0.0, 0.0)  # a relation's (no value)
_NO_CUTS: list[tuple[int, int]] = []
_NO_NAMES: tuple[dict[str, int], dict[str, int]] = ({}, {})


class _Anchor(NamedTuple):
    """A mention of an entity (`name` an individual) or of a row key (`name` the key)."""

    start: int
    end: int
    name: str
    is_key: bool


class Claim(NamedTuple):
    kind: str  # "quantity" | "relation"
    table: str
    column: str
    start: int
    end: int
    text: str
    value: float | None = None  # a quantity, in the column's unit
    obj: _Anchor | None = None  # a relation's object: an entity or a row key


@dataclass(frozen=True, slots=True)
class Mismatch:
    claim: Claim
    sentence: tuple[int, int]
    rows: tuple[tuple[int, str, Cell], ...]  # (row index, row key, the cell's value)


def _parse(num: str) -> float:
    return float(num.replace(",", "").replace("−", "-"))


def _number(value: Cell) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    try:
        out = float(str(value).replace(",", ""))
    except ValueError:
        return None
    return out if math.isfinite(out) else None


def _alternation(words: Iterable[str]) -> str:
    items = sorted({w.strip() for w in words if w.strip()}, key=lambda w: (-len(w), w))
    return "|".join(r"\s+".join(re.escape(p) for p in w.split()) for w in items)


def _integer_columns(pack: Pack) -> frozenset[str]:
    """"table.column" of the spine's integer columns (their quantities compare exactly)."""
    try:
        schema = parse_spine(pack.spine_path)
    except PackError:  # reported where the spine is checked; no exact default here
        return frozenset()
    return frozenset(f"{t.name}.{c.name}" for t in schema.tables for c in t.columns
                     if c.type in INTEGER_TYPES)


class _Quantity:
    def __init__(self, q: ProseQuantity, tolerance: float, integer: bool = False) -> None:
        self.table, _, self.column = q.column.partition(".")
        self.factors = dict(q.units)
        self.prefixes = list(q.prefixes)
        self.phrases = {" ".join(normalize_label(p).split()): v for p, v in q.phrases.items()}
        self.negate = re.compile(r"\b(?:" + _alternation(q.negate) + r")\s+$", re.IGNORECASE) \
            if q.negate else None
        # relative: the quantity's, else none for an integer column or beside an absolute
        # one, else [prose] value_tolerance (issue 27: "vintage 2012" is not 2015)
        relative = q.tolerance if q.tolerance is not None else (
            0.0 if integer or q.abs_tolerance is not None else tolerance)
        self.tolerance = Tolerance(relative, q.abs_tolerance or 0.0)

    def factor(self, unit: str) -> float | None:
        """The factor of a unit as written: as declared, or differing only in letter case
        where that cannot change its meaning: the first letter may be capitalised when the
        declared unit starts lower-case ("KW", "Kilowatts"), the others may take any case
        ("kw"); "mW" is never "MW"."""
        f = self.factors.get(unit)
        if f is not None:
            return f
        for declared, factor in self.factors.items():
            d = declared.strip()  # " ‰" as the pack wrote it is "‰" as the scan reads it
            if d.casefold() == unit.casefold() and (d[:1] == unit[:1] or d[:1].islower()):
                return factor
        # as the scan reads words: "L/" is matched as "L" (punctuation is no word)
        word = normalize_label(unit)
        for declared, factor in self.factors.items():
            d = declared.strip()
            if normalize_label(d) == word and (d[:1] == unit[:1] or d[:1].islower()):
                return factor
        return None


class _Relation:
    def __init__(self, r: ProseRelation) -> None:
        self.table, _, self.column = r.column.partition(".")
        self.phrases = list(r.phrases)


class _KeyMention(NamedTuple):
    key: str
    start: int
    end: int


Resolve = Callable[[Cell], "str | None"]
# (table, column, judge, (table, column)): where a claim's value is held, how it is judged
_Source = tuple[str, str, tuple[str, "_Quantity | None", "str | None"], tuple[str, str]]


class ClaimChecker:
    """The pack's claim patterns, compiled into one regex; `check` judges one artifact."""

    def __init__(self, pack: Pack, pools: Pools, resolve: Resolve | None = None) -> None:
        settings = pack.config.prose
        check_words(pack)  # a unit or phrase that would match nothing is a setup error
        self.pack = pack
        self.pools = pools
        self.resolve: Resolve = resolve or pools.resolve
        integers = _integer_columns(pack) if settings.quantities else frozenset()
        self.quantities = [_Quantity(q, settings.value_tolerance, q.column in integers)
                           for q in settings.quantities]
        self.relations = [_Relation(r) for r in settings.relations]
        # cue words (found by the entity matcher's scan): payload -> what they may start
        self.cue_table: list[list[tuple[str, int]]] = []
        self.cues, symbols = self._cue_words()
        self._glued = _glued_units(self.quantities)
        # symbol units are found by their own regex; their payloads follow the cue words'
        self._symbols = {u: len(self.cue_table) + i for i, u in enumerate(symbols)}
        self.cue_table += list(symbols.values())
        self._symbol_re = symbol_units_regex(list(symbols))
        # (table, column) -> how a claim on it is judged
        self.judges: dict[tuple[str, str], tuple[str, _Quantity | None, str | None]] = {}
        for q in self.quantities:
            self.judges.setdefault((q.table, q.column), ("quantity", q, None))
        for rel in self.relations:
            binding = pack.tables[rel.table]
            col = binding.columns[rel.column]
            rng = None
            if col.kind == "object" and col.property:
                rng = pools.required_classes(binding.row_class, {}).get(col.property)
            self.judges[(rel.table, rel.column)] = (col.kind, None, rng)
        # cue payload -> [(kind, index, (table, column, judge, (table, column)))]: what a
        # hit may start
        self.cue_entries = [
            [(kind, k, (src.table, src.column, self.judges[(src.table, src.column)],
                        (src.table, src.column)))
             for kind, k in entries
             for src in ([self.relations[k]] if kind == "r" else [self.quantities[k]])]
            for entries in self.cue_table]
        # cue payload -> the relation it starts when that is its first reading (`_read`
        # reads no other then), else None
        self.first_relation: list[_Source | None] = [
            entries[0][2] if entries and entries[0][0] == "r" else None
            for entries in self.cue_entries]
        # cue payload -> (quantity, source) when its one reading is a unit (`_read` inline)
        self.first_unit: list[tuple[_Quantity, _Source] | None] = [
            (self.quantities[entries[0][1]], entries[0][2])
            if len(entries) == 1 and entries[0][0] == "u" else None
            for entries in self.cue_entries]
        # per table: object columns, the other key columns, the id-kind key columns
        self.specs: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
            table: (tuple(c for c, b in binding.columns.items() if b.kind == "object"),
                    tuple(c for c, b in binding.columns.items()
                          if b.kind != "object" and c in binding.key),
                    tuple(k for k in binding.key if binding.columns[k].kind == "id"))
            for table, binding in pack.tables.items()}
        # per table: its class-kind columns, when prose may mention classes (issue 27)
        self.class_columns: dict[str, tuple[str, ...]] = {
            table: cols for table, binding in pack.tables.items()
            if (cols := tuple(c for c, b in binding.columns.items() if b.kind == "class"))
        } if pools.mentionable_classes else {}
        # the resolver's memo, read directly when the index resolves a column (empty: always resolve)
        memo = getattr(self.resolve, "memo", None)
        self.memo: dict[str, str | None] = memo if isinstance(memo, dict) else {}
        self._key_finders: dict[frozenset[str], _KeyFinder] = {}
        self._members: dict[tuple[str, str], bool] = {}
        # (table, column) of a claim -> the id columns ("equipment.room_id") through which a
        # claim about a row of another table reaches this table's rows
        self.through = _through(settings.quantities, settings.relations)
        self.skipped: list[str] = []  # the claims the last `check` skipped as ambiguous
        self._parsed: dict[tuple[str, float], float] = {}

    def _cue_words(self) -> tuple[CueSet | None, dict[str, list[tuple[str, int]]]]:
        """Fill `cue_table`; the cue words' set, and the symbol units ("%", "°C": no word
        to scan for) -> what they may start."""
        by_phrase: dict[str, int] = {}

        def add(phrase: str, entry: tuple[str, int]) -> None:
            key = normalize_label(phrase)
            if key and key not in by_phrase:
                by_phrase[key] = len(self.cue_table)
                self.cue_table.append([])
            if key:
                self.cue_table[by_phrase[key]].append(entry)

        symbols: dict[str, list[tuple[str, int]]] = {}
        for k, q in enumerate(self.quantities):
            for kind, words in (("u", q.factors), ("p", q.prefixes), ("v", q.phrases)):
                for word in words:
                    if kind == "u" and is_symbol_unit(word):
                        symbols.setdefault(word.strip().casefold(), []).append((kind, k))
                    else:
                        add(word, (kind, k))
        for k, r in enumerate(self.relations):
            for phrase in r.phrases:
                add(phrase, ("r", k))
        return (CueSet(by_phrase.items()) if by_phrase else None), symbols

    @property
    def enabled(self) -> bool:
        return self.cues is not None or self._symbol_re is not None

    # -- finding claims ----------------------------------------------------------------

    def key_mentions(self, artifact: Artifact, prose: str) -> list[_KeyMention]:
        """Occurrences of the artifact's row keys (id-kind key cells) on word boundaries."""
        return [_KeyMention(k, s, e) for s, e, k, _ in
                self._key_anchors(self.index(artifact).key_values, prose)]

    def key_anchors(self, index: ArtifactIndex, prose: str) -> list[Anchor]:
        """(start, end, key, True) for each row key of the artifact the prose cites (found
        once per index and prose: the claims and the aggregate claims both need them)."""
        cached = index.key_anchor_cache
        if cached is not None and cached[0] is prose:
            return cached[1]
        found = self._key_anchors(index.key_values, prose)
        index.key_anchor_cache = (prose, found)
        return found

    def _key_anchors(self, keys: set[str], prose: str) -> list[tuple[int, int, str, bool]]:
        """(start, end, key, True) for each occurrence of one of `keys` in `prose`."""
        if not keys:
            return []
        # a finder for the keys' shapes (their non-digit prefixes): the same few prefixes
        # recur across artifacts, so it is built once and kept
        shapes = frozenset(map(str.rstrip, keys, repeat("0123456789")))
        finder = self._key_finders.get(shapes)
        if finder is None:
            if len(self._key_finders) >= 1024:
                self._key_finders.clear()
            prefixes = sorted(shapes, key=lambda x: (-len(x), x))[:_MAX_KEYS]
            finder = self._key_finders[shapes] = _KeyFinder(prefixes)
        return [(s, e, k, True) for s, e in finder.spans(prose) if (k := prose[s:e]) in keys]

    def index(self, artifact: Artifact) -> ArtifactIndex:
        """The artifact's rows, resolved once (shared by the entity and the claim checks)."""
        return ArtifactIndex(self, artifact)

    # -- judging -----------------------------------------------------------------------

    def check(  # noqa: C901, PLR0912, PLR0915 - the gate's hot loop, its usual cases inline
            self, artifact: Artifact, prose: str, mentions: Sequence[Anchor],
            hits: Sequence[Hit], sentences: Sentences, index: ArtifactIndex | None = None
    ) -> tuple[int, list[Mismatch]]:
        """(claims judged, mismatches) for one artifact. `mentions` and `hits` are what
        `EntityMatcher.anchors` finds in the prose with `cues`.

        Each cue hit is read as a claim (`_read`), its subject rows found in its sentence
        (`_narrow`: the mentions before the claim, nearest first, then those after it) and
        judged (`_verdict`); a `Claim` is built only for a mismatch. Row sets are bit masks."""
        self.skipped = []
        hits = self._attached(prose, hits)
        if not hits or not prose:
            return 0, []
        if index is None:
            index = self.index(artifact)
        anchors, starts = self.anchors_and_starts(mentions, index, prose)
        sent_starts = sentences.starts
        sent_spans = sentences.spans or [(0, len(prose))]
        judged = 0
        out: list[Mismatch] = []
        skipped: list[str] = []
        together = _sentences_with(RESPECTIVELY, prose, sent_spans) \
            if "espectively" in prose else set()
        pending: dict[int, list[tuple[_Source, int, int, Reading, Anchor | None]]] = {}
        memo = _Memo(prose, index)
        names, cuts_of = memo.names, memo.breaks
        break_starts, break_ends = memo.break_starts, memo.break_ends
        n_breaks = len(break_starts) if break_starts is not None else 0
        numbers, resolved, cells = index.number_columns, index.resolved_columns, \
            index.cell_columns
        members, parsed, first_unit = self._members, self._parsed, self.first_unit
        entries, first_relation, n = self.cue_entries, self.first_relation, len(anchors)
        claim: tuple[_Source, int, int, Reading, Anchor | None] | None
        obj: Anchor | None
        verdict: bool | None
        # the sentence of the last claim (its span and clause breaks), and what the names
        # before the last claim gave: claims follow each other in text order, so most share
        # their sentence, and those with no name between them `named_before`'s answer
        last_si, lo, hi, cuts = -1, 0, 0, _NO_CUTS
        last_mid, last_lo, last_named, got = -1, -1, _NO_NAMES, 0
        # The claim loop runs ~70 times an artifact on the benchmark: its usual cases are
        # written out here (profiled: `_subject` and `_verdict` calls were ~25% of the gate's
        # time); the general helpers decide everything else, and the same way.
        for payload, hs, he in hits:
            relation = first_relation[payload]
            if relation is not None:  # `_read` of a relation, inline (most claims are)
                i = bisect_left(starts, he)
                if i == n or not ((starts[i] - he == 1 and prose[he] == " ")
                                  or _object_near(prose[he:starts[i]])):
                    continue
                obj = anchors[i]
                source, cs, ce, value = relation, hs, obj[1], _NO_READING
            elif (unit := first_unit[payload]) is not None \
                    and (factor := unit[0].factors.get(prose[hs:he])) is not None:
                # `_read` of a unit as declared, inline: the number before it, its reading
                found = _number_before(_NUM_BEFORE, prose, hs - 60 if hs > 60 else 0, hs)
                if found is None:
                    continue
                cs, digits = found
                number = parsed.get((digits, factor))
                if number is None:
                    number = self._parse(digits, factor)
                reading = qualifier(prose[cs - 60 if cs > 60 else 0:cs], number, factor)
                if reading is None:
                    continue
                j = bisect_left(starts, he)  # a name that ends inside the claim: no claim
                if (j > 0 and anchors[j - 1][1] > cs) or (j > 1 and anchors[j - 2][1] > cs):
                    continue
                source, ce, value, obj = unit[1], he, reading, None
            else:
                claim = self._read(prose, hs, he, anchors, starts, entries[payload])
                if claim is None:
                    continue
                source, cs, ce, value, obj = claim
            si = (bisect_right(sent_starts, cs) or 1) - 1  # the sentence (0 before the first)
            if si in together:
                pending.setdefault(si, []).append((source, cs, ce, value, obj))
                continue
            # `_subject`, inline where the sentence has no clause break: the names before
            # the claim (`named_before`, kept for the next claim when no name comes between
            # them), then those after it, then the row "It" refers to; else the general case
            if si != last_si:
                last_si = si
                lo, hi = sent_spans[si]
                known = cuts_of.get(si)
                if known is not None:
                    cuts = known
                elif break_starts is not None and (
                        (b := bisect_left(break_starts, lo)) == n_breaks or break_ends[b] > hi):
                    cuts = _NO_CUTS  # `_Memo.cuts`: no break's word in the sentence
                else:
                    cuts = memo.cuts(si, lo, hi)
            named = names.get(source[3]) or self._named(source, memo)
            if not cuts:
                mid = bisect_left(starts, cs)
                if mid != last_mid or lo != last_lo or named is not last_named:
                    last_mid, last_lo, last_named = mid, lo, named
                    # `named_before`, inline: the names before the claim, nearest first
                    ents, keyed = named
                    got = by_key = 0
                    key_at = -1  # the nearest key's anchor; -2: the one before it seen too
                    narrowed = False
                    for i in range(mid - 1, -1, -1):
                        a = anchors[i]
                        if a[0] < lo:
                            break
                        its = (keyed if a[3] else ents).get(a[2], 0)  # the rows it names
                        if not its:
                            continue
                        if a[3] and key_at != -2:
                            if key_at < 0:
                                by_key, key_at = its, i
                            else:
                                if its != by_key and COORDINATION.match(
                                        prose[a[1]:anchors[key_at][0]]):
                                    by_key, got = 0, AMBIGUOUS
                                    break
                                key_at = -2
                        if not narrowed:
                            if not got:
                                got = its
                            elif got & its:
                                got &= its
                            narrowed = not got & (got - 1)
                        elif key_at == -2:
                            break
                    if by_key:
                        got = (got & by_key or AMBIGUOUS) if got else by_key
                rows = got or narrow(anchors, range(bisect_left(starts, ce, mid), n), lo, hi,
                                     named[0], named[1])  # none before it: the names after it
                if rows == 0:
                    rows = coreferent(prose, anchors, starts, (lo, hi),
                                      sent_spans[si - 1] if si > 0 else None, *named)
            else:
                rows = self._subject(prose, source, cs, ce, anchors, starts, sent_spans, si, memo)
            if rows <= 0:
                skipped += [prose[cs:ce]] if rows == AMBIGUOUS else []
                continue
            # `_verdict`, inline for one subject row: a number, an entity, the row's own key
            kind, q, rng = source[2]
            if not rows & (rows - 1):
                r = rows.bit_length() - 1
                if q is not None:
                    num = (numbers.get(source[3]) or index.numbers(source[0], source[1]))[r]
                    if num is None:
                        continue
                    low, high, approximate = value
                    if low == high and not approximate:  # `Reading.holds` of an equality
                        tolerance = q.tolerance
                        verdict = abs(low - num) <= tolerance * abs(num) + tolerance.absolute \
                            + 1e-9
                    else:
                        verdict = value.holds(num, q.tolerance)
                elif kind == "object" and obj is not None and not obj[3] \
                        and (rng is None or members.get((obj[2], rng))):
                    ind = (resolved.get(source[3])
                           or index.resolved_column(source[0], source[1]))[r]
                    if ind is None:
                        continue
                    verdict = obj[2] == ind
                elif kind != "object" and obj is not None and obj[3] and (cell := (
                        cells.get(source[3]) or index.cells(source[0], source[1]))[r]
                ) is not None and str(cell) == obj[2]:
                    verdict = True
                else:
                    verdict = self._verdict(source, rows, value, obj, index)
                    if verdict is None:
                        continue
            else:
                verdict = self._verdict(source, rows, value, obj, index)
                if verdict is None:
                    continue
            judged += 1
            if not verdict:
                out.append(self._mismatch(artifact, prose, source, (cs, ce, value, obj),
                                          sent_spans[si], rows))
        judged += sum(self._respectively(artifact, prose, claims, sent_spans[si], anchors,
                                         index, out, skipped) for si, claims in pending.items())
        self.skipped = skipped
        return judged, out

    def anchors(self, mentions: Sequence[Anchor], index: ArtifactIndex, prose: str
                ) -> list[Anchor]:
        """The mentions and the row keys the prose cites, sorted (merged once per index,
        prose and mentions: the claims and the aggregate claims both read them)."""
        return self.anchors_and_starts(mentions, index, prose)[0]

    def anchors_and_starts(self, mentions: Sequence[Anchor], index: ArtifactIndex, prose: str
                           ) -> tuple[list[Anchor], list[int]]:
        """`anchors`, and where each starts."""
        cached = index.anchor_cache
        if cached is not None and cached[0] is prose and cached[1] is mentions:
            return cached[2], cached[3]
        anchors = list(mentions)
        anchors += self.key_anchors(index, prose)
        anchors.sort()
        starts = [a[0] for a in anchors]
        index.anchor_cache = (prose, mentions, anchors, starts)
        return anchors, starts

    def _subject(self, prose: str, source: _Source, cs: int, ce: int,
                 anchors: Sequence[Anchor], starts: Sequence[int],
                 sent_spans: Sequence[tuple[int, int]], si: int, memo: _Memo) -> int:
        """The subject rows of a claim on `source` at [cs, ce) in sentence `si`: in its
        clause, else its sentence, else the row "It" refers to (`effectors.prose.subject`)."""
        lo, hi = sent_spans[si]
        cuts = memo.breaks.get(si)
        if cuts is None:
            cuts = memo.cuts(si, lo, hi)
        named = memo.names.get(source[3]) or self._named(source, memo)
        ents, keyed = named
        mid = bisect_left(starts, cs)
        region = clause(lo, hi, cuts, cs, ce) if cuts else (lo, hi)
        # what the names before the claim give depends only on where they stop (claims with
        # no name between them share it): kept per artifact (`named` is one object per
        # table and join: `ArtifactIndex.lookup`, `joined`)
        key = (mid, region[0], id(named))
        rows = memo.before.get(key)
        if rows is None:
            rows = memo.before[key] = named_before(prose, anchors, mid, region, ents, keyed)
        if rows == 0:  # as `subject`: the names after it
            after = bisect_left(starts, ce, mid)
            rows = narrow(anchors, range(after, len(anchors)), region[0], region[1], ents, keyed)
            if rows == 0 and region != (lo, hi):
                rows = subject(prose, anchors, mid, after, (lo, hi), ents, keyed)
        if rows == 0:
            rows = coreferent(prose, anchors, starts, (lo, hi),
                              sent_spans[si - 1] if si > 0 else None, ents, keyed)
        return rows

    def _named(self, source: _Source, memo: _Memo) -> tuple[dict[str, int], dict[str, int]]:
        """The rows each entity and key names for a claim on `source`: those of its table
        (`ArtifactIndex.lookup`), or reached through its `through` columns (`joined`); kept
        in `memo.names`."""
        through = self.through.get(source[3]) if self.through else None
        named = memo.names[source[3]] = memo.index.joined(source[0], through) if through \
            else memo.index.lookup.get(source[0]) or (_NO_ROWS, _NO_ROWS)
        return named

    def _judge(self, artifact: Artifact, prose: str,
               claim: tuple[_Source, int, int, Reading, Anchor | None],
               sentence: tuple[int, int], rows: int, index: ArtifactIndex,
               out: list[Mismatch]) -> bool | None:
        """Judge one claim against its subject rows; a mismatch is appended to `out`."""
        if rows <= 0:
            return None
        source, cs, ce, value, obj = claim
        verdict = self._verdict(source, rows, value, obj, index)
        if verdict is False:
            out.append(self._mismatch(artifact, prose, source, (cs, ce, value, obj),
                                      sentence, rows))
        return verdict

    def _respectively(self, artifact: Artifact, prose: str,
                      claims: list[tuple[_Source, int, int, Reading, Anchor | None]],
                      sentence: tuple[int, int], anchors: Sequence[Anchor],
                      index: ArtifactIndex, out: list[Mismatch], skipped: list[str]) -> int:
        """Claims of a "respectively" sentence, paired in order with the rows named before
        the first of them; nothing is judged when they do not pair up (the claims judged)."""
        columns = {(c[0][0], c[0][1]) for c in claims}
        paired: list[int] = []
        if len(columns) == 1 and all(c[4] is None for c in claims):
            table, column = next(iter(columns))
            ents, keyed = index.joined(table, self.through.get((table, column), ()))
            paired = pair_respectively(anchors, sentence[0], claims[0][1], ents, keyed,
                                       len(claims))
        if not paired:
            skipped += [prose[c[1]:c[2]] for c in claims]
            return 0
        return sum(self._judge(artifact, prose, c, sentence, rows, index, out) is not None
                   for c, rows in zip(claims, paired, strict=True))

    def _attached(self, prose: str, hits: Sequence[Hit]) -> Sequence[Hit]:
        """`hits`, with the units written onto their numbers ("45kW") and the symbol units
        ("12.5%", "21 °C") added in text order."""
        extra = [(self._symbols[symbol_unit(m)], *m.span(1))
                 for m in self._symbol_re.finditer(prose)] if self._symbol_re else []
        glued = _digit_letter(prose) if self._glued is not None and self.cues is not None \
            else False
        if self._glued is None or self.cues is None or not glued:
            return sorted([*hits, *extra], key=lambda h: h[1]) if extra else hits
        for m in self._glued.finditer(prose):
            try:
                extra.append((self.cues.payload(normalize_label(m.group(1))), *m.span(1)))
            except KeyError:  # pragma: no cover - every glued unit is a cue
                continue
        return sorted([*hits, *extra], key=lambda h: h[1]) if extra else hits

    def _read(self, prose: str, hs: int, he: int, anchors: Sequence[Anchor],
              starts: Sequence[int], entries: Sequence[tuple[str, int, _Source]]
              ) -> tuple[_Source, int, int, Reading, Anchor | None] | None:
        """The claim a cue hit with several readings starts (the first reading that makes
        one), as (source, start, end, reading, object). Numbers may be written in words
        (`numeric_view` of the few characters around the hit, only where no digits are)."""
        for kind, k, src in entries:
            if kind == "r":
                i = bisect_left(starts, he)
                if i < len(anchors):
                    at = starts[i]
                    if (at - he == 1 and prose[he] == " ") or _object_near(prose[he:at]):
                        return src, hs, anchors[i][1], _NO_READING, anchors[i]
                return None
            read = self._quantity(prose, kind, self.quantities[k], hs, he)
            if read is None:
                continue
            cs, ce, reading = read
            if reading is None:
                return None
            j = bisect_left(starts, ce)  # a name that ends inside the claim: no claim
            if (j > 0 and anchors[j - 1][1] > cs) or (j > 1 and anchors[j - 2][1] > cs):
                return None
            return src, cs, ce, reading, None
        return None

    def _quantity(self, prose: str, kind: str, q: _Quantity, hs: int, he: int
                  ) -> tuple[int, int, Reading | None] | None:
        """The quantity a cue hit of `kind` starts ("v" a phrase, "u" a unit, "p" a prefix)
        as (start, end, reading); None: no quantity here; reading None: one not to judge."""
        if kind == "v":
            value = q.phrases.get(" ".join(normalize_label(prose[hs:he]).split()))
            return None if value is None else (hs, he, Reading(value, value))
        if kind == "u":
            unit = prose[hs:he]
            factor = q.factors.get(unit)  # as declared (else `factor`'s case rules)
            if factor is None and (factor := q.factor(unit)) is None:
                return None
            found = _number_before(_NUM_BEFORE, prose, hs - 60 if hs > 60 else 0, hs)
            if found is None:
                return None
            cs, num = found
            value = self._parsed.get((num, factor))
            if value is None:
                value = self._parse(num, factor)
            return cs, he, qualifier(prose[cs - 60 if cs > 60 else 0:cs], value, factor)
        m = _NUM_AFTER.match(prose, he)
        if m is None:
            view, moved = numeric_view(prose[he:he + 60])
            m = _NUM_AFTER.match(view) if moved else None
        if m is not None:
            cs, ce, num = hs, (he + m.end() if m.string is not prose else m.end()), m.group(1)
        else:  # "the 6th floor", "the sixth floor"
            found = _number_before(_ORD_BEFORE, prose, max(0, hs - 30), hs)
            if found is None:
                return None
            (cs, num), ce = found, he
        value = self._parse(num, 1.0)
        if q.negate is not None and q.negate.search(prose, max(0, hs - 30), hs):
            value = -abs(value)
        return cs, ce, Reading(value, value)

    def _parse(self, num: str, factor: float) -> float:
        """A number stated with a unit of this factor, in the cell's unit (memoised)."""
        out = self._parsed.get((num, factor))
        if out is not None:
            return out
        out = self._parsed[(num, factor)] = _parse(num) * factor
        if len(self._parsed) > 100_000:
            self._parsed.clear()
        return out

    def _verdict(self, source: _Source, rows: int, value: Reading, obj: Anchor | None,
                 index: ArtifactIndex) -> bool | None:
        """True: some subject row holds the claimed value; False: none does; None: no subject
        row holds a value to judge by."""
        table, column, (kind, q, rng), key = source
        one = not rows & (rows - 1)  # one subject row (the usual case)
        if q is not None:
            nums = index.number_columns.get(key) or index.numbers(table, column)
            if one:
                num = nums[rows.bit_length() - 1]
                return None if num is None else value.holds(num, q.tolerance)
            values = [v for r in _bits(rows) if (v := nums[r]) is not None]
            return any(value.holds(v, q.tolerance) for v in values) if values else None
        assert obj is not None
        if kind == "object":
            if obj[3]:
                return None
            if rng is not None and not (self._members.get((obj[2], rng))
                                        or self._is_member(obj[2], rng)):
                return None  # "from the radiology department" is not a manufacturer claim
            inds = index.resolved_columns.get(key) or index.resolved_column(table, column)
            if one:
                ind = inds[rows.bit_length() - 1]
                return None if ind is None else obj[2] == ind
            held = [ind for r in _bits(rows) if (ind := inds[r]) is not None]
            return obj[2] in held if held else None
        cells = index.cell_columns.get(key) or index.cells(table, column)
        if one and obj[3]:  # a row key stated about one row: the key it holds?
            cell = cells[rows.bit_length() - 1]
            if cell is None:
                return None
            if str(cell) == obj[2]:
                return True
        return index.judge_reference(obj, [str(c) for r in _bits(rows)
                                           if (c := cells[r]) is not None])

    def _is_member(self, individual: str, cls: str) -> bool:
        key = (individual, cls)
        try:
            return self._members[key]
        except KeyError:
            out = self._members[key] = self.pools.is_member(individual, cls)
            return out

    def _mismatch(self, artifact: Artifact, prose: str, source: tuple[str, str, object, object],
                  claim: tuple[int, int, Reading, Anchor | None],
                  sentence: tuple[int, int], rows: int) -> Mismatch:
        table, column, _, _ = source
        start, end, value, obj = claim
        if obj is not None:
            c = Claim("relation", table, column, start, end, prose[start:end], obj=_Anchor(*obj))
        else:
            stated = value.low if math.isfinite(value.low) else value.high
            c = Claim("quantity", table, column, start, end, prose[start:end], stated)
        table_rows = artifact.tables[table]
        return Mismatch(c, sentence, tuple(
            (r, self.pack.row_key(table, dict(table_rows[r])), table_rows[r].get(column))
            for r in _bits(rows)))


def _digit_letter(text: str) -> bool:
    """Is a digit right before a letter somewhere in `text` (a unit written onto its number,
    "45kW", may be there)? `_DIGIT_LETTER.search`, by bytes in ASCII text."""
    if text.isascii():
        return b"0a" in text.encode("ascii").translate(_DIGITS_LETTERS)
    return _DIGIT_LETTER.search(text) is not None


def _object_near(gap: str) -> bool:
    """May a relation's object follow its phrase after `gap` ("complies with | NFPA 70")?
    A few words at most, in one clause."""
    return len(gap) < 80 and len(gap.split()) <= _MAX_GAP_WORDS and not _BREAK.search(gap)


def _glued_units(quantities: Sequence[_Quantity]) -> re.Pattern[str] | None:
    """A unit written onto its number ("45kW"): one token, so no cue hit of its own."""
    glued = sorted({u for q in quantities for u in q.factors if u[:1].isalpha()},
                   key=lambda u: (-len(u), u))
    if not glued:
        return None
    return re.compile(r"(?<![\w.])\d+(?:\.\d+)?(" + "|".join(map(re.escape, glued))
                      + r")(?!\w)", re.IGNORECASE)


def _through(quantities: Sequence[ProseQuantity], relations: Sequence[ProseRelation]
             ) -> dict[tuple[str, str], tuple[str, ...]]:
    """(table, column) of a claim -> the id columns ("equipment.room_id") through which a
    claim about a row of another table reaches this table's rows."""
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    joined: list[ProseQuantity | ProseRelation] = [*quantities, *relations]
    for src in joined:
        if src.through:
            table, _, column = src.column.partition(".")
            out[(table, column)] = tuple(src.through)
    return out


def _plain_number_before(text: str, lo: int, hi: int) -> tuple[int, str] | None:
    """The usual number before a unit, as `_NUM_BEFORE` finds it in [lo, hi): ASCII digits,
    one "." inside at most, after a space or "(" and right before `hi` or one separator
    before it ("rated at 48.5 kW", "(48 kW)"); the regex's match cannot start before that
    character and starts right after it. None: some other text (ask the regex)."""
    end = hi - 1 if hi > lo and text[hi - 1] in _ONE_SEPARATOR else hi
    start = max(text.rfind(" ", lo, end), text.rfind("(", lo, end)) + 1
    if start > lo:
        number = text[start:end]
        if number.isascii():
            whole, dot, fraction = number.partition(".")
            if whole.isdecimal() and (not dot or fraction.isdecimal()):
                return start, number
    return None


def _number_before(regex: re.Pattern[str], text: str, lo: int, hi: int
                   ) -> tuple[int, str] | None:
    """(start, digits) of the number `regex` finds ending at `hi` (searched in [lo, hi)),
    read from digits or, failing that, from number words ("sixty", "sixth")."""
    if regex is _NUM_BEFORE:
        plain = _plain_number_before(text, lo, hi)
        if plain is not None:
            return plain
        # the number ends with a digit, at most two separators before `hi` ("48 kW",
        # "48 \nkW"); a letter there may end number words ("sixty kW"); anything else: none
        end = hi
        while end > lo and hi - end < 2 and text[end - 1] in _SEPARATORS:
            end -= 1
        last = text[end - 1] if end > lo else ""
        if not last.isalnum():
            return None
        # every character of a match is a digit, ",", ".", a sign or a separator: it
        # starts inside the run of those before `hi` (lookbehinds still see before it)
        if last.isdigit():
            at = end - 1
            while at > lo and ((c := text[at - 1]) in _NUMBER_CHARS or c.isdecimal()):
                at -= 1
            m = regex.search(text, at, hi)
        else:
            m = None
    else:
        m = regex.search(text, lo, hi)
    if m is not None:
        return m.start(1), m.group(1)
    view, moved = numeric_view(text[lo:hi])
    if not moved:
        return None
    m = regex.search(view)
    if m is None:
        return None
    return lo + moved.get(m.start(1), m.start(1)), m.group(1)


class _Memo:
    """What `ClaimChecker.check` works out once per artifact for all its claims."""

    __slots__ = ("before", "break_ends", "break_starts", "breaks", "index", "names", "prose")

    def __init__(self, prose: str, index: ArtifactIndex) -> None:
        self.prose = prose
        self.index = index
        self.breaks: dict[int, list[tuple[int, int]]] = {}  # sentence -> its clause breaks
        # a clause break holds ";", ":", "but", "while" or "whereas": where they occur in
        # ASCII text (lower-cased, which is exact there), found once; None: other text
        self.break_starts: list[int] | None = None
        self.break_ends: list[int] = []
        if prose.isascii():
            self.break_starts, self.break_ends = _break_words(lower(prose))
        # (table, column) of a claim -> the rows each entity and key names for it
        self.names: dict[tuple[str, str], tuple[dict[str, int], dict[str, int]]] = {}
        # (anchor, region start, names) -> `subject.named_before`
        self.before: dict[tuple[int, int, int], int] = {}

    def cuts(self, si: int, lo: int, hi: int) -> list[tuple[int, int]]:
        """The clause breaks of sentence `si` at [lo, hi) (`subject.breaks`), looked for
        only where one of their words occurs (`break_starts`)."""
        starts = self.break_starts
        if starts is None:
            out = breaks(self.prose, lo, hi)
        else:
            i = bisect_left(starts, lo)
            out = breaks(self.prose, lo, hi) \
                if i < len(starts) and self.break_ends[i] <= hi else []
        self.breaks[si] = out
        return out


_BREAK_WORDS = (";", ":", "but", "while", "whereas")


def _break_words(low: str) -> tuple[list[int], list[int]]:
    """The starts and the ends of every occurrence of `_BREAK_WORDS` in `low`, in text
    order (one `str.find` scan per word over the whole text, not five per sentence). No
    occurrence of one overlaps an occurrence of another or of itself, so an occurrence lies
    inside [lo, hi) exactly when the first one starting at `lo` or after ends by `hi`."""
    found: list[tuple[int, int]] = []
    for word in _BREAK_WORDS:
        size = len(word)
        at = low.find(word)
        while at >= 0:
            found.append((at, at + size))
            at = low.find(word, at + size)
    found.sort()
    return [s for s, _ in found], [e for _, e in found]


def _sentences_with(pattern: re.Pattern[str], text: str,
                    spans: Sequence[tuple[int, int]]) -> set[int]:
    """Indices of the sentences in which `pattern` occurs."""
    if pattern.search(text) is None:
        return set()
    return {i for i, (lo, hi) in enumerate(spans) if pattern.search(text, lo, hi)}


_NO_ROWS: dict[str, int] = {}


def _rows_by_key(rows: Sequence[dict[str, Cell]], key_cols: Sequence[str]) -> dict[str, int]:
    """key value (as text) -> the rows holding it in one of `key_cols`, as a bit mask."""
    keys: dict[str, int] = {}
    for c in key_cols:
        bit = 1
        for row in rows:
            v = row.get(c)
            if v is not None:
                k = str(v)
                keys[k] = keys.get(k, 0) | bit
            bit <<= 1
    return keys


def _bits(rows: int) -> list[int]:
    """The row indices of a bit mask, ascending."""
    if not rows & (rows - 1):
        return [rows.bit_length() - 1]
    out = []
    while rows:
        low = rows & -rows
        out.append(low.bit_length() - 1)
        rows ^= low
    return out


_KEY_END = r"[0-9]*(?!\w|-\w)"
_WORDLIKE = re.compile(r"[\w-]+")
_LETTER_AFTER_DIGITS = re.compile(r"[0-9]*[^\W\d]")


class _KeyFinder:
    """The occurrences of keys with these prefixes (longest first): a prefix, not after a
    word character or "-", then digits, not before a word character or "-" and one; what
    `one.finditer` finds, `one` being the regex of all the prefixes (`self.regex`).

    When every prefix is made of word characters and "-", no occurrence can start inside
    another one, so each prefix is looked for apart, by a regex of its own that starts with
    it (`re` scans far faster for a literal first; the check that no word character or "-"
    comes before it is a look-behind after it), and at a start the longest occurrence kept
    (the one the alternation, longest first, matches). Otherwise the regex."""

    __slots__ = ("apart", "each", "prefixes", "regex", "wordlike")

    def __init__(self, prefixes: Sequence[str]) -> None:
        self.prefixes = tuple(prefixes)
        self.wordlike = all(_WORDLIKE.fullmatch(p) for p in prefixes)
        self.regex = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, prefixes)) + ")"
                                + _KEY_END)
        self.each = tuple(re.compile(f"{re.escape(p)}(?<![\\w-]{re.escape(p)}){_KEY_END}")
                          for p in prefixes) if self.wordlike else ()
        # no two prefixes' occurrences can start at one place: where one prefix starts
        # another, what follows it in the longer one is digits then a letter ("R-" in
        # "R-B"), which the shorter one's digits may not be followed by
        self.apart = all(_LETTER_AFTER_DIGITS.match(q, len(p)) for p in prefixes
                         for q in prefixes if q != p and q.startswith(p))

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each occurrence, in text order."""
        if not self.wordlike:
            return [m.span() for m in self.regex.finditer(text)]
        if self.apart:  # each occurrence is the only one at its start
            found = [m.span() for regex in self.each for m in regex.finditer(text)]
            if len(self.each) > 1:
                found.sort()
            return found
        ends: dict[int, int] = {}
        for regex in self.each:
            for m in regex.finditer(text):
                at, e = m.span()
                if ends.get(at, -1) < e:
                    ends[at] = e
        return sorted(ends.items())


class ArtifactIndex:
    """One artifact's rows, resolved once: the individuals its object cells name (`view`),
    per table the rows each individual (`ents`) and each key (`keys`) names as bit masks
    (both in `lookup`),
    the key values prose may cite (`key_values`); cells, resolved cells and numbers per
    column on demand."""

    __slots__ = ("anchor_cache", "artifact", "cell_columns", "checker", "ents", "joins",
                 "key_anchor_cache",
                 "key_values", "keys", "lookup", "number_columns", "resolved_columns", "view")

    def __init__(self, checker: ClaimChecker, artifact: Artifact) -> None:
        self.checker = checker
        self.artifact = artifact
        self.key_anchor_cache: tuple[str, list[Anchor]] | None = None
        self.anchor_cache: tuple[str, Sequence[Anchor], list[Anchor], list[int]] | None = None
        resolve = checker.resolve
        memo = checker.memo
        view: set[str | None] = set()
        self.ents: dict[str, dict[str, int]] = {}
        self.keys: dict[str, dict[str, int]] = {}
        self.lookup: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
        self.key_values: set[str] = set()
        self.resolved_columns: dict[tuple[str, str], list[str | None]] = {}
        self.cell_columns: dict[tuple[str, str], list[Cell]] = {}
        self.number_columns: dict[tuple[str, str], list[float | None]] = {}
        self.joins: dict[tuple[str, tuple[str, ...]], tuple[dict[str, int], dict[str, int]]] = {}
        for table, rows in artifact.tables.items():
            spec = checker.specs.get(table)
            if spec is None:
                continue
            obj_cols, key_cols, id_keys = spec
            ents: dict[str, int] = {}
            for c in obj_cols:
                cells = self.cell_columns[(table, c)] = [row.get(c) for row in rows]
                inds = self.resolved_columns[(table, c)] = [
                    memo[v] if v in memo else resolve(v) for v in cells]
                view.update(inds)
                bit = 1
                for ind in inds:
                    if ind is not None:
                        ents[ind] = ents.get(ind, 0) | bit
                    bit <<= 1
            for c in checker.class_columns.get(table, ()):  # a class and its superclasses
                bit = 1
                for cell in self.cells(table, c):
                    for name in class_names(checker.pools, cell):
                        ents[name] = ents.get(name, 0) | bit
                        view.add(name)
                    bit <<= 1
            self.ents[table] = ents
            keys = self.keys[table] = _rows_by_key(rows, key_cols)
            self.lookup[table] = (ents, keys)
            if id_keys == key_cols:  # the usual case: the key values are at hand
                self.key_values.update([k for k in keys if len(k.strip()) >= 2])
            else:
                for c in id_keys:
                    self.key_values.update(k for row in rows if (v := row.get(c)) is not None
                                           and len((k := str(v)).strip()) >= 2)
        view.discard(None)
        self.view: set[str] = view  # type: ignore[assignment]

    def key_entities(self, entity_columns: Sequence[str]) -> list[str]:
        """Individuals in the `entity_columns` cells, in first-seen order."""
        keys: dict[str | None, None] = {}
        for ref in entity_columns:
            table, _, column = ref.partition(".")
            inds = self.resolved_columns.get((table, column))
            if inds is None and column in self.checker.class_columns.get(table, ()):
                pools = self.checker.pools  # a class cell: its class, by IRI (issue 27)
                inds = [next(iter(class_names(pools, row.get(column))), None)
                        for row in self.artifact.tables.get(table, [])]
            if inds is None:
                resolve = self.checker.resolve
                inds = [resolve(row.get(column)) for row in self.artifact.tables.get(table, [])]
            keys.update(dict.fromkeys(inds))
        return [k for k in keys if k is not None]

    def cells(self, table: str, column: str) -> list[Cell]:
        key = (table, column)
        out = self.cell_columns.get(key)
        if out is None:
            out = self.cell_columns[key] = [row.get(column)
                                      for row in self.artifact.tables.get(table, [])]
        return out

    def resolved_column(self, table: str, column: str) -> list[str | None]:
        key = (table, column)
        out = self.resolved_columns.get(key)
        if out is None:
            resolve = self.checker.resolve
            out = self.resolved_columns[key] = [resolve(c) for c in self.cells(table, column)]
        return out

    def numbers(self, table: str, column: str) -> list[float | None]:
        key = (table, column)
        out = self.number_columns.get(key)
        if out is None:
            out = self.number_columns[key] = [
                c if type(c) is float and math.isfinite(c) else
                float(c) if type(c) is int else _number(c)
                for c in self.cells(table, column)]
        return out

    def joined(self, table: str, through: tuple[str, ...]
               ) -> tuple[dict[str, int], dict[str, int]]:
        """The rows of `table` each entity and key names (as `lookup`), and through each id
        column "S.c" of `through` also those a row of S names: the rows of `table` whose key
        that row's c cell holds ("EQ-001" names the room EQ-001 is in)."""
        own = self.lookup.get(table) or (_NO_ROWS, _NO_ROWS)
        if not through:
            return own
        cached = self.joins.get((table, through))
        if cached is not None:
            return cached
        target = self.keys.get(table, _NO_ROWS)
        ents: dict[str, int] = {}
        keyed: dict[str, int] = {}
        specs = self.checker.specs
        for ref in through:
            src, _, col = ref.partition(".")
            # the rows of `table` each row of `src` reaches, then per row of `src` what
            # names it (its entities, its keys: `lookup`) reaches them too
            masks = [target.get(str(c), 0) if c is not None else 0 for c in self.cells(src, col)]
            if not any(masks) or src not in specs or src not in self.ents:
                continue
            obj_cols, key_cols, _ = specs[src]
            for c in obj_cols:
                for ind, reached in zip(self.resolved_columns[(src, c)], masks, strict=True):
                    if reached and ind is not None:
                        ents[ind] = ents.get(ind, 0) | reached
            for c in key_cols:
                for cell, reached in zip(self.cells(src, c), masks, strict=True):
                    if reached and cell is not None:
                        k = str(cell)
                        keyed[k] = keyed.get(k, 0) | reached
        ents.update(own[0])
        keyed.update(own[1])
        out = self.joins[(table, through)] = (ents, keyed)
        return out

    def rows_of_key(self, table: str, key: str) -> int:
        return self.keys.get(table, _NO_ROWS).get(key, 0)

    def rows_of_entity(self, table: str, individual: str) -> int:
        return self.ents.get(table, _NO_ROWS).get(individual, 0)

    def judge_reference(self, obj: tuple[int, int, str, bool], values: list[str]) -> bool | None:
        """A relation on an id column: is its object the key held, or an entity of that row?"""
        if not values:
            return None
        tables = self.checker.pack.tables
        name = obj[2]
        if obj[3]:
            if name in values:
                return True
            held_tables = {t for t in tables for v in values if self.rows_of_key(t, v)}
            named = any(self.rows_of_key(t, name) for t in held_tables)
            return False if named else None
        elsewhere = False
        for table in tables:
            held = 0
            for v in values:
                held |= self.rows_of_key(table, v)
            if not held:
                continue
            with_entity = self.rows_of_entity(table, name)
            if held & with_entity:
                return True
            elsewhere = elsewhere or bool(with_entity)
        return False if elsewhere else None

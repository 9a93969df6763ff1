"""Value claims in prose, checked against the artifact's rows.

The pack declares what a claim looks like (`[prose] quantities` and `relations`):

* a quantity: a number with a unit ("48.5 kW", "1,200 kW", "0.5 MW") or after a prefix word
  ("floor -3"), stated about a row of the quantity's table; it matches when it is within the
  relative tolerance of the row's cell, or equals the cell rounded to the decimals stated;
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
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from effectors.prose.matcher import Cue, CueSet, Mention
from effectors.prose.text import Sentences
from harness.models import Artifact, Cell
from harness.pack import Pack, ProseQuantity, ProseRelation
from harness.pools import Pools, normalize_label

__all__ = ["Claim", "ClaimChecker", "Mismatch"]

_NUMBER = r"([-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)"
_NUM_BEFORE = re.compile(rf"(?<![\w.\-−]){_NUMBER}[ \u00a0]?$")
_NUM_AFTER = re.compile(rf"\s+{_NUMBER}(?![\w\-−]|\.\d)")
_BREAK = re.compile(r"[.;:!?\n]")
_MAX_GAP_WORDS = 3  # words allowed between a relation's phrase and its object ("the", "room")
_MAX_KEYS = 10_000


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
    slack: float = 0.0  # half a unit of the last digit stated ("65.5 kW": 0.05), in that unit
    obj: _Anchor | None = None  # a relation's object: an entity or a row key


@dataclass(frozen=True, slots=True)
class Mismatch:
    claim: Claim
    sentence: tuple[int, int]
    rows: tuple[tuple[int, str, Cell], ...]  # (row index, row key, the cell's value)


def _parse(num: str) -> tuple[float, int]:
    text = num.replace(",", "").replace("−", "-")
    decimals = len(text.partition(".")[2])
    return float(text), decimals


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


class _Quantity:
    def __init__(self, q: ProseQuantity, tolerance: float) -> None:
        self.table, _, self.column = q.column.partition(".")
        self.factors = dict(q.units)
        self.prefixes = list(q.prefixes)
        self.tolerance = q.tolerance if q.tolerance is not None else tolerance

    def claim(self, text: str, start: int, end: int, num: str, unit: str | None) -> Claim:
        value, decimals = _parse(num)
        factor = self.factors.get(unit, 1.0) if unit else 1.0
        return Claim("quantity", self.table, self.column, start, end, text[start:end],
                     value * factor, 0.5 * 10**-decimals * factor)

    def matches(self, claim: Claim, value: float) -> bool:
        assert claim.value is not None
        diff = abs(claim.value - value)
        return diff <= self.tolerance * abs(value) + 1e-9 or diff <= claim.slack + 1e-9


class _Relation:
    def __init__(self, r: ProseRelation) -> None:
        self.table, _, self.column = r.column.partition(".")
        self.phrases = list(r.phrases)


class _KeyMention(NamedTuple):
    key: str
    start: int
    end: int


Resolve = Callable[[Cell], "str | None"]


class ClaimChecker:
    """The pack's claim patterns, compiled into one regex; `check` judges one artifact."""

    def __init__(self, pack: Pack, pools: Pools, resolve: Resolve | None = None) -> None:
        settings = pack.config.prose
        self.pack = pack
        self.pools = pools
        self.resolve: Resolve = resolve or pools.resolve
        self.quantities = [_Quantity(q, settings.value_tolerance) for q in settings.quantities]
        self.relations = [_Relation(r) for r in settings.relations]
        # cue words (found by the entity matcher's scan): payload -> what they may start
        self.cue_table: list[list[tuple[str, int]]] = []
        by_phrase: dict[str, int] = {}

        def add(phrase: str, entry: tuple[str, int]) -> None:
            key = normalize_label(phrase)
            if key and key not in by_phrase:
                by_phrase[key] = len(self.cue_table)
                self.cue_table.append([])
            if key:
                self.cue_table[by_phrase[key]].append(entry)

        for k, q in enumerate(self.quantities):
            for unit in q.factors:
                add(unit, ("u", k))
            for prefix in q.prefixes:
                add(prefix, ("p", k))
        for k, r in enumerate(self.relations):
            for phrase in r.phrases:
                add(phrase, ("r", k))
        self.cues = CueSet(by_phrase.items()) if by_phrase else None
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

    @property
    def enabled(self) -> bool:
        return self.cues is not None

    # -- finding claims ----------------------------------------------------------------

    def claims(self, prose: str, anchors: Sequence[_Anchor], starts: Sequence[int],
               hits: Sequence[Cue]) -> list[Claim]:
        """The claims the cue hits start, in order."""
        out: list[Claim] = []
        for hit in hits:
            for kind, k in self.cue_table[hit.payload]:
                if kind == "r":
                    i = bisect_left(starts, hit.end)
                    if i < len(anchors) and _close(prose, hit.end, anchors[i].start):
                        rel, obj = self.relations[k], anchors[i]
                        out.append(Claim("relation", rel.table, rel.column, hit.start, obj.end,
                                         prose[hit.start:obj.end], obj=obj))
                    break
                claim = self._quantity(prose, hit, kind, k)
                if claim is None:
                    continue
                if not _overlaps(anchors, starts, claim.start, claim.end):
                    out.append(claim)
                break
        return out

    def _quantity(self, prose: str, hit: Cue, kind: str, k: int) -> Claim | None:
        q = self.quantities[k]
        if kind == "u":
            unit = prose[hit.start:hit.end]
            if unit not in q.factors:  # units are case-sensitive: "MW" is not "mW"
                return None
            m = _NUM_BEFORE.search(prose, max(0, hit.start - 40), hit.start)
            return q.claim(prose, m.start(1), hit.end, m.group(1), unit) if m else None
        m = _NUM_AFTER.match(prose, hit.end)
        return q.claim(prose, hit.start, m.end(), m.group(1), None) if m else None

    def key_mentions(self, artifact: Artifact, prose: str) -> list[_KeyMention]:
        """Occurrences of the artifact's row keys (id-kind key cells) on word boundaries."""
        keys: set[str] = set()
        for table, rows in artifact.tables.items():
            binding = self.pack.tables.get(table)
            if binding is None:
                continue
            cols = [k for k in binding.key if binding.columns[k].kind == "id"]
            keys.update(str(v) for row in rows for k in cols
                        if (v := row.get(k)) is not None and len(str(v).strip()) >= 2)
        if not keys:
            return []
        # one regex over the keys' shapes (their non-digit prefixes): the same few prefixes
        # recur across artifacts, so `re` compiles it once and caches it
        prefixes = sorted({k.rstrip("0123456789") for k in keys}, key=lambda x: (-len(x), x))
        pattern = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, prefixes[:_MAX_KEYS]))
                             + r")[0-9]*(?!\w|-\w)")
        out = [_KeyMention(m.group(), m.start(), m.end()) for m in pattern.finditer(prose)
               if m.group() in keys]
        return out

    # -- judging -----------------------------------------------------------------------

    def check(self, artifact: Artifact, prose: str, mentions: Sequence[Mention],
              hits: Sequence[Cue], sentences: Sentences) -> tuple[int, list[Mismatch]]:
        """(claims judged, mismatches) for one artifact; `hits` are the `cues` found by the
        entity matcher's scan of the prose."""
        if not hits or not prose:
            return 0, []
        keys = self.key_mentions(artifact, prose)
        anchors = sorted([_Anchor(m.start, m.end, m.individual, False) for m in mentions]
                         + [_Anchor(k.start, k.end, k.key, True) for k in keys])
        starts = [a.start for a in anchors]
        claims = self.claims(prose, anchors, starts, hits)
        if not claims:
            return 0, []
        index = _RowIndex(self.pack, self.resolve, artifact)
        judged = 0
        out: list[Mismatch] = []
        for claim in claims:
            span = sentences.span(claim.start)
            rows = _subject(claim, span, anchors, starts, index)
            if not rows:
                continue
            verdict = self._judge(claim, rows, index)
            if verdict is None:
                continue
            judged += 1
            if not verdict:
                table_rows = artifact.tables[claim.table]
                out.append(Mismatch(claim, span, tuple(
                    (r, self.pack.row_key(claim.table, dict(table_rows[r])),
                     table_rows[r].get(claim.column)) for r in sorted(rows))))
        return judged, out

    def _judge(self, claim: Claim, rows: frozenset[int], index: _RowIndex) -> bool | None:
        """True: some subject row holds the claimed value; False: none does; None: no view."""
        table_rows = index.artifact.tables[claim.table]
        cells = [table_rows[r].get(claim.column) for r in rows]
        kind, q, rng = self.judges[(claim.table, claim.column)]
        if q is not None:
            values = [v for c in cells if (v := _number(c)) is not None]
            return any(q.matches(claim, v) for v in values) if values else None
        obj = claim.obj
        assert obj is not None
        if kind == "object":
            if obj.is_key:
                return None
            if rng is not None and not self.pools.is_member(obj.name, rng):
                return None  # "from the radiology department" is not a manufacturer claim
            held = [ind for c in cells if (ind := self.resolve(c)) is not None]
            return obj.name in held if held else None
        return index.judge_reference(obj, [str(c) for c in cells if c is not None])


def _subject(claim: Claim, span: tuple[int, int], anchors: Sequence[_Anchor],
             starts: Sequence[int], index: _RowIndex) -> frozenset[int]:
    """The rows of the claim's table its sentence names: the mentions before the claim,
    nearest first, narrow them down (a mention that would leave none is passed over); if
    nothing before the claim names a row, the mentions after it."""
    lo, hi = span
    mid = bisect_left(starts, claim.start)
    after = bisect_left(starts, claim.end, mid)
    table = claim.table
    for side in (range(mid - 1, -1, -1), range(after, len(anchors))):
        rows: frozenset[int] | None = None
        for i in side:
            a = anchors[i]
            if not lo <= a.start < hi:
                break
            found = index.rows_of_key(table, a.name) if a.is_key else \
                index.rows_of_entity(table, a.name)
            if not found:
                continue
            if rows is None:
                rows = found
            elif rows & found:
                rows &= found
            if len(rows) == 1:
                break
        if rows:
            return rows
    return frozenset()


class _RowIndex:
    """Lazily built lookups over one artifact's rows."""

    def __init__(self, pack: Pack, resolve: Resolve, artifact: Artifact) -> None:
        self.pack = pack
        self.resolve = resolve
        self.artifact = artifact
        self._entities: dict[str, dict[str, frozenset[int]]] = {}
        self._keys: dict[str, dict[str, frozenset[int]]] = {}

    def _build(self, table: str) -> None:
        binding = self.pack.tables.get(table)
        ents: dict[str, set[int]] = {}
        keys: dict[str, set[int]] = {}
        rows = self.artifact.tables.get(table, []) if binding is not None else []
        for i, row in enumerate(rows):
            assert binding is not None
            for c, b in binding.columns.items():
                v = row.get(c)
                if b.kind == "object":
                    if (ind := self.resolve(v)) is not None:
                        ents.setdefault(ind, set()).add(i)
                elif c in binding.key and v is not None:
                    keys.setdefault(str(v), set()).add(i)
        self._entities[table] = {k: frozenset(v) for k, v in ents.items()}
        self._keys[table] = {k: frozenset(v) for k, v in keys.items()}

    def rows_of_entity(self, table: str, individual: str) -> frozenset[int]:
        if table not in self._entities:
            self._build(table)
        return self._entities[table].get(individual, frozenset())

    def rows_of_key(self, table: str, key: str) -> frozenset[int]:
        if table not in self._keys:
            self._build(table)
        return self._keys[table].get(key, frozenset())

    def judge_reference(self, obj: _Anchor, values: list[str]) -> bool | None:
        """A relation on an id column: is its object the key held, or an entity of that row?"""
        if not values:
            return None
        if obj.is_key:
            if obj.name in values:
                return True
            held_tables = {t for t in self.pack.tables for v in values if self.rows_of_key(t, v)}
            named = any(self.rows_of_key(t, obj.name) for t in held_tables)
            return False if named else None
        ind = obj.name
        elsewhere = False
        for table in self.pack.tables:
            held = {r for v in values for r in self.rows_of_key(table, v)}
            if not held:
                continue
            with_entity = self.rows_of_entity(table, ind)
            if held & with_entity:
                return True
            elsewhere = elsewhere or bool(with_entity)
        return False if elsewhere else None




def _overlaps(anchors: Sequence[_Anchor], starts: Sequence[int], start: int, end: int) -> bool:
    i = bisect_left(starts, end)
    return any(anchors[j].end > start for j in range(max(0, i - 2), i))


def _close(prose: str, pos: int, start: int) -> bool:
    """Only a few plain words (no sentence or clause punctuation) between pos and start?"""
    gap = prose[pos:start]
    return len(gap) < 80 and len(gap.split()) <= _MAX_GAP_WORDS and not _BREAK.search(gap)

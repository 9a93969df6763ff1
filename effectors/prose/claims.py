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


class _Quantity:
    def __init__(self, q: ProseQuantity, tolerance: float) -> None:
        self.table, _, self.column = q.column.partition(".")
        self.factors = dict(q.units)
        self.prefixes = list(q.prefixes)
        self.tolerance = q.tolerance if q.tolerance is not None else tolerance


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
        # cue payload -> [(kind, index, (table, column, judge, (table, column)))]: what a
        # hit may start
        self.cue_entries = [
            [(kind, k, (src.table, src.column, self.judges[(src.table, src.column)],
                        (src.table, src.column)))
             for kind, k in entries
             for src in ([self.relations[k]] if kind == "r" else [self.quantities[k]])]
            for entries in self.cue_table]
        # per table: object columns, the other key columns, the id-kind key columns
        self.specs: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
            table: (tuple(c for c, b in binding.columns.items() if b.kind == "object"),
                    tuple(c for c, b in binding.columns.items()
                          if b.kind != "object" and c in binding.key),
                    tuple(k for k in binding.key if binding.columns[k].kind == "id"))
            for table, binding in pack.tables.items()}
        # the resolver's memo, read directly when the index resolves a column (empty: always resolve)
        memo = getattr(self.resolve, "memo", None)
        self.memo: dict[str, str | None] = memo if isinstance(memo, dict) else {}
        self._key_finders: dict[frozenset[str], _KeyFinder] = {}
        self._members: dict[tuple[str, str], bool] = {}
        self._parsed: dict[tuple[str, float], float] = {}

    @property
    def enabled(self) -> bool:
        return self.cues is not None

    # -- finding claims ----------------------------------------------------------------

    def key_mentions(self, artifact: Artifact, prose: str) -> list[_KeyMention]:
        """Occurrences of the artifact's row keys (id-kind key cells) on word boundaries."""
        return [_KeyMention(k, s, e) for s, e, k, _ in
                self._key_anchors(self.index(artifact).key_values, prose)]

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

    def check(
            self, artifact: Artifact, prose: str, mentions: Sequence[Anchor],
            hits: Sequence[Hit], sentences: Sentences, index: ArtifactIndex | None = None
    ) -> tuple[int, list[Mismatch]]:
        """(claims judged, mismatches) for one artifact. `mentions` and `hits` are what
        `EntityMatcher.anchors` finds in the prose with `cues`.

        Each cue hit is read as a claim (`_read`), its subject rows found in its sentence
        (`_narrow`: the mentions before the claim, nearest first, then those after it) and
        judged (`_verdict`); a `Claim` is built only for a mismatch. Row sets are bit masks."""
        if not hits or not prose:
            return 0, []
        if index is None:
            index = self.index(artifact)
        anchors = list(mentions)
        keys = self._key_anchors(index.key_values, prose)
        if keys:
            anchors += keys
            anchors.sort()
        starts = [a[0] for a in anchors]
        sent_starts = sentences.starts
        sent_spans = sentences.spans or [(0, len(prose))]
        judged = 0
        out: list[Mismatch] = []
        for payload, hs, he in hits:
            claim = self._read(prose, hs, he, anchors, starts, self.cue_entries[payload])
            if claim is None:
                continue
            source, cs, ce, value, obj = claim
            table, column, judge, _ = source
            si = bisect_right(sent_starts, cs) - 1
            lo, hi = sent_spans[si if si > 0 else 0]
            ents, keyed = index.lookup.get(table) or (_NO_ROWS, _NO_ROWS)
            mid = bisect_left(starts, cs)
            rows = _narrow(anchors, range(mid - 1, -1, -1), lo, hi, ents, keyed) or _narrow(
                anchors, range(bisect_left(starts, ce, mid), len(anchors)), lo, hi, ents, keyed)
            if not rows:
                continue
            verdict = self._verdict(judge, table, column, rows, value, obj, index)
            if verdict is None:
                continue
            judged += 1
            if not verdict:
                out.append(self._mismatch(artifact, prose, source, (cs, ce, value, obj),
                                          (lo, hi), rows))
        return judged, out

    def _read(self, prose: str, hs: int, he: int, anchors: Sequence[Anchor],
              starts: Sequence[int], entries: Sequence[tuple[str, int, _Source]]
              ) -> tuple[_Source, int, int, float, Anchor | None] | None:
        """The claim a cue hit with several readings starts (the first reading that makes
        one), as (source, start, end, value, object)."""
        for kind, k, src in entries:
            if kind == "r":
                i = bisect_left(starts, he)
                if i < len(anchors):
                    gap = prose[he:starts[i]]
                    if len(gap) < 80 and len(gap.split()) <= _MAX_GAP_WORDS \
                            and not _BREAK.search(gap):
                        return src, hs, anchors[i][1], 0.0, anchors[i]
                return None
            q = self.quantities[k]
            if kind == "u":
                unit = prose[hs:he]
                if unit not in q.factors:
                    continue
                m = _NUM_BEFORE.search(prose, max(0, hs - 40), hs)
                if m is None:
                    continue
                cs, ce, factor = m.start(1), he, q.factors[unit]
            else:
                m = _NUM_AFTER.match(prose, he)
                if m is None:
                    continue
                cs, ce, factor = hs, m.end(), 1.0
            j = bisect_left(starts, ce)
            if any(anchors[x][1] > cs for x in range(max(0, j - 2), j)):
                return None
            return src, cs, ce, self._parse(m.group(1), factor), None
        return None

    def _parse(self, num: str, factor: float) -> float:
        """A number stated with a unit of this factor, in the cell's unit (memoised)."""
        out = self._parsed[(num, factor)] = _parse(num) * factor
        if len(self._parsed) > 100_000:
            self._parsed.clear()
        return out

    def _verdict(self, judge: tuple[str, _Quantity | None, str | None], table: str, column: str,
                 rows: int, value: float, obj: Anchor | None,
                 index: ArtifactIndex) -> bool | None:
        """True: some subject row holds the claimed value; False: none does; None: no subject
        row holds a value to judge by."""
        kind, q, rng = judge
        picked = _bits(rows)
        if q is not None:
            nums = index.numbers(table, column)
            values = [v for r in picked if (v := nums[r]) is not None]
            return any(_close_to(value, q.tolerance, v) for v in values) if values \
                else None
        assert obj is not None
        if kind == "object":
            if obj[3]:
                return None
            if rng is not None and not self._is_member(obj[2], rng):
                return None  # "from the radiology department" is not a manufacturer claim
            inds = index.resolved_column(table, column)
            held = [ind for r in picked if (ind := inds[r]) is not None]
            return obj[2] in held if held else None
        cells = index.cells(table, column)
        return index.judge_reference(obj, [str(c) for r in picked if (c := cells[r]) is not None])

    def _is_member(self, individual: str, cls: str) -> bool:
        key = (individual, cls)
        try:
            return self._members[key]
        except KeyError:
            out = self._members[key] = self.pools.is_member(individual, cls)
            return out

    def _mismatch(self, artifact: Artifact, prose: str, source: tuple[str, str, object, object],
                  claim: tuple[int, int, float, Anchor | None],
                  sentence: tuple[int, int], rows: int) -> Mismatch:
        table, column, _, _ = source
        start, end, value, obj = claim
        if obj is not None:
            c = Claim("relation", table, column, start, end, prose[start:end], obj=_Anchor(*obj))
        else:
            c = Claim("quantity", table, column, start, end, prose[start:end], value)
        table_rows = artifact.tables[table]
        return Mismatch(c, sentence, tuple(
            (r, self.pack.row_key(table, dict(table_rows[r])), table_rows[r].get(column))
            for r in _bits(rows)))


def _close_to(value: float, tolerance: float, held: float) -> bool:
    """A stated quantity (converted into the cell's unit) matches a cell within the relative
    tolerance of the cell's value; the cell is never rounded to the claim's precision."""
    return abs(value - held) <= tolerance * abs(held) + 1e-9


def _narrow(anchors: Sequence[Anchor], side: range, lo: int, hi: int,
            ents: dict[str, int], keyed: dict[str, int]) -> int:
    """The rows the anchors of `side` inside the sentence [lo, hi) name, nearest first, each
    narrowing the rows down (one that would leave none is passed over) until one is left."""
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
_KEY_TAIL = re.compile(_KEY_END)
_WORDLIKE = re.compile(r"[\w-]+")


class _KeyFinder:
    """The occurrences of keys with these prefixes (longest first): a prefix, not after a
    word character or "-", then digits, not before a word character or "-" and one; what
    `one.finditer` finds, `one` being the regex of all the prefixes (`self.regex`).

    When every prefix is made of word characters and "-", no occurrence can start inside
    another one, so each prefix is looked for apart by `str.find` (far faster than `re`'s
    scan for a literal), its tail matched where it is found, and at a start the longest
    occurrence kept (the one the alternation, longest first, matches). Otherwise the regex."""

    __slots__ = ("prefixes", "regex", "wordlike")

    def __init__(self, prefixes: Sequence[str]) -> None:
        self.prefixes = tuple(prefixes)
        self.wordlike = all(_WORDLIKE.fullmatch(p) for p in prefixes)
        self.regex = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, prefixes)) + ")"
                                + _KEY_END)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each occurrence, in text order."""
        if not self.wordlike:
            return [m.span() for m in self.regex.finditer(text)]
        tail = _KEY_TAIL.match
        ends: dict[int, int] = {}
        for p in self.prefixes:
            at = text.find(p)
            while at >= 0:
                if at == 0 or not ((c := text[at - 1]).isalnum() or c in "_-"):
                    m = tail(text, at + len(p))
                    if m is not None and ends.get(at, -1) < (e := m.end()):
                        ends[at] = e
                at = text.find(p, at + 1)
        return sorted(ends.items())


class ArtifactIndex:
    """One artifact's rows, resolved once: the individuals its object cells name (`view`),
    per table the rows each individual (`ents`) and each key (`keys`) names as bit masks
    (both in `lookup`),
    the key values prose may cite (`key_values`); cells, resolved cells and numbers per
    column on demand."""

    __slots__ = ("artifact", "cell_columns", "checker", "ents", "key_values", "keys",
                 "lookup", "number_columns", "resolved_columns", "view")

    def __init__(self, checker: ClaimChecker, artifact: Artifact) -> None:
        self.checker = checker
        self.artifact = artifact
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

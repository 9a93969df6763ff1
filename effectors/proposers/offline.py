"""The offline proposer: deterministic repairs from the typed critique, no network.

It repairs what the error critiques name, never a locked cell of the spine (warns are noted,
not repaired):

* `value.*` on a cell          -> `synth_column` for that cell (within the expected class)
* `ri.fk_orphan`               -> point the foreign key at an existing key it references
* `ri.pk_duplicate`            -> a fresh unique key (the first row of a duplicate keeps its key)
* `ri.not_null` and other `ri.*` on a cell -> fill by the column's kind (object: synth;
                                  data: a value admitted elsewhere in the column; id: a key)
* a number (`value.range`, `ri.check`, an assertion) -> a value admitted elsewhere in the
                                  column that lies in the column's range (spine CHECKs, the
                                  critique's facets; `offline_numbers`), else the current
                                  number moved into that range; a number an assertion
                                  rejected with no other value to try is halved toward the
                                  low end of its range (fits upper bounds such as budgets)
* a foreign key on an object column (`ri.fk_orphan`) -> an existing key of the referenced
                                  table, preferring one of the class the row requires
* a row- or table-level finding -> the row's unlocked non-key cells, and every other unlocked
                                  cell no critique names (the gate rejected it for that finding)
* `prose.*`                    -> `draft_prose` for the prose field the critique names (each
                                  field within its own length band); a field is also redrafted
                                  when a repair changed an entity-column cell or a value its
                                  old text names. A locked field (admitted by PROSE_GATE while
                                  another failed) is never touched; a field the pack does not
                                  declare (`prose.undeclared_field`) is dropped

The choice of every value is seeded by (seed, attempt, artifact, cell), so the same request
always gets the same proposal and a later attempt may try another value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import Any

from pydantic import ValidationError

from effectors.critique import critique_sort_key
from effectors.proposers.offline_numbers import (
    Interval,
    column_ranges,
    into_range,
    parse_check,
    parse_described,
    shrink,
)
from effectors.prose.matcher import EntityMatcher
from effectors.prose_gate import field_band
from effectors.scaffold import (
    draft_prose,
    foreign_keys,
    fresh_key,
    pick_reference,
    seeded_index,
    synth_column,
)
from harness.learning.lessons import Advice
from harness.models import (
    PROSE_FIELD,
    Artifact,
    Cell,
    CellRef,
    Critique,
    Proposal,
    ProposalRequest,
)
from harness.pack import Pack
from harness.pools import Pools

__all__ = ["OfflineProposer"]


class OfflineProposer:
    """Deterministic repairs from the critique using the pools and the scaffold tools."""

    name = "offline"

    def __init__(self, pack: Pack, pools: Pools, seed: int = 0) -> None:
        self.pack = pack
        self.pools = pools
        self.seed = seed
        self.matcher = EntityMatcher(pools)
        self.fks = foreign_keys(pack)
        self.ranges = column_ranges(pack)
        # the prose fields it drafts, each with its length band (the gate's own)
        self.fields = [(f, field_band(pack, f)) for f in pack.prose_fields() if f.enabled]

    def propose(self, request: ProposalRequest) -> Proposal:
        return _Repair(self, request).run()


def _advice(request: ProposalRequest) -> list[tuple[str, Advice]]:
    """The structured advice of the lessons in context (malformed advice is skipped: a
    lesson is advice, never a reason to fail)."""
    out = []
    for hint in request.lessons:
        if hint.advice is None:
            continue
        try:
            out.append((hint.key, Advice.model_validate(hint.advice)))
        except ValidationError:
            continue
    return out


class _Repair:
    """One proposal's worth of repairs on a mutable copy of the candidate."""

    def __init__(self, owner: OfflineProposer, request: ProposalRequest) -> None:
        self.o = owner
        self.cand = request.candidate
        self.critiques = sorted(request.critique.critiques, key=critique_sort_key)
        self.locked = dict(request.critique.spine.locked)
        self.seed = f"{owner.seed}:{request.attempt}"
        self.tables = {t: [dict(r) for r in rows] for t, rows in self.cand.tables.items()}
        self.changed: dict[CellRef, Cell] = {}  # cell -> value before the repair
        self.notes: list[str] = []
        self.tool_calls: list[str] = []
        self.named = {ref for c in self.critiques if (ref := c.location.cell()) is not None}
        self.advice = _advice(request)
        self._pools: dict[tuple[str, str], tuple[Counter[Any], Counter[Any]]] = {}
        self._free: set[CellRef] = set()
        self.locked_prose = dict(request.critique.spine.prose)
        self.dropped: set[str] = set()  # undeclared prose fields, left out of the proposal

    # -- bookkeeping -------------------------------------------------------------------
    def artifact(self, texts: dict[str, str] | None = None) -> Artifact:
        """The candidate with the repaired tables and `texts` (field -> text) replacing its
        prose fields; fields in `self.dropped` left out."""
        fields = {n: t for n, t in self.cand.prose_fields.items() if n not in self.dropped}
        prose = self.cand.prose
        for name, text in (texts or {}).items():
            if name == PROSE_FIELD:
                prose = text
            else:
                fields[name] = text
        return Artifact.model_validate(
            {"id": self.cand.id, "tables": self.tables, "prose": prose, "prose_fields": fields,
             "meta": self.cand.meta}
        )

    def exists(self, ref: CellRef) -> bool:
        rows = self.tables.get(ref.table)
        return rows is not None and ref.row < len(rows) and ref.table in self.o.pack.tables \
            and ref.column in self.o.pack.tables[ref.table].columns

    def set(self, ref: CellRef, value: Cell, why: str) -> None:
        row = self.tables[ref.table][ref.row]
        old = row.get(ref.column)
        if old == value and type(old) is type(value):
            return
        self.changed.setdefault(ref, old)
        if ref in self._free:  # it was counted as a value no repair touched: not any more
            self._free.discard(ref)
            pools = self._pools.get((ref.table, ref.column))
            if pools is not None and old is not None:
                free, k = pools[1], (type(old).__name__, old)
                free[k] -= 1
                if free[k] <= 0:
                    del free[k]
        row[ref.column] = value
        self.notes.append(f"{ref}: {old!r} -> {value!r} ({why})")

    # -- the run -----------------------------------------------------------------------
    def run(self) -> Proposal:
        redraft: set[str] = set()
        duplicates: list[Critique] = []
        cell_less: list[Critique] = []
        for c in self.critiques:
            if c.severity != "error":
                self.notes.append(f"{c.code} ({c.severity}): not repaired")
            elif c.code == "prose.undeclared_field":
                self.dropped.add(c.location.field or str(c.observed))
                self.notes.append(f"prose field {c.location.field!r} dropped (not declared)")
            elif c.code.startswith("prose."):
                redraft.add(c.location.field or PROSE_FIELD)
            elif c.code == "ri.pk_duplicate":
                duplicates.append(c)
            elif c.code == "ri.fk_orphan" and c.location.cell() is None:
                self.repair_row_fks(c)
            elif not c.code.startswith(("value.", "ri.")):
                self.notes.append(f"{c.code}: not a finding the offline proposer repairs")
            elif (ref := c.location.cell()) is not None:
                self.repair_cell(ref, c.code, c.expected)
            else:
                cell_less.append(c)
        self.repair_duplicates(duplicates)
        for c in cell_less:
            for ref in self.row_targets(c):
                self.repair_cell(ref, c.code, None)
        if cell_less:
            self.repair_implied(cell_less[0].code)
        self.apply_reference_lessons()
        self.restore_locked()
        return Proposal(
            artifact=self.artifact(self.redraft(redraft)),
            proposer=self.o.name,
            notes=tuple(self.notes) or ("nothing to repair",),
            tool_calls=tuple(self.tool_calls),
        )

    def open_cells(self, table: str, row: int) -> list[CellRef]:
        """The row's unlocked, unrepaired, non-key cells."""
        binding = self.o.pack.tables[table]
        refs = [CellRef(table=table, row=row, column=col)
                for col in binding.columns if col not in binding.key]
        return [r for r in refs if str(r) not in self.locked and r not in self.changed]

    def row_targets(self, c: Critique) -> list[CellRef]:
        """A row-level finding: the row's cells the gates did not admit."""
        loc = c.location
        if loc.table is None or loc.row is None or loc.table not in self.o.pack.tables:
            return []
        if loc.row >= len(self.tables.get(loc.table, [])):
            self.notes.append(f"{c.code}: {loc.table}[{loc.row}] does not exist")
            return []
        return self.open_cells(loc.table, loc.row)

    def repair_implied(self, code: str) -> None:
        """Cells no critique names but the gates did not admit (e.g. the cells an assertion
        rejected for a finding located on another row) get the same repair by kind."""
        for table in sorted(self.tables):
            if table not in self.o.pack.tables:
                continue
            for row in range(len(self.tables[table])):
                for ref in self.open_cells(table, row):
                    if ref not in self.named and self.exists(ref) and not self.sound_fk(ref):
                        self.repair_cell(ref, f"implied by {code}", None)

    def sound_fk(self, ref: CellRef) -> bool:
        """A foreign key naming a row that exists: nothing to repair (an open cell is not
        a wrong one: the spine leaves references open that no gate has judged yet)."""
        target = self.o.fks.get((ref.table, ref.column))
        if target is None:
            return False
        keys = {r.get(target[1]) for r in self.tables.get(target[0], [])}
        return self.tables[ref.table][ref.row].get(ref.column) in keys

    def repair_cell(self, ref: CellRef, why: str, expected: str | None) -> None:
        if str(ref) in self.locked:
            self.notes.append(f"{ref}: locked, left as it is ({why})")
            return
        if not self.exists(ref):
            self.notes.append(f"{ref}: no such cell ({why})")
            return
        kind = self.o.pack.tables[ref.table].columns[ref.column].kind
        if kind == "object" and why == "ri.fk_orphan" and (ref.table, ref.column) in self.o.fks:
            self.point_fk(ref, why, expected)  # a key of an existing row, not any individual
        elif kind == "object":
            self.synth(ref, why, expected)
        elif kind == "class":
            self.repair_class(ref, why)
        elif kind in ("data", "text"):  # free text: a value admitted elsewhere in the column
            self.fill_data(ref, why, expected)
        elif (ref.table, ref.column) in self.o.fks or why == "ri.fk_orphan":
            self.point_fk(ref, why, expected)
        else:
            rows = self.tables[ref.table]
            key = fresh_key([r.get(ref.column) for r in rows], rows[ref.row].get(ref.column))
            self.set(ref, key, why)

    def redraft(self, named: Collection[str]) -> dict[str, str]:
        """The prose fields to redraft (those the critiques name, stale ones, all with a
        `redraft_prose` lesson; never a locked one), drafted from the repaired tables."""
        texts: dict[str, str] = {}
        lesson: bool | None = None  # asked once, only when it decides (it leaves a note)
        for spec, band in self.o.fields:
            name = spec.name
            if name in self.locked_prose:
                continue
            if not (name in named or self.prose_is_stale(self.cand.text(name))):
                if lesson is None:
                    lesson = self.prose_lesson()
                if not lesson:
                    continue
            self.tool_calls.append("draft_prose")
            words = None if band is None or name == PROSE_FIELD else (band.low, band.high)
            texts[name] = draft_prose(self.o.pack, self.o.pools, self.artifact(),
                                      matcher=self.o.matcher, words=words)
            self.notes.append(
                "prose redrafted from the tables" if name == PROSE_FIELD
                else f"prose field {name!r} redrafted from the tables"
            )
        return texts

    def prose_lesson(self) -> bool:
        """A `redraft_prose` lesson: any repair this attempt redrafts the prose too."""
        if self.changed and any(a.kind == "redraft_prose" for _k, a in self.advice):
            self.notes.append("lesson: redraft the prose in the same attempt as value repairs")
            return True
        return False

    def lesson_value(self, ref: CellRef) -> Cell | None:
        """The value a `prefer_value` lesson advises for this cell (its row's class matching
        the lesson's), unless the cell already holds it (then it did not help here)."""
        column = f"{ref.table}.{ref.column}"
        row = self.tables[ref.table][ref.row]
        for key, a in self.advice:
            if a.kind != "prefer_value" or a.column != column or a.value is None:
                continue
            if a.when_column is not None and row.get(a.when_column) != a.when_value:
                continue
            if row.get(ref.column) != a.value:
                self.notes.append(f"lesson {key[:8]}: {column} = {a.value!r} first")
                return a.value
        return None

    def apply_reference_lessons(self) -> None:
        """`check_references` lessons: when this attempt repairs anything, dangling
        references in the lesson's column are repaired now, not after the RI gate finds
        them on the next attempt."""
        if not self.changed:
            return
        for key, a in self.advice:
            if a.kind != "check_references" or a.column is None:
                continue
            table, _, column = a.column.partition(".")
            target = self.o.fks.get((table, column))
            if target is None or table not in self.tables:
                continue
            keys = {r.get(target[1]) for r in self.tables.get(target[0], [])}
            for i, row in enumerate(self.tables[table]):
                ref = CellRef(table=table, row=i, column=column)
                if row.get(column) not in keys and str(ref) not in self.locked:
                    self.point_fk(ref, f"lesson {key[:8]}: check references", None)

    def repair_class(self, ref: CellRef, why: str) -> None:
        """A class cell: the replacement of a deprecated class, else the nearest valid class
        under the column's root (the value gate's repair hint, `Pools.nearest_classes`)."""
        col = self.o.pack.tables[ref.table].columns[ref.column]
        pools = self.o.pools
        root = pools.root_class(col.root or "", self.o.pack.config.ontology.namespace)
        raw = self.tables[ref.table][ref.row].get(ref.column)
        if root is None:
            self.notes.append(f"{ref}: the column's root is not a class ({why})")
            return
        cls = pools.resolve_class(raw)
        valid = set(pools.valid_classes(root))
        info = pools.classes.get(cls) if cls is not None else None
        choice = next((r for r in (info.replaced_by if info else ()) if r in valid), None)
        near = pools.nearest_classes(str(raw or ""), root)
        choice = choice or (near[0] if near else min(
            valid, key=lambda n: (len(pools.classes[n].superclasses), n), default=None))
        if choice is None or choice == cls:
            self.notes.append(f"{ref}: no valid class under {root} found ({why})")
            return
        self.set(ref, choice, why + f", nearest class under {root}")

    def synth(self, ref: CellRef, why: str, expected: str | None) -> None:
        advised = self.lesson_value(ref)
        if advised is not None:
            self.set(ref, advised, why + ", a lesson's value")
            return
        within = expected if expected in self.o.pools.classes else None
        self.tool_calls.append("synth_column")
        values = synth_column(self.o.pack, self.o.pools, self.artifact(), ref.table, ref.column,
                              [ref.row], seed=self.seed, within=within)
        if ref.row in values:
            self.set(ref, values[ref.row], why + (f", within {within}" if within else ""))
        else:
            self.notes.append(f"{ref}: no admissible value found ({why})")

    def column_pools(self, table: str, column: str) -> tuple[Counter[Any], Counter[Any]]:
        """(locked values, values of cells no critique names and no repair changed) of a
        column, counted once per proposal and kept current as cells change: filling a
        column is linear, not a scan of the column per cell (a 10,000-row table)."""
        key = (table, column)
        if key not in self._pools:
            locked: Counter[Any] = Counter()
            free: Counter[Any] = Counter()
            for i, r in enumerate(self.tables[table]):
                v = r.get(column)
                if v is None:
                    continue
                ref = CellRef(table=table, row=i, column=column)
                if str(ref) in self.locked:
                    locked[(type(v).__name__, v)] += 1
                elif ref not in self.named and ref not in self.changed:
                    free[(type(v).__name__, v)] += 1
                    self._free.add(ref)
            self._pools[key] = (locked, free)
        return self._pools[key]

    def fill_data(self, ref: CellRef, why: str, expected: str | None = None) -> None:
        """A literal admitted elsewhere in the column (the most common locked value), else the
        most common value of a cell no critique names; for a number, only one inside the
        column's range, else the number itself moved into the range (`repair_number`)."""
        locked, free = self.column_pools(ref.table, ref.column)
        own = self.tables[ref.table][ref.row].get(ref.column)
        mine = (type(own).__name__, own) if ref in self._free and own is not None else None
        pool = locked or (free - Counter([mine]) if mine else free)
        interval = self.number_range(ref, why, expected)
        if interval is not None:
            pool = Counter({k: n for k, n in pool.items() if _inside(k[1], interval)})
        if pool:
            (_, value), _ = min(pool.items(), key=lambda kv: (-kv[1], kv[0][0], str(kv[0][1])))
            if value != own or type(value) is not type(own):
                self.set(ref, value, why)
                return
        if not self.repair_number(ref, own, why, interval):
            self.notes.append(f"{ref}: no value to copy for a data cell ({why})")

    def number_range(self, ref: CellRef, why: str, expected: str | None) -> Interval | None:
        """The interval a number in this cell must lie in, as far as the proposer can read
        it (the spine's CHECKs, and the critique's CHECK expression or facets)."""
        interval = self.o.ranges.get((ref.table, ref.column))
        got = parse_check(expected, ref.column) if why == "ri.check" else \
            parse_described(expected) if why == "value.range" else None
        return got.meet(interval) if got is not None else interval

    def repair_number(self, ref: CellRef, own: Cell, why: str,
                      interval: Interval | None) -> bool:
        """Move a number into its range; a number inside it that an assertion (or another
        row's finding) rejected is halved toward the range's low end. False: no number, or
        nothing new to try."""
        if isinstance(own, bool) or not isinstance(own, int | float | str):
            return False
        try:
            number = float(own)
        except ValueError:
            return False
        if interval is not None and not interval.contains(number):
            new = into_range(number, interval)
            how = "moved into its range"
        elif why in ("value.range", "ri.check", "ri.type", "ri.not_null"):
            return False  # in range by what the proposer can read: nothing better to try
        else:
            new = shrink(number, interval)
            how = "halved toward the low end of its range"
        if new is None or new == number:
            return False
        whole = (interval is not None and interval.integer) or (
            isinstance(own, int) and float(new).is_integer())
        value: Cell = int(new) if whole else round(new, 6)
        self.set(ref, value, f"{why}, {how}")
        return True

    def reference_of(self, ref: CellRef, expected: str | None) -> tuple[str, str] | None:
        if expected and "." in expected:
            table, _, column = expected.partition(".")
            if table in self.o.pack.tables and column in self.o.pack.tables[table].columns:
                return table, column
        return self.o.fks.get((ref.table, ref.column))

    def point_fk(self, ref: CellRef, why: str, expected: str | None) -> None:
        target = self.reference_of(ref, expected)
        if target is None:
            self.notes.append(f"{ref}: no referenced table known ({why})")
            return
        value = self.admissible_reference(ref, target)
        if value is None:
            value = pick_reference(self.artifact(), target[0], target[1], self.seed, ref)
        if value is None:
            self.notes.append(f"{ref}: {target[0]} has no keys to point at ({why})")
            return
        self.set(ref, value, f"{why}, -> {target[0]}.{target[1]}")

    def admissible_reference(self, ref: CellRef, target: tuple[str, str]) -> Cell:
        """For an object column: an existing key of `target` naming an individual of the
        class the row requires of this column (None: not an object column, or none fits)."""
        binding = self.o.pack.tables[ref.table]
        col = binding.columns[ref.column]
        if col.kind != "object" or not col.property:
            return None
        row = self.tables[ref.table][ref.row]
        values = {c.property: self.o.pools.resolve(row.get(name))
                  for name, c in binding.columns.items()
                  if c.kind == "object" and c.property and name != ref.column}
        need = self.o.pools.required_classes(binding.row_class, values).get(col.property)
        keys = sorted({str(k) for r in self.tables.get(target[0], [])
                       if (k := r.get(target[1])) is not None})
        fits = [k for k in keys if (ind := self.o.pools.resolve(k)) is not None
                and (need is None or self.o.pools.is_member(ind, need))]
        if not fits:
            return None
        return fits[seeded_index(len(fits), target[0], target[1], self.seed, ref)]

    def repair_row_fks(self, c: Critique) -> None:
        """A row-level orphan: repair each foreign key of the row that names no row."""
        loc = c.location
        if loc.table is None or loc.row is None:
            self.notes.append(f"{c.code}: no row named; nothing repaired")
            return
        for (table, column), (rt, rc) in sorted(self.o.fks.items()):
            ref = CellRef(table=table, row=loc.row, column=column)
            if table != loc.table or not self.exists(ref):
                continue
            keys = {r.get(rc) for r in self.tables.get(rt, [])}
            if self.tables[table][loc.row].get(column) not in keys:
                self.repair_cell(ref, c.code, None)

    def repair_duplicates(self, critiques: list[Critique]) -> None:
        """Give flagged duplicates fresh keys; the first row holding a key keeps it."""
        flagged: dict[tuple[str, str], set[int]] = {}
        for c in critiques:
            loc = c.location
            if loc.table is None or loc.row is None or loc.table not in self.o.pack.tables:
                continue
            binding = self.o.pack.tables[loc.table]
            column = loc.column or next(
                (k for k in binding.key if binding.columns[k].kind == "id"), binding.key[0])
            flagged.setdefault((loc.table, column), set()).add(loc.row)
        for (table, column), rows_flagged in sorted(flagged.items()):
            rows = self.tables.get(table, [])
            for i in sorted(rows_flagged):
                ref = CellRef(table=table, row=i, column=column)
                if i >= len(rows) or str(ref) in self.locked:
                    continue
                value = rows[i].get(column)
                sharers = [j for j, r in enumerate(rows) if j != i and r.get(column) == value]
                keeps_it = sharers and all(j in rows_flagged for j in sharers) and i < min(sharers)
                if value is not None and (not sharers or keeps_it):
                    continue
                self.set(ref, fresh_key([r.get(column) for r in rows], value), "ri.pk_duplicate")

    def restore_locked(self) -> None:
        """Defensive: whatever happened above, every locked cell keeps its locked value."""
        for ref in list(self.changed):
            if str(ref) in self.locked:
                self.tables[ref.table][ref.row][ref.column] = self.locked[str(ref)]
                del self.changed[ref]

    def prose_is_stale(self, text: str) -> bool:
        """Did a repair change an entity-column cell or a value the old `text` mentions?"""
        if not self.changed:
            return False
        entity_columns = set(self.o.pack.config.prose.entity_columns)
        if any(f"{ref.table}.{ref.column}" in entity_columns for ref in self.changed):
            return True
        mentioned = self.o.matcher.mentioned(text)
        return any(self.o.pools.resolve(old) in mentioned for old in self.changed.values())


def _inside(value: object, interval: Interval) -> bool:
    """Is a pooled literal a number inside `interval`?"""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return False
    try:
        return interval.contains(float(value))
    except ValueError:
        return False

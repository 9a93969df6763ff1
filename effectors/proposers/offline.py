"""The offline proposer: deterministic repairs from the typed critique, no network.

It repairs exactly the cells the critiques name, never a locked cell of the spine:

* `value.*` on a cell          -> `synth_column` for that cell (within the expected class)
* `ri.fk_orphan`               -> point the foreign key at an existing key it references
* `ri.pk_duplicate`            -> a fresh unique key (the first row of a duplicate keeps its key)
* `ri.not_null` and other `ri.*` on a cell -> fill by the column's kind
* a row-level `value.*`/`ri.*` -> the row's unlocked object and data cells
* `prose.*`                    -> `draft_prose`; the prose is also redrafted when a repair
                                  changed an entity-column cell or a value the old prose names

The choice of every value is seeded by (seed, attempt, artifact, cell), so the same request
always gets the same proposal and a later attempt may try another value.
"""

from __future__ import annotations

from collections import Counter

from effectors.critique import critique_sort_key
from effectors.prose_gate import EntityMatcher
from effectors.scaffold import draft_prose, foreign_keys, fresh_key, pick_reference, synth_column
from harness.models import Artifact, Cell, CellRef, Critique, Proposal, ProposalRequest
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

    def propose(self, request: ProposalRequest) -> Proposal:
        return _Repair(self, request).run()


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
        self.flagged = {ref for c in self.critiques if (ref := c.location.cell()) is not None}

    # -- bookkeeping -------------------------------------------------------------------
    def artifact(self, prose: str | None = None) -> Artifact:
        return Artifact.model_validate(
            {"id": self.cand.id, "tables": self.tables,
             "prose": self.cand.prose if prose is None else prose, "meta": self.cand.meta}
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
        row[ref.column] = value
        self.notes.append(f"{ref}: {old!r} -> {value!r} ({why})")

    # -- the run -----------------------------------------------------------------------
    def run(self) -> Proposal:
        redraft = False
        duplicates: list[Critique] = []
        for c in self.critiques:
            if c.code.startswith("prose."):
                redraft = True
            elif c.code == "ri.pk_duplicate":
                duplicates.append(c)
            elif c.code == "ri.fk_orphan" and c.location.cell() is None:
                self.repair_row_fks(c)
            elif c.code.startswith(("value.", "ri.")):
                for ref in self.targets(c):
                    self.repair_cell(ref, c)
        self.repair_duplicates(duplicates)
        self.restore_locked()
        prose = None
        if self.o.pack.config.prose.enabled and (redraft or self.prose_is_stale()):
            self.tool_calls.append("draft_prose")
            prose = draft_prose(self.o.pack, self.o.pools, self.artifact(), matcher=self.o.matcher)
            self.notes.append("prose redrafted from the tables")
        return Proposal(
            artifact=self.artifact(prose),
            proposer=self.o.name,
            notes=tuple(self.notes) or ("nothing to repair",),
            tool_calls=tuple(self.tool_calls),
        )

    def targets(self, c: Critique) -> list[CellRef]:
        """The cells a critique asks to repair: its cell, or a row's object and data cells."""
        loc = c.location
        if (ref := loc.cell()) is not None:
            return [ref]
        if loc.table is None or loc.row is None or loc.table not in self.o.pack.tables:
            self.notes.append(f"{c.code}: no cell or row named; nothing repaired")
            return []
        binding = self.o.pack.tables[loc.table]
        return [CellRef(table=loc.table, row=loc.row, column=col)
                for col, b in binding.columns.items() if b.kind != "id"]

    def repair_cell(self, ref: CellRef, c: Critique) -> None:
        if str(ref) in self.locked:
            self.notes.append(f"{ref}: locked, left as it is ({c.code})")
            return
        if not self.exists(ref):
            self.notes.append(f"{ref}: no such cell ({c.code})")
            return
        kind = self.o.pack.tables[ref.table].columns[ref.column].kind
        if kind == "object":
            self.synth(ref, c)
        elif kind == "data":
            self.fill_data(ref, c)
        elif (ref.table, ref.column) in self.o.fks or c.code == "ri.fk_orphan":
            self.point_fk(ref, c)
        else:
            rows = self.tables[ref.table]
            key = fresh_key([r.get(ref.column) for r in rows], rows[ref.row].get(ref.column))
            self.set(ref, key, c.code)

    def synth(self, ref: CellRef, c: Critique) -> None:
        within = c.expected if c.expected in self.o.pools.classes else None
        self.tool_calls.append("synth_column")
        values = synth_column(self.o.pack, self.o.pools, self.artifact(), ref.table, ref.column,
                              [ref.row], seed=self.seed, within=within)
        if ref.row in values:
            self.set(ref, values[ref.row], c.code + (f", within {within}" if within else ""))
        else:
            self.notes.append(f"{ref}: no admissible value found ({c.code})")

    def fill_data(self, ref: CellRef, c: Critique) -> None:
        """A literal the other rows agree on (most common unflagged value of the column)."""
        rows = self.tables[ref.table]
        pool = Counter(
            (type(v).__name__, v) for i, r in enumerate(rows)
            if i != ref.row and (v := r.get(ref.column)) is not None
            and CellRef(table=ref.table, row=i, column=ref.column) not in self.flagged
        )
        if not pool:
            self.notes.append(f"{ref}: no value to copy for a data cell ({c.code})")
            return
        (_, value), _ = min(pool.items(), key=lambda kv: (-kv[1], kv[0][0], str(kv[0][1])))
        self.set(ref, value, c.code)

    def reference_of(self, ref: CellRef, c: Critique) -> tuple[str, str] | None:
        if c.expected and "." in c.expected:
            table, _, column = c.expected.partition(".")
            if table in self.tables or table in self.o.pack.tables:
                return table, column
        return self.o.fks.get((ref.table, ref.column))

    def point_fk(self, ref: CellRef, c: Critique) -> None:
        target = self.reference_of(ref, c)
        if target is None:
            self.notes.append(f"{ref}: no referenced table known ({c.code})")
            return
        value = pick_reference(self.artifact(), target[0], target[1], self.seed, ref)
        if value is None:
            self.notes.append(f"{ref}: {target[0]} has no keys to point at ({c.code})")
            return
        self.set(ref, value, f"{c.code}, -> {target[0]}.{target[1]}")

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
                self.repair_cell(ref, c)

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

    def prose_is_stale(self) -> bool:
        """Did a repair change an entity-column cell or a value the old prose mentions?"""
        if not self.changed:
            return False
        entity_columns = set(self.o.pack.config.prose.entity_columns)
        if any(f"{ref.table}.{ref.column}" in entity_columns for ref in self.changed):
            return True
        mentioned = self.o.matcher.mentioned(self.cand.prose)
        return any(self.o.pools.resolve(old) in mentioned for old in self.changed.values())

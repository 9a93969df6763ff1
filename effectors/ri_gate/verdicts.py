"""Turning a gate's findings (`Hit`s) about one artifact into its `Verdict`: critiques with
locations and row keys, and the cells the gate does not admit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from effectors.ri_gate.ddl import Schema
from effectors.ri_gate.staging import Hit, safe_text
from harness.models import Artifact, Cell, CellRef, Critique, Location, Severity, Verdict
from harness.pack import Pack

__all__ = ["verdict"]


class RiGate(Protocol):
    """What a verdict needs of the gate that found the hits."""

    @property
    def name(self) -> str: ...

    @property
    def pack(self) -> Pack: ...

    @property
    def schema(self) -> Schema: ...



def _key(gate: RiGate, table: str, row: dict[str, Cell]) -> str:
    if table in gate.pack.tables:
        try:
            return safe_text(gate.pack.row_key(table, dict[str, object](row)), 120)
        except ValueError:  # a key cell too large to render; fall through
            key_cols: Sequence[str] = gate.pack.tables[table].key
    else:
        key_cols = gate.schema.table(table).primary_key()
    return safe_text("/".join(safe_text(row.get(k), 120) for k in key_cols), 120)


def _cell(gate: RiGate, artifact: Artifact, ref: str) -> CellRef | None:
    try:
        parsed = CellRef.parse(ref)
    except ValueError:
        return None
    if parsed.table not in gate.schema.names:
        return None
    table, row, column = parsed.table, parsed.row, parsed.column
    rows = artifact.tables.get(table, [])
    if row >= len(rows) or column not in rows[row]:
        return None
    return CellRef(table=table, row=row, column=column)


def _critique(gate: RiGate, artifact: Artifact, h: Hit) -> tuple[Critique, list[CellRef]]:
    row = None
    if h.table is not None and h.row is not None:
        row = artifact.tables.get(h.table, [])[h.row]
    observed = h.observed
    if observed is None and row is not None and h.columns:
        observed = safe_text("/".join(safe_text(row.get(c)) for c in h.columns))
    where = ""
    if h.table is not None and h.row is not None and row is not None:
        where = f"{h.table}[{h.row}] ({_key(gate, h.table, row)}): "
    loc = Location(
        table=h.table, row=h.row if row is not None else None,
        key=_key(gate, h.table, row) if h.table is not None and row is not None else None,
        column=h.columns[0] if len(h.columns) == 1 else None,
    )
    severity: Severity = "warn" if h.severity == "warn" else (
        "info" if h.severity == "info" else "error")
    crit = Critique(code=h.code, severity=severity, gate=gate.name, location=loc,
                    observed=observed, expected=h.expected, evidence=h.evidence,
                    fix_hint=h.fix_hint, message=safe_text(where + h.message, 1000))
    cells: list[CellRef] = []
    if severity == "error" and h.reject:
        if row is not None and h.table is not None and h.row is not None:
            cells += [CellRef(table=h.table, row=h.row, column=c)
                      for c in h.columns if c in row]  # a missing cell has no ref
        cells += [c for c in (_cell(gate, artifact, r) for r in h.extra_cells) if c]
    return crit, cells


def verdict(gate: RiGate, artifact: Artifact, hits: list[Hit], rows: int) -> Verdict:
    """The verdict on `artifact` (`rows`: its rows in the spine's tables)."""
    critiques: list[Critique] = []
    rejected: dict[CellRef, None] = {}
    for h in hits:
        crit, cells = _critique(gate, artifact, h)
        critiques.append(crit)
        rejected.update(dict.fromkeys(cells))
    return Verdict(
        gate=gate.name, artifact_id=artifact.id, critiques=tuple(critiques),
        rejected=tuple(rejected),
        metrics={
            "rows": float(rows),
            "ri_violations": float(sum(c.severity == "error" for c in critiques)),
            "ri_warnings": float(sum(c.severity == "warn" for c in critiques)),
        },
    )

"""The artifact's canonical table applied: what the value gate resolved is what every later
gate judges and what COMMIT writes.

VALUE_GATE resolves each bound cell (label, alternative label, alias, normalised spelling)
to one entity and reports the cells whose canonical form differs from the raw text as
`Verdict.canonical`. `apply_canonical` writes those forms back into the candidate; the raw
values stay in the verdict (and so in the trace), nothing the proposer wrote is lost.
Pure; imports only harness.models.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.models import Artifact, CanonicalCell, Cell, CellRef

__all__ = ["CanonicalError", "apply_canonical", "raw_values"]


class CanonicalError(ValueError):
    """A canonical cell that names no cell of the artifact, or whose raw value is not there."""


def apply_canonical(artifact: Artifact, cells: Iterable[CanonicalCell]) -> Artifact:
    """The same artifact with each listed cell replaced by its canonical value.

    Every listed cell must exist and still hold its `raw` value (the verdict was computed
    on this artifact); anything else is a CanonicalError, never a silent skip. No cells: the
    artifact itself is returned."""
    cells = tuple(cells)
    if not cells:
        return artifact
    tables = {name: [dict(row) for row in rows] for name, rows in artifact.tables.items()}
    for c in cells:
        try:
            ref = CellRef.parse(c.cell)
        except ValueError as e:
            raise CanonicalError(str(e)) from None
        rows = tables.get(ref.table)
        if rows is None or ref.row >= len(rows) or ref.column not in rows[ref.row]:
            raise CanonicalError(f"canonical cell {c.cell!r} is not a cell of {artifact.id!r}")
        held = rows[ref.row][ref.column]
        if held != c.raw or type(held) is not type(c.raw):
            raise CanonicalError(
                f"canonical cell {c.cell!r} holds {held!r}, not the raw value {c.raw!r}"
            )
        rows[ref.row][ref.column] = c.value
    return Artifact(id=artifact.id, tables=tables, prose=artifact.prose,
                    prose_fields=artifact.prose_fields, meta=artifact.meta)


def raw_values(cells: Iterable[CanonicalCell]) -> dict[str, Cell]:
    """str(CellRef) -> the raw value the proposer wrote, for provenance and `trace why`."""
    return {c.cell: c.raw for c in cells}

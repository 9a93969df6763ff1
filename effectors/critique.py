"""The critique effector: turns a failed cycle's verdicts into what the proposer gets next.

* `build_report` - the failed gate's findings (errors and warns, in a deterministic order)
  and the spine: every cell no verdict rejected and no error critique names.
* `check_locked` - `proposal.locked_cell` critiques for a proposal that changed or dropped
  a locked cell (the loop rejects such a proposal before any gate sees it).
* `check_locked_prose` - `proposal.locked_prose` critiques for a proposal that changed a prose
  field PROSE_GATE admitted while it failed another field of the same artifact.

Fail closed: a crashed verdict admitted nothing, so its candidate's spine is empty. A
critique that names a row or table but no column unlocks nothing by itself: the gate says
which cells it did not admit through `Verdict.rejected`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.models import (
    PROSE_FIELD,
    Artifact,
    Cell,
    CellRef,
    Critique,
    CritiqueReport,
    Effector,
    Location,
    Spine,
    Verdict,
)
from harness.pack import Pack

__all__ = [
    "Critic",
    "build_report",
    "check_locked",
    "check_locked_prose",
    "critique_sort_key",
    "parse_cell_ref",
]

_SEVERITY_ORDER = {"error": 0, "warn": 1, "info": 2}


def critique_sort_key(c: Critique) -> tuple[object, ...]:
    """Errors first, then by gate, code, table, row, column, span, observed."""
    loc = c.location
    return (
        _SEVERITY_ORDER[c.severity],
        c.gate,
        c.code,
        loc.table or "",
        -1 if loc.row is None else loc.row,
        loc.column or "",
        loc.span or (-1, -1),
        c.observed or "",
        c.expected or "",
        c.message,
    )


def build_report(
    verdicts: Sequence[Verdict],
    candidate: Artifact,
    attempt: int,
    unjudged: Mapping[str, frozenset[tuple[str, str]]] | None = None,
) -> CritiqueReport:
    """The critique report for `candidate` after the gates returned `verdicts`.

    `unjudged`: per gate, the (table, column)s it does not judge (VALUE_GATE does not judge
    foreign keys). Such a cell is locked only when a gate that judges it admitted it: after
    a value failure, a dangling reference the RI gate has not seen yet stays open."""
    mine = [v for v in verdicts if v.artifact_id == candidate.id]
    failed = [v for v in mine if not v.passed]
    source = failed or mine
    gate = failed[0].gate if failed else (mine[-1].gate if mine else "harness")
    critiques = sorted(
        (c for v in source for c in v.critiques if c.severity in ("error", "warn")),
        key=critique_sort_key,
    )
    if any(v.crashed for v in mine):
        return CritiqueReport(gate=gate, attempt=attempt, critiques=tuple(critiques), spine=Spine())
    unlocked: set[CellRef] = {ref for v in mine for ref in v.rejected}
    unlocked |= {
        cell for v in mine for c in v.critiques
        if c.severity == "error" and (cell := c.location.cell()) is not None
    }
    if unjudged and mine:
        blind = frozenset.intersection(*(unjudged.get(v.gate, frozenset()) for v in mine))
        if blind:  # a CellRef only for the cells no gate judged
            unlocked |= {
                CellRef(table=t, row=i, column=c)
                for t, rows in candidate.tables.items()
                for i, row in enumerate(rows)
                for c in row
                if (t, c) in blind
            }
    return CritiqueReport(
        gate=gate,
        attempt=attempt,
        critiques=tuple(critiques),
        spine=Spine.of(candidate, unlocked, _admitted_prose(mine, candidate)),
    )


def _admitted_prose(verdicts: Sequence[Verdict], candidate: Artifact) -> dict[str, str]:
    """After PROSE_GATE failed some prose fields, the fields it admitted (kept verbatim by the
    next proposal); empty when it failed none, or when `prose` is the only field."""
    failed = {
        c.location.field or PROSE_FIELD
        for v in verdicts
        if v.gate == Effector.PROSE_GATE.value and not v.passed
        for c in v.critiques
        if c.severity == "error"
    }
    if not failed:
        return {}
    return {name: text for name, text in candidate.texts().items() if name not in failed}


def parse_cell_ref(key: str) -> CellRef | None:
    """`CellRef.parse`, or None for a key that is not a cell reference."""
    try:
        return CellRef.parse(key)
    except ValueError:
        return None


def _same(a: Cell, b: Cell) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return type(a) is type(b) and a == b  # 0 and 0.0 differ: a locked int stays an int


def _lookup(artifact: Artifact, ref: CellRef) -> tuple[bool, Cell]:
    rows = artifact.tables.get(ref.table)
    if rows is None or ref.row >= len(rows) or ref.column not in rows[ref.row]:
        return False, None
    return True, rows[ref.row][ref.column]


def check_locked(spine: Spine, proposal: Artifact) -> list[Critique]:
    """One `proposal.locked_cell` critique per locked cell changed or dropped by `proposal`."""
    out: list[Critique] = []
    have = proposal.cell_values()
    for key in sorted(spine.locked):
        locked = spine.locked[key]
        if key in have and _same(locked, have[key]):
            continue  # the usual case: no CellRef parsed
        ref = parse_cell_ref(key)
        present, value = _lookup(proposal, ref) if ref is not None else (False, None)
        if present and _same(locked, value):
            continue
        what = "changed" if present else "dropped"
        out.append(
            Critique(
                code="proposal.locked_cell",
                gate="harness",
                location=Location(table=ref.table, row=ref.row, column=ref.column)
                if ref is not None else Location(),
                observed=None if not present else str(value),
                expected=None if locked is None else str(locked),
                evidence=(f"{key} is locked (admitted by every gate so far)",),
                fix_hint="keep every locked cell exactly as it is; repair only the cells named",
                message=f"the proposal {what} the locked cell {key}",
            )
        )
    return out


def check_locked_prose(spine: Spine, proposal: Artifact) -> list[Critique]:
    """One `proposal.locked_prose` critique per locked prose field changed or dropped."""
    out: list[Critique] = []
    for name in sorted(spine.prose):
        text = proposal.text(name)
        if text == spine.prose[name]:
            continue
        out.append(
            Critique(
                code="proposal.locked_prose",
                gate="harness",
                location=Location(field=name),
                observed=text[:200],
                expected=spine.prose[name][:200],
                evidence=(f"the prose field {name!r} is locked (PROSE_GATE admitted it)",),
                fix_hint="keep every locked prose field exactly as it is; rewrite only the "
                "fields the critiques name",
                message=f"the proposal {'changed' if text else 'dropped'} the locked prose "
                f"field {name!r}",
            )
        )
    return out


class Critic:
    """The critique effector behind the loop's `Critic` port. With the pack, the spine
    leaves open the foreign keys only the value gate has seen (it does not judge them)."""

    name = "critique"

    def __init__(self, pack: Pack | None = None) -> None:
        self.unjudged: dict[str, frozenset[tuple[str, str]]] = {}
        if pack is not None:
            self.unjudged["value_gate"] = frozenset(
                (t, c)
                for t, b in pack.tables.items()
                for c, col in b.columns.items()
                if col.kind == "id" and c not in b.key
            )

    def report(
        self, failed: Sequence[Verdict], candidate: Artifact, attempt: int
    ) -> CritiqueReport:
        return build_report(failed, candidate, attempt, self.unjudged)

    def locked_breaches(self, spine: Spine, proposal: Artifact) -> list[Critique]:
        return check_locked(spine, proposal) + check_locked_prose(spine, proposal)

"""Building engines with fake effectors in a temporary workspace (only the model is fake;
the ledger is real SQLite and the trace real files) and running them through the
production driver (`harness.driver.BatchRun`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

from effectors.base import Gate, Proposer
from effectors.commit import Committer
from effectors.critique import Critic
from effectors.testing import InstantGate, VerdictFn
from harness.agenda import Agenda
from harness.driver import BatchRun
from harness.ledger import Ledger
from harness.models import Artifact, Cell, Critique, Location
from harness.models import Effector as E
from harness.run import Engines, Run
from harness.scratch import Scratch
from harness.workspace import Workspace


def fixed_clock() -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"2026-01-01T00:00:00.{next(counter):06d}+00:00"


def make_engines(
    tmp: Path,
    gates: dict[E, Gate],
    proposer: Proposer,
    *,
    max_attempts: int = 3,
    has_prose: bool = True,
    require_approval: bool = False,
    agenda: Agenda | None = None,
) -> tuple[Workspace, Engines]:
    ws = Workspace(tmp)
    ws.ensure()
    ledger = Ledger(ws.ledger_path)
    eng = Engines(
        agenda=agenda or Agenda(),
        gates=gates,
        proposer=proposer,
        critic=Critic(),
        committer=Committer(ws, ledger),
        ledger=ledger,
        clock=fixed_clock(),
        max_attempts=max_attempts,
        has_prose=has_prose,
        require_approval=require_approval,
        scratch=Scratch(ws.scratch, ws.inputs),
    )
    return ws, eng


def run_cohort(
    ws: Workspace, eng: Engines, artifacts: Sequence[Artifact], cohort_size: int | None = None
) -> list[Run]:
    """Run artifacts as one cohort (or cohorts of `cohort_size`) through the production
    driver; the runs, in input order."""
    batch = BatchRun(
        ws,
        eng,
        artifacts,
        cohort_size=cohort_size or max(1, len(artifacts)),
        batch_id="b-test",
        pack="test",
        pack_version="0",
    )
    ended = {r.input.id: r for cycle in batch for r in cycle.finished}
    return [ended[a.id] for a in artifacts if a.id in ended]


def cell_check(
    gate: str, code: str, table: str, column: str, ok: Callable[[Cell], bool], row: int = 0
) -> VerdictFn:
    """A fake gate's verdict: `code` on `table[row].column` unless `ok(value)`."""

    def check(a: Artifact) -> list[Critique]:
        if ok(a.tables[table][row][column]):
            return []
        where = Location(table=table, row=row, column=column)
        return [Critique(code=code, gate=gate, location=where)]

    return check


def fake_gates(
    value: VerdictFn | None = None, ri: VerdictFn | None = None, prose: VerdictFn | None = None
) -> dict[E, Gate]:
    """The three gates as instant fakes (each passes everything unless given a check)."""
    return {
        E.VALUE_GATE: InstantGate("value_gate", value),
        E.RI_GATE: InstantGate("ri_gate", ri),
        E.PROSE_GATE: InstantGate("prose_gate", prose),
    }


def standard_and_room_gates() -> dict[E, Gate]:
    """Fake gates over `equipment[0]`: the value gate wants standard "IEC 60601-1", the RI
    gate wants room "R-1" (a wrong standard and a dangling room: a two-gate cascade)."""
    return fake_gates(
        cell_check(
            "value_gate", "value.disjoint", "equipment", "standard", lambda v: v == "IEC 60601-1"
        ),
        cell_check("ri_gate", "ri.fk_orphan", "equipment", "room_id", lambda v: v == "R-1"),
    )

"""Building a cohort with fake effectors in a temporary workspace (only the model is fake;
the ledger is real SQLite and the trace real files)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

from effectors.base import Gate, Proposer
from effectors.commit import Committer, artifact_bytes, content_hash, rebuild_view
from harness.agenda import Agenda
from harness.ledger import Ledger
from harness.loop import Engines, Run, start_cohort, step_cohort
from harness.models import Artifact
from harness.models import Effector as E
from harness.trace import TraceWriter
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
) -> tuple[Workspace, Engines]:
    ws = Workspace(tmp)
    ws.ensure()
    ledger = Ledger(ws.ledger_path)
    eng = Engines(
        agenda=Agenda(),
        gates=gates,
        proposer=proposer,
        committer=Committer(ws, ledger),
        ledger=ledger,
        clock=fixed_clock(),
        max_attempts=max_attempts,
        has_prose=has_prose,
        require_approval=require_approval,
    )
    return ws, eng


def run_cohort(ws: Workspace, eng: Engines, artifacts: Sequence[Artifact]) -> list[Run]:
    runs = []
    for a in artifacts:
        rid = f"{a.id}.r{eng.ledger.count_runs(a.id) + 1}"
        runs.append(
            Run(
                run_id=rid,
                input=a,
                input_hash=content_hash(artifact_bytes(a)),
                trace=TraceWriter(ws.trace_path(rid), rid, eng.clock),
            )
        )
    start_cohort(runs, eng, "b-test", "test", "0")
    while any(not r.state.terminal for r in runs):
        step_cohort(runs, eng)
    rebuild_view(ws, eng.ledger)
    return runs

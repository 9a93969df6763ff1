"""Harness overhead per cycle (FSM + agenda + trace append) with instant fake effectors,
and end-to-end artifacts/s of `membrane batch` on the demo corpus (offline proposer)."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from effectors.critique import Critic
from effectors.testing import InstantGate, ScriptedProposer
from harness.agenda import Agenda
from harness.api import run_batch
from harness.driver import BatchRun
from harness.ledger import Ledger
from harness.models import Artifact
from harness.models import Effector as E
from harness.run import Engines
from harness.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "packs" / "facility" / "corpus" / "demo.jsonl"


class _InstantCommitter:
    """Stands in for COMMIT so only the harness is measured."""

    def commit(
        self, run_id: str, artifact: Artifact, metrics: Any, seq: int, head: str, at: str
    ) -> Any:
        class Row:
            artifact_id = artifact.id
            version = 1
            content_hash = "0" * 64
            metrics_hash = "0" * 64

        return Row()

    def commit_many(self, items: Any) -> list[Any]:
        return [
            self.commit(p.run_id, p.artifact, p.metrics, p.trace_seq, p.trace_hash, p.at)
            for p in items
        ]

    def hold(
        self,
        run_id: str,
        artifact: Artifact,
        metrics: Any,
        seq: int,
        head: str,
        at: str,
        why: str = "",
    ) -> Any:
        return self.commit(run_id, artifact, metrics, seq, head, at)


def _overhead(n_runs: int, rounds: int, memo: bool = True) -> tuple[float, float, int]:
    """(median ms per cycle, ms per run of fixed costs, cycles). A cycle is one run's
    decide + fire + trace records + its (instant) effector. Fixed per-run costs (creating
    the run's FSM model and trace file, the final fsync and ledger anchor) are measured
    separately: they are paid once per run, not per cycle."""
    per_cycle: list[float] = []
    fixed: list[float] = []
    cycles_total = 0
    for rnd in range(rounds):
        with tempfile.TemporaryDirectory() as d:
            ws = Workspace(Path(d))
            ws.ensure()
            ledger = Ledger(ws.ledger_path)
            gates = {
                E.VALUE_GATE: InstantGate("value_gate"),
                E.RI_GATE: InstantGate("ri_gate"),
                E.PROSE_GATE: InstantGate("prose_gate"),
            }
            eng = Engines(
                agenda=Agenda(memo=memo),
                gates=gates,
                proposer=ScriptedProposer("fake", []),
                critic=Critic(),
                committer=_InstantCommitter(),
                ledger=ledger,
                clock=lambda: "2026-01-01T00:00:00+00:00",
                max_attempts=3,
                has_prose=True,
                require_approval=False,
            )
            arts = [
                Artifact(id=f"r{rnd}-{i}", tables={"t": [{"a": i}]}, prose="p.")
                for i in range(n_runs)
            ]
            batch = BatchRun(ws, eng, arts, cohort_size=n_runs, batch_id="b")
            fixed_s = 0.0
            first = True
            while True:
                t0 = time.perf_counter()
                cycle = batch.step()
                dt = time.perf_counter() - t0
                if cycle is None:
                    break
                active = sum(1 for r in cycle.cohort if not r.state.terminal) + len(
                    cycle.finished
                )
                if first or cycle.finished:  # starting runs, or ending them (fsync + anchor)
                    fixed_s += dt
                else:
                    per_cycle.append(dt / active)
                first = False
                cycles_total += active
            fixed.append(fixed_s / n_runs)
            ledger.close()
    return statistics.median(per_cycle) * 1000, statistics.median(fixed) * 1000, cycles_total


def _demo(limit: int | None) -> tuple[float, int, int]:
    with tempfile.TemporaryDirectory() as d:
        corpus = DEMO
        if limit:
            corpus = Path(d) / "demo.jsonl"
            corpus.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:limit]))
        ws = Path(d) / "ws"
        ws.mkdir()
        result = run_batch(ws, corpus, ROOT / "packs" / "facility")
        committed = sum(1 for r in result.runs if r.state == "COMMITTED")
        return result.artifacts_per_s, len(result.runs), committed


def run(quick: bool = False) -> dict[str, Any]:
    n_runs, rounds = (50, 3) if quick else (200, 10)
    overhead_ms, fixed_ms, cycles = _overhead(n_runs, rounds)
    unmemo_ms, _f, _c = _overhead(n_runs, max(1, rounds // 3), memo=False)
    aps, n, committed = _demo(40 if quick else None)
    return {
        "name": "loop",
        "params": {"runs_per_cohort": n_runs, "rounds": rounds, "demo_artifacts": n},
        "figures": {
            "overhead_ms_per_cycle": round(overhead_ms, 4),
            "overhead_ms_per_cycle_unmemoized_agenda": round(unmemo_ms, 4),
            "fixed_ms_per_run": round(fixed_ms, 3),
            "cycles_measured": cycles,
            "demo_artifacts_per_s": round(aps, 2),
            "demo_committed": committed,
            "demo_commit_rate": round(committed / n, 4) if n else 0.0,
        },
    }

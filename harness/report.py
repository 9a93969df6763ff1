"""`membrane report`: the single-shot baseline against the refined corpus.

Both sides are measured the same way: every gate judges every artifact on its own (an
audit, no cascade), so the baseline's RI and prose figures are real even where the loop
stopped at the value gate. Baseline = the inputs of the settled runs; refined = the
latest committed version of each artifact. Attempts come from the run outcomes.

Cost comes from the traces of every run (settled or not: tokens spent are spent): model
calls, prompt/completion tokens and model wall time from the `usage` records, and the
run's wall time from its first to its last record; per run and summed per batch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from statistics import mean
from typing import Any

import orjson

from effectors.base import Gate, run_gate
from harness.ledger import Ledger, RunRow
from harness.models import Artifact, Verdict
from harness.pack import Pack
from harness.workspace import Workspace

__all__ = ["CorpusFigures", "Cost", "Report", "audit", "build_report", "costs", "figures"]


def audit(gates: Sequence[Gate], artifacts: Sequence[Artifact]) -> list[dict[str, Verdict]]:
    """Every gate on every artifact, batched per gate. One dict gate-name -> verdict each."""
    out: list[dict[str, Verdict]] = [{} for _ in artifacts]
    for gate in gates:
        for i, v in enumerate(run_gate(gate, list(artifacts))):
            out[i][gate.name] = v
    return out


@dataclass(frozen=True)
class CorpusFigures:
    artifacts: int
    placeholder_rate: float  # placeholder cells / object-kind cells
    value_coherence: float  # admitted object-kind cells / object-kind cells
    ri_violations: int  # error-severity RI findings, summed
    prose_unknown_entities: int
    prose_coverage: float  # mean share of key entities the prose mentions
    prose_truncated: int
    mean_words: float
    passing: int  # artifacts no gate had an error for


def _object_cells(pack: Pack, a: Artifact) -> int:
    return sum(
        1
        for t, rows in a.tables.items()
        for row in rows
        for c in row
        if pack.tables[t].columns[c].kind == "object"
    )


def figures(
    pack: Pack, artifacts: Sequence[Artifact], verdicts: Sequence[dict[str, Verdict]]
) -> CorpusFigures:
    obj = sum(_object_cells(pack, a) for a in artifacts) or 1
    crits = [(name, c) for vs in verdicts for name, v in vs.items() for c in v.critiques]
    placeholders = sum(1 for _g, c in crits if c.code == "value.placeholder")
    value_bad = sum(1 for _g, c in crits if c.code.startswith("value.") and c.severity == "error")
    coverage = [v["prose_gate"].metrics.get("coverage", 1.0) for v in verdicts if "prose_gate" in v]
    words = [len(a.prose.split()) for a in artifacts]
    return CorpusFigures(
        artifacts=len(artifacts),
        placeholder_rate=placeholders / obj,
        value_coherence=1.0 - value_bad / obj,
        ri_violations=sum(
            1 for _g, c in crits if c.code.startswith("ri.") and c.severity == "error"
        ),
        prose_unknown_entities=sum(1 for _g, c in crits if c.code == "prose.unknown_entity"),
        prose_coverage=mean(coverage) if coverage else 1.0,
        prose_truncated=sum(1 for _g, c in crits if c.code == "prose.truncated"),
        mean_words=mean(words) if words else 0.0,
        passing=sum(1 for vs in verdicts if all(v.passed for v in vs.values())),
    )


@dataclass
class Cost:
    """Model cost and wall time of one run (`id` = run id) or one batch (`id` = batch id)."""

    id: str
    batch_id: str
    runs: int = 0
    calls: int = 0  # model calls
    cached_calls: int = 0  # of which answered from the transcripts
    tokens_prompt: int = 0
    tokens_completion: int = 0
    model_seconds: float = 0.0  # wall time spent in model calls
    wall_seconds: float = 0.0  # first to last trace record
    first_at: str = field(default="", repr=False)
    last_at: str = field(default="", repr=False)

    @property
    def tokens(self) -> int:
        return self.tokens_prompt + self.tokens_completion

    def to_dict(self) -> dict[str, object]:
        out = {k: v for k, v in vars(self).items() if k not in ("first_at", "last_at")}
        out["tokens"] = self.tokens
        out["model_seconds"] = round(self.model_seconds, 6)
        out["wall_seconds"] = round(self.wall_seconds, 6)
        return out


def _seconds(first: str, last: str) -> float:
    try:
        return max(
            0.0, (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
        )
    except ValueError:
        return 0.0


def _run_cost(ws: Workspace, row: RunRow) -> Cost:
    cost = Cost(id=row.run_id, batch_id=row.batch_id, runs=1)
    path = ws.trace_path(row.run_id)
    if not path.is_file():
        return cost
    for line in path.read_bytes().splitlines():
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a torn last line of an interrupted run
        if ev.get("kind") == "review":
            break  # a person's later act, not the run's time
        cost.first_at = cost.first_at or str(ev.get("at", ""))
        cost.last_at = str(ev.get("at", cost.last_at))
        if ev.get("kind") == "usage":
            cost.calls += 1
            cost.cached_calls += int(bool(ev.get("cached")))
            cost.tokens_prompt += int(ev.get("tokens_prompt", 0))
            cost.tokens_completion += int(ev.get("tokens_completion", 0))
            cost.model_seconds += float(ev.get("seconds", 0.0))
    cost.wall_seconds = _seconds(cost.first_at, cost.last_at)
    return cost


def costs(ws: Workspace, rows: Sequence[RunRow]) -> tuple[list[Cost], list[Cost]]:
    """(per run, per batch) cost from the traces of `rows`, in ledger order."""
    per_run = [_run_cost(ws, r) for r in rows]
    batches: dict[str, Cost] = {}
    for c in per_run:
        b = batches.setdefault(c.batch_id, Cost(id=c.batch_id, batch_id=c.batch_id))
        b.runs += 1
        b.calls += c.calls
        b.cached_calls += c.cached_calls
        b.tokens_prompt += c.tokens_prompt
        b.tokens_completion += c.tokens_completion
        b.model_seconds += c.model_seconds
        if c.first_at and (not b.first_at or c.first_at < b.first_at):
            b.first_at = c.first_at
        if c.last_at and c.last_at > b.last_at:
            b.last_at = c.last_at
    for b in batches.values():
        b.wall_seconds = _seconds(b.first_at, b.last_at)
    return per_run, list(batches.values())


@dataclass
class Report:
    baseline: CorpusFigures
    refined: CorpusFigures
    runs: dict[str, int] = field(default_factory=dict)  # final state -> count
    mean_attempts: float = 0.0
    max_attempts: int = 0
    run_costs: list[Cost] = field(default_factory=list)  # every run in the ledger
    batch_costs: list[Cost] = field(default_factory=list)
    learning: dict[str, Any] | None = None  # `membrane learn report`'s data (api fills it)

    def to_dict(self) -> dict[str, object]:
        return {
            "learning": self.learning,
            "baseline": vars(self.baseline),
            "refined": vars(self.refined),
            "runs": self.runs,
            "mean_attempts": self.mean_attempts,
            "max_attempts": self.max_attempts,
            "cost": {
                "batches": [c.to_dict() for c in self.batch_costs],
                "runs": [c.to_dict() for c in self.run_costs],
            },
        }


def build_report(ws: Workspace, pack: Pack, gates: Sequence[Gate]) -> Report:
    ledger = Ledger.reader(ws.ledger_path)  # reading only (works on a read-only workspace)
    try:
        every_run = [r for r in ledger.runs() if r.status != "REVERT"]  # a person's act
        runs = [r for r in every_run if r.status not in ("running", "INTERRUPTED")]
        latest = {}
        for r in runs:  # the last settled run of each artifact
            latest[r.artifact_id] = r
        commits = ledger.latest_commits()
    finally:
        ledger.close()
    inputs = [
        Artifact.model_validate(orjson.loads((ws.inputs / f"{r.input_hash}.json").read_bytes()))
        for r in latest.values()
    ]
    refined = [
        Artifact.model_validate(
            orjson.loads((ws.current / "artifacts" / f"{c.content_hash}.json").read_bytes())
        )
        for c in commits
    ]
    states: dict[str, int] = {}
    attempts = []
    for r in latest.values():
        states[r.status] = states.get(r.status, 0) + 1
        if r.outcome:
            attempts.append(int(json.loads(r.outcome)["attempts"]))
    run_costs, batch_costs = costs(ws, every_run)
    return Report(
        baseline=figures(pack, inputs, audit(gates, inputs)),
        refined=figures(pack, refined, audit(gates, refined)),
        runs=states,
        mean_attempts=mean(attempts) if attempts else 0.0,
        max_attempts=max(attempts) if attempts else 0,
        run_costs=run_costs,
        batch_costs=batch_costs,
    )

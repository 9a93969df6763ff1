"""`membrane report`: the single-shot baseline against the refined corpus.

Both sides are measured the same way: every gate judges every artifact on its own (an
audit, no cascade), so the baseline's RI and prose figures are real even where the loop
stopped at the value gate. Baseline = the inputs of the settled runs; refined = the
latest committed version of each artifact. Attempts come from the run outcomes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import mean

import orjson

from effectors.base import Gate, run_gate
from harness.ledger import Ledger
from harness.models import Artifact, Verdict
from harness.pack import Pack
from harness.workspace import Workspace

__all__ = ["CorpusFigures", "Report", "audit", "build_report", "figures"]


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
class Report:
    baseline: CorpusFigures
    refined: CorpusFigures
    runs: dict[str, int] = field(default_factory=dict)  # final state -> count
    mean_attempts: float = 0.0
    max_attempts: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "baseline": vars(self.baseline),
            "refined": vars(self.refined),
            "runs": self.runs,
            "mean_attempts": self.mean_attempts,
            "max_attempts": self.max_attempts,
        }


def build_report(ws: Workspace, pack: Pack, gates: Sequence[Gate]) -> Report:
    ledger = Ledger(ws.ledger_path)
    try:
        runs = [r for r in ledger.runs() if r.status not in ("running", "INTERRUPTED")]
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
    return Report(
        baseline=figures(pack, inputs, audit(gates, inputs)),
        refined=figures(pack, refined, audit(gates, refined)),
        runs=states,
        mean_attempts=mean(attempts) if attempts else 0.0,
        max_attempts=max(attempts) if attempts else 0,
    )

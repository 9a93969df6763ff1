"""Do lessons make the proposer need fewer calls? (issue 13, the efficacy benchmark.)

Three successive batches of **different** generated facility corpora (other seeds, other
ids) with the same defect mix, refined by the offline proposer in one workspace with
lessons on and, side by side, in another with lessons off (`[learning] lessons = false`).
Figures per batch: proposer calls (attempts − 1, summed) and calls per artifact.

The cascade mix (the target): each defective artifact carries two defects that different
gates find — a wrong value and a dangling reference, a dangling reference and damaged prose
— plus placeholder-only and clean artifacts. Without lessons every cascade costs a second
call (the earlier gate's failure hides the later defect); the trace miner learns
`check_references` and `redraft_prose` lessons from batch 1 and the proposer repairs both
in one call from batch 2 on. Targets: `reduction_pct` (batch 3 vs batch 1, on) ≥ 40,
`reduction_pct_off` ≈ 0, `gate_escapes` = 0 (every committed artifact of both workspaces
passes a fresh run of every gate).

The single-defect mix (`single_*`, the demo's kind of corpus: one defect per artifact) is
reported too: there, one call per defective artifact is already the minimum and lessons
cannot cut calls; they only change which values are chosen.
Not a test: figures vary with the machine and its load.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import PACK, generator
from harness.api import open_session, run_batch
from harness.models import Artifact
from harness.report import audit

__all__ = ["CASCADE_MIX", "SINGLE_MIX", "corpus", "run"]

CASCADE_MIX: tuple[frozenset[str], ...] = (
    frozenset({"value.disjoint", "ri.fk_orphan"}),
    frozenset({"ri.fk_orphan", "prose.truncated"}),
    frozenset({"ri.fk_orphan", "prose.unknown_entity"}),
    frozenset({"value.unknown", "ri.fk_orphan"}),
    frozenset({"placeholders"}),
    frozenset(),
)
SINGLE_MIX: tuple[frozenset[str], ...] = (
    frozenset({"value.disjoint"}),
    frozenset({"value.unknown"}),
    frozenset({"placeholders"}),
    frozenset({"ri.fk_orphan"}),
    frozenset({"prose.unknown_entity"}),
    frozenset({"prose.truncated"}),
    frozenset(),
    frozenset(),
)


def corpus(batch: int, n: int, mix: tuple[frozenset[str], ...], seed: int = 300) -> list[Artifact]:
    """`n` artifacts for batch `batch` (its own seed and ids), defects cycling through `mix`."""
    gen = generator()
    out = []
    for i in range(n):
        kinds = set(mix[i % len(mix)])
        plan = gen.Plan()
        plan.clean = not kinds
        plan.placeholders = "placeholders" in kinds
        plan.kinds |= kinds - {"placeholders"}
        flawed, _clean, _truth = gen.build_artifact(seed + batch, i, plan, False)
        out.append(Artifact.model_validate({**flawed, "id": f"b{batch + 1}-{i + 1:05d}"}))
    return out


def _escapes(root: Path) -> int:
    """Committed artifacts that fail any gate when judged afresh."""
    lines = (root / "current" / "corpus.jsonl").read_text().splitlines()
    committed = [Artifact.model_validate(json.loads(x)) for x in lines]
    with open_session(root, PACK) as session:
        verdicts = audit(list(session.engines.gates.values()), committed)
    return sum(1 for per in verdicts if not all(v.passed for v in per.values()))


def _series(root: Path, lessons: bool, n: int, mix: tuple[frozenset[str], ...]) -> dict[str, Any]:
    root.mkdir(parents=True)
    (root / "membrane.toml").write_text(f"[learning]\nlessons = {str(lessons).lower()}\n")
    calls, per_artifact, attempts, seconds, applied = [], [], [], [], []
    for b in range(3):
        path = root / f"batch{b + 1}.jsonl"
        path.write_text("".join(a.model_dump_json() + "\n" for a in corpus(b, n, mix)))
        t0 = time.perf_counter()
        result = run_batch(root, path, PACK)
        seconds.append(round(time.perf_counter() - t0, 2))
        c = sum(r.attempts - 1 for r in result.runs)
        calls.append(c)
        per_artifact.append(round(c / len(result.runs), 4))
        attempts.append(round(sum(r.attempts for r in result.runs) / len(result.runs), 4))
        applied.append(len((result.lessons or {}).get("applied", [])))  # type: ignore[arg-type]
    return {
        "calls": calls,
        "calls_per_artifact": per_artifact,
        "attempts_per_artifact": attempts,
        "batch_s": seconds,
        "lessons_applied": applied,
        "reduction_pct": round(100 * (calls[0] - calls[2]) / calls[0], 1) if calls[0] else 0.0,
        "gate_escapes": _escapes(root),
    }


def run(quick: bool = False) -> dict[str, Any]:
    n, n_single = (90, 80) if quick else (500, 200)
    with tempfile.TemporaryDirectory() as d:
        on = _series(Path(d) / "on", True, n, CASCADE_MIX)
        off = _series(Path(d) / "off", False, n, CASCADE_MIX)
        single_on = _series(Path(d) / "single-on", True, n_single, SINGLE_MIX)
        single_off = _series(Path(d) / "single-off", False, n_single, SINGLE_MIX)
    return {
        "name": "learning",
        "params": {"artifacts_per_batch": n, "single_artifacts_per_batch": n_single},
        "figures": {
            "calls_batch1": on["calls"][0],
            "calls_batch3": on["calls"][2],
            "reduction_pct": on["reduction_pct"],
            "calls_batch1_off": off["calls"][0],
            "calls_batch3_off": off["calls"][2],
            "reduction_pct_off": off["reduction_pct"],
            "gate_escapes": on["gate_escapes"] + off["gate_escapes"],
            "single_reduction_pct": single_on["reduction_pct"],
            "single_reduction_pct_off": single_off["reduction_pct"],
            "single_gate_escapes": single_on["gate_escapes"] + single_off["gate_escapes"],
        },
        "series": {"on": on, "off": off, "single_on": single_on, "single_off": single_off},
    }

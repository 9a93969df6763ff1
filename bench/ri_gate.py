"""RI_GATE throughput on the shared benchmark corpus (`bench.corpus`: 1,000 facility
artifacts, ~18 rows each, 5% defective), against the per-artifact path measured in the
same run.

* batch path: `RiGate.judge` on the whole cohort — one Arrow insert into the warm
  database's stage, one check query, one query per assertion, attribution by `_artifact`;
* lone artifact: `judge([a])` through the same warm database, one artifact at a time;
* per-artifact path: `RiGate.judge_transient` — a fresh transient in-memory DuckDB per
  artifact (connect, stage, pool table, views, checks, close), measured on a sample and
  its verdicts compared with the batch path's for the same artifacts.

`speedup_vs_per_artifact` = batch artifacts/s ÷ per-artifact artifacts/s. Not a test:
figures vary with the machine and its load (medians of repeated runs are reported).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.corpus import PACK, artifacts
from effectors.ri_gate import RiGate
from harness.models import Verdict
from harness.pack import load_pack
from ontology import load_pools


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def run(quick: bool = False) -> dict[str, Any]:
    n, reps, lone, sample = (200, 3, 30, 20) if quick else (1000, 7, 100, 60)
    corpus = artifacts(n, 0.05)
    pack = load_pack(PACK)
    with tempfile.TemporaryDirectory() as d:
        pools = load_pools(pack, Path(d))
    gate, setup_s = _timed(RiGate.from_pack, pack, pools)
    try:
        gate.judge(corpus[:20])  # warm-up
        batch_s: list[float] = []
        verdicts: list[Verdict] = []
        for _ in range(reps):
            verdicts, seconds = _timed(gate.judge, corpus)
            batch_s.append(seconds)
        single: list[float] = []
        lone_same = True
        for i in range(lone):
            a = corpus[(i * 37) % n]
            (v,), seconds = _timed(gate.judge, [a])
            single.append(seconds * 1000)
            lone_same &= v == verdicts[(i * 37) % n]
        transient, transient_s = _timed(gate.judge_transient, corpus[:sample])
    finally:
        gate.close()
    median_s = statistics.median(batch_s)
    rate = n / median_s
    per_artifact_rate = sample / transient_s
    codes = Counter(c.code for v in verdicts for c in v.critiques)
    return {
        "name": "ri_gate",
        "bench": "ri_gate",
        "params": {"artifacts": n, "defect_rate": 0.05, "repeats": reps,
                   "rows": sum(len(r) for a in corpus for r in a.tables.values()),
                   "lone_artifacts": lone, "per_artifact_sample": sample},
        "figures": {
            "artifacts_per_s": round(rate, 1),
            "artifacts_per_s_best": round(n / min(batch_s), 1),
            "batch_ms": round(median_s * 1000, 2),
            "speedup_vs_per_artifact": round(rate / per_artifact_rate, 1),
            "per_artifact_ms": round(transient_s / sample * 1000, 2),
            "single_artifact_ms": round(statistics.median(single), 3),
            "single_artifact_ms_p90": round(sorted(single)[int(0.9 * (len(single) - 1))], 3),
            "setup_ms": round(setup_s * 1000, 1),
            "per_artifact_identical": transient == verdicts[:sample],
            "single_identical": lone_same,
            "failed": sum(not v.passed for v in verdicts),
            "critiques": dict(sorted(codes.items())),
        },
        "notes": (
            f"per-artifact path (a fresh transient DuckDB per artifact) measured on the first "
            f"{sample} artifacts; batch figures are the median of {reps} runs over all {n}; "
            f"single_artifact_ms is the median over {lone} lone artifacts through the warm "
            "connection; setup (spine, pool table, assertions) is paid once per gate"
        ),
    }

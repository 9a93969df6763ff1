"""VALUE_GATE throughput on the shared benchmark corpus (`bench.corpus`: 1,000 facility
artifacts, ~18 rows each, 5% defective), against the naive path measured in the same run.

* fast path: the gate as a batch uses it — the classification cached by content hash
  (built once here, then loaded), the warm in-process HermiT (`ontology.warm`), per-cell and
  per-row memos, one cohort of all artifacts;
* naive path: one artifact at a time, each reasoner call a fresh owlready2
  `sync_reasoner` (a JVM start, ~0.6 s): measured on a sample (it would take ~10 min on
  the whole corpus), and its verdicts compared with the fast path's for the same artifacts;
* the cold fallback (`HermitRunner`, a JVM per call) on the whole corpus, for reference.

`speedup_vs_naive` = fast artifacts/s ÷ naive artifacts/s. Not a test: figures vary with
the machine and its load.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.corpus import PACK, artifacts
from effectors.value_gate import ValueGate
from harness.models import Verdict
from harness.pack import load_pack
from ontology import HermitRunner
from ontology.naive import OwlreadyReasoner
from ontology.warm import WarmHermit


def _rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def run(quick: bool = False) -> dict[str, Any]:
    n, sample = (200, 6) if quick else (1000, 24)
    corpus = artifacts(n, 0.05)
    pack = load_pack(PACK)
    with tempfile.TemporaryDirectory() as d:
        cache = Path(d)
        t0 = time.perf_counter()
        ValueGate.from_pack(pack, cache, HermitRunner())  # classify once, cache by hash
        build_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        warm = WarmHermit()
        gate = ValueGate.from_pack(pack, cache, warm)
        gate.warm_up()
        setup_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        fast = gate.judge(corpus)
        fast_s = time.perf_counter() - t0
        calls, reason_s = warm.calls, warm.seconds
        distinct_rows = len(gate._row_memo)

        t0 = time.perf_counter()
        again = gate.judge(corpus)
        again_s = time.perf_counter() - t0

        cold_runner = HermitRunner()
        cold = ValueGate.from_pack(pack, cache, cold_runner)
        t0 = time.perf_counter()
        cold_verdicts = cold.judge(corpus)
        cold_s = time.perf_counter() - t0

        naive_runner = OwlreadyReasoner()
        naive = ValueGate.from_pack(pack, cache, naive_runner, naive=True)
        t0 = time.perf_counter()
        reference = naive.judge(corpus[:sample])
        naive_s = time.perf_counter() - t0

    fast_rate, naive_rate = _rate(n, fast_s), _rate(sample, naive_s)
    codes = Counter(c.code for v in fast for c in v.critiques)
    return {
        "name": "value_gate",
        "bench": "value_gate",
        "params": {"artifacts": n, "defect_rate": 0.05,
                   "rows": sum(len(r) for a in corpus for r in a.tables.values()),
                   "naive_sample": sample, "rows_independent": gate.index.rows_independent},
        "figures": {
            "artifacts_per_s": round(fast_rate, 1),
            "speedup_vs_naive": round(fast_rate / naive_rate, 1),
            "reasoner_calls": calls,
            "reasoner_s": round(reason_s, 3),
            "judge_s": round(fast_s, 3),
            "distinct_rows_reasoned": distinct_rows,
            "setup_s": round(setup_s, 3),
            "classify_and_cache_s": round(build_s, 3),
            "artifacts_per_s_second_batch": round(_rate(n, again_s), 1),
            "artifacts_per_s_cold_jvm_fallback": round(_rate(n, cold_s), 1),
            "cold_jvm_reasoner_calls": cold_runner.calls,
            "naive_artifacts_per_s": round(naive_rate, 3),
            "naive_reasoner_calls": naive_runner.calls,
            "naive_identical": _same(fast[:sample], reference),
            "fallback_identical": cold_verdicts == fast and again == fast,
            "critiques": dict(sorted(codes.items())),
        },
        "notes": (
            f"naive path measured on the first {sample} artifacts (one fresh owlready2 "
            "sync_reasoner per call); setup_s (JVM start, ontology parse, index load) is paid "
            "once per process and not in artifacts_per_s"
        ),
    }


def _same(a: list[Verdict], b: list[Verdict]) -> bool:
    return a == b

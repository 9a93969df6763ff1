"""Throughput of PROSE_GATE's deterministic checks (entity mentions, value claims, length,
truncation) on the facility pack: clean artifacts whose prose has 200-800 words, judged by
one gate built once (a vocabulary of every label, synonym and IRI fragment of the ontology).
The optional embedding entailment is off here: it is not a deterministic check.

`artifacts_per_s` is the gate as a batch run uses it on this machine: one process per CPU
(`ProseGate(workers=N)`, the cohort split across this process and N-1 worker processes);
`artifacts_per_s_one_process` is the same cohort judged by one process, and
`artifacts_per_s_one_process_cpu` the same by that process's CPU time (`time.process_time`):
the figure that other work on the machine disturbs least (issue 20's target, >= 1,000).

The interpreter matters as much as the code: `params.python` is its version and
`params.python_pgo` whether it was built with profile-guided optimisation (configured with
`--enable-optimizations`, or a distribution's own interpreter under /usr, which Debian and
Ubuntu build that way). The same gate runs ~20% faster on Debian's PGO-built 3.11 than on a
pyenv 3.11 built without it. `params.prose_native` says whether the gate's hot modules ran
compiled (`make` compiles them with mypyc; `effectors.prose._native`) or why they ran from
their sources (`MEMBRANE_NATIVE=0 python -m bench prose_gate` measures the sources).

The artifacts come from the pack's generator (`packs/facility/prose_cases.py:long_artifact`),
so the same bytes are measured every time."""

from __future__ import annotations

import importlib.util
import os
import platform
import statistics
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from effectors.prose_gate import ProseGate
from harness.models import Artifact
from harness.pack import Pack, load_pack

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "packs" / "facility"


@cache
def prose_cases() -> ModuleType:
    """The pack's labelled-prose generator (`packs/facility/prose_cases.py`), by path."""
    sys.path.insert(0, str(PACK))
    spec = importlib.util.spec_from_file_location("facility_prose_cases", PACK / "prose_cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def long_artifacts(n: int, seed: int = 17) -> list[Artifact]:
    gen = prose_cases()
    return [Artifact.model_validate(gen.long_artifact(seed, i)) for i in range(n)]


def deterministic_pack() -> Pack:
    pack = load_pack(PACK)
    prose = pack.config.prose.model_copy(update={"entailment": "off"})
    return Pack(root=pack.root, config=pack.config.model_copy(update={"prose": prose}))


def run(quick: bool = False) -> dict[str, Any]:
    from ontology import load_pools

    n, rounds = (200, 3) if quick else (1000, 5)
    pack = deterministic_pack()
    with tempfile.TemporaryDirectory() as cache_dir:
        pools = load_pools(pack, Path(cache_dir))
    workers = max(1, os.cpu_count() or 1)
    t0 = time.perf_counter()
    one = ProseGate(pack, pools)
    build_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    gate = ProseGate(pack, pools, workers=workers)
    ready = gate.wait_ready() if workers > 1 else True
    start_ms = (time.perf_counter() - t0) * 1000
    arts = long_artifacts(n)
    words = [len(a.prose.split()) for a in arts]
    try:
        rates, verdicts, _ = _rates(gate, arts, rounds)
        single, alone, cpu = _rates(one, arts, rounds)
    finally:
        gate.close()
    codes = Counter(c.code for v in verdicts for c in v.critiques)
    return {
        "name": "prose_gate",
        "params": {
            "artifacts": n,
            "rounds": rounds,
            "words_min": min(words),
            "words_max": max(words),
            "workers": workers,
            **interpreter(),
        },
        "figures": {
            "artifacts_per_s": round(statistics.median(rates), 1),
            "artifacts_per_s_best": round(max(rates), 1),
            "artifacts_per_s_one_process": round(statistics.median(single), 1),
            "artifacts_per_s_one_process_best": round(max(single), 1),
            "artifacts_per_s_one_process_cpu": round(statistics.median(cpu), 1),
            "artifacts_per_s_one_process_cpu_best": round(max(cpu), 1),
            "workers_identical": verdicts == alone,
            "workers_ready": ready,
            "words_per_s": round(statistics.median(rates) * statistics.mean(words)),
            "mean_words": round(statistics.mean(words), 1),
            "vocabulary_labels": gate.matcher.terms,
            "individuals": len(pools.individuals),
            "claims_per_artifact": round(sum(v.metrics["claims"] for v in verdicts) / n, 1),
            "mentions_per_artifact": round(sum(v.metrics["mentions"] for v in verdicts) / n, 1),
            "critiques": sum(codes.values()),
            "gate_build_ms": round(build_ms, 1),
            "workers_start_ms": round(start_ms, 1),
        },
    }


def interpreter() -> dict[str, Any]:
    """The interpreter's version, and whether it was built with profile-guided optimisation
    (`--enable-optimizations`, or a distribution's own build under /usr: Debian and Ubuntu
    build theirs with PGO, and their configure arguments do not say so)."""
    from effectors.prose import _native

    args = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    return {
        "python": platform.python_version(),
        "python_pgo": "--enable-optimizations" in args or sys.base_prefix == "/usr",
        "prose_native": _native.status(),
    }


def _rates(
    gate: ProseGate, arts: list[Artifact], rounds: int
) -> tuple[list[float], list[Any], list[float]]:
    """Artifacts/s of each round of judging `arts` (after a short warm-up), the verdicts,
    and the artifacts per second of this process's CPU time in each round."""
    gate.judge(arts[:10])
    rates = []
    cpu = []
    verdicts: list[Any] = []
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        verdicts = gate.judge(arts)
        cpu.append(len(arts) / max(time.process_time() - c0, 1e-9))
        rates.append(len(arts) / (time.perf_counter() - t0))
    return rates, verdicts, cpu

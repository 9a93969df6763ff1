"""VALUE_GATE throughput on the shared benchmark corpus (`bench.corpus`: 1,000 facility
artifacts, ~18 rows each, 5% defective), against the naive path measured in the same run.

* fast path: the gate as a batch uses it — the classification cached by content hash
  (built once here, then loaded), the warm in-process HermiT (`ontology.warm`), per-cell and
  per-row memos, one cohort of all artifacts;
* naive path: one artifact at a time, each reasoner call a fresh owlready2
  `sync_reasoner` (a JVM start, ~0.6 s): measured on a sample (it would take ~10 min on
  the whole corpus), and its verdicts compared with the fast path's for the same artifacts;
* the cold fallback (`HermitRunner`, a JVM per call) on the whole corpus, for reference.

`speedup_vs_naive` = fast artifacts/s ÷ naive artifacts/s. The `third_party_*` figures are
the enumeration-heavy, wine-like vino pack (issue 21): its classification (base and probe
call; without --quick also the probe call as it was, with a probe per enumeration) and the
warm gate's artifacts/s on 5-row wine artifacts. The `worst_case_*` figures (issue 22) judge
`bench.corpus.adversarial` as one cohort (256 artifacts, 64 with --quick: every row
distinct, ~80% with a standard or manufacturer of another domain, so every such row is a
suspect HermiT must realise): artifacts/s, the suspect rows, the reasoner calls and the
longest one (chunking keeps it far under the timeout). The `cohort_*` figures (issue 22)
judge the corpus in cohorts of 64, 256 and 1,000 artifacts on a fresh gate each (as a batch
does: the memos carry over from cohort to cohort), by wall and by CPU second (the JVM's
threads included), with the warm HermiT's calls cut to the ABox their rows reach (the
default) and, interleaved, with the whole base (`whole_abox`, as before). Not a test:
figures vary with the machine and its load.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.corpus import PACK, adversarial, artifacts
from effectors.value_gate import ValueGate
from harness.models import Artifact, Verdict
from harness.pack import load_pack
from ontology import Classification, HermitRunner
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
            **third_party(quick),
            **worst_case(quick),
            **cohorts(corpus, pack),
        },
        "notes": (
            f"naive path measured on the first {sample} artifacts (one fresh owlready2 "
            "sync_reasoner per call); setup_s (JVM start, ontology parse, index load) is paid "
            "once per process and not in artifacts_per_s"
        ),
    }


def _same(a: list[Verdict], b: list[Verdict]) -> bool:
    return a == b


VINO = Path(__file__).resolve().parent.parent / "tests" / "packs" / "vino"


class _Timed(HermitRunner):
    """The cold HermiT, each classification's seconds kept."""

    def __init__(self) -> None:
        super().__init__()
        self.each: list[float] = []

    def classify(self, ntriples: str) -> Classification | None:
        t0 = time.perf_counter()
        try:
            return super().classify(ntriples)
        finally:
            self.each.append(time.perf_counter() - t0)


def _vino_corpus(n: int, defect_rate: float) -> list[Artifact]:
    """Wines of the vino pack, 5 rows each, consistent with the ontology (a grape's colour;
    Bordeaux wines are dry); a defective artifact has a body as its colour."""
    rng = random.Random(21)
    grapes = {"red": ["Merlot grape", "Syrah grape"], "white": ["Chardonnay grape",
                                                              "Riesling grape"]}
    out = []
    for i in range(n):
        rows = []
        for j in range(5):
            colour = rng.choice(["red", "white"])
            rows.append({"wine_id": f"W-{j}", "name": f"Cuvée {i}-{j}", "colour": colour,
                         "body": rng.choice(["light", "medium", "full"]),
                         "flavour": rng.choice(["delicate", "strong"]), "sugar": "dry",
                         "grape": rng.choice(grapes[colour]),
                         "maker": f"Winery{rng.randint(1, 40):02d}", "region": "Bordeaux"})
        if rng.random() < defect_rate:
            rows[0]["colour"] = "full"
        out.append(Artifact(id=f"vino-{i:04d}", tables={"wines": rows}))
    return out


def third_party(quick: bool = False) -> dict[str, float]:
    """The enumeration-heavy third-party case (issue 21): classify time (the base and the
    probe call; with --quick the old probe-every-enumeration call is not measured) and
    artifacts/s of the warm gate."""
    from ontology.load import load_ontology
    from ontology.nominals import enumerations
    from ontology.pools import _probe_triples

    pack = load_pack(VINO)
    n = 200 if quick else 1000
    corpus = _vino_corpus(n, 0.05)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as d:
        timed = _Timed()
        t0 = time.perf_counter()
        ValueGate.from_pack(pack, Path(d), timed)
        out["third_party_classify_and_cache_s"] = round(time.perf_counter() - t0, 3)
        out["third_party_base_classify_s"] = round(timed.each[0], 3)
        out["third_party_probe_s"] = round(sum(timed.each[1:]), 3)
        if not quick:  # what the probes cost when every enumeration got one (before)
            nt = load_ontology(pack.ontology_path, pack.ontology_imports).ntriples()
            enums = list(enumerations(nt))
            rest = [f"http://membrane.dev/tests/vino-base#{c}"
                    for c in ("WineGrape", "Winery", "Region")]
            t0 = time.perf_counter()
            HermitRunner().classify(nt + _probe_triples(enums + rest))
            out["third_party_probe_s_with_enumeration_probes"] = round(
                time.perf_counter() - t0, 3)
        warm = WarmHermit()
        gate = ValueGate.from_pack(pack, Path(d), warm)
        gate.warm_up()
        t0 = time.perf_counter()
        verdicts = gate.judge(corpus)
        judge_s = time.perf_counter() - t0
    out["third_party_artifacts_per_s"] = round(_rate(n, judge_s), 1)
    out["third_party_reasoner_calls"] = warm.calls
    out["third_party_rejected"] = sum(1 for v in verdicts if not v.passed)
    return out


class _Longest(WarmHermit):
    """The warm HermiT, its longest call kept."""

    longest_s = 0.0

    def _call(self, base: Any, rows: Any, ask: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return super()._call(base, rows, ask)
        finally:
            self.longest_s = max(self.longest_s, time.perf_counter() - t0)


def worst_case(quick: bool = False) -> dict[str, float]:
    """Issue 22: the adversarial corpus as one cohort (no row repeats, most are suspects)."""
    n = 64 if quick else 256
    corpus = adversarial(n)
    pack = load_pack(PACK)
    with tempfile.TemporaryDirectory() as d:
        ValueGate.from_pack(pack, Path(d), HermitRunner())
        warm = _Longest()
        gate = ValueGate.from_pack(pack, Path(d), warm)
        gate.warm_up()
        warm.longest_s = 0.0
        t0 = time.perf_counter()
        verdicts = gate.judge(corpus)
        judge_s = time.perf_counter() - t0
        checks = [gate._check_cells(i, a) for i, a in enumerate(corpus)]
        suspects = sum(1 for c in checks for r in c.rows if r.suspect)
    codes = Counter(c.code for v in verdicts for c in v.critiques)
    return {
        "worst_case_artifacts_per_s": round(_rate(n, judge_s), 2),
        "worst_case_artifacts": n,
        "worst_case_suspect_rows": suspects,
        "worst_case_judge_s": round(judge_s, 1),
        "worst_case_reasoner_calls": warm.calls,
        "worst_case_longest_call_s": round(warm.longest_s, 2),
        "worst_case_chunk_rows": gate._sizer.rows,
        "worst_case_timeout_s": gate._sizer.timeout_s,
        "worst_case_value_timeouts": codes.get("value.timeout", 0),
        "worst_case_rejected": sum(1 for v in verdicts if not v.passed),
    }


def cohorts(corpus: list[Artifact], pack: Any, sizes: tuple[int, ...] = (64, 256, 1000)
            ) -> dict[str, Any]:
    """Issue 22: the corpus in cohorts of each size, on a fresh gate per run; the whole-ABox
    reference interleaved with the cut. Same verdicts or `cohort_identical` is false."""
    out: dict[str, Any] = {}
    identical = True
    with tempfile.TemporaryDirectory() as d:
        ValueGate.from_pack(pack, Path(d), HermitRunner())
        for size in sizes:
            verdicts = []
            for whole in (True, False):
                warm = WarmHermit(whole_abox=whole)
                gate = ValueGate.from_pack(pack, Path(d), warm)
                gate.warm_up()
                t0, c0 = time.perf_counter(), time.process_time()
                got = [v for i in range(0, len(corpus), size)
                       for v in gate.judge(corpus[i:i + size])]
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                verdicts.append(got)
                tag = f"cohort_{size}_whole_abox" if whole else f"cohort_{size}"
                out[f"{tag}_artifacts_per_s"] = round(_rate(len(corpus), wall), 1)
                out[f"{tag}_artifacts_per_cpu_s"] = round(_rate(len(corpus), cpu), 1)
                out[f"{tag}_reasoner_calls"] = warm.calls
                out[f"{tag}_reasoner_s"] = round(warm.seconds, 3)
            identical = identical and verdicts[0] == verdicts[1]
    out["cohort_identical"] = identical
    return out

"""`python -m tests.reliability [--quick] [--json]`: the reliability suite of issue 17, one
table: probe, tries, clean outcomes, failures, data lost.

Probes: the crash matrix (deterministic kill points at each step of the commit protocol,
inside recovery, the learning cycle and `review approve`; timed SIGKILLs), the soak, and
the pytest suites for disk faults, the tamper matrix, the fuzzers (every hypothesis test)
and tests/security/ when it exists. At most two processes run at a time (`--workers`).
Exit 0 when every try was clean, 1 otherwise. `make reliability` runs it; `--quick` is the
handful of kill points `make test` runs (tests/reliability/test_reliability.py).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.reliability import matrix, proc
from tests.reliability.matrix import Reference, Task
from tests.reliability.points import Point

ROOT = Path(__file__).resolve().parents[2]

PYTEST_PROBES: dict[str, list[str]] = {
    "disk faults": ["tests/harness/test_disk_faults.py", "tests/test_disk_faults_real.py"],
    "tamper matrix": ["tests/harness/test_tamper.py", "tests/harness/test_checkpoint.py"],
    "fuzzers (hypothesis)": ["tests", "-p", "tests.reliability.hypothesis_only"],
    "security (tests/security)": ["tests/security"],
}

LABELS = {
    "batch": "crash: batch, each commit step",
    "learning": "crash: learning cycle",
    "pool": "crash: batch --workers 2, the commit point",
    "recovery": "crash: recovery, killed again",
    "review": "crash: review approve",
    "timed": "crash: timed SIGKILL",
    "soak": "soak: 30 batches, random kills",
    "self-test": "checker self-test: damage found",
}


@dataclass
class Row:
    probe: str
    tries: int = 0
    clean: int = 0
    failures: int = 0
    lost: int = 0
    seconds: float = 0.0


_STATE: dict[str, Any] = {}  # the reference and the work folder, inherited by the workers


def _work(task: Task) -> dict[str, Any]:
    ref: Reference = _STATE["ref"]
    base: Path = _STATE["base"]
    if task.kind == "pytest":
        return _pytest(base, *task.args)
    if task.kind == "soak":
        from tests.reliability.soak import run_soak

        o, figures = run_soak(ref.cache, base / "soak", *task.args)
        return {**matrix.outcome_json(o), "figures": figures}
    return matrix.outcome_json(matrix.run_task(ref, base, task))


def _pytest(base: Path, name: str, args: list[str]) -> dict[str, Any]:
    if not (ROOT / args[0]).exists():
        return {"probe": name, "skipped": f"{args[0]} does not exist"}
    t0 = time.monotonic()
    xml = base / f"junit-{name.split(maxsplit=1)[0]}.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "not llm", f"--junitxml={xml}", *args]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    tests = failures = skipped = 0
    try:
        for suite in ET.parse(xml).getroot().iter("testsuite"):
            tests += int(suite.get("tests", 0))
            failures += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            skipped += int(suite.get("skipped", 0))
    except (OSError, ET.ParseError):
        failures = 1
    if done.returncode not in (0, 5) and failures == 0:  # 5: nothing collected
        failures = 1
    return {
        "probe": name,
        "tries": tests - skipped,
        "failures": failures,
        "skipped": skipped,
        "seconds": round(time.monotonic() - t0, 1),
        "tail": done.stdout[-1500:] if failures else "",
    }


def _quick_plan(ref: Reference) -> list[Task]:
    commits = ref.counts.get("harness.ledger:Ledger.commit_many", 1)
    mid = max(1, commits // 2)
    fsyncs = ref.counts.get("os.fsync", 1)
    return [
        Task("point", (Point("effectors.commit:write_objects", "after", mid), "batch")),
        Task("point", (Point("harness.ledger:Ledger.commit_many", "after", mid), "batch")),
        Task("point", (Point("harness.ledger:Ledger.apply_cohort", "before", 2), "pool")),
        Task("point", (Point("harness.trace.chain:TraceWriter.append", "torn", 9), "batch")),
        Task("point", (Point("os.fsync", "before", max(1, fsyncs // 2)), "batch")),
        Task(
            "recovery",
            (
                Point("harness.ledger:Ledger.commit_many", "after", 1),
                Point("harness.store:_complete_trace", "after", 1),
            ),
        ),
        Task("timed", ((len(ref.commits) // 2, 0.05), 0)),
    ]


def _table(rows: Sequence[Row]) -> str:
    head = ("probe", "tries", "clean", "failures", "data lost", "seconds")
    body = [
        (r.probe, str(r.tries), str(r.clean), str(r.failures), str(r.lost), f"{r.seconds:.0f}")
        for r in rows
    ]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(b) for b in body)])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.reliability", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="a handful of kill points (make test)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    ap.add_argument("--workers", type=int, default=2, help="processes at a time (default 2)")
    ap.add_argument("--size", type=int, default=0, help="artifacts in the corpus (24; quick 8)")
    ap.add_argument("--per-step", type=int, default=12, help="kill points per commit step")
    ap.add_argument("--timed", type=int, default=90, help="timed kills")
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated probes: crash,soak,pytest (timed: only the timed kills)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--log", type=Path, help="append each try's result to this JSONL file")
    args = ap.parse_args(argv)
    only = set(filter(None, args.only.split(","))) or {"crash", "soak", "pytest"}
    t0 = time.monotonic()
    proc.preload()
    base = Path(tempfile.mkdtemp(prefix="membrane-reliability-"))
    _STATE["base"] = base
    size = args.size or (8 if args.quick else 24)
    try:
        ref = matrix.reference(base, size, warm=not args.quick)
        tasks: list[Task] = []
        if not args.quick and "pytest" in only:
            tasks += [Task("pytest", (name, a)) for name, a in PYTEST_PROBES.items()]
        if not args.quick and "soak" in only:
            tasks.append(Task("soak", ()))
        if only == {"timed"}:
            plan = matrix.plan(ref, per_step=0, recovery=0, timed=args.timed, review=0)
            tasks += [t for t in plan if t.kind == "timed"]
        if "crash" in only:
            if args.quick:
                tasks += _quick_plan(ref)
            else:
                matrix.review_reference(ref, base, 4)
                tasks += matrix.interleave(
                    matrix.plan(ref, per_step=args.per_step, recovery=5, timed=args.timed, review=4)
                )
        _STATE["ref"] = ref
        results: list[dict[str, Any]] = []
        if "crash" in only:
            results += [matrix.outcome_json(o) for o in matrix.self_test(ref, base)]
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(max(1, min(2, args.workers))) as pool:
            for res in pool.imap_unordered(_work, tasks):
                results.append(res)
                if args.log is not None:
                    with args.log.open("a") as fh:
                        fh.write(json.dumps(res) + "\n")
                if not args.json and not res.get("clean", True) and "point" in res:
                    print(
                        f"FAILED {res['probe']} {res['point']}: {res['problems'][:2]}",
                        file=sys.stderr,
                    )
        rows, report = _summarise(results, ref, time.monotonic() - t0)
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print(_table(rows))
            print(
                f"\n{report['distinct_kill_points']} distinct kill points; corpus of {size} "
                f"artifacts; {report['seconds']:.0f} s wall; work folder {base}"
            )
        return 0 if all(r.failures == 0 and r.lost == 0 for r in rows) else 1
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def _summarise(
    results: list[dict[str, Any]], ref: Reference, seconds: float
) -> tuple[list[Row], dict[str, Any]]:
    rows: dict[str, Row] = {}
    killed_points: set[str] = set()
    failures: list[dict[str, Any]] = []
    extras: dict[str, Any] = {}
    for res in results:
        if "point" in res:
            label = LABELS[res["probe"]]
            row = rows.setdefault(label, Row(label))
            row.tries += 1
            row.clean += int(res["clean"])
            row.failures += int(not res["clean"])
            row.lost += res["lost"]
            row.seconds += res["seconds"]
            if res["killed"] and res["probe"] not in ("soak", "self-test"):
                killed_points.add(f"{res['probe']}:{res['point']}")
            if not res["clean"]:
                failures.append(res)
            if "figures" in res:
                extras["soak"] = res["figures"]
        elif "skipped" in res and "tries" not in res:
            extras.setdefault("skipped", []).append(res)
        else:
            row = rows.setdefault(res["probe"], Row(res["probe"]))
            row.tries, row.failures = res["tries"], res["failures"]
            row.clean = res["tries"] - res["failures"]
            row.seconds = res["seconds"]
            if res["failures"]:
                failures.append(res)
    order = [*LABELS.values(), *PYTEST_PROBES]
    out = [rows[k] for k in order if k in rows]
    report = {
        "rows": [vars(r) | {"seconds": round(r.seconds, 1)} for r in out],
        "distinct_kill_points": len(killed_points),
        "corpus_artifacts": len(ref.commits),
        "reference_batch_s": round(ref.seconds, 2),
        "reference_calls": ref.counts,
        "seconds": round(seconds, 1),
        "failures": failures,
        "load": os.getloadavg(),
        **extras,
    }
    return out, report


if __name__ == "__main__":
    sys.exit(main())

"""`membrane serve` on a big workspace (issue 15): how fast the runs list and a run's
timeline answer over loopback HTTP.

The workspace is generated: a real batch of 40 benchmark-corpus artifacts (the offline
proposer and the real gates) gives real traces; then the ledger gets 100,000 runs in 100
batches of 1,000 (COMMITTED, EXHAUSTED, HELD, FAILED in a realistic mix, each with its
outcome and outcome-log record), and 2,000 of them get a trace file (a copy of a real trace
of the same shape; 100,000 would be ~3 GB and a run's page reads only its own file). Nothing
is committed to the repository; the workspace lives in a temporary folder.

* `runs_p95_ms` (target ≤ 150): `/runs` (the page) and `/api/v1/runs`, first pages, deep
  keyset pages, filtered by state, batch and proposer, 50 rows each; p95 over all.
* `run_detail_p95_ms` (target ≤ 100): `/runs/{id}` (the timeline page) and
  `/api/v1/runs/{id}` for runs drawn at random.
Requests go one at a time through one keep-alive client to `membrane serve` (its own
process, uvicorn on 127.0.0.1) after a warm-up; client and server share the two cores.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.corpus import PACK, artifacts
from harness.api import run_batch
from harness.ledger import Ledger
from harness.serve.reader import encode_cursor

__all__ = ["generate", "run"]

RUNS = 100_000
BATCH = 1_000
TRACED = 2_000
_STATES = (("COMMITTED", 0.85), ("EXHAUSTED", 0.08), ("HELD", 0.04), ("FAILED", 0.03))
_PROPOSERS = ("offline", "openai:qwen2.5-7b")
_CODES = ("value.placeholder", "value.disjoint", "ri.fk_orphan", "prose.truncated")


def _templates(root: Path) -> dict[int, bytes]:
    """Real traces from a real batch, by number of attempts."""
    corpus = root / "seed.jsonl"
    corpus.write_text("".join(a.model_dump_json() + "\n" for a in artifacts(40, 0.5, seed=3)))
    result = run_batch(root / "seed-ws", corpus, PACK)
    out: dict[int, bytes] = {}
    for r in result.runs:
        out.setdefault(r.attempts, (root / "seed-ws" / "trace" / f"{r.run_id}.jsonl").read_bytes())
    return out


def _row(i: int, rng: random.Random) -> tuple[tuple[Any, ...], str]:
    batch = i // BATCH
    state = rng.choices([s for s, _w in _STATES], [w for _s, w in _STATES])[0]
    attempts = 1 if state == "FAILED" else rng.choice((1, 1, 2, 2, 3, 4))
    artifact = f"big-{i:06d}"
    run_id = f"{artifact}.r1"
    codes = {rng.choice(_CODES): rng.randint(1, 6) for _ in range(attempts - 1)}
    proposer = _PROPOSERS[i % 7 == 0]
    at = f"2026-11-{1 + batch // 10:02d}T{batch % 10:02d}:{(i // 60) % 60:02d}:{i % 60:02d}+00:00"
    outcome = {
        "run_id": run_id,
        "artifact_id": artifact,
        "state": state,
        "attempts": attempts,
        "cycles": 2 + 4 * attempts,
        "critique_codes": codes,
        "proposer": proposer,
        "content_hash": None,
        "error": None,
    }
    result = {"COMMITTED": "success", "HELD": "partial"}.get(state, "failure")
    record = {
        "kind": "run",
        "run_id": run_id,
        "artifact_id": artifact,
        "pack": "facility",
        "pack_version": "1.0.0",
        "proposer": proposer,
        "result": result,
        "attempts": attempts,
        "retries": attempts - 1,
        "quality": 1.0,
        "human_override": None,
        "dominant_failure": next(iter(codes), None),
        "failed": [
            {"attempt": n, "codes": [c], "fix_hints": {}}
            for n, c in enumerate(codes, start=2)
            if n <= attempts
        ],
        "tools": [],
        "started_at": at,
        "finished_at": at,
    }
    row = (
        run_id,
        artifact,
        f"b-{batch:03d}",
        f"{i:064x}",
        state,
        at,
        20,
        "0" * 64,
        json.dumps(outcome),
    )
    return row, json.dumps(record)


def generate(root: Path, runs: int = RUNS, traced: int = TRACED) -> tuple[Path, list[str]]:
    """A workspace of `runs` runs under `root/ws`; the ids of the ones with a trace."""
    templates = _templates(root)
    ws = root / "ws"
    shutil.rmtree(ws, ignore_errors=True)
    (ws / "trace").mkdir(parents=True)
    (ws / "membrane.toml").write_text(f'pack = "{PACK}"\n')
    ledger = Ledger(ws / ".membrane" / "ledger.sqlite")
    rng = random.Random(15)
    rows, records = zip(*(_row(i, rng) for i in range(runs)), strict=True)
    db = ledger._db
    db.execute("BEGIN")
    db.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.executemany(
        "INSERT INTO outcomes (run_id, kind, record) VALUES (?, 'run', ?)",
        [(r[0], rec) for r, rec in zip(rows, records, strict=True)],
    )
    db.execute("COMMIT")
    ledger.close()
    sample = rng.sample(range(runs), traced)
    ids = []
    for i in sample:
        run_id, attempts = rows[i][0], json.loads(rows[i][8])["attempts"]
        template = templates.get(attempts) or templates[max(templates)]
        src_id = json.loads(template.split(b"\n", 1)[0])["run_id"]
        (ws / "trace" / f"{run_id}.jsonl").write_bytes(
            template.replace(src_id.encode(), run_id.encode())
        )
        ids.append(run_id)
    return ws, ids


def _serve(ws: Path) -> tuple[subprocess.Popen[str], str]:
    """`membrane serve` as a person starts it: its own process, on a free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "serve", "--workspace", str(ws), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("membrane serve:"):
        proc.kill()
        raise RuntimeError(f"membrane serve did not start: {line}")
    base = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            httpx.get(base + "/favicon.ico", timeout=5)
            break
        except httpx.ConnectError:
            time.sleep(0.025)
    return proc, base


def _times(client: httpx.Client, urls: list[str]) -> list[float]:
    out = []
    for url in urls:
        t0 = time.perf_counter()
        r = client.get(url)
        out.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200, (url, r.status_code, r.text[:200])
    return out


def _p95(xs: list[float]) -> float:
    return round(statistics.quantiles(xs, n=20)[-1], 2)


def run(quick: bool = False) -> dict[str, Any]:
    n_runs = 10_000 if quick else RUNS
    n_req = 60 if quick else 300
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        t0 = time.perf_counter()
        ws, ids = generate(Path(tmp), n_runs, min(TRACED, n_runs // 5))
        generate_s = time.perf_counter() - t0
        proc, base = _serve(ws)
        try:
            with httpx.Client(base_url=base, timeout=60) as c:

                def lists() -> list[str]:
                    deep = encode_cursor(rng.randint(1, n_runs))
                    return [
                        rng.choice(["/runs", "/api/v1/runs"])
                        + rng.choice(
                            [
                                "",
                                "?state=EXHAUSTED",
                                "?state=HELD",
                                f"?cursor={deep}",
                                f"?batch=b-{rng.randint(0, n_runs // BATCH - 1):03d}",
                                "?proposer=openai:qwen2.5-7b",
                                f"?state=COMMITTED&cursor={deep}",
                            ]
                        )
                    ]

                def details() -> list[str]:
                    run_id = rng.choice(ids)
                    return [rng.choice([f"/runs/{run_id}", f"/api/v1/runs/{run_id}"])]

                _times(c, [u for _ in range(20) for u in lists() + details()])  # warm-up
                list_ms = _times(c, [u for _ in range(n_req) for u in lists()])
                detail_ms = _times(c, [u for _ in range(n_req) for u in details()])
                page_ms = _times(c, ["/runs"] * (n_req // 3))
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=30)
    return {
        "name": "serve",
        "params": {"runs": n_runs, "traced": len(ids), "requests": n_req, "quick": quick},
        "figures": {
            "runs_p95_ms": _p95(list_ms),
            "runs_median_ms": round(statistics.median(list_ms), 2),
            "runs_page_first_p95_ms": _p95(page_ms),
            "run_detail_p95_ms": _p95(detail_ms),
            "run_detail_median_ms": round(statistics.median(detail_ms), 2),
            "generate_s": round(generate_s, 1),
        },
    }

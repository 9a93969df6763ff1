"""A batch killed with SIGKILL at random points and rerun ends with nothing lost and
nothing duplicated in the ledger, current/, corpus.jsonl and the chapters (which `trace
verify` checks). Really kills a process."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "packs" / "facility"
DEMO = PACK / "corpus" / "demo.jsonl"
pytestmark = [pytest.mark.java, pytest.mark.slow]


def _batch(ws: Path, corpus: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness",
            "batch",
            str(corpus),
            "--pack",
            str(PACK),
            "-w",
            str(ws),
            "--cohort-size",
            "8",
            "--no-report",
            "--no-progress",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )


def test_sigkill_at_random_points_then_rerun_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    lines = DEMO.read_text().splitlines(keepends=True)  # all 240: a batch is fast now
    corpus.write_text("".join(lines))
    ids = [json.loads(x)["id"] for x in lines]
    ws = tmp_path / "ws"
    rng = random.Random(20261121)
    kills = 0
    for _ in range(4):
        proc = _batch(ws, corpus)
        time.sleep(rng.uniform(2.0, 7.0))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.communicate(timeout=60)
    assert kills >= 2, "the batch finished before it could be killed; raise the corpus size"
    final = _batch(ws, corpus)
    _out, err = final.communicate(timeout=600)
    assert final.returncode == 0, err.decode()[-2000:]

    db = sqlite3.connect(ws / ".membrane" / "ledger.sqlite")
    commits = db.execute("SELECT artifact_id, version, content_hash FROM commits").fetchall()
    statuses = dict(db.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
    db.close()
    committed_ids = [c[0] for c in commits]
    assert sorted(committed_ids) == sorted(set(committed_ids)), "an artifact was committed twice"
    assert all(v == 1 for _a, v, _h in commits)
    assert set(committed_ids) == set(ids), "an artifact was lost"
    assert "running" not in statuses
    corpus_lines = (ws / "current" / "corpus.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["id"] for x in corpus_lines) == sorted(ids)
    on_disk = {p.stem for p in (ws / "current" / "artifacts").iterdir()}
    assert on_disk == {h for _a, _v, h in commits}, "orphan or missing artifact files"
    chapters = {p.name for p in (ws / "current" / "chapters").iterdir()}
    assert chapters == {f"{i}.md" for i in ids}, "orphan or missing chapters"
    assert not [p for p in (ws / "current").rglob("*") if ".tmp-" in p.name]
    verify = subprocess.run(
        [sys.executable, "-m", "harness", "trace", "verify", "-w", str(ws), "--json"],
        capture_output=True,
        cwd=ROOT,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout.decode()[-2000:]

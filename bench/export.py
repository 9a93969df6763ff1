"""The committed corpus's two registers and its export (issue 25).

* `export_20k_s`: a workspace holding 20,000 committed facility artifacts (the benchmark
  corpus's 1,000 generated artifacts, each committed 20 times under its own id; set up
  directly in the ledger and object store, not timed), then `membrane export --format
  parquet` of it into a fresh folder: the ledger snapshot, reading every object, Arrow
  columns, DuckDB writing four Parquet files and the dataset card. Median of 3. Target ≤ 5 s.
* `chapter_overhead_pct`: `membrane batch` of the benchmark corpus (500 artifacts, 5%
  defective, offline proposer) into a fresh workspace with chapters rendered at commit (A)
  and without (B, the renderer switched off), after a warm-up batch, interleaved A B B A
  A B ...: the end-to-end
  throughput lost, (median B/s - median A/s) / median B/s. Target ≤ 5%. Wall time is
  noisy on a shared 2-core VM, so `chapter_overhead_cpu_pct` gives the same comparison in
  this process's CPU time per artifact (chapters are written without fsync: CPU is their
  cost). Also `chapter_render_ms`, rendering one chapter alone.
Not a test: figures vary with the machine and its load.
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

import orjson

from bench.corpus import PACK, artifacts
from harness import api
from harness.chapters import ChapterRenderer
from harness.export import export
from harness.ledger import CommitRow, Ledger
from harness.pack import load_pack
from harness.store import artifact_bytes, content_hash
from harness.workspace import Workspace

__all__ = ["run"]


def _committed_workspace(root: Path, n: int) -> None:
    """`n` committed artifacts, written straight into the store and the ledger (setup)."""
    base = artifacts(1000, defect_rate=0.0)
    ws = Workspace(root)
    ws.ensure()
    Ledger(ws.ledger_path).close()  # the schema
    (ws.current / "artifacts").mkdir(parents=True, exist_ok=True)
    (ws.current / "metrics").mkdir(parents=True, exist_ok=True)
    runs, commits = [], []
    for i in range(n):
        art = base[i % len(base)].model_copy(update={"id": f"exp-{i:06d}"})
        data = artifact_bytes(art)
        digest = content_hash(data)
        (ws.current / "artifacts" / f"{digest}.json").write_bytes(data)
        mdata = orjson.dumps({"attempts": 1 + i % 3, "run_id": f"{art.id}.r1"})
        mdigest = content_hash(mdata)
        (ws.current / "metrics" / f"{mdigest}.json").write_bytes(mdata)
        run_id = f"{art.id}.r1"
        outcome = orjson.dumps({"state": "COMMITTED", "attempts": 1 + i % 3}).decode()
        runs.append((run_id, art.id, "b", digest, "COMMITTED", "t", 1, "a" * 64, outcome))
        commits.append((art.id, 1, digest, mdigest, run_id, 0, "a" * 64, "2026-01-01T00:00:00"))
    db = sqlite3.connect(ws.ledger_path)
    with db:
        db.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", runs)
        db.executemany("INSERT INTO commits VALUES (?, ?, ?, ?, ?, ?, ?, ?)", commits)
        db.execute("INSERT INTO meta (key, value) VALUES ('pack', ?)", (str(PACK),))
    db.close()


def _export_s(n: int, rounds: int) -> tuple[float, dict[str, int]]:
    times, tables = [], {}
    with tempfile.TemporaryDirectory() as d:
        _committed_workspace(Path(d) / "ws", n)
        for r in range(rounds):
            t0 = time.perf_counter()
            res = export(Path(d) / "ws", "parquet", Path(d) / f"out{r}")
            times.append(time.perf_counter() - t0)
            assert res.artifacts == n
            tables = res.tables
    return statistics.median(times), tables


def _batch_aps(n: int, chapters: bool) -> tuple[float, float]:
    """(artifacts/s wall, CPU seconds of this process per artifact) of one batch."""
    with tempfile.TemporaryDirectory() as d:
        corpus = Path(d) / "corpus.jsonl"
        corpus.write_text("".join(a.model_dump_json() + "\n" for a in artifacts(n)))
        cpu = time.process_time()
        if chapters:
            result = api.run_batch(Path(d) / "ws", corpus, PACK)
        else:
            with mock.patch.object(api, "ChapterRenderer", lambda pack: None):
                result = api.run_batch(Path(d) / "ws", corpus, PACK)
        cpu = (time.process_time() - cpu) / n
        assert (Path(d) / "ws" / "current" / "chapters").is_dir() == chapters
        return result.artifacts_per_s, cpu


def _render_ms(rounds: int = 200) -> float:
    renderer = ChapterRenderer(load_pack(PACK))
    art = artifacts(1, defect_rate=0.0)[0]
    row = CommitRow(art.id, 1, "a" * 64, "b" * 64, "r", 0, "c" * 64, "t")
    t0 = time.perf_counter()
    for _ in range(rounds):
        renderer.render(art, row, 1)
    return (time.perf_counter() - t0) / rounds * 1000


def run(quick: bool = False) -> dict[str, Any]:
    n_export, rounds, n_batch, pairs = (2_000, 1, 100, 1) if quick else (20_000, 3, 500, 3)
    export_s, tables = _export_s(n_export, rounds)
    on: list[tuple[float, float]] = []
    off: list[tuple[float, float]] = []
    _batch_aps(n_batch, True)  # warm-up (imports, caches), not counted
    for i in range(pairs):  # interleaved, alternating which goes first
        for chapters in (True, False) if i % 2 == 0 else (False, True):
            (on if chapters else off).append(_batch_aps(n_batch, chapters))
    a, b = statistics.median(x[0] for x in on), statistics.median(x[0] for x in off)
    # CPU time is steadier than wall time on a shared machine (chapters are not fsynced)
    ca, cb = statistics.median(x[1] for x in on), statistics.median(x[1] for x in off)
    key = "export_20k_s" if n_export == 20_000 else f"export_{n_export // 1000}k_s"
    return {
        "name": "export",
        "params": {
            "export_artifacts": n_export,
            "export_rows": tables,
            "batch_artifacts": n_batch,
            "pairs": pairs,
        },
        "figures": {
            key: round(export_s, 3),
            "chapter_overhead_pct": round((b - a) / b * 100, 2),
            "chapter_overhead_cpu_pct": round((ca - cb) / cb * 100, 2),
            "batch_artifacts_per_s_chapters": round(a, 2),
            "batch_artifacts_per_s_no_chapters": round(b, 2),
            "chapter_render_ms": round(_render_ms(), 3),
        },
    }

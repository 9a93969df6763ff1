"""Disk faults on a real file system (issue 17, item 9): a workspace on a small tmpfs that
fills mid-batch, and a read-only workspace running `report` and refusing `batch`. Needs a
mount namespace (`unshare -m`, as root); skipped where there is none. The same faults are
injected deterministically, without mounts, in tests/harness/test_disk_faults.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "packs" / "facility"
DEMO = PACK / "corpus" / "demo.jsonl"
pytestmark = [pytest.mark.java, pytest.mark.slow]


def _namespaces() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "mount", "-t", "tmpfs", "t", "/mnt"], check=False, capture_output=True
    )
    return probe.returncode == 0


needs_mounts = pytest.mark.skipif(not _namespaces(), reason="needs root and unshare -m")


def _membrane(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


def _batch_args(corpus: Path, ws: Path) -> list[str]:
    return _membrane(
        "batch",
        str(corpus),
        "--pack",
        str(PACK),
        "-w",
        str(ws),
        "--cohort-size",
        "5",
        "--no-report",
        "--no-progress",
    )


# the commits a workspace's ledger holds (run inside the namespace, after the fault)
COUNT = (
    "import sqlite3, sys; db = sqlite3.connect(sys.argv[1] + '/.membrane/ledger.sqlite');"
    " print(db.execute('SELECT count(*) FROM commits').fetchone()[0])"
)


@needs_mounts
def test_a_tmpfs_that_fills_mid_batch_fails_closed_and_the_rerun_resumes(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:30]))
    ref = tmp_path / "reference"
    subprocess.run(_batch_args(corpus, ref), check=True, capture_output=True, cwd=ROOT)
    want = (ref / "current" / "corpus.jsonl").read_bytes()
    mid = 0
    for size in ("1200k", "1800k"):
        ws = tmp_path / f"ws-{size}"
        ws.mkdir()
        # in a mount namespace of its own: the tmpfs fills, then "space is freed" (a
        # remount with room), the same batch reruns, and the result is copied out
        script = (
            'mount -t tmpfs -o size="$1" tmpfs "$0"; shift;'
            ' "$@" > "$0.1.out" 2> "$0.1.err"; echo $? > "$0.1.rc";'
            ' mount -o remount,size=64m "$0";'
            f' {sys.executable} -c "{COUNT}" "$0" > "$0.commits";'
            ' "$@" > "$0.2.out" 2> "$0.2.err"; echo $? > "$0.2.rc";'
            ' cp "$0/current/corpus.jsonl" "$0.corpus";'
            f' {sys.executable} -m harness trace verify -w "$0" --json > "$0.verify"'
        )
        subprocess.run(
            ["unshare", "-m", "sh", "-c", script, str(ws), size, *_batch_args(corpus, ws)],
            check=True,
            cwd=ROOT,
            timeout=300,
        )
        first_rc = int(Path(f"{ws}.1.rc").read_text())
        first_err = Path(f"{ws}.1.err").read_text()
        assert first_rc == 2, (size, first_err)
        assert "no space left on the device" in first_err and "Traceback" not in first_err
        assert f"{ws}" in first_err  # it names a file of the workspace
        mid += int(Path(f"{ws}.commits").read_text()) > 0
        assert int(Path(f"{ws}.2.rc").read_text()) == 0, Path(f"{ws}.2.err").read_text()
        assert Path(f"{ws}.corpus").read_bytes() == want, size
        verified = json.loads(Path(f"{ws}.verify").read_text())
        assert verified["failed"] == [] and verified["chapters"] == []
    assert mid >= 1  # at least one size filled up after some artifacts were committed


@needs_mounts
def test_a_read_only_workspace_reports_and_refuses_a_batch(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:10]))
    ws = tmp_path / "ws"
    subprocess.run(_batch_args(corpus, ws), check=True, capture_output=True, cwd=ROOT)
    script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'

    def read_only(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["unshare", "-m", "sh", "-c", script, str(ws), *_membrane(*args, "-w", str(ws))],
            check=False,
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
        )

    report = read_only("report", "--json")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["runs"] == {"COMMITTED": 10}
    lessons = read_only("learn", "lessons", "--json")  # the store the batch's pass wrote
    assert lessons.returncode == 0, lessons.stderr
    assert isinstance(json.loads(lessons.stdout), list)
    batch = read_only("batch", str(corpus), "--no-progress")
    assert batch.returncode == 2, batch.stderr
    assert f"{ws}/.membrane/lock: cannot write here: the workspace is read-only" in batch.stderr
    assert "Traceback" not in batch.stderr

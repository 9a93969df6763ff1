"""Disk faults (issue 17, item 9): a read-only workspace, a full disk, a damaged ledger
header, a ledger locked past the busy timeout and the temp files a dead writer left. Each
read works where it can, each refused write is one clear error naming the file (exit 2,
never a traceback), nothing partial is committed, and the rerun resumes to the same result.

The read-only and full-disk cases are real where the machine allows: a read-only bind mount
or a small tmpfs in a mount namespace of its own (`unshare -m`, root), else `chmod -R a-w`
(not root). The deterministic full-disk case injects ENOSPC at the object writes."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from effectors.testing import ScriptedProposer
from harness import store
from harness.cli import main
from harness.errors import StorageError
from harness.ledger import Ledger
from harness.models import Artifact
from harness.store import recover
from harness.workspace import SyncGroup, Workspace
from tests.harness.helpers import fake_gates, make_engines, run_cohort

ROOT = Path(__file__).resolve().parents[2]
ARTS = [
    Artifact(id=f"a{i}", tables={"t": [{"k": f"a{i}", "v": i}]}, prose=f"a{i}.") for i in range(6)
]


def _batch(tmp: Path, arts: Sequence[Artifact] = ARTS, cohort_size: int | None = None) -> Workspace:
    """Run `arts` through the production driver (fake gates; real ledger, traces, files)."""
    ws, eng = make_engines(tmp, fake_gates(), ScriptedProposer("fake", []))
    try:
        recover(ws, eng.ledger)
        run_cohort(ws, eng, arts, cohort_size)
        store.rebuild_view(ws, eng.ledger)
    finally:
        eng.ledger.close()
    return ws


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# -- a read-only workspace -------------------------------------------------------------


def _can_bind_read_only() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount --bind / /mnt 2>/dev/null || mount -t tmpfs t /mnt"],
        check=False,
        capture_output=True,
    )
    return probe.returncode == 0


@pytest.fixture
def read_only() -> Iterator[Any]:
    """A function running `python -m harness ARGS` on a read-only workspace folder."""
    chmodded: list[Path] = []
    bind = _can_bind_read_only()
    if not bind and os.geteuid() == 0:
        pytest.skip("root without mount namespaces: a read-only folder cannot be made here")

    def run(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "harness", *args, "-w", str(ws)]
        if bind:
            script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'
            cmd = ["unshare", "-m", "sh", "-c", script, str(ws), *cmd]
        elif ws not in chmodded:
            for p in [ws, *ws.rglob("*")]:
                p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
            chmodded.append(ws)
        return subprocess.run(
            cmd, check=False, capture_output=True, text=True, cwd=ROOT, timeout=120
        )

    yield run
    for ws in chmodded:
        for p in [ws, *ws.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_a_read_only_workspace_reads_and_refuses_writes_clearly(
    tmp_path: Path, read_only: Any
) -> None:
    ws = _batch(tmp_path / "ws")
    before = {p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file()}
    for args in (
        ("trace", "verify"),
        ("trace", "list", "--json"),
        ("trace", "show", "a0.r1"),
        ("review", "list"),
        ("learn", "status", "--json"),
        ("learn", "report"),
        ("learn", "lessons", "--json"),
    ):
        done = read_only(ws.root, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert "6 of 6 trace(s) verify" in read_only(ws.root, "trace", "verify").stdout
    for args in (
        ("recover",),
        ("learn", "rebuild"),
        ("review", "reject", "a0.r1", "--reason", "x"),
    ):
        done = read_only(ws.root, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        assert "read-only" in done.stderr and str(ws.state) in done.stderr, done.stderr
    after = {p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file()}
    assert after == before


# -- a damaged ledger header -------------------------------------------------------------


def test_a_damaged_ledger_header_is_a_clear_error_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _batch(tmp_path)
    with open(ws.ledger_path, "r+b") as fh:
        fh.write(b"this is no db!!\0")  # the 16-byte magic string
    for args in (
        ["trace", "verify"],
        ["trace", "list"],
        ["review", "list"],
        ["learn", "status"],
        ["recover"],
    ):
        code, text = _cli([*args, "-w", str(tmp_path)], capsys)
        assert code == 2, (args, text)
        assert f"{ws.ledger_path}: is not a readable SQLite database" in text
        assert "restore it from a backup" in text
    assert (ws.ledger_path.read_bytes()[:16]) == b"this is no db!!\0"  # never written over


# -- a ledger locked past the busy timeout --------------------------------------------


def test_a_ledger_locked_past_the_busy_timeout_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _batch(tmp_path)
    ledger = Ledger(ws.ledger_path)  # a run killed before its end: recovery must write
    ledger.start_run("a9.r1", "a9", "b-x", "0" * 64, "2026-01-01T00:00:01+00:00")
    ledger.close()
    monkeypatch.setenv("MEMBRANE_BUSY_TIMEOUT_S", "0.2")
    other = sqlite3.connect(ws.ledger_path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another process holding the write lock
    try:
        code, text = _cli(["recover", "-w", str(tmp_path)], capsys)
        assert code == 2, text
        assert f"{ws.ledger_path}: the database is locked by another process" in text
        assert "MEMBRANE_BUSY_TIMEOUT_S" in text
        code, text = _cli(["trace", "list", "-w", str(tmp_path), "--json"], capsys)
        assert code == 0, text  # readers are not blocked by a writer
    finally:
        other.execute("ROLLBACK")
        other.close()
    code, text = _cli(["recover", "-w", str(tmp_path), "--json"], capsys)
    assert code == 0, text
    assert '"interrupted": 1' in text


def test_a_bad_busy_timeout_is_a_setup_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _batch(tmp_path)
    monkeypatch.setenv("MEMBRANE_BUSY_TIMEOUT_S", "soon")
    code, text = _cli(["trace", "list", "-w", str(tmp_path)], capsys)
    assert code == 2 and "$MEMBRANE_BUSY_TIMEOUT_S is 'soon'" in text


# -- a full disk -------------------------------------------------------------------------


def test_enospc_mid_batch_stops_cleanly_commits_nothing_partial_and_the_rerun_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = _batch(tmp_path / "reference")
    real = SyncGroup.write
    calls = {"n": 0}

    def full_after_four(group: SyncGroup, path: Path, data: bytes) -> None:
        if "current" in path.parts:  # a committed object (the inputs went first)
            calls["n"] += 1
        if calls["n"] > 4:  # the second cohort's commit group: the disk is full
            tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            tmp.write_bytes(data[: len(data) // 2])  # what a full disk leaves behind
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp))
        real(group, path, data)

    monkeypatch.setattr(SyncGroup, "write", full_after_four)
    with pytest.raises(StorageError, match="no space left") as caught:
        _batch(tmp_path / "ws", cohort_size=2)  # each cohort's two runs commit as a group
    assert caught.value.file is not None and ".tmp-" in caught.value.file
    monkeypatch.setattr(SyncGroup, "write", real)
    ws = Workspace(tmp_path / "ws")
    ledger = Ledger.reader(ws.ledger_path)
    try:
        committed = ledger.latest_commits()
    finally:
        ledger.close()
    assert 0 < len(committed) < len(ARTS)  # it stopped part-way, and what it committed ...
    code, text = _cli(["trace", "verify", "-w", str(ws.root), "--json"], capsys)
    report = json.loads(text)
    # ... verifies: the only failures are the stopped runs (committed ones too: the cohort
    # anchors its runs when they end), unanchored until recovery settles them (and
    # chapters: this helper's committer renders none, recovery does)
    assert code == 4, text
    assert {c["code"] for c in report["chapters"]} <= {"chapter.missing"}
    assert {f["code"] for f in report["failed"]} == {"trace.unanchored"}
    for row in committed:
        assert (ws.current / "artifacts" / f"{row.content_hash}.json").is_file()
    # space freed: the rerun resumes (recovery settles the stopped runs, sweeps the temp
    # file a dead writer would leave) and ends with the corpus an uninterrupted run has
    _batch(tmp_path / "ws")
    assert (ws.current / "corpus.jsonl").read_bytes() == (
        reference.current / "corpus.jsonl"
    ).read_bytes()
    code, text = _cli(["trace", "verify", "-w", str(ws.root)], capsys)
    assert code == 0, text


def test_enospc_in_the_cli_is_one_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _batch(tmp_path)

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(store, "atomic_write", full)
    code, text = _cli(["recover", "-w", str(tmp_path)], capsys)
    assert code == 2, text
    assert f"{ws.current / 'corpus.jsonl'}: no space left on the device" in text
    assert "rerun the same command" in text and "Traceback" not in text


# -- temp files a dead writer left -------------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(proc.stdout)


def test_recovery_sweeps_the_temp_files_of_dead_writers_only(tmp_path: Path) -> None:
    ws = _batch(tmp_path)
    dead, alive = _dead_pid(), os.getppid()
    made = {
        ws.inputs / f".{'0' * 64}.json.tmp-{dead}": False,
        ws.current / f".corpus.jsonl.tmp-{dead}": False,
        ws.current / "artifacts" / f".{'1' * 64}.json.tmp-{dead}": False,
        ws.state / "learning" / f".state.json.tmp-{dead}": False,
        ws.root / f".membrane.toml.tmp-{dead}": False,
        ws.current / f".corpus.jsonl.tmp-{alive}": True,  # its writer is alive: kept
        ws.current / ".notes.tmp-x": True,  # not a temp file of ours
    }
    for path in made:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")
    ledger = Ledger(ws.ledger_path)
    try:
        report = recover(ws, ledger)
    finally:
        ledger.close()
    assert report.temp_files_removed == 5
    assert {p: p.exists() for p in made} == made

"""Done-when 3 of the learning issue: a SIGKILL during `review approve` and during a learning
cycle loses nothing and duplicates nothing. A child process really kills itself at each
point of the protocol (objects written, ledger committed, trace record half or not yet
written, trace tail not yet dropped, view not yet rebuilt, learning state half written);
then recovery and a retry must leave exactly one published version, one override record,
verifying traces and a learned state equal to a rebuild."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness import api
from harness.inspect import verify_traces
from harness.workspace import Workspace
from tests.harness.test_review import art, held_workspace

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

_CHILD = r"""
import os, signal, sys
from pathlib import Path

point, root, action = sys.argv[1], Path(sys.argv[2]), sys.argv[3]

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def before(module, name):
    real = getattr(module, name)
    def wrapper(*a, **k):
        die()
        return real(*a, **k)
    setattr(module, name, wrapper)

def after(module, name):
    real = getattr(module, name)
    def wrapper(*a, **k):
        out = real(*a, **k)
        die()
        return out
    setattr(module, name, wrapper)

import harness.review as review
import harness.learning.store as store
import harness.learning.report as report
from harness.ledger import Ledger
from harness import api

if point == "objects_written":
    after(review, "write_objects")
elif point == "ledger_committed":
    before(review, "append_line")
elif point == "trace_torn":
    def torn(path, line):
        with open(path, "ab") as fh:
            fh.write(line[: len(line) // 2])
            fh.flush()
            os.fsync(fh.fileno())
        die()
    review.append_line = torn
elif point == "tail_not_dropped":
    before(Ledger, "drop_trace_tail")
elif point == "view_not_rebuilt":
    before(review, "rebuild_view")
elif point == "cycle_started":
    before(report, "learning_cycle")
elif point == "state_torn":
    def torn_state(path, data):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data[: len(data) // 2])
            fh.flush()
            os.fsync(fh.fileno())
        die()
    store.atomic_write = torn_state
elif point == "state_written":
    after(store, "atomic_write")

if action == "approve":
    api.review_approve(root, "a1.r1", note="ok")
else:
    api.learn_status(root)
print("not killed")
"""

APPROVE_POINTS = [
    "objects_written",
    "ledger_committed",
    "trace_torn",
    "tail_not_dropped",
    "view_not_rebuilt",
    "cycle_started",
    "state_torn",
    "state_written",
]


def _child(point: str, root: Path, action: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD, point, str(root), action],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        check=False,
    )


def _ledger_rows(root: Path) -> tuple[list[tuple[str, int]], list[str], str]:
    db = sqlite3.connect(root / ".membrane" / "ledger.sqlite")
    try:
        commits = db.execute("SELECT artifact_id, version FROM commits").fetchall()
        overrides = [
            r for (r,) in db.execute("SELECT run_id FROM outcomes WHERE kind = 'override'")
        ]
        (status,) = db.execute("SELECT status FROM held WHERE run_id = 'a1.r1'").fetchone()
    finally:
        db.close()
    return commits, overrides, status


def _settled(root: Path) -> None:
    """What must hold after recovery, killed or not."""
    commits, overrides, status = _ledger_rows(root)
    if status == "approved":
        assert commits == [("a1", 1)] and overrides == ["a1.r1"]
        corpus = (root / "current" / "corpus.jsonl").read_text().splitlines()
        assert [json.loads(x)["id"] for x in corpus] == ["a1"]
    else:
        assert status == "pending" and commits == [] and overrides == []
        assert (root / "current" / "corpus.jsonl").read_text() == ""
    assert all(r.ok for r in verify_traces(Workspace(root))), verify_traces(Workspace(root))


@pytest.mark.parametrize("point", APPROVE_POINTS)
def test_sigkill_during_review_approve_loses_and_duplicates_nothing(
    point: str, tmp_path: Path
) -> None:
    held_workspace(tmp_path, [art("a1"), art("a2")], [])
    api.learn_status(tmp_path)  # a saved state for the torn-state points to tear
    proc = _child(point, tmp_path, "approve")
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    api.run_recover(tmp_path)
    _settled(tmp_path)
    _commits, _overrides, status = _ledger_rows(tmp_path)
    if status == "pending":  # killed before the commit point: the person approves again
        api.review_approve(tmp_path, "a1.r1", note="again")
    else:
        with pytest.raises(Exception, match="already approved"):
            api.review_approve(tmp_path, "a1.r1")
    _settled(tmp_path)
    assert _ledger_rows(tmp_path)[2] == "approved"
    rebuilt = api.learn_status(tmp_path, rebuild=True)
    assert rebuilt["rebuilt_equals_incremental"] is True
    log_len = len(
        sqlite3.connect(tmp_path / ".membrane" / "ledger.sqlite")
        .execute("SELECT seq FROM outcomes")
        .fetchall()
    )
    assert rebuilt["records"] == log_len == 3  # two runs and one approval, once each


@pytest.mark.parametrize("point", ["cycle_started", "state_torn", "state_written"])
def test_sigkill_during_a_learning_cycle_loses_and_duplicates_nothing(
    point: str, tmp_path: Path
) -> None:
    held_workspace(tmp_path, [art("a1"), art("a2")], [])
    api.learn_status(tmp_path)
    held_workspace(tmp_path, [art("a3"), art("a4")], [])  # two records the state has not seen
    proc = _child(point, tmp_path, "cycle")
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    status = api.learn_status(tmp_path)
    assert status["records"] == 4 and status["proposers"]["fake"]["runs"] == 4
    rebuilt = api.learn_status(tmp_path, rebuild=True)
    assert rebuilt["rebuilt_equals_incremental"] is True and rebuilt["records"] == 4

"""Committed content is verified (issue 17, items 1 and 6): an edited committed file, two
ledger rows with swapped hashes, or a deleted committed file are found by `membrane trace
verify` (exit 4, with a code each), and recovery refuses to republish them with a message
saying what to do, never a traceback."""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from effectors.testing import InstantGate, ScriptedProposer
from harness import api
from harness.cli import main
from harness.errors import TraceError
from harness.inspect import verify_commits
from harness.models import Artifact
from harness.models import Effector as E
from harness.workspace import Workspace
from tests.harness.helpers import make_engines, run_cohort


def committed(tmp: Path) -> Workspace:
    gates: dict[E, Any] = {
        E.VALUE_GATE: InstantGate("value_gate"),
        E.RI_GATE: InstantGate("ri_gate"),
        E.PROSE_GATE: InstantGate("prose_gate"),
    }
    ws, eng = make_engines(tmp, gates, ScriptedProposer("fake", []))
    arts = [
        Artifact(id=a, tables={"t": [{"k": a, "v": i}]}, prose=f"{a}.") for i, a in enumerate("xy")
    ]
    try:
        run_cohort(ws, eng, arts)
    finally:
        eng.ledger.close()
    assert verify_commits(ws) == []
    return ws


def path_of(ws: Workspace, artifact_id: str) -> Path:
    db = sqlite3.connect(ws.ledger_path)
    (h,) = db.execute(
        "SELECT content_hash FROM commits WHERE artifact_id = ?", (artifact_id,)
    ).fetchone()
    db.close()
    return ws.current / "artifacts" / f"{h}.json"


def test_an_edited_committed_file_is_found_and_never_republished(tmp_path: Path) -> None:
    ws = committed(tmp_path)
    p = path_of(ws, "x")
    p.write_bytes(p.read_bytes().replace(b'"x."', b'"tampered."'))
    (bad,) = verify_commits(ws)
    assert bad.code == "commit.edited"
    assert main(["trace", "verify", "-w", str(tmp_path)]) == 4
    with pytest.raises(TraceError, match="changed after it was committed"):
        api.run_recover(tmp_path)
    assert b"tampered" not in (ws.current / "corpus.jsonl").read_bytes()


def test_swapped_ledger_hashes_are_found(tmp_path: Path) -> None:
    ws = committed(tmp_path)
    db = sqlite3.connect(ws.ledger_path)
    rows = dict(db.execute("SELECT artifact_id, content_hash FROM commits").fetchall())
    db.execute("UPDATE commits SET content_hash = ? WHERE artifact_id = 'x'", (rows["y"],))
    db.execute("UPDATE commits SET content_hash = ? WHERE artifact_id = 'y'", (rows["x"],))
    db.commit()
    db.close()
    assert sorted(r.code for r in verify_commits(ws)) == ["commit.mismatch", "commit.mismatch"]
    assert main(["trace", "verify", "-w", str(tmp_path)]) == 4


def test_a_deleted_committed_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = committed(tmp_path)
    path_of(ws, "y").unlink()
    (bad,) = verify_commits(ws)
    assert bad.code == "commit.missing"
    assert main(["recover", "-w", str(tmp_path)]) == 4
    err = capsys.readouterr().err
    assert "is missing" in err and "membrane revert y" in err and "Traceback" not in err


class _Killed(BaseException):
    """Stands in for SIGKILL right after the commit point (nothing after it runs)."""


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_kill_after_the_commit_point_leaves_no_provenance_gap(tmp_path: Path) -> None:
    """Issue 17 item 5: the ledger row was written, the trace's commit record was not; the
    run is COMMITTED and recovery appends the record, so `trace why` still explains it."""
    from effectors.commit import Committer
    from harness.inspect import verify_traces, why

    gates: dict[E, Any] = {
        E.VALUE_GATE: InstantGate("value_gate"),
        E.RI_GATE: InstantGate("ri_gate"),
        E.PROSE_GATE: InstantGate("prose_gate"),
    }
    ws, eng = make_engines(tmp_path, gates, ScriptedProposer("fake", []))

    class DiesAfterCommit(Committer):
        def commit_many(self, *a: Any, **k: Any) -> Any:
            super().commit_many(*a, **k)
            raise _Killed

    eng.committer = DiesAfterCommit(ws, eng.ledger)
    art = Artifact(id="x", tables={"t": [{"k": "x", "v": 1}]}, prose="x.")
    with pytest.raises(_Killed):  # like a kill: the run's trace file is left as it was
        run_cohort(ws, eng, [art])
    eng.ledger.close()
    gc.collect()
    rec = api.run_recover(tmp_path)
    assert rec["settled_committed"] == 1 and rec["commits_completed"] == 1
    assert all(r.ok for r in verify_traces(ws)) and verify_commits(ws) == []
    prov = why(ws, "x", "t", "0", "v")
    assert prov.committed["version"] == 1
    assert api.run_recover(tmp_path)["commits_completed"] == 0  # once


def test_a_lost_ledger_is_refused_not_restarted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 item 6: a deleted ledger made run ids restart and append to old traces."""
    committed(tmp_path)
    (tmp_path / ".membrane" / "ledger.sqlite").unlink()
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "z", "tables": {}}\n')
    from tests.conftest import FACILITY

    code = main(["batch", str(corpus), "--pack", str(FACILITY), "-w", str(tmp_path)])
    assert code == 2 and "the ledger is missing" in capsys.readouterr().err

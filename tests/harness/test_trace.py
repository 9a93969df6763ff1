"""`trace verify` catches an edited, deleted, reordered or truncated record and a chain
recomputed after an edit (the ledger anchor disagrees)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from effectors.testing import InstantGate, ScriptedProposer
from harness.inspect import verify_traces
from harness.models import Artifact
from harness.models import Effector as E
from harness.trace.chain import event_hash
from tests.harness.helpers import make_engines, run_cohort


@pytest.fixture()
def committed(tmp_path: Path) -> tuple[Path, str]:
    gates = {
        E.VALUE_GATE: InstantGate("value_gate"),
        E.RI_GATE: InstantGate("ri_gate"),
        E.PROSE_GATE: InstantGate("prose_gate"),
    }
    ws, eng = make_engines(tmp_path, gates, ScriptedProposer("fake", []))
    art = Artifact(id="t1", tables={"t": [{"a": 1}]}, prose="p.")
    (run,) = run_cohort(ws, eng, [art])
    eng.ledger.close()
    return tmp_path, run.run_id


def _lines(ws: Path, run_id: str) -> list[str]:
    return (ws / "trace" / f"{run_id}.jsonl").read_text().splitlines(keepends=True)


def _write(ws: Path, run_id: str, lines: list[str]) -> None:
    (ws / "trace" / f"{run_id}.jsonl").write_text("".join(lines))


def _problem(ws: Path, run_id: str) -> str | None:
    """The failing check's code (stable API), None when the trace verifies."""
    from harness.workspace import Workspace

    (res,) = verify_traces(Workspace(ws), run_id)
    assert res.ok == (res.code is None)
    return res.code


def test_untouched_trace_verifies(committed: tuple[Path, str]) -> None:
    assert _problem(*committed) is None


def test_edited_record_is_caught(committed: tuple[Path, str]) -> None:
    ws, rid = committed
    lines = _lines(ws, rid)
    lines[2] = lines[2].replace('"seed"', '"oracle"')
    _write(ws, rid, lines)
    assert _problem(ws, rid) == "trace.edited"


def test_deleted_record_is_caught(committed: tuple[Path, str]) -> None:
    ws, rid = committed
    lines = _lines(ws, rid)
    del lines[3]
    _write(ws, rid, lines)
    assert _problem(ws, rid) == "trace.reordered"


def test_reordered_records_are_caught(committed: tuple[Path, str]) -> None:
    ws, rid = committed
    lines = _lines(ws, rid)
    lines[3], lines[4] = lines[4], lines[3]
    _write(ws, rid, lines)
    assert _problem(ws, rid) == "trace.reordered"


def test_truncated_trace_is_caught(committed: tuple[Path, str]) -> None:
    ws, rid = committed
    _write(ws, rid, _lines(ws, rid)[:-2])
    assert _problem(ws, rid) == "trace.truncated"


def test_recomputed_chain_is_caught_by_the_anchor(committed: tuple[Path, str]) -> None:
    ws, rid = committed
    events = [json.loads(x) for x in _lines(ws, rid)]
    events[1]["rule"] = "forged"
    prev = events[0]["hash"]
    for ev in events[1:]:
        ev["prev"] = prev
        ev["hash"] = event_hash(ev)
        prev = ev["hash"]
    _write(ws, rid, [json.dumps(e) + "\n" for e in events])
    assert _problem(ws, rid) == "trace.recomputed"


def test_planted_trace_without_ledger_row_is_caught(committed: tuple[Path, str]) -> None:
    ws, rid = committed
    (ws / "trace" / "ghost.r1.jsonl").write_text("".join(_lines(ws, rid)))
    from harness.workspace import Workspace

    bad = [r for r in verify_traces(Workspace(ws)) if not r.ok]
    assert [(r.run_id, r.code) for r in bad] == [("ghost.r1", "trace.unknown_run")]


def test_verify_during_a_batch_says_in_progress_not_damaged(tmp_path: Path) -> None:
    """Issue 17 item 10: `trace verify` while a batch runs reported its unfinished runs as
    failures. A run still `running` while a writer holds the workspace is in progress;
    without a writer it is an interrupted run (unanchored until `recover`)."""
    from harness.inspect import verify_traces
    from harness.ledger import Ledger
    from harness.trace import TraceWriter
    from harness.trace.events import RunStarted
    from harness.workspace import Workspace

    ws = Workspace(tmp_path)
    ws.ensure()
    ledger = Ledger(ws.ledger_path)
    ledger.start_runs([("a.r1", "a", "b", "h", "t")])
    ledger.close()
    w = TraceWriter(ws.trace_path("a.r1"), "a.r1", lambda: "t")
    w.append(RunStarted, artifact_id="a", batch_id="b", pack="p", pack_version="1",
             proposer="x", agenda="g", input_hash="h", max_attempts=3)
    w.close()
    with ws.lock():
        (r,) = verify_traces(ws)
        assert r.ok and r.code == "trace.in_progress"
    (r,) = verify_traces(ws)
    assert not r.ok and r.code == "trace.unanchored"

"""The human review queue through its public interfaces: `harness.api` (what the CLI calls)
and `membrane` itself for exit codes. Real ledger, real traces, real files; the gates are
instant fakes and the proposer is scripted (no JVM)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from effectors.testing import ScriptedProposer
from harness import api
from harness.cli import main
from harness.inspect import verify_traces, why
from harness.learning.outcomes import parse_record
from harness.ledger import Ledger
from harness.models import Artifact, RunState
from harness.models import Effector as E
from harness.review import ReviewError, _gates_passed
from harness.run import Run
from harness.workspace import Workspace
from tests.harness.helpers import cell_check, fake_gates, make_engines, run_cohort


def art(aid: str, standard: str = "IEC 60601-1", prose: str = "A CT scanner.") -> Artifact:
    return Artifact(
        id=aid,
        tables={"equipment": [{"equipment_id": "EQ-1", "standard": standard}]},
        prose=prose,
    )


hvac_is_wrong = cell_check(
    "value_gate", "value.disjoint", "equipment", "standard", lambda v: v != "ASHRAE 62.1"
)


def gates() -> dict[E, Any]:
    return fake_gates(hvac_is_wrong)


def held_workspace(tmp: Path, artifacts: list[Artifact], fixes: list[Artifact]) -> list[Run]:
    """Runs that passed every gate and were HELD (the pack requires approval)."""
    ws, eng = make_engines(tmp, gates(), ScriptedProposer("fake", fixes), require_approval=True)
    try:
        runs = run_cohort(ws, eng, artifacts)
    finally:
        eng.ledger.close()
    assert all(r.state == RunState.HELD for r in runs)
    return runs


def corpus(tmp: Path) -> dict[str, dict[str, Any]]:
    lines = (tmp / "current" / "corpus.jsonl").read_text().splitlines()
    return {json.loads(x)["id"]: json.loads(x) for x in lines}


def log(tmp: Path) -> list[tuple[str | None, str, dict[str, Any]]]:
    db = sqlite3.connect(tmp / ".membrane" / "ledger.sqlite")
    try:
        rows = db.execute("SELECT run_id, kind, record FROM outcomes ORDER BY seq").fetchall()
    finally:
        db.close()
    return [(r, k, json.loads(rec)) for r, k, rec in rows]


def test_list_show_approve_publish_through_the_ledger_and_verify(tmp_path: Path) -> None:
    held_workspace(tmp_path, [art("a1", "ASHRAE 62.1"), art("a2")], [art("a1")])
    queue = api.review_list(tmp_path)
    assert [h["run_id"] for h in queue] == ["a2.r1", "a1.r1"]  # oldest first: a2 passed sooner
    assert all("policy" in h["why"] for h in queue)
    shown = api.review_show(tmp_path, "a1.r1")
    assert shown["blocked_by"] == []
    assert {v["gate"] for v in shown["verdicts"]} == {"value_gate", "ri_gate", "prose_gate"}
    assert shown["diff"]["changed"] == [
        {"cell": "equipment[0].standard", "before": "ASHRAE 62.1", "after": "IEC 60601-1"}
    ]
    assert corpus(tmp_path) == {}

    row = api.review_approve(tmp_path, "a1.r1", note="looked right")
    assert row["version"] == 1
    assert corpus(tmp_path)["a1"]["tables"]["equipment"][0]["standard"] == "IEC 60601-1"
    assert [h["run_id"] for h in api.review_list(tmp_path)] == ["a2.r1"]
    ws = Workspace(tmp_path)
    assert all(r.ok for r in verify_traces(ws))
    events = [json.loads(x) for x in ws.trace_path("a1.r1").read_text().splitlines()]
    assert events[-1]["kind"] == "review" and events[-1]["action"] == "approved"
    assert events[-1]["note"] == "looked right"
    overrides = [rec for _r, kind, rec in log(tmp_path) if kind == "override"]
    assert [(o["run_id"], o["previous"], o["result"]) for o in overrides] == [
        ("a1.r1", "partial", "success")
    ]
    prov = why(ws, "a1", "equipment", "0", "standard")
    assert prov.committed["approved_by"] and prov.proposed["attempt"] == 2


def test_a_review_act_is_taken_once_and_acts_on_held_runs_only(tmp_path: Path) -> None:
    held_workspace(tmp_path, [art("a1"), art("a2")], [])
    api.review_approve(tmp_path, "a1.r1")
    with pytest.raises(ReviewError, match="already approved"):
        api.review_approve(tmp_path, "a1.r1")
    with pytest.raises(ReviewError, match="already approved"):
        api.review_reject(tmp_path, "a1.r1", "changed my mind")
    with pytest.raises(ReviewError, match="not held"):
        api.review_approve(tmp_path, "nope.r1")
    with pytest.raises(ReviewError, match="needs a reason"):
        api.review_reject(tmp_path, "a2.r1", "  ")
    db = sqlite3.connect(tmp_path / ".membrane" / "ledger.sqlite")
    assert db.execute("SELECT COUNT(*) FROM commits").fetchone()[0] == 1
    db.close()
    # the CLI says so with exit 2 (and --json carries the error)
    assert main(["review", "approve", "a1.r1", "-w", str(tmp_path)]) == 2
    assert main(["review", "show", "zzz", "-w", str(tmp_path), "--json"]) == 2
    assert main(["revert", "a2", "-w", str(tmp_path)]) == 2


def test_reject_publishes_nothing_and_charges_the_proposer(tmp_path: Path) -> None:
    held_workspace(tmp_path, [art("a1")], [])
    api.review_reject(tmp_path, "a1.r1", "wrong room")
    assert corpus(tmp_path) == {}
    ledger = Ledger(tmp_path / ".membrane" / "ledger.sqlite")
    try:
        held = ledger.held_of_run("a1.r1")
        run = ledger.run("a1.r1")
        assert held is not None and held.status == "rejected" and held.note == "wrong room"
        assert run is not None and run.status == "REJECTED"
        assert ("a1", run.input_hash) in ledger.finished_inputs()  # a rerun skips it
    finally:
        ledger.close()
    assert all(r.ok for r in verify_traces(Workspace(tmp_path)))
    state = api.learn_status(tmp_path)
    fake = state["proposers"]["fake"]
    assert fake["settled"] == 1 and fake["success_rate"] == 0.0


def test_approve_refuses_what_did_not_pass_or_was_changed(tmp_path: Path) -> None:
    held_workspace(tmp_path, [art("a1"), art("a2")], [])
    ws = Workspace(tmp_path)
    # the held bytes were edited: refused, nothing written
    ledger = Ledger(ws.ledger_path)
    h1 = ledger.held_of_run("a1.r1")
    ledger.close()
    assert h1 is not None
    path = ws.held / "artifacts" / f"{h1.content_hash}.json"
    path.write_bytes(path.read_bytes().replace(b"CT scanner", b"MR scanner"))
    with pytest.raises(ReviewError, match="content hash mismatch"):
        api.review_approve(tmp_path, "a1.r1")
    # the trace was edited: refused
    trace = ws.trace_path("a2.r1")
    trace.write_text(trace.read_text().replace('"passed":true', '"passed":false', 1))
    with pytest.raises(ReviewError, match="does not verify"):
        api.review_approve(tmp_path, "a2.r1")
    assert corpus(tmp_path) == {}
    assert [k for _r, k, _rec in log(tmp_path)] == ["run", "run"]


def test_gate_check_reads_the_held_attempt() -> None:
    """What the trace must show before an approval: every gate passed the HOLD's attempt."""
    from harness.ledger import HeldRow

    held = HeldRow("a", "a.r1", "h", "m", 0, "x", "t", "pending")
    hold = {"kind": "decision", "effector": "hold", "facts": {"attempt": 2, "has_prose": 1}}
    commit = {"kind": "commit", "held": True, "content_hash": "h"}

    def verdict(gate: str, passed: bool, attempt: int = 2) -> dict[str, Any]:
        return {"kind": "verdict", "gate": gate, "passed": passed, "attempt": attempt}

    good = [verdict("value_gate", True), verdict("ri_gate", True), verdict("prose_gate", True)]
    assert _gates_passed([*good, hold, commit], held) == []
    assert "prose_gate never passed attempt 2" in _gates_passed([*good[:2], hold, commit], held)
    failed = [*good, verdict("ri_gate", False), hold, commit]
    assert "ri_gate failed attempt 2" in _gates_passed(failed, held)
    old = [verdict(g, True, attempt=1) for g in ("value_gate", "ri_gate", "prose_gate")]
    assert len(_gates_passed([*old, hold, commit], held)) == 3
    assert _gates_passed(good, held) == ["its trace has no HOLD decision"]
    other = {**commit, "content_hash": "other"}
    assert _gates_passed([*good, hold, other], held) != []


def test_revert_brings_the_previous_version_back_from_archive(tmp_path: Path) -> None:
    held_workspace(tmp_path, [art("a1", prose="First.")], [])
    api.review_approve(tmp_path, "a1.r1")
    held_workspace(tmp_path, [art("a1", prose="Second.")], [])  # a new input: run a1.r2
    api.review_approve(tmp_path, "a1.r2")
    assert corpus(tmp_path)["a1"]["prose"] == "Second."
    api.run_recover(tmp_path)  # v1's object moves to archive/
    ws = Workspace(tmp_path)
    assert len(list((ws.archive / "artifacts").glob("*.json"))) == 1

    row = api.revert_artifact(tmp_path, "a1", note="v2 lost the detail")
    assert row["version"] == 3
    assert corpus(tmp_path)["a1"]["prose"] == "First."
    assert all(r.ok for r in verify_traces(ws))
    prov = why(ws, "a1", "equipment", "0", "standard")
    assert prov.version == 3 and prov.run_id == "a1.r1"
    assert prov.restored is not None and prov.restored["note"] == "v2 lost the detail"
    overrides = [rec for _r, kind, rec in log(tmp_path) if kind == "override"]
    assert overrides[-1]["run_id"] == "a1.r2" and overrides[-1]["human_override"] == "reverted"
    # and forward again: v4 is v2's content
    api.revert_artifact(tmp_path, "a1", to=2)
    assert corpus(tmp_path)["a1"]["prose"] == "Second."
    with pytest.raises(ReviewError, match="between 1 and 3"):
        api.revert_artifact(tmp_path, "a1", to=4)
    with pytest.raises(ReviewError, match="no committed version"):
        api.revert_artifact(tmp_path, "zz")
    api.run_recover(tmp_path)
    assert corpus(tmp_path)["a1"]["prose"] == "Second."
    assert all(r.ok for r in verify_traces(ws))
    report = api.learn_status(tmp_path)
    assert report["records"] == len(log(tmp_path))


def test_recovery_appends_a_review_record_a_kill_kept_out_of_the_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger transaction is the commit point; the trace record follows it. A kill in
    between leaves the record in `trace_tail`, and recovery appends it."""
    from harness import review

    held_workspace(tmp_path, [art("a1")], [])
    with monkeypatch.context() as m:
        m.setattr(review, "_append_tail", lambda *a, **k: None)
        api.review_approve(tmp_path, "a1.r1")
    ws = Workspace(tmp_path)
    assert [r.code for r in verify_traces(ws)] == ["trace.truncated"]
    rec = api.run_recover(tmp_path)
    assert rec["reviews_replayed"] == 1
    assert all(r.ok for r in verify_traces(ws))
    assert api.run_recover(tmp_path)["reviews_replayed"] == 0


def test_the_outcome_log_parses_every_record_kind_written(tmp_path: Path) -> None:
    held_workspace(tmp_path, [art("a1"), art("a2")], [])
    api.review_approve(tmp_path, "a1.r1")
    api.review_reject(tmp_path, "a2.r1", "no")
    for _run, kind, rec in log(tmp_path):
        assert parse_record(json.dumps(rec)).kind == kind


def test_an_overlay_with_no_new_outcome_for_stale_days_is_flagged(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    ws, eng = make_engines(tmp_path, gates(), ScriptedProposer("fake", []))
    try:
        run_cohort(ws, eng, [art(f"a{i}") for i in range(5)])  # 5 settled: the numbers speak
    finally:
        eng.ledger.close()
    last = datetime.fromisoformat(
        api.learn_status(tmp_path)["proposers"]["fake"]["last_outcome_at"]
    )
    fresh = api.learn_status(tmp_path, now=last + timedelta(days=29))
    assert fresh["proposers"]["fake"]["overlay"] and not fresh["proposers"]["fake"]["stale"]
    old = api.learn_status(tmp_path, now=last + timedelta(days=31))
    assert old["proposers"]["fake"]["stale"]
    report = api.learn_report_data(tmp_path, now=last + timedelta(days=31))
    assert report["overlays"][0]["stale"] is True
    (tmp_path / "membrane.toml").write_text("[learning]\nstale_days = 10\n")
    assert api.learn_status(tmp_path, now=last + timedelta(days=11))["proposers"]["fake"]["stale"]
    # nothing decays: the overlay is still there, flagged, until a person relaxes it
    relaxed = api.learn_relax(tmp_path, "fake", "reviewed it")
    assert relaxed["proposer"] == "fake"
    after = api.learn_status(tmp_path)
    assert after["proposers"]["fake"]["overlay"] is None
    assert after["proposers"]["fake"]["relaxed"]["reason"] == "reviewed it"
    with pytest.raises(Exception, match="no overlay to relax"):
        api.learn_relax(tmp_path, "fake", "again")
    assert main(["learn", "relax", "nobody", "--reason", "x", "-w", str(tmp_path)]) == 2
    md = main(["learn", "report", "-w", str(tmp_path)])
    assert md == 0

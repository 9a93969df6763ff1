"""Learned overlays reach runs as agenda facts (the rules decide), spot-check sampling, what
counts against a proposer, and the ledger migration that made room for review records."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from effectors.testing import ScriptedProposer
from harness.ledger import Ledger
from harness.models import Artifact, RunState
from harness.models import Effector as E
from harness.run import Overlay, spot_checked
from tests.harness.helpers import make_engines, run_cohort, standard_and_room_gates


def art(aid: str, standard: str = "IEC 60601-1", room: str = "R-1") -> Artifact:
    return Artifact(
        id=aid,
        tables={"equipment": [{"equipment_id": "EQ-1", "room_id": room, "standard": standard}]},
        prose="A CT scanner.",
    )


def gates() -> dict[E, Any]:
    return standard_and_room_gates()


def trace(ws_root: Path, run_id: str) -> list[dict[str, Any]]:
    path = ws_root / "trace" / f"{run_id}.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_an_overlay_that_requires_approval_holds_passing_runs_and_says_why(
    tmp_path: Path,
) -> None:
    ws, eng = make_engines(tmp_path, gates(), ScriptedProposer("fake", []))
    eng.overlay = Overlay(
        max_attempts=2,
        require_approval=True,
        risk_multiplier=1.4,
        proposer="openai:m",
        reason="reliability 0.52 < 0.70",
    )
    (run,) = run_cohort(ws, eng, [art("a1")])
    assert run.state == RunState.HELD
    events = trace(tmp_path, run.run_id)
    assert events[0]["overlay"]["reason"] == "reliability 0.52 < 0.70"
    assert events[0]["max_attempts"] == 2
    hold = next(e for e in events if e["kind"] == "decision" and e["effector"] == "hold")
    assert hold["rule"] == "approval_required" and hold["facts"]["require_approval"] == 1
    held = next(e for e in events if e["kind"] == "commit")
    assert held["held"] and "overlay for openai:m: reliability 0.52" in held["why"]
    h = eng.ledger.held_of_run(run.run_id)
    assert h is not None and "overlay for openai:m" in h.why


def test_the_overlays_attempt_budget_is_the_rules_retries_left(tmp_path: Path) -> None:
    bad = art("a1", standard="ASHRAE 62.1")
    proposer = ScriptedProposer("fake", [bad, bad, bad, bad])
    ws, eng = make_engines(tmp_path, gates(), proposer, max_attempts=4)
    eng.overlay = Overlay(max_attempts=2, proposer="fake", reason="r")
    (run,) = run_cohort(ws, eng, [bad])
    assert run.state == RunState.EXHAUSTED and run.attempt == 2
    assert len(proposer.requests) == 1


def test_no_overlay_no_approval(tmp_path: Path) -> None:
    ws, eng = make_engines(tmp_path, gates(), ScriptedProposer("fake", []))
    eng.overlay = Overlay(max_attempts=3, require_approval=False, proposer="fake")
    (run,) = run_cohort(ws, eng, [art("a1")])
    assert run.state == RunState.COMMITTED


def test_spot_checks_sample_at_the_pack_rate_times_the_risk(tmp_path: Path) -> None:
    ws, eng = make_engines(tmp_path, gates(), ScriptedProposer("fake", []))
    eng.spot_check = 0.25
    eng.overlay = Overlay(risk_multiplier=1.4, proposer="fake")
    assert eng.spot_check_rate == pytest.approx(0.35)
    eng.overlay = Overlay(risk_multiplier=0.9, proposer="fake")
    assert eng.spot_check_rate == pytest.approx(0.225)
    eng.spot_check = 0.9
    eng.overlay = Overlay(risk_multiplier=1.4, proposer="fake")
    assert eng.spot_check_rate == 1.0
    eng.spot_check, eng.overlay = 0.5, None
    runs = run_cohort(ws, eng, [art(f"a{i}") for i in range(40)])
    states = Counter(r.state for r in runs)
    assert states[RunState.HELD] == sum(spot_checked(r.run_id, 0.5) for r in runs)
    assert 8 <= states[RunState.HELD] <= 32
    held = next(r for r in runs if r.state == RunState.HELD)
    assert trace(tmp_path, held.run_id)[0]["spot_check"] is True
    h = eng.ledger.held_of_run(held.run_id)
    assert h is not None and h.why.startswith("spot-check")


@settings(max_examples=50, deadline=None)
@given(st.floats(0, 1), st.lists(st.text(min_size=1, max_size=20), max_size=50))
def test_spot_check_is_a_stable_draw_at_the_rate(rate: float, ids: list[str]) -> None:
    for rid in ids:
        assert spot_checked(rid, rate) == spot_checked(rid, rate)
        assert spot_checked(rid, 0.0) is False
        assert spot_checked(rid, 1.0) is True
        if spot_checked(rid, rate):  # monotone in the rate
            assert spot_checked(rid, min(1.0, rate + 0.1))


def test_sampling_frequency_is_close_to_the_rate() -> None:
    hits = sum(spot_checked(f"fac-{i:05d}.r1", 0.1) for i in range(20_000))
    assert 1_800 <= hits <= 2_200


# -- what counts against a proposer ------------------------------------------------------


def failed_codes(tmp: Path, artifacts: list[Artifact], fixes: list[Artifact]) -> list[str]:
    ws, eng = make_engines(tmp, gates(), ScriptedProposer("fake", fixes), max_attempts=4)
    (run,) = run_cohort(ws, eng, artifacts)
    return [code for f in run.failed for code in f.codes]


def test_an_input_defect_a_later_gate_reveals_is_not_the_proposers(tmp_path: Path) -> None:
    # the input has a bad standard AND a dangling room; the value gate reports the first;
    # the proposer fixes it and the RI gate then reports the room it never touched
    fixes = [art("a1", room="R-9"), art("a1")]
    assert failed_codes(tmp_path, [art("a1", "ASHRAE 62.1", room="R-9")], fixes) == []


def test_a_bad_value_the_proposer_wrote_counts(tmp_path: Path) -> None:
    fixes = [art("a1", standard="ISO 9999"), art("a1")]
    assert failed_codes(tmp_path, [art("a1", "ASHRAE 62.1")], fixes) == ["value.disjoint"]


def test_a_defect_the_proposer_was_told_of_and_left_counts(tmp_path: Path) -> None:
    same = art("a1", "ASHRAE 62.1")
    fixes = [same, art("a1")]  # attempt 2 changes nothing: the critique was ignored
    assert failed_codes(tmp_path, [same], fixes) == ["value.disjoint"]


# -- the ledger a membrane before review wrote -----------------------------------------

_V1 = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, artifact_id TEXT NOT NULL, batch_id TEXT NOT NULL,
  input_hash TEXT NOT NULL, status TEXT NOT NULL, started_at TEXT NOT NULL, trace_len INTEGER,
  trace_head TEXT, outcome TEXT);
CREATE TABLE held (artifact_id TEXT NOT NULL, run_id TEXT NOT NULL UNIQUE REFERENCES runs (run_id),
  content_hash TEXT NOT NULL, metrics_hash TEXT NOT NULL, trace_seq INTEGER NOT NULL,
  trace_hash TEXT NOT NULL, held_at TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending');
CREATE TABLE outcomes (seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL UNIQUE REFERENCES runs (run_id), record TEXT NOT NULL);
INSERT INTO runs VALUES ('a.r1', 'a', 'b', 'h', 'HELD', 't', 3, 'x', NULL);
INSERT INTO held VALUES ('a', 'a.r1', 'c', 'm', 1, 'y', 't', 'pending');
INSERT INTO outcomes (run_id, record) VALUES ('a.r1', '{"r": 1}');
"""


def test_a_v1_ledger_is_migrated_in_place_keeping_its_log(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    db = sqlite3.connect(path)
    db.executescript(_V1)
    db.close()
    ledger = Ledger(path)
    try:
        h = ledger.held_of_run("a.r1")
        assert h is not None and h.status == "pending" and h.why == ""
        assert ledger.outcome_records() == [(1, '{"r": 1}')]
        ledger.append_outcome("relax", '{"kind": "relax"}')
        assert [s for s, _r in ledger.outcome_records()] == [1, 2]
    finally:
        ledger.close()
    again = Ledger(path)  # idempotent
    try:
        assert len(again.outcome_records()) == 2
    finally:
        again.close()

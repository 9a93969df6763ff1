"""Canonical cells end to end (`harness.api.run_batch`, offline proposer, real gates) on the
trials test pack: the committed corpus holds canonical values, the trace keeps the raw ones,
and the issue 28 escape (`Lipitor®` at 800 mg) is never committed as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.api import run_batch
from tests.conftest import ROOT

pytestmark = pytest.mark.java

TRIALS = ROOT / "tests" / "packs" / "trials"


def registry(aid: str, drug: str, dose: float, route: str = "PO") -> dict[str, object]:
    return {"id": aid, "tables": {
        "trials": [{"trial_id": "NCT-1", "title": "Lipid lowering after ACS",
                    "phase": "phase III", "area": "Cardiology", "enrolment": 900}],
        "arms": [{"trial_id": "NCT-1", "arm_id": "A", "intervention": drug, "route": route,
                  "dose_mg": dose}],
    }}


def test_committed_values_are_canonical_and_the_trace_keeps_the_raw(tmp_path: Path) -> None:
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in (
        registry("ok", "LIPITOR™", 40), registry("escape", "Lipitor®", 800))))
    ws = tmp_path / "ws"
    result = run_batch(ws, corpus, TRIALS, proposer="offline")
    states = {r.artifact_id: r.state for r in result.runs}
    assert states["ok"] == "COMMITTED"
    committed = {}
    for line in (ws / "current" / "corpus.jsonl").read_text().splitlines():
        art = json.loads(line)
        committed[art["id"]] = art
    ok = committed["ok"]["tables"]
    assert ok["arms"][0]["intervention"] == "atorvastatin"
    assert (ok["arms"][0]["route"], ok["trials"][0]["phase"], ok["trials"][0]["area"]) == (
        "oral", "Phase 3", "cardiology")
    if "escape" in committed:  # the offline proposer may repair it; never as written
        arm = committed["escape"]["tables"]["arms"][0]
        assert not (arm["intervention"] == "atorvastatin" and arm["dose_mg"] > 80)
    raw = {(c["raw"], c["value"], c["via"])
           for p in (ws / "trace").glob("*.jsonl") for line in p.read_text().splitlines()
           for c in json.loads(line).get("canonical") or ()}
    assert {("LIPITOR™", "atorvastatin", "alt_label"), ("Lipitor®", "atorvastatin", "alt_label"),
            ("PO", "oral", "alt_label"), ("phase III", "Phase 3", "alt_label")} <= raw

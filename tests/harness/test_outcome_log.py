"""Every finished run appends one validated outcome record in the same ledger transaction
as its anchor; the learning cycle folds them; a rebuild gives the same bytes; a record
that does not validate (a run, a review act or a relax) is refused and never learned from."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from effectors.testing import InstantGate, ScriptedProposer
from harness.learning import OutcomeRecord
from harness.learning.outcomes import OverrideRecord, RelaxRecord
from harness.learning.state import Relaxation, Stats
from harness.learning.store import learning_cycle, load_state, rebuild_state
from harness.models import Artifact, CellRef, Critique, Location, Verdict
from harness.models import Effector as E
from tests.harness.helpers import make_engines, run_cohort


def art(aid: str, std: str) -> Artifact:
    return Artifact(id=aid, tables={"equipment": [{"equipment_id": "EQ-1", "standard": std}]})


def hvac_is_wrong(a: Artifact) -> Verdict:
    if not str(a.tables["equipment"][0]["standard"]).startswith("ASHRAE"):
        return Verdict(gate="value_gate", artifact_id=a.id)
    crit = Critique(
        code="value.disjoint",
        gate="value_gate",
        fix_hint="use an imaging standard",
        location=Location(table="equipment", row=0, column="standard"),
    )
    cell = CellRef(table="equipment", row=0, column="standard")
    return Verdict(gate="value_gate", artifact_id=a.id, critiques=(crit,), rejected=(cell,))


def gates() -> dict[E, InstantGate]:
    return {
        E.VALUE_GATE: InstantGate("value_gate", hvac_is_wrong),
        E.RI_GATE: InstantGate("ri_gate"),
        E.PROSE_GATE: InstantGate("prose_gate"),
    }


def test_each_finished_run_is_one_record_and_the_cycle_learns_from_them(tmp_path: Path) -> None:
    # a1 is fixed on attempt 2; a2 tries two HVAC standards and is exhausted; a3 was clean
    script = [art("a1", "IEC 60601-1"), art("a2", "ASHRAE 170"), art("a2", "ASHRAE 90.1")]
    ws, eng = make_engines(tmp_path, gates(), ScriptedProposer("fake", script))  # type: ignore[arg-type]
    eng.proposer_id = "openai:fake-7b"
    runs = run_cohort(
        ws, eng, [art("a1", "ASHRAE 62.1"), art("a2", "ASHRAE 62.1"), art("a3", "IEC 60601-1")]
    )
    assert [r.state.value for r in runs] == ["COMMITTED", "EXHAUSTED", "COMMITTED"]
    rows = eng.ledger.outcome_records()
    records = {r.run_id: r for r in (OutcomeRecord.model_validate_json(raw) for _s, raw in rows)}
    assert len(rows) == 3 and set(records) == {r.run_id for r in runs}
    a1, a2, a3 = (records[r.run_id] for r in runs)
    assert (a1.result, a1.attempts, a1.retries, a1.quality, a1.failed) == ("success", 2, 1, 1.0, ())
    assert (a2.result, a2.attempts, a2.dominant_failure) == ("failure", 3, "value.disjoint")
    assert [f.attempt for f in a2.failed] == [2, 3]  # the proposer's own failed attempts
    assert a2.failed[0].fix_hints == {"value.disjoint": "use an imaging standard"}
    assert a2.quality == 0.0 and a3.quality == 1.0 and a3.proposer == "openai:fake-7b"

    report = learning_cycle(ws, eng.ledger)
    assert (report.records, report.refused) == (3, 0)
    state, seq = load_state(ws)
    assert seq == rows[-1][0] and state.records == 3
    assert state.patterns["openai:fake-7b::value.disjoint"].occurrences == 2
    assert learning_cycle(ws, eng.ledger).records == 0  # nothing new: nothing folded
    _state, same = rebuild_state(ws, eng.ledger)
    assert same


def test_a_record_that_does_not_validate_is_refused_and_not_learned(tmp_path: Path) -> None:
    ws, eng = make_engines(tmp_path, gates(), ScriptedProposer("fake", []))  # type: ignore[arg-type]
    run_cohort(ws, eng, [art("a1", "IEC 60601-1")])
    ((_seq, raw),) = eng.ledger.outcome_records()
    bad = {**json.loads(raw), "quality": 7.5}  # an edited log
    eng.ledger.start_run("x.r1", "x", "b", "h", "t")
    eng.ledger.finish_runs([("x.r1", "COMMITTED", 0, "", None, json.dumps(bad))])
    report = learning_cycle(ws, eng.ledger)
    assert (report.records, report.refused) == (1, 1)
    assert load_state(ws)[0].records == 1


def test_bad_override_and_relax_records_are_refused_and_the_others_learned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws, eng = make_engines(tmp_path, gates(), ScriptedProposer("fake", []))  # type: ignore[arg-type]
    eng.proposer_id = "openai:fake-7b"
    run_cohort(ws, eng, [art("a1", "IEC 60601-1"), art("a2", "IEC 60601-1")])
    (_s, raw), _second = eng.ledger.outcome_records()
    a1 = OutcomeRecord.model_validate_json(raw)
    assert a1.result == "success"
    revert = OverrideRecord(
        run_id=a1.run_id,
        artifact_id=a1.artifact_id,
        pack=a1.pack,
        proposer=a1.proposer,
        human_override="reverted",
        previous="success",
        result="failure",
        run_finished_at=a1.finished_at,
        at="2026-01-02T00:00:00",
    )
    relax = RelaxRecord(
        proposer=a1.proposer, reason="the model was swapped", at="2026-01-02T00:01:00"
    )
    log = [
        ("override", {**revert.model_dump(), "result": "success"}),  # a revert that reverts nothing
        ("override", revert.model_dump()),
        ("relax", {**relax.model_dump(), "reason": ""}),  # a relax must say why
        ("relax", relax.model_dump()),
        ("relax", {**relax.model_dump(), "kind": "unrelax"}),
        ("override", {**revert.model_dump(), "proposer": "Not A Proposer"}),
    ]
    for kind, record in log:
        eng.ledger.append_outcome(kind, json.dumps(record), record.get("run_id"))
    seqs = [seq for seq, _raw in eng.ledger.outcome_records()]

    with caplog.at_level(logging.WARNING, logger="harness.learning.store"):
        report = learning_cycle(ws, eng.ledger)
    assert (report.records, report.refused, report.seq) == (4, 4, seqs[-1])
    refused = [seqs[2], seqs[4], seqs[6], seqs[7]]
    assert [f"outcome record {s} refused" in caplog.text for s in refused] == [True] * 4
    assert caplog.text.count("refused, nothing learned") == 4

    state, _seq = load_state(ws)
    assert state.records == 4
    stats = state.by_proposer["openai:fake-7b"]
    assert (stats.runs, stats.settled, stats.successes) == (2, 2, 1)  # one revert, not two
    assert state.relaxed["openai:fake-7b"] == Relaxation(
        "2026-01-02T00:01:00", "the model was swapped"
    )
    assert state.epoch["openai:fake-7b"] == Stats()  # relaxed once, after the revert
    _state, same = rebuild_state(ws, eng.ledger)
    assert same

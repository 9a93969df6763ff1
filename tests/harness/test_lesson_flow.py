"""Lessons through the loop: the trace miner learns from cascades in real traces, the pass
stores them, the next runs carry them (the trace says which), and the signals move their
confidence: ignored, heeded, implicit after the window, a person's approve / reject / undo
note, a revert. Real ledger, traces and lesson store; instant gates, scripted proposer."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness import api
from harness.learning import signals
from harness.learning.learn_pass import ScoreGate, review_and_learn
from harness.learning.lesson_store import LessonStore
from harness.learning.lessons import Advice, BayesianStrategy, LessonProposal, Scope
from harness.learning.miner import TraceMiner, summarise
from harness.models import (
    Artifact,
    LessonHint,
    Proposal,
    ProposalRequest,
    RunState,
)
from harness.models import Effector as E
from harness.pack import Pack
from harness.workspace import Workspace
from tests.harness.helpers import make_engines, run_cohort, standard_and_room_gates

AT = "2026-11-25T10:00:00+00:00"
ROOMS = [{"room_id": "R-1", "room_type": "CT room", "department": "radiology", "floor": 1}]


def art(aid: str, standard: str = "IEC 60601-1", room: str = "R-1") -> Artifact:
    return Artifact(
        id=aid,
        tables={
            "rooms": ROOMS,
            "equipment": [
                {
                    "equipment_id": "EQ-1",
                    "room_id": room,
                    "equipment_type": "CT scanner",
                    "standard": standard,
                }
            ],
        },
        prose="A CT scanner.",
    )


def gates() -> dict[E, Any]:
    return standard_and_room_gates()


class Stepwise:
    """Repairs only what the critique names (and never reads a lesson): the standard first;
    the dangling room only once the RI gate names it."""

    name = "fake"

    def propose(self, request: ProposalRequest) -> Proposal:
        tables = json.loads(json.dumps(request.candidate.tables))
        named = {c.location.column for c in request.critique.critiques}
        row = tables["equipment"][0]
        if "standard" in named:
            row["standard"] = "IEC 60601-1"
        if "room_id" in named:
            row["room_id"] = "R-1"
        new = request.candidate.model_copy(update={"tables": tables})
        return Proposal(artifact=new, proposer=self.name)


def cascade_runs(
    tmp: Path, ids: list[str], lessons: tuple[LessonHint, ...] = (), approval: bool = False
) -> list[Any]:
    """Each input has a wrong standard and a dangling room: the proposer fixes the standard
    (attempt 2, the RI gate then finds the room it never touched), then the room."""
    ws, eng = make_engines(tmp, gates(), Stepwise(), max_attempts=4, require_approval=approval)
    eng.lessons = lessons
    try:
        runs = run_cohort(ws, eng, [art(a, "ASHRAE 62.1", "R-9") for a in ids])
        rows = []
        for r in runs:
            commit = eng.ledger.commit_of_run(r.run_id)
            rows.append((r.run_id, r.state.value, commit.content_hash if commit else None))
    finally:
        eng.ledger.close()
    want = RunState.HELD if approval else RunState.COMMITTED
    assert all(r.state == want and r.attempt == 3 for r in runs)
    return rows


def test_the_miner_learns_a_cascade_and_the_pass_stores_it(
    tmp_path: Path, facility_pack: Pack
) -> None:
    rows = cascade_runs(tmp_path, ["a1"])
    one = summarise(Workspace(tmp_path), facility_pack, "fake", rows)

    def refs(miner: TraceMiner) -> list[LessonProposal]:
        return [p for p in miner.propose(one) if p.advice and p.advice.kind == "check_references"]

    assert refs(TraceMiner()) == []  # one run is below the support the miner asks for
    (proposal,) = refs(TraceMiner(min_support=1))
    assert proposal.score == 0.6 and proposal.advice is not None  # and below the gate's 0.7
    assert proposal.advice.column == "equipment.room_id" and proposal.evidence == ("a1.r1",)
    rows += cascade_runs(tmp_path, ["a2"])
    two = summarise(Workspace(tmp_path), facility_pack, "fake", rows)
    store = LessonStore(tmp_path / "lessons.sqlite")
    try:
        result = review_and_learn(two, TraceMiner(), ScoreGate(), store, AT)
        applied = [a for a in result.applied if "equipment.room_id" in a["text"]]
        assert len(applied) == 1  # two runs: score 0.7, approved
        (lesson,) = [x for x in store.lessons() if x.advice and x.advice.kind == "check_references"]
        assert lesson.status == "active" and lesson.confidence == pytest.approx(0.7)
        again = review_and_learn(two, TraceMiner(), ScoreGate(), store, AT)
        assert any(a["reinforced"] for a in again.applied)
        assert store.get(lesson.key).support == 2  # type: ignore[union-attr]
    finally:
        store.close()


def stored_lesson(tmp: Path) -> tuple[LessonStore, str, LessonHint]:
    store = LessonStore(tmp / ".membrane" / "learning" / "lessons.sqlite")
    p = LessonProposal(
        target="proposer_context",
        scope=Scope(pack="test", column="equipment.room_id"),
        text="check room references",
        score=0.8,
        advice=Advice(kind="check_references", column="equipment.room_id", codes=("ri.fk_orphan",)),
    )
    key = store.apply(p, AT).key
    hint = LessonHint(key=key, text=p.text, confidence=0.8, advice=p.advice.model_dump(mode="json"))  # type: ignore[union-attr]
    return store, key, hint


def test_runs_carry_their_lessons_and_signals_move_confidence(
    tmp_path: Path, facility_pack: Pack
) -> None:
    store, key, hint = stored_lesson(tmp_path)
    strategy = BayesianStrategy()
    ws = Workspace(tmp_path)
    try:
        # the scripted proposer ignores the lesson: the room comes back three times
        for i in range(3):
            rows = cascade_runs(tmp_path, [f"x{i}"], lessons=(hint,))
            lines = ws.trace_path(rows[0][0]).read_text().splitlines()
            events = [
                e for e in map(json.loads, lines) if e["kind"] == "proposal" and e["attempt"] >= 2
            ]
            assert all(e["lessons"] == [key] for e in events)
            summary = summarise(ws, facility_pack, "fake", rows)
            counts = signals.observe(summary, store, strategy, AT)
            assert counts == {"ignored": 1, "heeded": 0, "watched": 1}
            lesson = store.get(key)
            assert lesson is not None
            if i < 2:
                assert lesson.confidence == pytest.approx(0.8)  # two ignores: neutral
        assert store.get(key).confidence == pytest.approx(1.6 / 3)  # type: ignore[union-attr]
        # the undo window passes with no undo: each committed run's watch is positive once
        now = datetime.now(UTC) + timedelta(days=2)
        assert signals.settle(store, strategy, now, 86_400) == 3
        assert signals.settle(store, strategy, now, 86_400) == 0
        assert store.get(key).confidence == pytest.approx(4.6 / 6)  # type: ignore[union-attr]
        # a revert of one of those runs: undo
        assert signals.on_revert(ws, store, strategy, "x0.r1", AT) == 1
        assert store.get(key).confidence == pytest.approx(4.6 / 7)  # type: ignore[union-attr]
    finally:
        store.close()


def test_a_persons_review_is_an_explicit_signal_or_an_undo(tmp_path: Path) -> None:
    store, key, hint = stored_lesson(tmp_path)
    store.close()
    cascade_runs(tmp_path, ["h1", "h2", "h3"], lessons=(hint,), approval=True)
    (tmp_path / "membrane.toml").write_text("")

    def confidence() -> float:
        s = LessonStore(tmp_path / ".membrane" / "learning" / "lessons.sqlite")
        try:
            return s.get(key).confidence  # type: ignore[union-attr]
        finally:
            s.close()

    api.review_approve(tmp_path, "h1.r1", note="fine")
    assert confidence() == pytest.approx(2.4 / 2.8)  # +0.8 explicit
    api.review_reject(tmp_path, "h2.r1", "wrong room")
    assert confidence() == pytest.approx(2.4 / 3.6)  # -0.8 explicit
    api.review_reject(tmp_path, "h3.r1", "never mind this one")
    assert confidence() == pytest.approx(2.4 / 4.6)  # an undo keyword: -1.0

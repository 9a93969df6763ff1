"""The LLM lesson reviewer against a scripted OpenAI-compatible model on loopback: the batch
summary goes as a data block with a strict JSON schema asked for; valid lessons pass the
gate, malformed ones are refused one by one, and an answer that is not the JSON object at
all fails the pass closed (nothing written)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from effectors.lesson_reviewer import LlmReviewer
from effectors.proposers.openai_client import ChatClient
from harness.learning.learn_pass import LearnPassError, ScoreGate, review_and_learn
from harness.learning.lesson_store import LessonStore
from harness.learning.miner import summarise
from harness.pack import Pack
from harness.workspace import LlmConfig, Workspace
from tests.harness.test_lesson_flow import cascade_runs
from tests.proposers.conftest import blocks
from tests.proposers.server import Responder, ScriptedServer, completion, script

Serve = Callable[[Responder], ScriptedServer]
GOOD = {
    "target": "proposer_context",
    "scope": {"pack": "facility", "column": "equipment.room_id"},
    "text": "Check room references when you repair equipment rows.",
    "evidence": ["a1.r1"],
    "score": 0.8,
    "advice": {"kind": "check_references", "column": "equipment.room_id"},
}


def reviewer(srv: ScriptedServer) -> LlmReviewer:
    cfg = LlmConfig(base_url=srv.base_url, model="scripted", backoff_s=0, retries=0)
    return LlmReviewer(ChatClient(cfg, sleep=lambda s: None), "scripted")


def test_the_llm_reviewer_proposes_and_the_pass_disposes(
    tmp_path: Path, facility_pack: Pack, serve: Serve
) -> None:
    rows = cascade_runs(tmp_path, ["a1", "a2"])
    summary = summarise(Workspace(tmp_path), facility_pack, "fake", rows)
    answer = {"lessons": [GOOD, {**GOOD, "text": "too sure", "score": 1.5}, "not a lesson"]}
    srv = serve(script([completion(json.dumps(answer))]))
    store = LessonStore(tmp_path / "l.sqlite")
    try:
        out = review_and_learn(summary, reviewer(srv), ScoreGate(), store, "t")
        assert len(out.applied) == 1 and len(out.rejected) == 2
        assert all(r["reason"].startswith("invalid") for r in out.rejected)
        (lesson,) = store.lessons()
        assert lesson.text == GOOD["text"] and lesson.advice is not None
    finally:
        store.close()
    body = srv.requests[0]
    assert body["response_format"]["json_schema"]["strict"] is True
    data = blocks(body)["batch_summary"]
    assert data["runs_total"] == 2 and data["miner_findings"]
    assert "never instructions" in body["messages"][0]["content"]


@pytest.mark.parametrize(
    "content", ["not json", json.dumps(["a", "list"]), json.dumps({"lessons": "none"})]
)
def test_an_answer_that_is_not_the_object_fails_the_pass_closed(
    tmp_path: Path, facility_pack: Pack, serve: Serve, content: str
) -> None:
    rows = cascade_runs(tmp_path, ["a1"])
    summary = summarise(Workspace(tmp_path), facility_pack, "fake", rows)
    srv = serve(script([completion(content)]))
    store = LessonStore(tmp_path / "l.sqlite")
    try:
        with pytest.raises(LearnPassError, match="reviewer"):
            review_and_learn(summary, reviewer(srv), ScoreGate(), store, "t")
        assert store.lessons() == []
    finally:
        store.close()

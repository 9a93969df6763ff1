"""The LLM correction distiller against a scripted OpenAI-compatible model on loopback: the
note goes scrubbed, as a data block, with a strict schema asked for; a valid envelope is
kept, an invalid one or one that echoes the note is replaced by the deterministic fallback,
and an open breaker back-logs the capture until the model answers again."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from effectors.correction_distiller import LlmDistiller
from effectors.proposers.openai_client import ChatClient
from harness.corrections.pipeline import open_pipeline
from harness.learning.distill import Vocabulary
from harness.learning.similar import LexicalSimilarity
from harness.workspace import LlmConfig
from tests.proposers.conftest import blocks
from tests.proposers.server import Reply, Responder, ScriptedServer, completion, script

Serve = Callable[[Responder], ScriptedServer]
VOCAB = Vocabulary(pack="facility", columns={"equipment": ("standard",)})
SECRET = "ghp_" + "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2"
AT = "2026-11-02T09:00:00+00:00"


def envelope(**kw: Any) -> str:
    env = {
        "kind": "preference",
        "lesson": "Keep prose free of promotional adjectives.",
        "scope": {"pack": "facility"},
        "confidence": 0.99,
        **kw,
    }
    return json.dumps({"envelopes": [env]})


def pipeline(ws: Path, srv: ScriptedServer, **llm: Any) -> Any:
    (ws / "membrane.toml").write_text("[learning.corrections]\nenabled = true\n")
    cfg = LlmConfig(base_url=srv.base_url, model="scripted", backoff_s=0, retries=0, **llm)
    client = ChatClient(cfg, sleep=lambda s: None)
    return open_pipeline(
        ws,
        vocab=VOCAB,
        distiller=LlmDistiller(client, "scripted", budget=10),
        similarity=LexicalSimilarity(),
        clock=lambda: AT,
    )


def capture(p: Any, text: str, session: str = "s1") -> Any:
    return p.capture(
        p.validate({"text": text, "at": AT, "session": session, "reviewer": "dana"}), "cli"
    )


def test_the_model_distills_the_scrubbed_note_as_data(tmp_path: Path, serve: Serve) -> None:
    srv = serve(script([completion(envelope())]))
    with pipeline(tmp_path, srv) as p:
        r = capture(p, f"too much marketing fluff here; my token is {SECRET}")
        assert r.method == "model" and r.scrubbed == ("github_token",)
        (rec,) = p.store.records()
        assert rec.lesson == "Keep prose free of promotional adjectives."
        assert rec.confidence == 0.99  # kept, advisory: the gate never reads it
    body = srv.requests[0]
    assert SECRET not in json.dumps(body)  # the secret never left the process
    note = blocks(body)["note"]
    assert "[REDACTED:github_token]" in note["text"]
    assert "never follow it" in body["messages"][0]["content"]
    assert body["response_format"]["json_schema"]["strict"] is True


def test_an_invalid_answer_keeps_the_fallback(tmp_path: Path, serve: Serve) -> None:
    bad = [
        completion("not json"),
        completion(json.dumps({"envelopes": [{"kind": "rule", "lesson": "x y z"}]})),
        completion(envelope(lesson="x" * 500)),
        completion(json.dumps({"envelopes": []})),
        completion(envelope(admin=True)),
    ]
    srv = serve(script(bad))
    with pipeline(tmp_path, srv) as p:
        for i in range(len(bad)):
            r = capture(p, "no, plainer", session=f"s{i}")
            assert r.status == "distilled" and r.method == "fallback"
        (rec,) = p.store.records()
        assert rec.lesson.startswith("Write prose in plain") and rec.support == len(bad)


def test_a_lesson_that_echoes_the_note_is_refused(tmp_path: Path, serve: Serve) -> None:
    note = "never call the atrium chiller bank the crown jewel of the site ZQ-771"
    srv = serve(
        script([completion(envelope(lesson="Never call the atrium chiller bank the crown jewel."))])
    )
    with pipeline(tmp_path, srv) as p:
        r = capture(p, note)
        assert r.echo_refused and r.method == "fallback"
        assert all("crown jewel" not in x.lesson for x in p.store.records())


def test_an_open_breaker_backlogs_and_a_later_tick_drains(tmp_path: Path, serve: Serve) -> None:
    state = {"up": False}

    def responder(body: dict[str, Any]) -> Reply:
        if not state["up"]:
            return Reply(status=503, body={"error": {"message": "overloaded"}})
        return completion(envelope())

    srv = serve(responder)
    with pipeline(tmp_path, srv, breaker_failures=1) as p:
        r = capture(p, "too salesy")
        assert r.status == "backlog"
        assert capture(p, "too flowery", "s2").status == "backlog"  # no second call
    assert len(srv.requests) == 1
    state["up"] = True
    with pipeline(tmp_path, srv) as p:  # a later command: a fresh breaker
        out = p.analyze()
        assert out["backlog"]["drained"] == 2 and p.store.backlog() == []
        (rec,) = p.store.records()
        assert rec.support == 2


def test_a_relaxation_is_never_the_models_call(tmp_path: Path, serve: Serve) -> None:
    srv = serve(script([completion(envelope(lesson="Approve runs without review."))]))
    with pipeline(tmp_path, srv) as p:
        r = capture(p, "just auto-approve these, no need to review")
        assert r.policy and r.method == "fallback"
        (rec,) = p.store.records()
        assert rec.kind == "policy"

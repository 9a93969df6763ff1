"""How the loop consumes the openai proposer's attempts: failed attempts become critiques
and retries, locked cells are refused, every call's cost lands in the trace, budgets end
runs cleanly. Gates are instant fakes here; the HTTP server and the proposer are real."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from effectors.proposers.openai import OpenAIProposer
from effectors.proposers.openai_client import ChatClient, TranscriptStore
from effectors.testing import InstantGate
from harness.models import Artifact, Critique, Location, RunState
from harness.models import Effector as E
from harness.pack import Pack
from harness.pools import Pools
from harness.trace import verify_chain
from harness.workspace import LlmConfig
from tests.harness.helpers import make_engines, run_cohort
from tests.proposers.conftest import answer
from tests.proposers.server import Reply, Responder, ScriptedServer, completion, script

pytestmark = pytest.mark.java

Serve = Callable[[Responder], ScriptedServer]
GOOD, BAD = "ASHRAE 170", "IEC 60601-1"


def art(standard: str, room: str = "R-1", aid: str = "a1") -> Artifact:
    return Artifact(
        id=aid,
        tables={"equipment": [{"equipment_id": "EQ-1", "room_id": room, "standard": standard}]},
        prose="An air handling unit.",
    )


def value_gate(a: Artifact) -> list[Critique]:
    std = a.tables["equipment"][0]["standard"]
    if std == GOOD:
        return []
    return [
        Critique(
            code="value.disjoint",
            gate="value_gate",
            observed=str(std),
            location=Location(table="equipment", row=0, column="standard"),
        )
    ]


def gates() -> dict[E, Any]:
    return {
        E.VALUE_GATE: InstantGate("value_gate", value_gate),
        E.RI_GATE: InstantGate("ri_gate"),
        E.PROSE_GATE: InstantGate("prose_gate"),
    }


def openai(pack: Pack, pools: Pools, srv: ScriptedServer, tmp: Path) -> OpenAIProposer:
    cfg = LlmConfig(base_url=srv.base_url, model="scripted", backoff_s=0)
    client = ChatClient(cfg, transcripts=TranscriptStore(tmp / "transcripts"), sleep=lambda s: None)
    return OpenAIProposer(pack, pools, cfg, client=client, environ={})


def kinds(ws_trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in ws_trace.read_text().splitlines()]


def test_failed_attempts_are_critiques_then_a_fix_commits(
    facility_pack: Pack, facility_pools: Pools, serve: Serve, tmp_path: Path
) -> None:
    replies = [
        completion("not json at all", prompt_tokens=10, completion_tokens=1),
        answer(art(GOOD, room="R-9"), prompt_tokens=20, completion_tokens=2),  # edits a locked cell
        answer(art(GOOD), prompt_tokens=30, completion_tokens=3),
    ]
    srv = serve(script(replies))
    g = gates()
    ws, eng = make_engines(
        tmp_path, g, openai(facility_pack, facility_pools, srv, tmp_path), max_attempts=5
    )
    (run,) = run_cohort(ws, eng, [art(BAD)])
    assert run.state == RunState.COMMITTED and run.attempt == 4
    assert run.codes["proposal.malformed_json"] == 1 and run.codes["proposal.locked_cell"] == 1
    assert len(g[E.VALUE_GATE].calls) == 2  # refused proposals never reached a gate
    assert run.tokens == eng.batch_tokens == 66
    events = kinds(ws.trace_path(run.run_id))
    usage = [e for e in events if e["kind"] == "usage"]
    assert [(e["attempt"], e["tokens_prompt"], e["tokens_completion"]) for e in usage] == [
        (2, 10, 1),
        (3, 20, 2),
        (4, 30, 3),
    ]
    # the second proposal was told why the first was refused, and kept the gate's findings
    second = srv.requests[1]["messages"][1]["content"]
    assert "proposal.malformed_json" in second and "value.disjoint" in second
    row = eng.ledger.run(run.run_id)
    assert (
        row is not None
        and verify_chain(ws.trace_path(run.run_id), (row.trace_len, row.trace_head)).ok
    )
    corpus = (ws.current / "corpus.jsonl").read_text().splitlines()
    assert [json.loads(x)["tables"]["equipment"][0] for x in corpus] == [
        {"equipment_id": "EQ-1", "room_id": "R-1", "standard": GOOD}
    ]


def test_an_invalid_answer_never_commits(
    facility_pack: Pack, facility_pools: Pools, serve: Serve, tmp_path: Path
) -> None:
    srv = serve(script([completion('{"tables": {"equipment": "x"}, "prose": ""}')]))
    ws, eng = make_engines(
        tmp_path, gates(), openai(facility_pack, facility_pools, srv, tmp_path), max_attempts=3
    )
    (run,) = run_cohort(ws, eng, [art(BAD)])
    assert run.state == RunState.EXHAUSTED and run.codes["proposal.schema_invalid"] == 2
    assert eng.ledger.latest_commits() == []


def test_the_run_token_budget_ends_the_run_exhausted(
    facility_pack: Pack, facility_pools: Pools, serve: Serve, tmp_path: Path
) -> None:
    srv = serve(script([answer(art("ASHRAE 62.1"), prompt_tokens=400, completion_tokens=100)]))
    ws, eng = make_engines(
        tmp_path, gates(), openai(facility_pack, facility_pools, srv, tmp_path), max_attempts=10
    )
    eng.max_tokens_per_run = 1200
    (run,) = run_cohort(ws, eng, [art(BAD)])
    assert run.state == RunState.EXHAUSTED and run.attempt == 4 and run.tokens == 1500
    budget = [e for e in kinds(ws.trace_path(run.run_id)) if e["kind"] == "budget"]
    assert budget == [{**budget[0], "scope": "run", "used": 1500, "limit": 1200}]
    assert eng.ledger.latest_commits() == []


def test_the_batch_token_budget_fails_the_remaining_runs_for_a_later_batch(
    facility_pack: Pack, facility_pools: Pools, serve: Serve, tmp_path: Path
) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        aid = "a1" if "`a1`" in body["messages"][1]["content"] else "a2"
        return answer(art(GOOD, aid=aid), prompt_tokens=500, completion_tokens=100)

    srv = serve(respond)
    ws, eng = make_engines(tmp_path, gates(), openai(facility_pack, facility_pools, srv, tmp_path))
    eng.max_tokens_per_batch = 600
    r1, r2, r3 = run_cohort(ws, eng, [art(BAD, aid="a1"), art(BAD, aid="a2"), art(GOOD, aid="a3")])
    # a1 spent the budget and still commits its (valid) proposal; a2 needed the model: FAILED,
    # retried by the next batch; a3 needed no model and commits
    assert (r1.state, r2.state, r3.state) == (
        RunState.COMMITTED,
        RunState.FAILED,
        RunState.COMMITTED,
    )
    rules = [e["rule"] for e in _decisions(ws.trace_path(r2.run_id))]
    assert rules[-1] == "batch_token_budget_spent"  # a rule decided it, and the trace says so
    assert len(srv.requests) == 1
    assert {c.artifact_id for c in eng.ledger.latest_commits()} == {"a1", "a3"}


def _decisions(path: Path) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["kind"] == "decision"]

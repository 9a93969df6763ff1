"""The hermes proposer: hermes-agent in `.venv-hermes`, driven over a pipe, against the same
loopback scripted server as the openai proposer. The model is the only fake: hermes' own
agent loop, its tool registry, the relay, the scaffold tools, the gates and the commit are
real. Skipped (with the reason) when `.venv-hermes` is missing: `make hermes`."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from effectors.proposers.hermes import CONTEXT_LENGTH, HermesProposer, default_python
from effectors.proposers.openai_client import TranscriptStore
from effectors.proposers.tools import TOOL_NAMES
from harness.api import run_batch
from harness.errors import EndpointUnavailable, InfrastructureError, ProposalFailed
from harness.models import Artifact
from harness.pack import Pack
from harness.pools import Pools
from harness.workspace import LlmConfig
from tests.conftest import FACILITY
from tests.proposers.conftest import answer, offline_model, write_config
from tests.proposers.server import Reply, Responder, ScriptedServer, completion, tool_call
from tests.proposers.test_openai import BAD, fixed, request_for

HERMES_PYTHON = default_python()
pytestmark = [
    pytest.mark.hermes,
    pytest.mark.slow,
    pytest.mark.java,  # the pools and the gates come from HermiT
    pytest.mark.skipif(
        not HERMES_PYTHON.is_file(),
        reason=f"hermes-agent's environment is missing ({HERMES_PYTHON}): run `make hermes`",
    ),
]
SECRET = "sk-membrane-test-secret-0123456789"


class Switch:
    """One server for the module; each test sets what the model answers."""

    def __init__(self) -> None:
        self.responder: Responder = lambda body: completion("{}")

    def __call__(self, body: dict[str, Any]) -> Reply:
        return self.responder(body)


@pytest.fixture(scope="module")
def model() -> Switch:
    return Switch()


@pytest.fixture(scope="module")
def server(model: Switch) -> Iterator[ScriptedServer]:
    with ScriptedServer(model) as srv:
        yield srv


@pytest.fixture(scope="module")
def candidate() -> Artifact:
    line = (FACILITY / "corpus" / "demo.jsonl").read_text().splitlines()[0]
    return Artifact.model_validate_json(line)


def make(
    pack: Pack, pools: Pools, srv: ScriptedServer | None, root: Path, **settings: Any
) -> HermesProposer:
    cfg = LlmConfig.model_validate(
        {
            "base_url": srv.base_url if srv else "http://127.0.0.1:9/v1",
            "model": "scripted",
            "api_key_env": "HERMES_TEST_KEY",
            "cache": False,
            **settings,
        }
    )
    env = {"PATH": os.environ.get("PATH", ""), "HERMES_TEST_KEY": SECRET}
    return HermesProposer(
        pack,
        pools,
        cfg,
        root / ".membrane" / "hermes",
        transcripts=TranscriptStore(root / ".membrane" / "transcripts"),
        environ=env,
    )


@pytest.fixture(scope="module")
def hermes(
    facility_pack: Pack,
    facility_pools: Pools,
    server: ScriptedServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HermesProposer]:
    """One proposer (one worker process) shared by the tests that only talk to it."""
    p = make(facility_pack, facility_pools, server, tmp_path_factory.mktemp("ws"))
    yield p
    p.close()


def with_tool(tool: str, args: dict[str, Any], final: Any) -> Responder:
    """Call `tool` first; once its result is back, answer `final(result)`."""

    def respond(body: dict[str, Any]) -> Reply:
        results = [m for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return completion(None, tool_calls=[tool_call(tool, args, "call_7")])
        return answer(final(json.loads(results[0]["content"])))

    return respond


def test_hermes_relays_a_scaffold_tool_and_its_answer_becomes_the_proposal(
    hermes: HermesProposer,
    model: Switch,
    server: ScriptedServer,
    candidate: Artifact,
    facility_pools: Pools,
) -> None:
    args = {"table": "equipment", "column": "standard", "rows": [2], "within": "HVACStandard"}
    model.responder = with_tool(
        "synth_column", args, lambda result: fixed(candidate, result["values"]["2"])
    )
    server.requests.clear()
    server.headers.clear()
    got = hermes.propose(request_for(candidate))

    assert got.proposer == "hermes" and got.tool_calls == ("synth_column",)
    assert facility_pools.is_member(
        facility_pools.resolve(got.artifact.value(BAD)) or "", "HVACStandard"
    )
    assert got.artifact.id == candidate.id and got.artifact.prose == candidate.prose
    assert (got.tokens_prompt, got.tokens_completion) == (200, 40)  # two scripted calls
    assert len(got.usage) == 1 and got.usage[0].request and not got.usage[0].cached
    first, second = server.requests
    # only the scaffold toolset, our system prompt verbatim, our limits, one response per call
    assert sorted(t["function"]["name"] for t in first["tools"]) == sorted(TOOL_NAMES)
    assert first["messages"][0] == {"role": "system", "content": hermes.system.strip()}
    assert (
        first["messages"][1]["role"] == "user"
        and '<data name="critique"' in (first["messages"][1]["content"])
    )
    assert first["max_tokens"] == hermes.settings.max_completion_tokens
    assert (first["temperature"], first["seed"]) == (0.0, 0)  # [llm] temperature, workspace seed
    assert not first.get("stream")
    assert server.headers[0].get("Authorization") == f"Bearer {SECRET}"
    tool_msg = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_msg["tool_call_id"] == "call_7" and "values" in json.loads(tool_msg["content"])


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (completion("Sure! Here is the register: {tables: ...}"), "proposal.malformed_json"),
        (completion('{"tables": {}, "prose": 3}'), "proposal.schema_invalid"),
        (completion("{" + " " * 5000 + "}"), "proposal.oversized"),
    ],
)
def test_unusable_answers_are_failed_attempts(
    hermes: HermesProposer, model: Switch, candidate: Artifact, reply: Reply, code: str
) -> None:
    model.responder = lambda body: reply
    hermes.settings = hermes.settings.model_copy(update={"max_answer_chars": 4000})
    try:
        with pytest.raises(ProposalFailed) as info:
            hermes.propose(request_for(candidate))
    finally:
        hermes.settings = hermes.settings.model_copy(update={"max_answer_chars": 200_000})
    assert info.value.code == code and info.value.usage[0].tokens_prompt == 100


def test_a_model_that_keeps_calling_tools_runs_out_of_rounds(
    hermes: HermesProposer, model: Switch, candidate: Artifact
) -> None:
    model.responder = lambda body: completion(None, tool_calls=[tool_call("draft_prose", {})])
    with pytest.raises(ProposalFailed) as info:
        hermes.propose(request_for(candidate, attempt=3))
    assert info.value.code == "proposal.tool_rounds"


def test_the_batch_commits_through_hermes_and_replays_with_the_server_down(
    facility_pack: Pack, facility_pools: Pools, tmp_path: Path
) -> None:
    """The commit scenario: a critique -> hermes calls a scaffold tool through the relay ->
    its answer (the offline repair) passes the gates -> committed. Then the transcripts
    alone reproduce the committed corpus byte for byte, with no server and no worker."""
    repair = offline_model(facility_pack, facility_pools)

    def respond(body: dict[str, Any]) -> Reply:
        if not [m for m in body["messages"] if m["role"] == "tool"]:
            return completion(None, tool_calls=[tool_call("rebuild_table", {"table": "rooms"})])
        return repair(body)

    corpus = tmp_path / "two.jsonl"
    lines = (FACILITY / "corpus" / "demo.jsonl").read_text().splitlines()[:2]
    corpus.write_text("\n".join(lines) + "\n")
    live, again = tmp_path / "live", tmp_path / "again"
    with ScriptedServer(respond) as srv:
        write_config(live, srv.base_url)
        result = run_batch(live, corpus, FACILITY, proposer="hermes")
    assert [r.state for r in result.runs] == ["COMMITTED", "COMMITTED"], result.runs
    assert result.tokens > 0
    events = [
        json.loads(x) for x in next((live / "trace").glob("*.jsonl")).read_text().splitlines()
    ]
    proposals = [e for e in events if e["kind"] == "proposal" and e["proposer"] == "hermes"]
    assert proposals and all(e["tool_calls"] == ["rebuild_table"] for e in proposals)
    assert (live / ".membrane" / "hermes" / "home" / "config.yaml").is_file()

    write_config(again, "http://127.0.0.1:9/v1")  # nothing listens there
    (again / ".membrane").mkdir(parents=True)
    os.replace(live / ".membrane" / "transcripts", again / ".membrane" / "transcripts")
    replayed = run_batch(again, corpus, FACILITY, proposer="hermes", replay=True)
    assert [r.state for r in replayed.runs] == ["COMMITTED", "COMMITTED"]
    assert (again / "current" / "corpus.jsonl").read_bytes() == (
        live / "current" / "corpus.jsonl"
    ).read_bytes()
    assert not (again / ".membrane" / "hermes").exists()  # replay never started hermes


def test_nothing_is_written_outside_the_workspace(
    facility_pack: Pack,
    facility_pools: Pools,
    server: ScriptedServer,
    model: Switch,
    candidate: Artifact,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outside = tmp_path / "outside"
    home, tmp, cwd = outside / "home", outside / "tmp", outside / "cwd"
    for d in (home, tmp, cwd):
        d.mkdir(parents=True)
    for var, value in {
        "HOME": home,
        "TMPDIR": tmp,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_DATA_HOME": home / ".local",
    }.items():
        monkeypatch.setenv(var, str(value))
    monkeypatch.chdir(cwd)
    ws = tmp_path / "ws"
    model.responder = with_tool("draft_prose", {}, lambda r: fixed(candidate))
    p = make(facility_pack, facility_pools, server, ws)
    try:
        got = p.propose(request_for(candidate))
    finally:
        p.close()
    assert got.tool_calls == ("draft_prose",)
    assert [x for x in outside.rglob("*") if not x.is_dir()] == []
    written = {x.relative_to(ws).parts[:2] for x in ws.rglob("*") if not x.is_dir()}
    assert written <= {(".membrane", "hermes"), (".membrane", "transcripts")}, written
    sandbox = ws / ".membrane" / "hermes"
    assert (sandbox / "home" / "state.db").is_file()  # hermes' own state stays in HERMES_HOME
    config = json.loads((sandbox / "home" / "config.yaml").read_text())
    assert config["model"]["context_length"] == CONTEXT_LENGTH
    assert config["memory"]["memory_enabled"] is False
    for f in ws.rglob("*"):  # the API key travels over the pipe only
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    assert not list((sandbox / "home" / "memories").glob("*.md"))


def test_a_worker_crash_is_a_clean_error_and_the_next_call_respawns_it(
    hermes: HermesProposer, model: Switch, candidate: Artifact
) -> None:
    def crash(body: dict[str, Any]) -> Reply:
        assert hermes.worker is not None and hermes.worker.proc is not None
        os.kill(hermes.worker.proc.pid, signal.SIGKILL)
        return completion("{}")

    model.responder = crash
    t0 = time.monotonic()
    with pytest.raises(InfrastructureError, match="hermes worker exited") as info:
        hermes.propose(request_for(candidate, attempt=4))
    assert not isinstance(info.value, EndpointUnavailable)
    assert time.monotonic() - t0 < 30
    model.responder = lambda body: answer(fixed(candidate))
    assert hermes.propose(request_for(candidate, attempt=5)).artifact == fixed(candidate)


def test_a_hung_conversation_is_stopped_at_the_run_timeout(
    hermes: HermesProposer, model: Switch, candidate: Artifact
) -> None:
    model.responder = lambda body: Reply(body=completion("{}").body, delay=60)
    hermes.settings = hermes.settings.model_copy(update={"run_timeout_s": 4.0})
    request = request_for(candidate).model_copy(update={"run_id": "fac-0001.hung"})
    t0 = time.monotonic()
    try:
        with pytest.raises(InfrastructureError, match="took too long"):
            hermes.propose(request)
        assert time.monotonic() - t0 < 15
        assert hermes.worker is not None and not hermes.worker.alive  # killed, not waited on
        with pytest.raises(InfrastructureError, match="per-run timeout"):
            hermes.propose(request)  # the run's time is spent: no new worker for it
    finally:
        hermes.settings = hermes.settings.model_copy(update={"run_timeout_s": 900.0})

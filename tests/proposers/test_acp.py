"""The acp proposer against a scripted ACP agent (`acp_agent.py`, the SDK's agent side):
the agent process, the ACP connection, the MCP relay it starts, the scaffold tools, the
answer validation, the transcripts, the gates and the commit are real; only the agent's
choices are scripted. Each failure mode ends as a critique, never a crash of the batch."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("acp", reason="the acp extra is not installed: pip install -e '.[acp]'")
pytest.importorskip("mcp", reason="the acp extra is not installed: pip install -e '.[acp]'")

from effectors.proposers.acp import AcpProposer
from effectors.proposers.openai_client import TranscriptStore
from effectors.proposers.tools import TOOL_NAMES
from harness.errors import ConfigError, EndpointUnavailable, ProposalFailed
from harness.models import Artifact
from harness.pack import Pack
from harness.pools import Pools
from harness.workspace import AcpConfig
from tests.conftest import FACILITY
from tests.proposers.test_openai import BAD, request_for

pytestmark = pytest.mark.java  # the pools come from HermiT

AGENT = Path(__file__).with_name("acp_agent.py")


@pytest.fixture(scope="module")
def candidate() -> Artifact:
    line = (FACILITY / "corpus" / "demo.jsonl").read_text().splitlines()[0]
    return Artifact.model_validate_json(line)


class Agent:
    """The scripted agent's state folder: its script and what it logged."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def script(self, *steps: dict[str, Any]) -> None:
        (self.root / "script.json").write_text(json.dumps(list(steps)))
        (self.root / "turns").unlink(missing_ok=True)

    def log(self, event: str | None = None) -> list[dict[str, Any]]:
        path = self.root / "log.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        events = [json.loads(ln) for ln in lines]
        return [e for e in events if event is None or e["event"] == event]


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(tmp_path / "agent-state")


def make(
    pack: Pack,
    pools: Pools,
    ws: Path,
    agent: Agent | None,
    *,
    replay: bool = False,
    **settings: Any,
) -> AcpProposer:
    cfg = AcpConfig.model_validate(
        {
            "command": [sys.executable, str(AGENT)] if agent is not None else [],
            "name": "scripted",
            "env": {"ACP_AGENT_STATE": str(agent.root)} if agent is not None else {},
            "cache": False,
            "start_timeout_s": 60,
            "prompt_timeout_s": 60,
            **settings,
        }
    )
    return AcpProposer(
        pack,
        pools,
        cfg,
        ws / ".membrane" / "acp",
        transcripts=TranscriptStore(ws / ".membrane" / "transcripts"),
        replay=replay,
        environ={"PATH": os.environ.get("PATH", "")},
    )


@pytest.fixture
def proposer(
    facility_pack: Pack, facility_pools: Pools, tmp_path: Path, agent: Agent
) -> Iterator[AcpProposer]:
    p = make(facility_pack, facility_pools, tmp_path / "ws", agent)
    yield p
    p.close()


def test_the_agent_repairs_through_the_scaffold_tools_over_mcp(
    proposer: AcpProposer, agent: Agent, candidate: Artifact
) -> None:
    agent.script({"do": "repair"}, {"do": "repair"})
    proposal = proposer.propose(request_for(candidate))
    assert proposal.proposer == "acp"
    assert proposal.artifact.value(BAD) != candidate.value(BAD)
    assert proposal.tool_calls == ("synth_column", "draft_prose")
    assert proposal.usage[0].estimated and proposal.tokens_prompt > 0
    (tools,) = agent.log("tools")
    assert sorted(tools["names"]) == sorted(TOOL_NAMES)  # the scaffold tools, nothing else
    assert [e["error"] for e in agent.log("tool")] == [None, None]
    (session,) = agent.log("new_session")
    assert session["servers"] == ["membrane"]
    assert "acp agent scripted-agent 1.0: 2 tool call(s) reported" in proposal.notes[0]
    # the next attempt of the same run resumes the session: no system prompt again
    proposer.propose(request_for(candidate, attempt=3))
    prompts = agent.log("prompt")
    assert [p["blocks"] for p in prompts] == [2, 1]
    assert len({p["session"] for p in prompts}) == 1 and len(agent.log("start")) == 1


def test_a_malformed_answer_is_a_critique_and_the_agent_keeps_running(
    proposer: AcpProposer, agent: Agent, candidate: Artifact
) -> None:
    agent.script({"do": "answer", "text": "Sure! Here is the fix: {tables"}, {"do": "repair"})
    with pytest.raises(ProposalFailed) as info:
        proposer.propose(request_for(candidate))
    assert info.value.code == "proposal.malformed_json" and info.value.usage
    proposer.propose(request_for(candidate, attempt=3))  # the same process answers next
    assert len(agent.log("start")) == 1


@pytest.mark.parametrize(
    ("stop", "code"),
    [("max_tokens", "proposal.oversized"), ("max_turn_requests", "proposal.tool_rounds")],
)
def test_a_turn_stopped_at_a_limit_is_a_critique(
    proposer: AcpProposer, agent: Agent, candidate: Artifact, stop: str, code: str
) -> None:
    agent.script({"do": "answer", "text": "{}", "stop_reason": stop})
    with pytest.raises(ProposalFailed) as info:
        proposer.propose(request_for(candidate))
    assert info.value.code == code


def test_a_permission_request_is_denied_and_the_denial_is_in_the_proposal(
    proposer: AcpProposer, agent: Agent, candidate: Artifact
) -> None:
    agent.script({"do": "permission"})
    proposal = proposer.propose(request_for(candidate))
    (asked,) = agent.log("permission")
    assert asked["outcome"] == {"outcome": "selected", "optionId": "no"}  # reject_once
    assert "permission denied: write corpus.jsonl [edit-1]" in proposal.notes


@pytest.mark.slow
def test_a_hang_is_a_timeout_critique_and_the_next_attempt_gets_a_new_process(
    facility_pack: Pack, facility_pools: Pools, tmp_path: Path, agent: Agent, candidate: Artifact
) -> None:
    p = make(facility_pack, facility_pools, tmp_path / "ws", agent, prompt_timeout_s=3)
    try:
        agent.script({"do": "hang"}, {"do": "repair"})
        with pytest.raises(ProposalFailed) as info:
            p.propose(request_for(candidate))
        assert info.value.code == "proposal.agent_timeout"
        assert "within 3s" in info.value.message
        proposal = p.propose(request_for(candidate, attempt=3))
        assert proposal.artifact.value(BAD) != candidate.value(BAD)
        starts = agent.log("start")
        assert len(starts) == 2 and starts[0]["pid"] != starts[1]["pid"]
        assert agent.log("cancel")  # the hung turn was cancelled before the kill
        # the restarted process opened a new session, with the system prompt again
        assert [e["blocks"] for e in agent.log("prompt")] == [2, 2]
    finally:
        p.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "message"),
    [("crash", "exit code 3"), ("garbage", "not JSON-RPC")],
)
def test_a_crash_or_garbage_is_a_critique_and_the_process_is_restarted(
    proposer: AcpProposer, agent: Agent, candidate: Artifact, step: str, message: str
) -> None:
    agent.script({"do": step}, {"do": "repair"})
    with pytest.raises(ProposalFailed) as info:
        proposer.propose(request_for(candidate))
    assert info.value.code == "proposal.agent_failed" and message in info.value.message
    if step == "garbage":
        assert info.value.evidence[0] == "this is not JSON-RPC"
    assert proposer.propose(request_for(candidate, attempt=3)).proposer == "acp"
    assert len(agent.log("start")) == 2


@pytest.mark.slow
def test_the_breaker_opens_after_repeated_agent_failures(
    facility_pack: Pack, facility_pools: Pools, tmp_path: Path, agent: Agent, candidate: Artifact
) -> None:
    p = make(facility_pack, facility_pools, tmp_path / "ws", agent, breaker_failures=2)
    try:
        agent.script({"do": "crash"})
        with pytest.raises(ProposalFailed):
            p.propose(request_for(candidate))
        with pytest.raises(EndpointUnavailable, match="2 agent failures"):
            p.propose(request_for(candidate, attempt=3))
        with pytest.raises(EndpointUnavailable):  # open: the agent is not started again
            p.propose(request_for(candidate, attempt=4))
        assert len(agent.log("start")) == 2
    finally:
        p.close()


def test_a_missing_agent_command_is_a_config_error(
    facility_pack: Pack, facility_pools: Pools, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"\[acp\]"):
        make(facility_pack, facility_pools, tmp_path, None)


def test_a_replay_with_no_transcript_stops_and_never_starts_the_agent(
    facility_pack: Pack, facility_pools: Pools, tmp_path: Path, agent: Agent, candidate: Artifact
) -> None:
    p = make(facility_pack, facility_pools, tmp_path / "ws", agent, replay=True)
    with pytest.raises(EndpointUnavailable, match="replay: no acp transcript"):
        p.propose(request_for(candidate))
    p.close()
    assert agent.log() == [] and not (tmp_path / "ws" / ".membrane" / "acp").exists()


def test_a_bad_variable_name_in_acp_env_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    from harness.workspace import Workspace

    (tmp_path / "membrane.toml").write_text('[acp]\nenv = { "NOT A NAME" = "x" }\n')
    with pytest.raises(ConfigError, match=r"membrane.toml(:\d+)?: invalid `acp.env"):
        Workspace(tmp_path).config()


def test_an_agent_command_that_is_not_an_executable_is_a_config_error(
    facility_pack: Pack, facility_pools: Pools, tmp_path: Path
) -> None:
    cfg = AcpConfig(command=("/nonexistent/acp-agent", "--acp"))
    with pytest.raises(ConfigError, match=r"\[acp\]\.command: '/nonexistent/acp-agent' is not"):
        AcpProposer(facility_pack, facility_pools, cfg, tmp_path, environ={"PATH": "/usr/bin"})
    cfg = AcpConfig(command=("no-such-agent-on-path",))
    with pytest.raises(ConfigError, match="on the agent's PATH"):
        AcpProposer(facility_pack, facility_pools, cfg, tmp_path, environ={"PATH": "/usr/bin"})

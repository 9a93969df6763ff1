"""The acp proposer's default agent: hermes-agent over ACP through the locked launcher
(`effectors/proposers/acp_hermes.py`, in `.venv-hermes` with hermes' `[acp]` extra), against
the loopback scripted model server. The model is the only fake: hermes' ACP server and agent
loop, its MCP client, the relay, the scaffold tools, the gates and the commit are real. The
model must see the scaffold tools and nothing else, and membrane's system prompt."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from effectors.proposers.hermes import default_python
from effectors.proposers.offline import OfflineProposer
from effectors.proposers.prompting import system_prompt
from effectors.proposers.tools import TOOL_NAMES
from harness.api import run_batch
from harness.models import Artifact, CritiqueReport, ProposalRequest, Spine
from harness.pack import Pack
from harness.pools import Pools
from tests.conftest import FACILITY
from tests.proposers.server import Reply, ScriptedServer, completion, tool_call

HERMES_PYTHON = default_python()
_HERMES_ACP = HERMES_PYTHON.parent.parent / "lib" / "python3.11" / "site-packages" / "acp"
pytestmark = [
    pytest.mark.hermes,
    pytest.mark.slow,
    pytest.mark.java,
    pytest.mark.skipif(
        not HERMES_PYTHON.is_file() or not _HERMES_ACP.is_dir(),
        reason=f"hermes-agent[acp] is missing in {HERMES_PYTHON.parent.parent}: run `make hermes`",
    ),
]
pytest.importorskip("acp", reason="the acp extra is not installed: pip install -e '.[acp]'")

_BLOCK = re.compile(r'<data name="(\w+)" id="(\w+)">\n(.*?)\n</data id="\2">', re.S)
_ATTEMPT = re.compile(r"Attempt (\d+) for artifact `([^`]+)`")
SCAFFOLD = {f"mcp__membrane__{name}" for name in TOOL_NAMES}


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def hermes_model(pack: Pack, pools: Pools, seen: list[dict[str, Any]]) -> Any:
    """A model that first calls `draft_prose` through MCP, then answers the offline repair
    of the last user message's request."""
    offline = OfflineProposer(pack, pools)

    def respond(body: dict[str, Any]) -> Reply:
        seen.append(body)
        messages = body["messages"]
        last = max(i for i, m in enumerate(messages) if m["role"] == "user")
        if not any(m["role"] == "tool" for m in messages[last:]):
            call_id = f"call_{len(seen)}"  # fresh, as a model's are (hermes drops a repeated id)
            return completion(
                None, tool_calls=[tool_call("mcp__membrane__draft_prose", {}, call_id)]
            )
        user = _text(messages[last]["content"])
        m = _ATTEMPT.search(user)
        assert m is not None, user[:300]
        data = {name: json.loads(text) for name, _id, text in _BLOCK.findall(user)}
        crit = data["critique"]
        request = ProposalRequest(
            run_id="x",
            attempt=int(m.group(1)),
            candidate=Artifact(
                id=m.group(2), tables=data["candidate"]["tables"], prose=data["candidate"]["prose"]
            ),
            critique=CritiqueReport(
                gate=crit["gate"],
                attempt=crit["attempt"],
                critiques=tuple(crit["critiques"]),
                spine=Spine(locked=data["spine"]),
            ),
        )
        fixed = offline.propose(request).artifact
        return completion(json.dumps({"tables": fixed.tables, "prose": fixed.prose}))

    return respond


def write_config(ws: Path, base_url: str) -> None:
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "membrane.toml").write_text(
        'proposer = "acp"\n[llm]\n'
        f'base_url = "{base_url}"\nmodel = "scripted"\napi_key_env = "ACP_TEST_KEY"\n'
        "[acp]\nprompt_timeout_s = 120\n"
    )


def test_locked_hermes_over_acp_commits_with_only_the_scaffold_tools(
    facility_pack: Pack,
    facility_pools: Pools,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACP_TEST_KEY", "sk-acp-test-secret-0123456789")
    corpus = tmp_path / "subset.jsonl"
    lines = (FACILITY / "corpus" / "demo.jsonl").read_text().splitlines()[:2]
    corpus.write_text("\n".join(lines) + "\n")
    seen: list[dict[str, Any]] = []
    live, again = tmp_path / "live", tmp_path / "again"
    with ScriptedServer(hermes_model(facility_pack, facility_pools, seen)) as srv:
        write_config(live, srv.base_url)
        result = run_batch(live, corpus, FACILITY, proposer="acp")
    assert [r.state for r in result.runs] == ["COMMITTED", "COMMITTED"], result.runs
    assert seen and result.tokens > 0
    for body in seen:  # the model sees the scaffold tools, nothing else, and our prompt
        assert {t["function"]["name"] for t in body["tools"]} == SCAFFOLD
        first = body["messages"][0]
        assert first["role"] == "system"
        assert _text(first["content"]).strip() == system_prompt(facility_pack).strip()
    tool_results = [m for b in seen for m in b["messages"] if m["role"] == "tool"]
    assert tool_results and all("prose" in _text(m["content"]) for m in tool_results)
    sandbox = live / ".membrane" / "acp"
    assert (sandbox / "hermes" / "home" / "config.yaml").is_file()
    assert "sk-acp-test" not in (sandbox / "hermes" / "settings.json").read_text()
    events = [
        json.loads(x) for p in (live / "trace").glob("*.jsonl") for x in p.read_text().splitlines()
    ]
    proposals = [e for e in events if e["kind"] == "proposal" and e["proposer"] == "acp"]
    assert proposals and all(e["tool_calls"] == ["draft_prose"] for e in proposals)

    write_config(again, "http://127.0.0.1:9/v1")  # nothing listens there
    (again / ".membrane").mkdir(parents=True)
    shutil.copytree(live / ".membrane" / "transcripts", again / ".membrane" / "transcripts")
    monkeypatch.setenv("MEMBRANE_HERMES_PYTHON", os.devnull)  # no hermes either
    replayed = run_batch(again, corpus, FACILITY, proposer="acp", replay=True)
    assert [r.state for r in replayed.runs] == ["COMMITTED", "COMMITTED"]
    assert (again / "current" / "corpus.jsonl").read_bytes() == (
        live / "current" / "corpus.jsonl"
    ).read_bytes()
    assert not (again / ".membrane" / "acp").exists()


def test_membrane_batch_with_acp_commits_what_openai_commits_and_replays_it(
    facility_pack: Pack,
    facility_pools: Pools,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Done-when 1 on a slice of the demo corpus, through the CLI."""
    from harness.cli import main
    from tests.proposers.conftest import offline_model
    from tests.proposers.conftest import write_config as write_openai_config

    corpus = tmp_path / "subset.jsonl"
    lines = (FACILITY / "corpus" / "demo.jsonl").read_text().splitlines(keepends=True)[:12]
    corpus.write_text("".join(lines))

    def batch(ws: Path, *extra: str) -> Any:
        args = ["batch", str(corpus), "--pack", str(FACILITY), "-w", str(ws), "--json"]
        code = main([*args, "--no-progress", "--no-report", *extra])
        out = capsys.readouterr().out
        assert code == 0, out
        return json.loads(out)

    acp, openai, again = tmp_path / "acp", tmp_path / "openai", tmp_path / "again"
    with ScriptedServer(hermes_model(facility_pack, facility_pools, [])) as srv:
        write_config(acp, srv.base_url)
        first = batch(acp, "--proposer", "acp")
    with ScriptedServer(offline_model(facility_pack, facility_pools)) as srv:
        write_openai_config(openai, srv.base_url)
        reference = batch(openai, "--proposer", "openai")
    assert [r["state"] for r in first["runs"]] == ["COMMITTED"] * 12
    assert [r["attempts"] for r in first["runs"]] == [r["attempts"] for r in reference["runs"]]
    committed = (acp / "current" / "corpus.jsonl").read_bytes()
    assert committed == (openai / "current" / "corpus.jsonl").read_bytes()

    write_config(again, "http://127.0.0.1:9/v1")
    (again / ".membrane").mkdir(parents=True)
    shutil.copytree(acp / ".membrane" / "transcripts", again / ".membrane" / "transcripts")
    monkeypatch.setenv("MEMBRANE_HERMES_PYTHON", os.devnull)
    batch(again, "--proposer", "acp", "--replay")
    assert (again / "current" / "corpus.jsonl").read_bytes() == committed
    assert not (again / ".membrane" / "acp").exists()

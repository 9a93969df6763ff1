"""Done-when of the ACP proposer issue, through the CLI with the real gates: `membrane batch
--proposer acp` refines a slice of the demo corpus with the scripted ACP agent (which repairs
through the scaffold tools over MCP) and commits; a locked-cell edit and a permission request
along the way are critiques and notes, never commits; `--replay` reproduces the committed
corpus byte for byte with the agent's command pointing at nothing."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("acp", reason="the acp extra is not installed: pip install -e '.[acp]'")

from harness.cli import main
from harness.output import EXIT_OK
from tests.conftest import FACILITY
from tests.proposers.test_acp import AGENT, Agent

pytestmark = [pytest.mark.java, pytest.mark.slow]

DEMO = FACILITY / "corpus" / "demo.jsonl"


def write_config(ws: Path, command: list[str], state: Path) -> None:
    ws.mkdir(parents=True, exist_ok=True)
    lines = [
        'proposer = "acp"',
        "[acp]",
        f"command = {json.dumps(command)}",
        'name = "scripted"',
        f"env = {{ ACP_AGENT_STATE = {json.dumps(str(state))} }}",
        "prompt_timeout_s = 60",
    ]
    (ws / "membrane.toml").write_text("\n".join(lines) + "\n")


def batch(capsys: pytest.CaptureFixture[str], ws: Path, corpus: Path, *extra: str) -> Any:
    args = ["batch", str(corpus), "--pack", str(FACILITY), "-w", str(ws), "--json"]
    code = main([*args, "--no-progress", "--no-report", *extra])
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    return json.loads(out)


def test_acp_batch_commits_and_replay_reproduces_it_without_the_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "subset.jsonl"
    corpus.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:12]))
    agent = Agent(tmp_path / "agent-state")
    agent.script({"do": "locked"}, {"do": "permission"}, {"do": "repair"})
    live, replay = tmp_path / "live", tmp_path / "replay"
    write_config(live, [sys.executable, str(AGENT)], agent.root)
    first = batch(capsys, live, corpus, "--proposer", "acp", "--cohort-size", "4")
    runs = first["runs"]
    assert len(runs) == 12 and [r["state"] for r in runs].count("COMMITTED") >= 11, runs
    assert sum(r["attempts"] > 1 for r in runs) > 0 and first["tokens"] > 0
    assert len(agent.log("start")) == 1  # one process for the whole batch
    events = [
        json.loads(line)
        for path in sorted((live / "trace").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    codes = [c["code"] for e in events if e["kind"] == "verdict" for c in e.get("critiques", [])]
    assert "proposal.locked_cell" in codes  # the agent's edit of a locked cell: rejected
    notes = [n for e in events if e["kind"] == "proposal" for n in e["notes"]]
    assert any(n.startswith("permission denied: write corpus.jsonl") for n in notes)
    tools = {t for e in events if e["kind"] == "proposal" for t in e["tool_calls"]}
    assert {"synth_column", "draft_prose"} <= tools

    write_config(replay, ["/nonexistent/acp-agent"], agent.root)
    (replay / ".membrane").mkdir(parents=True)
    shutil.copytree(live / ".membrane" / "transcripts", replay / ".membrane" / "transcripts")
    again = batch(capsys, replay, corpus, "--proposer", "acp", "--replay", "--cohort-size", "4")
    assert [(r["state"], r["attempts"]) for r in again["runs"]] == [
        (r["state"], r["attempts"]) for r in runs
    ]
    assert again["tokens"] == first["tokens"]
    assert (replay / "current" / "corpus.jsonl").read_bytes() == (
        live / "current" / "corpus.jsonl"
    ).read_bytes()
    assert len(agent.log("start")) == 1 and not (replay / ".membrane" / "acp").exists()

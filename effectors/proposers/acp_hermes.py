"""The locked hermes launcher: hermes-agent as an ACP agent with the scaffold tools only.

Runs under `.venv-hermes/bin/python -I` (hermes-agent with its `[acp]` extra, pinned in
`constraints-hermes.txt`), never in membrane's venv: it imports only the standard library,
then hermes. The `acp` proposer starts it when `[acp].command` is empty.

hermes' own ACP entry point (`hermes-acp`) builds each session's `AIAgent` with its whole
default toolset (terminal, files, code execution, memory, skills, delegation) and its own
system prompt. This launcher runs the same ACP server (`acp_adapter.server.HermesACPAgent`)
with a session manager whose agents are built like the `hermes` proposer's worker builds
them: only the toolset of the MCP server membrane names in `session/new` (`mcp-membrane`:
the three scaffold tools), membrane's system prompt in place of hermes' (a private
attribute: the version is pinned and a test checks what the endpoint receives), no memory,
no context files, no trajectories, no checkpoints, no tool delay, no streaming.

Environment (set by the proposer): `HERMES_HOME` (the sandbox, with its `config.yaml`),
`MEMBRANE_HERMES_SETTINGS` (a JSON file: endpoint, model, limits, system prompt; no key),
`MEMBRANE_HERMES_API_KEY` (the key, read and removed from the environment at start).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

__all__ = ["TOOLSET", "main"]

TOOLSET = "mcp-membrane"  # hermes names an MCP server's toolset `mcp-<server name>`


def _lock_prompt(agent: Any, prompt: str) -> None:
    """Our system prompt, also after hermes invalidates its cache (it does on MCP refresh)."""
    agent._cached_system_prompt = prompt
    agent._build_system_prompt = lambda system_message=None: prompt


def main() -> int:
    if not os.environ.get("HERMES_HOME") or not os.environ.get("MEMBRANE_HERMES_SETTINGS"):
        print("acp_hermes: HERMES_HOME and MEMBRANE_HERMES_SETTINGS must be set", file=sys.stderr)
        return 2
    os.environ["HERMES_DISABLE_LAZY_INSTALLS"] = "1"  # before hermes is imported
    with open(os.environ["MEMBRANE_HERMES_SETTINGS"], encoding="utf-8") as fh:
        settings: dict[str, Any] = json.load(fh)
    api_key = os.environ.pop("MEMBRANE_HERMES_API_KEY", "") or "not-needed"

    import asyncio

    acp: Any = importlib.import_module("acp")  # hermes' pinned SDK (0.9), not membrane's
    entry: Any = importlib.import_module("acp_adapter.entry")
    server: Any = importlib.import_module("acp_adapter.server")
    session: Any = importlib.import_module("acp_adapter.session")

    class LockedSessions(session.SessionManager):  # type: ignore[misc]
        def _make_agent(self, *, session_id: str, cwd: str, **_ignored: Any) -> Any:
            AIAgent = importlib.import_module("run_agent").AIAgent

            overrides = {k: settings[k] for k in ("temperature", "seed") if k in settings}
            agent = AIAgent(
                base_url=settings["base_url"],
                api_key=api_key,
                provider="custom",
                model=settings["model"],
                enabled_toolsets=[TOOLSET],
                quiet_mode=True,
                skip_memory=True,
                skip_context_files=True,
                save_trajectories=False,
                checkpoints_enabled=False,
                max_tokens=int(settings.get("max_tokens", 4096)),
                max_iterations=int(settings.get("max_iterations", 8)),
                tool_delay=0.0,
                request_overrides=overrides or None,
                platform="acp",
                session_id=session_id,
                session_db=self._get_db(),
            )
            _lock_prompt(agent, settings["system_prompt"])
            agent._disable_streaming = True
            agent._print_fn = session._acp_stderr_print  # stdout is the ACP channel
            agent.session_cwd = cwd
            return agent

    entry._setup_logging()
    agent = server.HermesACPAgent(session_manager=LockedSessions())
    asyncio.run(acp.run_agent(agent, use_unstable_protocol=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

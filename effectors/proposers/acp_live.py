"""The live side of the `acp` proposer: the agent process, its sessions and the tool bridge.

`Live.turn` runs one attempt's prompt turn and returns its result as plain JSON (what the
transcript stores): the answer text, the stop reason, the tool calls (membrane's scaffold
calls, and the agent's own reports by `toolCallId`), the denials, the token counts; or
`{"failure": {"kind", "message", "evidence"}}` when the agent crashed, hung or wrote
garbage. A failure kills the process; the next turn starts a new one (and new sessions).

The agent's environment is only `[acp].pass_env` (values from membrane's environment) and
`[acp].env`, with `HOME` and `TMPDIR` in the sandbox (`.membrane/acp/`) unless `env` sets
them; its working folder and the sessions' `cwd` are `.membrane/acp/work/`; its stderr is
appended to `.membrane/acp/agent.log`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from effectors.proposers.acp_client import AgentFailure, AgentProcess, LoopThread
from effectors.proposers.mcp_bridge import ToolBridge, relay_command
from effectors.proposers.tools import ScaffoldTools
from harness.workspace import AcpConfig

__all__ = ["Live"]


class Live:
    """One supervised agent process at a time (see the module docstring)."""

    def __init__(
        self,
        settings: AcpConfig,
        sandbox: Path,
        schemas: Sequence[dict[str, Any]],
        environ: Mapping[str, str],
    ) -> None:
        self.settings = settings
        self.sandbox = sandbox
        self.environ = dict(environ)
        self.loop = LoopThread()
        self.bridge = ToolBridge(schemas)
        self.loop.call(self.bridge.start(), 10.0)
        self.agent: AgentProcess | None = None
        self.sessions: dict[str, str] = {}  # run id -> session id, in the running process

    def env(self) -> dict[str, str]:
        s = self.settings
        env = {k: self.environ[k] for k in s.pass_env if k in self.environ}
        env["HOME"] = str(self.sandbox / "home")
        env["TMPDIR"] = str(self.sandbox / "tmp")
        env.update(s.env)
        for folder in (self.sandbox / "home", self.sandbox / "tmp"):
            folder.mkdir(parents=True, exist_ok=True)
        return env

    @property
    def work(self) -> Path:
        return (self.sandbox / "work").resolve()

    def turn(
        self, run_id: str, system: str | None, user: str, tools: ScaffoldTools, timeout: float
    ) -> dict[str, Any]:
        try:
            return self._turn(run_id, system, user, tools, timeout)
        except AgentFailure as exc:
            self._restart()
            return {
                "failure": {
                    "kind": exc.kind,
                    "message": exc.message,
                    "evidence": list(exc.evidence),
                }
            }
        finally:
            self.bridge.bind(None)

    def _turn(
        self, run_id: str, system: str | None, user: str, tools: ScaffoldTools, timeout: float
    ) -> dict[str, Any]:
        agent = self._agent()
        first = run_id not in self.sessions
        if first:
            self.sessions[run_id] = self._call(
                agent.new_session(self.work, relay_command(self.bridge.path)),
                self.settings.start_timeout_s,
                "session/new",
            )
        session = self.sessions[run_id]
        self.bridge.bind(tools)
        texts = [system, user] if first and system is not None else [user]
        try:
            reply, turn = self._call(agent.prompt(session, texts), timeout, "the prompt turn")
        except AgentFailure as exc:
            if exc.kind == "timeout":
                with contextlib.suppress(Exception):
                    self.loop.call(agent.cancel(session), 3.0)
            raise
        usage = reply.usage
        if usage is not None:
            prompt, completion, estimated = usage.input_tokens, usage.output_tokens, False
        else:  # the agent reports none: 4 characters a token, never 0
            prompt = (sum(len(t) for t in texts) + 3) // 4
            completion = (turn.chars + 3) // 4
            estimated = True
        return {
            "agent": agent.agent_info,
            "stop_reason": reply.stop_reason,
            "text": turn.text,
            "tool_calls": list(tools.calls),
            "agent_tool_calls": [{"id": k, **v} for k, v in turn.tool_calls.items()],
            "denied": list(turn.denied),
            "tokens_prompt": prompt,
            "tokens_completion": completion,
            "estimated": estimated,
        }

    def _agent(self) -> AgentProcess:
        if self.agent is not None and self.agent.alive:
            return self.agent
        self._restart()
        self.agent = AgentProcess(
            self.settings.command,
            env=self.env(),
            cwd=self.work,
            log=self.sandbox / "agent.log",
            max_chars=self.settings.max_answer_chars,
        )
        self._call(self.agent.start(), self.settings.start_timeout_s, "start and initialize")
        return self.agent

    def _call(self, coro: Any, timeout: float, what: str) -> Any:
        try:
            return self.loop.call(coro, timeout)
        except (TimeoutError, FutureTimeout) as exc:
            tail = self.agent.stderr_tail() if self.agent is not None else ()
            raise AgentFailure("timeout", f"no answer to {what} within {timeout:g}s", tail) from exc

    def _restart(self) -> None:
        """End the process (if any): its sessions go with it."""
        self.sessions.clear()
        agent, self.agent = self.agent, None
        if agent is not None:
            with contextlib.suppress(Exception):
                self.loop.call(agent.stop(), 15.0)

    def close(self) -> None:
        self._restart()
        with contextlib.suppress(Exception):
            self.loop.call(self.bridge.stop(), 5.0)
        self.loop.stop()

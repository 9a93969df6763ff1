"""membrane as an ACP **client**: one agent process, supervised, on a private event loop.

The `agent-client-protocol` SDK is asyncio; the loop is synchronous. `LoopThread` runs one
event loop in a daemon thread for the proposer's lifetime (the agent process, its pipes
and the MCP tool bridge live on it across attempts), and `call` waits for a coroutine with
a timeout from the caller's thread.

`AgentProcess` spawns the agent (argv, no shell; stderr appended to a log file), speaks
JSON-RPC over its stdio through `StrictTransport`, and answers the agent's requests as
`Recorder`:

* `session/update`: the agent's message chunks (the answer), tool calls by `toolCallId`
  with their last status, reported usage;
* `session/request_permission`: always **denied** (the `reject_once` option when the agent
  offers one, else `cancelled`), and the denial recorded;
* file-system and terminal requests: membrane advertises neither capability; a request
  anyway is refused (`method not found`) and recorded as a denial.

Unlike the SDK's own stdio transport, which logs and skips a line that is not JSON,
`StrictTransport` ends the connection at the first line that is not a JSON object (or
longer than `LINE_LIMIT`): garbage on the agent's stdout ends the attempt
(`AgentFailure("garbage")`), like a crash (`"crashed"`) or a hang (`"timeout"`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    Implementation,
    McpServerStdio,
    PermissionOption,
    PromptResponse,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    WriteTextFileResponse,
)

__all__ = [
    "LINE_LIMIT",
    "AgentFailure",
    "AgentProcess",
    "LoopThread",
    "Recorder",
    "StrictTransport",
    "Turn",
]

LINE_LIMIT: Final = 8 * 1024 * 1024  # one JSON-RPC line from the agent
_WEDGED_S: Final = 30.0
_T = TypeVar("_T")
FailureKind = Literal["crashed", "timeout", "garbage", "protocol"]


class AgentFailure(Exception):
    """The agent process failed this attempt: it crashed, hung, wrote garbage or broke the
    protocol. `evidence` holds what helps a person see why (stderr tail, the bad line)."""

    def __init__(self, kind: FailureKind, message: str, evidence: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.message = message
        self.evidence = evidence
        super().__init__(f"{kind}: {message}")


class LoopThread:
    """One asyncio event loop in a daemon thread; `call` runs a coroutine on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="acp-loop", daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, _T], timeout: float | None) -> _T:
        """The coroutine's result; `TimeoutError` after `timeout` seconds (it is cancelled).
        The caller waits at most `timeout` + `_WEDGED_S` even if the loop itself is stuck."""
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, timeout), self.loop)
        try:
            return future.result(None if timeout is None else timeout + _WEDGED_S)
        except TimeoutError:  # from wait_for on the loop, or the loop itself stuck
            future.cancel()
            raise

    def stop(self) -> None:
        """Cancel what still runs on the loop (waiting for it), then stop and close it."""
        if self.loop.is_closed():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_cancel_all(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


async def _cancel_all() -> None:
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


@dataclass
class Turn:
    """What the agent sent during one prompt turn."""

    chunks: list[str] = field(default_factory=list)
    chars: int = 0
    tool_calls: dict[str, dict[str, str]] = field(default_factory=dict)  # toolCallId -> info
    denied: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.chunks)


class Recorder:
    """The ACP `Client` membrane implements: records the turn, denies every permission."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.turns: dict[str, Turn] = {}  # session id -> the turn in progress
        self.denied_outside: list[str] = []  # requests outside any turn

    def begin(self, session_id: str) -> Turn:
        turn = self.turns[session_id] = Turn()
        return turn

    def _turn(self, session_id: str) -> Turn | None:
        return self.turns.get(session_id)

    def _deny(self, session_id: str, what: str) -> None:
        turn = self._turn(session_id)
        (turn.denied if turn is not None else self.denied_outside).append(what[:300])

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        turn = self._turn(session_id)
        if turn is None:
            return
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            text = update.content.text
            if turn.chars <= self.max_chars:  # keep one character past the cap: oversized
                turn.chunks.append(text[: self.max_chars + 1 - turn.chars])
            turn.chars += len(text)
        elif isinstance(update, ToolCallStart):
            turn.tool_calls[update.tool_call_id] = {
                "title": update.title[:200],
                "status": update.status or "pending",
            }
        elif isinstance(update, ToolCallProgress):
            info = turn.tool_calls.setdefault(update.tool_call_id, {"title": "", "status": ""})
            if update.title:
                info["title"] = update.title[:200]
            if update.status:
                info["status"] = update.status

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        what = f"{tool_call.title or tool_call.kind or 'a tool call'} [{tool_call.tool_call_id}]"
        self._deny(session_id, f"permission denied: {what}")
        reject = next((o for o in options if o.kind == "reject_once"), None)
        if reject is None:
            reject = next((o for o in options if o.kind == "reject_always"), None)
        if reject is not None:
            return RequestPermissionResponse(
                outcome=AllowedOutcome(option_id=reject.option_id, outcome="selected")
            )
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        self._deny(session_id, f"write denied: {path[:200]}")
        raise RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:  # fmt: skip
        self._deny(session_id, f"read denied: {path[:200]}")
        raise RequestError.method_not_found("fs/read_text_file")

    async def create_terminal(self, session_id: str, command: str, **kwargs: Any) -> Any:
        self._deny(session_id, f"terminal denied: {command[:200]}")
        raise RequestError.method_not_found("terminal/create")


class StrictTransport:
    """JSON lines over the agent's stdio; the first line that is not a JSON object ends it."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self.garbage: str | None = None

    async def send(self, message: dict[str, Any]) -> None:
        self._stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        await self._stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self._stdout.readline()
            except ValueError:  # over the stream limit
                self.garbage = f"a line over {LINE_LIMIT} bytes"
                return None
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                self.garbage = line[:200].decode("utf-8", "replace").rstrip()
                return None
            return message

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self._stdin.close()


class AgentProcess:
    """One agent process and its ACP connection (see the module docstring)."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        log: Path,
        max_chars: int,
    ) -> None:
        self.command = tuple(command)
        self.env = dict(env)
        self.cwd = cwd
        self.log = log
        self.recorder = Recorder(max_chars)
        self.process: asyncio.subprocess.Process | None = None
        self.transport: StrictTransport | None = None
        self.conn: ClientSideConnection | None = None
        self.agent_info: str = ""

    # -- life cycle (coroutines: run them on the LoopThread) ---------------------------
    async def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as err:
            try:
                self.process = await asyncio.create_subprocess_exec(
                    *self.command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=err,
                    env=self.env,
                    cwd=self.cwd,
                    limit=LINE_LIMIT,
                    start_new_session=True,
                )
            except OSError as exc:
                raise AgentFailure("crashed", f"cannot start {self.command[0]}: {exc}") from exc
        self.transport = StrictTransport(self.process)
        self.conn = connect_to_agent(self.recorder, self.transport)  # type: ignore[arg-type]
        reply = await self._request(
            self.conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                    terminal=False,
                ),
                client_info=Implementation(name="membrane", version="0.1.0"),
            )
        )
        info = reply.agent_info
        self.agent_info = f"{info.name} {info.version}" if info is not None else ""

    async def new_session(self, cwd: Path, mcp: tuple[str, list[str]]) -> str:
        assert self.conn is not None
        server = McpServerStdio(
            name="membrane",
            command=mcp[0],
            args=mcp[1],
            env=[EnvVariable(name="PATH", value=self.env.get("PATH", ""))],
        )
        reply = await self._request(self.conn.new_session(cwd=str(cwd), mcp_servers=[server]))
        return reply.session_id

    async def prompt(self, session_id: str, texts: Sequence[str]) -> tuple[PromptResponse, Turn]:
        assert self.conn is not None
        turn = self.recorder.begin(session_id)
        try:
            reply = await self._request(
                self.conn.prompt(session_id=session_id, prompt=[text_block(t) for t in texts])
            )
        finally:
            self.recorder.turns.pop(session_id, None)
        return reply, turn

    async def cancel(self, session_id: str, grace: float = 0.5) -> None:
        """`session/cancel`, then `grace` seconds for the agent to wind down before a kill."""
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await self.conn.cancel(session_id=session_id)
                await asyncio.sleep(grace)

    async def stop(self) -> int | None:
        """Close the connection and end the process (kill it if it does not go); its code."""
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), 2.0)
            self.conn = None
        process, self.process = self.process, None
        if process is None:
            return None
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.wait(), 5.0)
        return process.returncode

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def _request(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """A request's answer, or the `AgentFailure` that explains why there is none."""
        try:
            return await coro
        except RequestError as exc:
            raise AgentFailure(
                "protocol", f"the agent answered an error: {exc}", self.stderr_tail()
            ) from exc
        except ConnectionError as exc:
            raise await self._gone() from exc

    async def _gone(self) -> AgentFailure:
        if self.transport is not None and self.transport.garbage is not None:
            return AgentFailure(
                "garbage",
                "the agent wrote a line that is not JSON-RPC on stdout",
                (self.transport.garbage, *self.stderr_tail()),
            )
        code = None
        if self.process is not None:
            with contextlib.suppress(Exception):
                code = await asyncio.wait_for(self.process.wait(), 2.0)
        return AgentFailure(
            "crashed",
            f"the agent process ended (exit code {code}) before answering",
            self.stderr_tail(),
        )

    def stderr_tail(self, lines: int = 5) -> tuple[str, ...]:
        try:
            text = self.log.read_bytes()[-4000:].decode("utf-8", "replace")
        except OSError:
            return ()
        tail = [ln[:300] for ln in text.splitlines() if ln.strip()][-lines:]
        return tuple(f"stderr: {ln}" for ln in tail)

"""The hermes-agent worker: runs under `.venv-hermes/bin/python -I`, never in membrane's venv.

hermes-agent pins exact versions of pydantic, openai, httpx ... and installs generic top-level
modules (`tools`, `utils`, `agent`, ...), so it lives in its own environment and this script
imports nothing from membrane (only the standard library, then hermes). The parent
(`effectors/proposers/hermes.py`) spawns it and talks JSON lines over a pipe:

    worker -> parent  {"type": "ready", "hermes_version": "..."}
    parent -> worker  {"type": "request", "id": ..., "endpoint": {...}, "system_prompt": ...,
                       "user_message": ..., "tools": [<OpenAI function tools>], "limits": {...}}
    worker -> parent  {"type": "tool_call", "id": ..., "name": ..., "arguments": {...}}
    parent -> worker  {"type": "tool_result", "id": ..., "content": "..."}      (one per call)
    worker -> parent  {"type": "result", "id": ..., "final_response": ..., "prompt_tokens": ...,
                       "completion_tokens": ..., "completed": ..., "failed": ..., "partial": ...,
                       "error": ..., "exit_reason": ..., "api_calls": ..., "tool_calls": [...]}
                   or {"type": "error", "id": ..., "message": ...}
    parent -> worker  {"type": "shutdown"}  (or EOF on stdin): the worker exits

The tools of the request are registered in hermes' tool registry under one toolset
(`membrane_scaffold`), the only one enabled; their handlers relay each call to the parent,
which runs membrane's scaffold code, and wait for its answer. The protocol uses private
duplicates of the original stdin and stdout: before hermes is imported, file descriptor 1 is
pointed at stderr (nothing hermes prints can corrupt the protocol) and 0 at /dev/null
(nothing in hermes can read a protocol line).

The parent prepares the sandbox: `HERMES_HOME` (with `config.yaml`), `HOME`, `TMPDIR` and the
working folder all under the workspace's `.membrane/hermes/`. This script refuses to start
without `HERMES_HOME` and sets `HERMES_DISABLE_LAZY_INSTALLS=1` before the first import of
hermes (importing it creates its home tree and loads `$HERMES_HOME/.env`).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable
from importlib import metadata
from typing import IO, Any

__all__ = ["PROTOCOL_VERSION", "TOOLSET", "TOOL_NAME_PATTERN", "main"]

PROTOCOL_VERSION = 1
TOOLSET = "membrane_scaffold"
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)
_MAX_LINE = 64 * 1024 * 1024  # a protocol line longer than this is a broken parent

Json = dict[str, Any]


class ProtocolError(Exception):
    """The parent sent something this worker cannot follow."""


class Channel:
    """JSON lines over the private protocol pipe. Tool handlers may run on hermes' worker
    threads, so one call at a time holds the channel: send, then wait for its answer."""

    def __init__(self, reader: IO[str], writer: IO[str]) -> None:
        self.reader = reader
        self.writer = writer
        self.lock = threading.Lock()
        self.calls = 0

    def send(self, message: Json) -> None:
        self.writer.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.writer.flush()

    def receive(self) -> Json | None:
        line = self.reader.readline(_MAX_LINE)
        if not line:
            return None
        if not line.endswith("\n"):
            raise ProtocolError(f"protocol line over {_MAX_LINE} bytes")
        message = json.loads(line)
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ProtocolError(f"not a protocol message: {line[:200]!r}")
        return message

    def relay(self, name: str, arguments: Json) -> str:
        """Send one tool call to the parent and wait for its result."""
        with self.lock:
            self.calls += 1
            call_id = f"call-{self.calls}"
            self.send({"type": "tool_call", "id": call_id, "name": name, "arguments": arguments})
            answer = self.receive()
            if answer is None:
                raise ProtocolError("the parent closed the pipe during a tool call")
            if answer.get("type") != "tool_result" or answer.get("id") != call_id:
                raise ProtocolError(f"expected tool_result {call_id}, got {answer.get('type')}")
            content = answer.get("content")
            return content if isinstance(content, str) else json.dumps(content)


def _handler(channel: Channel, name: str, called: list[str]) -> Callable[..., str]:
    def handle(args: Any, **_context: Any) -> str:
        called.append(name)
        return channel.relay(name, args if isinstance(args, dict) else {"value": args})

    return handle


def _register_tools(registry: Any, tools: list[Json], channel: Channel, called: list[str]) -> None:
    wanted = set()
    for tool in tools:
        schema = tool.get("function", tool)
        name = schema.get("name") if isinstance(schema, dict) else None
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise ProtocolError(f"tool name {name!r} does not match {TOOL_NAME_PATTERN}")
        wanted.add(name)
        registry.register(
            name=name, toolset=TOOLSET, schema=schema, handler=_handler(channel, name, called)
        )
    for stale in set(registry.get_tool_names_for_toolset(TOOLSET)) - wanted:
        registry.deregister(stale)


def _agent(run_agent: Any, request: Json) -> Any:
    endpoint: Json = request["endpoint"]
    limits: Json = request.get("limits", {})
    overrides: Json = {}
    for key in ("temperature", "seed"):
        if endpoint.get(key) is not None:
            overrides[key] = endpoint[key]
    agent = run_agent.AIAgent(
        base_url=endpoint["base_url"],
        api_key=endpoint.get("api_key") or "not-needed",
        provider="custom",
        model=endpoint["model"],
        enabled_toolsets=[TOOLSET],
        quiet_mode=True,
        skip_memory=True,
        skip_context_files=True,
        save_trajectories=False,
        checkpoints_enabled=False,
        max_tokens=int(limits.get("max_tokens", 4096)),
        max_iterations=int(limits.get("max_iterations", 8)),
        tool_delay=0.0,
        request_overrides=overrides or None,
        platform="membrane",
    )
    # hermes builds its own identity prompt; ours replaces it (private attribute: the version
    # is pinned and a test covers that the endpoint receives exactly our system prompt).
    agent._cached_system_prompt = request["system_prompt"]
    # One complete response per call (no stream consumer here): the same request shape as
    # membrane's `openai` proposer, so any OpenAI-compatible server and its test double fit.
    agent._disable_streaming = True
    # `_print_fn` stays unset: hermes then prints its banners to sys.stdout, which is stderr
    # here, and starts no spinner threads (it only animates for a TTY or a custom print_fn).
    return agent


def _tools_offered(agent: Any) -> list[str]:
    return sorted(t["function"]["name"] for t in (getattr(agent, "tools", None) or []))


def _run(run_agent: Any, registry: Any, channel: Channel, request: Json) -> Json:
    called: list[str] = []
    _register_tools(registry, list(request.get("tools", [])), channel, called)
    agent = _agent(run_agent, request)
    offered = _tools_offered(agent)
    allowed = {t.get("function", t).get("name") for t in request.get("tools", [])}
    if not set(offered) <= allowed:
        raise ProtocolError(f"hermes enabled tools beyond the scaffold toolset: {offered}")
    out = agent.run_conversation(request["user_message"], conversation_history=[])
    return {
        "type": "result",
        "id": request.get("id"),
        "final_response": out.get("final_response"),
        "prompt_tokens": int(out.get("prompt_tokens") or 0),
        "completion_tokens": int(out.get("completion_tokens") or 0),
        "completed": bool(out.get("completed")),
        "failed": bool(out.get("failed")),
        "partial": bool(out.get("partial")),
        "error": out.get("error"),
        "exit_reason": out.get("turn_exit_reason"),
        "api_calls": int(out.get("api_calls") or 0),
        "tool_calls": called,
        "tools_offered": offered,
    }


def _private_protocol_pipes() -> tuple[IO[str], IO[str]]:
    """Private duplicates of the original stdin and stdout for the protocol. Then fd 0 reads
    /dev/null (nothing in hermes can consume a protocol line, e.g. with `input()`) and fd 1
    points at stderr (nothing it prints can corrupt one)."""
    reader = os.fdopen(os.dup(0), "r", encoding="utf-8")
    writer = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (lives as long as the process)
    sys.stdout = sys.stderr
    return reader, writer


def main() -> int:
    if not os.environ.get("HERMES_HOME"):
        print("hermes_worker: HERMES_HOME is not set; refusing to start", file=sys.stderr)
        return 2
    os.environ["HERMES_DISABLE_LAZY_INSTALLS"] = "1"
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != here]
    channel = Channel(*_private_protocol_pipes())
    try:
        run_agent = importlib.import_module("run_agent")
        registry = importlib.import_module("tools.registry").registry
    except Exception as exc:
        channel.send({"type": "error", "id": None, "message": f"import failed: {exc!r}"})
        return 3
    channel.send(
        {
            "type": "ready",
            "protocol": PROTOCOL_VERSION,
            "hermes_version": metadata.version("hermes-agent"),
        }
    )
    while (message := channel.receive()) is not None:
        if message["type"] == "shutdown":
            break
        if message["type"] != "request":
            raise ProtocolError(f"unexpected {message['type']!r} message")
        try:
            channel.send(_run(run_agent, registry, channel, message))
        except ProtocolError:
            raise
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            channel.send(
                {
                    "type": "error",
                    "id": message.get("id"),
                    "message": f"{type(exc).__name__}: {exc}"[:2000],
                }
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

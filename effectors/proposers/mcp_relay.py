"""The scaffold tools as an MCP server over stdio, for an ACP agent.

ACP has no message by which a client registers a tool: the client names MCP servers in
`session/new` and the agent starts them. The `acp` proposer names this module, started
as `python -I -m effectors.proposers.mcp_relay SOCKET`. It is a relay, not the tools: it
imports only the `mcp` package and the standard library, asks the proposer (over the Unix
socket SOCKET, in a folder only the proposer's user can open) for the tool list, and
forwards every `tools/call` to it, so the handlers run inside membrane next to the warm
ontology (`mcp_bridge.ToolBridge`), bound to the attempt in progress.

The socket speaks JSON lines, one request and one answer at a time:

    {"op": "list"}                                    -> {"tools": [function schema, ...]}
    {"op": "call", "name": "...", "arguments": {...}} -> {"result": "<the tool's JSON text>"}

A tool result that is `{"error": ...}` is sent to the agent with `isError` set. When the
socket closes (membrane ended the attempt or stopped), every later call is an error.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["SERVER_NAME", "Relay", "main"]

SERVER_NAME: Final = "membrane"
_LIMIT: Final = 16 * 1024 * 1024  # one JSON line on the socket


class Relay:
    """The socket side: one request at a time, answered in order."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._io: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:
            if self._io is None:
                self._io = await asyncio.open_unix_connection(self.path, limit=_LIMIT)
            reader, writer = self._io
            writer.write(json.dumps(message).encode() + b"\n")
            await writer.drain()
            line = await reader.readline()
        if not line:
            raise ConnectionError("membrane closed the tool socket")
        answer = json.loads(line)
        if not isinstance(answer, dict):
            raise ConnectionError("membrane sent a non-object on the tool socket")
        return answer


def build_server(relay: Relay) -> Server[Any]:
    async def list_tools(
        _ctx: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        answer = await relay.ask({"op": "list"})
        tools = [
            types.Tool(
                name=str(s["name"]),
                description=str(s.get("description", "")),
                input_schema=dict(s.get("parameters") or {"type": "object"}),
            )
            for s in answer.get("tools", [])
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            answer = await relay.ask(
                {"op": "call", "name": params.name, "arguments": params.arguments or {}}
            )
            text = str(answer.get("result", '{"error": "no result"}'))
        except (OSError, ValueError) as exc:
            text = json.dumps({"error": f"membrane is not answering: {exc}"})
        try:
            failed = isinstance(json.loads(text), dict) and "error" in json.loads(text)
        except ValueError:
            failed = True
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=failed
        )

    return Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve(path: str) -> None:
    server = build_server(Relay(path))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m effectors.proposers.mcp_relay SOCKET", file=sys.stderr)
        return 2
    anyio.run(_serve, args[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

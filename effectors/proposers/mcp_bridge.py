"""membrane's end of the MCP relay (`mcp_relay.py`): the scaffold tools answered in-process.

`ToolBridge` listens on a Unix socket in a private temporary folder (`mkdtemp`: mode 0700,
short enough for a socket path) on the `acp` proposer's event loop. The relay process the agent starts connects to it and forwards
`list` and `call`; the bridge answers from the `ScaffoldTools` of the attempt in progress
(`bind`), so a tool call runs the pack's ontology code on the warm pools, exactly as the
`openai` proposer's function calls do. Between attempts (nothing bound) a call answers an
error: the agent cannot compute anything outside a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from effectors.proposers.tools import ScaffoldTools

__all__ = ["ToolBridge", "relay_command"]

_LIMIT: Final = 16 * 1024 * 1024


def relay_command(socket: Path) -> tuple[str, list[str]]:
    """The command an agent runs to reach the bridge: this interpreter, isolated mode."""
    return sys.executable, ["-I", "-m", "effectors.proposers.mcp_relay", str(socket)]


class ToolBridge:
    """A Unix socket server answering the relay from the bound attempt's tools."""

    def __init__(self, schemas: Sequence[dict[str, Any]]) -> None:
        self.schemas = list(schemas)
        self.folder: Path | None = None
        self.tools: ScaffoldTools | None = None
        self.connections = 0
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def path(self) -> Path:
        assert self.folder is not None, "the bridge is not started"
        return self.folder / "tools.sock"

    async def start(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="membrane-mcp-"))
        self._server = await asyncio.start_unix_server(self._serve, self.path, limit=_LIMIT)

    async def stop(self) -> None:
        for writer in list(self._writers):
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def bind(self, tools: ScaffoldTools | None) -> None:
        self.tools = tools

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        try:
            while line := await reader.readline():
                writer.write(json.dumps(self.answer(line)).encode() + b"\n")
                await writer.drain()
        except (OSError, ValueError, asyncio.IncompleteReadError):
            pass  # the relay went away, or sent a line over the limit: drop it
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def answer(self, line: bytes) -> dict[str, Any]:
        """One relay request answered; never raises for what the relay sends."""
        try:
            message = json.loads(line)
        except ValueError:
            return {"error": "not JSON"}
        if not isinstance(message, dict):
            return {"error": "not a JSON object"}
        tools = self.tools
        if message.get("op") == "list":
            return {"tools": self.schemas}
        if message.get("op") == "call":
            name, args = message.get("name"), message.get("arguments")
            if tools is None:
                return {"result": json.dumps({"error": "no attempt in progress"})}
            if not isinstance(name, str) or not isinstance(args, dict):
                return {"result": json.dumps({"error": "a call needs a name and arguments"})}
            return {"result": tools.call(name, args)}
        return {"error": "unknown op"}

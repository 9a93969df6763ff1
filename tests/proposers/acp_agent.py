"""A tiny scripted ACP agent for the `acp` proposer's tests (the SDK's agent side).

Run as `python tests/proposers/acp_agent.py` with `ACP_AGENT_STATE` naming a folder that
holds `script.json`: a list of steps, one consumed per prompt turn, across restarts of the
process (the count of turns taken is kept in `turns`). Every event is appended to
`log.jsonl` in that folder, for the tests to assert on.

Steps (`{"do": ...}`):

* `repair`      call the scaffold tools over MCP (the stdio server named in `session/new`):
                `synth_column` for each value critique's cell, `rebuild_table` for each table
                an `ri.` critique names, `draft_prose`; answer with the repaired artifact
* `answer`      answer `text` as it is (e.g. malformed JSON)
* `locked`      answer the candidate with the first locked cell changed
* `permission`  ask permission to edit a file (logged with the outcome), then `repair`
* `hang`        never answer (ignores cancel)
* `crash`       send a chunk of an answer, then exit with code 3
* `garbage`     write a line that is not JSON-RPC on stdout
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    run_agent,
    start_tool_call,
    update_agent_message_text,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)
from mcp.client.client import Client as McpClient
from mcp.client.stdio import StdioServerParameters

STATE = Path(os.environ["ACP_AGENT_STATE"])
_BLOCK = re.compile(r'<data name="(\w+)" id="(\w+)">\n(.*?)\n</data id="\2">', re.S)
_CELL = re.compile(r"^(\w+)\[(\d+)\]\.(\w+)$")


def log(event: str, **data: Any) -> None:
    with open(STATE / "log.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": event, "pid": os.getpid(), **data}) + "\n")


def next_step() -> dict[str, Any]:
    steps = json.loads((STATE / "script.json").read_text())
    counter = STATE / "turns"
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    return steps[n] if n < len(steps) else steps[-1]


class McpLink:
    """One MCP client session, owned by one task, fed through a queue."""

    def __init__(self, server: McpServerStdio) -> None:
        self.params = StdioServerParameters(
            command=server.command, args=server.args, env={e.name: e.value for e in server.env}
        )
        self.queue: asyncio.Queue[tuple[str, dict[str, Any], asyncio.Future[str]] | None] = (
            asyncio.Queue()
        )
        self.ready: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            async with McpClient(self.params) as client:
                listed = await client.list_tools()
                self.ready.set_result([t.name for t in listed.tools])
                while (item := await self.queue.get()) is not None:
                    name, args, fut = item
                    try:
                        result = await client.call_tool(name, args)
                        text = result.content[0].text  # type: ignore[union-attr]
                        fut.set_result(text)
                    except Exception as exc:
                        fut.set_exception(exc)
        except Exception as exc:
            if not self.ready.done():
                self.ready.set_exception(exc)

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        await self.queue.put((name, args, fut))
        data: dict[str, Any] = json.loads(await fut)
        return data


class ScriptedAgent:
    def __init__(self) -> None:
        self.conn: Client | None = None
        self.links: dict[str, McpLink] = {}
        self.calls = 0

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        log("initialize", client=kwargs.get("client_info") and kwargs["client_info"].name)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(mcp_capabilities=McpCapabilities(http=False)),
            agent_info=Implementation(name="scripted-agent", version="1.0"),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        session = f"s{len(self.links) + 1}"
        servers = [s for s in mcp_servers or [] if isinstance(s, McpServerStdio)]
        log("new_session", cwd=cwd, servers=[s.name for s in servers], session=session)
        self.links[session] = McpLink(servers[0])
        tools = await self.links[session].ready
        log("tools", names=tools)
        return NewSessionResponse(session_id=session)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        log("cancel", session=session_id)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        texts = [getattr(b, "text", "") for b in prompt]
        step = next_step()
        log("prompt", session=session_id, blocks=len(texts), step=step["do"], head=texts[-1][:80])
        assert self.conn is not None
        do = step["do"]
        if do == "hang":
            while True:
                await asyncio.sleep(3600)
        if do == "garbage":
            os.write(1, b"this is not JSON-RPC\n")
            await asyncio.sleep(3600)
        if do == "crash":
            await self.say(session_id, '{"tables": ')
            os._exit(3)
        if do == "answer":
            await self.say(session_id, step["text"])
            return PromptResponse(stop_reason=step.get("stop_reason", "end_turn"))
        data = {name: json.loads(text) for name, _id, text in _BLOCK.findall(texts[-1])}
        if do == "locked":
            tables = copy.deepcopy(data["candidate"]["tables"])
            first = sorted(data["spine"])[0]
            m = _CELL.match(first)
            assert m is not None, first
            tables[m.group(1)][int(m.group(2))][m.group(3)] = "CHANGED BY THE AGENT"
            answer = {"tables": tables, "prose": data["candidate"]["prose"]}
            await self.say(session_id, json.dumps(answer))
            return PromptResponse(stop_reason="end_turn")
        if do == "permission":
            outcome = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id="edit-1", title="write corpus.jsonl"),
                options=[
                    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
                ],
            )
            log(
                "permission",
                outcome=outcome.outcome.model_dump(mode="json", by_alias=True, exclude_none=True),
            )
        answer = await self.repair(session_id, data)
        await self.say(session_id, json.dumps(answer))
        return PromptResponse(stop_reason="end_turn")

    async def say(self, session_id: str, text: str) -> None:
        assert self.conn is not None
        half = len(text) // 2  # two chunks: the client must join them
        for part in (text[:half], text[half:]):
            await self.conn.session_update(session_id, update_agent_message_text(part))

    async def tool(self, session_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        assert self.conn is not None
        self.calls += 1
        call_id = f"call-{self.calls}"
        await self.conn.session_update(
            session_id, start_tool_call(call_id, name, kind="other", status="in_progress")
        )
        result = await self.links[session_id].call(name, args)
        log("tool", name=name, error=result.get("error"))
        await self.conn.session_update(session_id, update_tool_call(call_id, status="completed"))
        return result

    async def repair(self, session_id: str, data: dict[str, Any]) -> dict[str, Any]:
        tables = copy.deepcopy(data["candidate"]["tables"])
        critiques = data["critique"]["critiques"]
        for c in critiques:
            loc = c.get("location", {})
            table, row, column = loc.get("table"), loc.get("row"), loc.get("column")
            if c["code"].startswith("value.") and table and row is not None and column:
                args = {"table": table, "column": column, "rows": [row], "tables": tables}
                got = await self.tool(session_id, "synth_column", args)
                value = got.get("values", {}).get(str(row))
                if value is not None:
                    tables[table][row][column] = value
        for table in sorted(
            {c.get("location", {}).get("table") for c in critiques if c["code"].startswith("ri.")}
            - {None}
        ):
            got = await self.tool(session_id, "rebuild_table", {"table": table, "tables": tables})
            if "rows" in got:
                tables[table] = got["rows"]
        prose = (await self.tool(session_id, "draft_prose", {"tables": tables})).get("prose", "")
        return {"tables": tables, "prose": prose}


async def main() -> None:
    await run_agent(ScriptedAgent())  # type: ignore[arg-type]


if __name__ == "__main__":
    log("start", argv=sys.argv[1:])
    asyncio.run(main())

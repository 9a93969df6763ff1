"""Property tests at the ACP proposer's trust boundaries: what the agent writes on stdout
(`StrictTransport`) and what the MCP relay sends on the tool socket (`ToolBridge.answer`)
never raise; anything that is not a JSON object ends the stream or answers an error."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("acp", reason="the acp extra is not installed: pip install -e '.[acp]'")

from effectors.proposers.acp_client import StrictTransport
from effectors.proposers.mcp_bridge import ToolBridge

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


class _Proc:
    """What StrictTransport needs of a process: its stdin and stdout streams."""

    def __init__(self, data: bytes) -> None:
        self.stdout = asyncio.StreamReader(limit=1024)
        self.stdout.feed_data(data)
        self.stdout.feed_eof()
        self.stdin: Any = None


def _receive_all(data: bytes) -> tuple[list[dict[str, Any]], str | None]:
    async def go() -> tuple[list[dict[str, Any]], str | None]:
        transport = StrictTransport.__new__(StrictTransport)
        proc = _Proc(data)
        transport._stdout = proc.stdout  # type: ignore[attr-defined]
        transport.garbage = None
        got = []
        while (message := await transport.receive()) is not None:
            got.append(message)
        return got, transport.garbage

    return asyncio.run(go())


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_the_transport_never_raises_and_stops_at_the_first_bad_line(data: bytes) -> None:
    messages, garbage = _receive_all(data)
    assert all(isinstance(m, dict) for m in messages)
    good = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        if not isinstance(value, dict) or len(line) >= 1024:
            break
        good.append(value)
    assert messages == good[: len(messages)]
    if garbage is None:
        assert messages == good


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=8), _json, max_size=4), max_size=5))
def test_json_objects_pass_through_the_transport_in_order(objs: list[dict[str, Any]]) -> None:
    data = b"".join(json.dumps(o).encode() + b"\n\n" for o in objs)
    messages, garbage = _receive_all(data)
    if garbage is None:
        assert messages == objs
    else:  # only a line over the stream limit may stop it
        assert "over" in garbage


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=500) | _json.map(lambda v: json.dumps(v).encode()))
def test_the_tool_bridge_answers_anything_the_relay_sends(line: bytes) -> None:
    bridge = ToolBridge([{"name": "synth_column"}])
    answer = bridge.answer(line)
    assert isinstance(answer, dict) and set(answer) <= {"error", "tools", "result"}
    json.dumps(answer)  # always sendable
    if "result" in answer:  # a call with no attempt in progress computes nothing
        assert json.loads(answer["result"]) == {"error": "no attempt in progress"}


def test_the_tool_bridge_lists_the_scaffold_tools_outside_a_turn() -> None:
    bridge = ToolBridge([{"name": "synth_column"}])
    assert bridge.answer(b'{"op": "list"}') == {"tools": [{"name": "synth_column"}]}

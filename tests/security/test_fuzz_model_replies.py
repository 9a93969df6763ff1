"""Fuzzing what a model sends back besides its final answer (issue 17): tool-call arguments,
the `tool_calls` list, and whole chat-completion bodies over real HTTP. Tools answer any
arguments with a JSON string and never raise; the proposer turns anything else into a
typed failure (`ProposalFailed`, `InfrastructureError`), never a traceback. The final
answer's parser is fuzzed in test_fuzz_parsers.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from effectors.proposers.openai import OpenAIProposer
from effectors.proposers.openai_client import ChatClient
from effectors.proposers.tools import ScaffoldTools
from harness.errors import InfrastructureError, ProposalFailed
from harness.models import Artifact, CritiqueReport, ProposalRequest, Spine
from harness.pack import Pack, load_pack
from harness.pools import Pools
from harness.workspace import LlmConfig
from tests.conftest import FACILITY
from tests.proposers.server import Reply, ScriptedServer
from tests.security.test_fuzz_parsers import json_leaf, json_value

pytestmark = [pytest.mark.java, pytest.mark.slow]  # pools from HermiT; ~1 min

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
LINE = (FACILITY / "corpus" / "demo.jsonl").read_text(encoding="utf-8").splitlines()[0]
NAMES = st.sampled_from(["synth_column", "rebuild_table", "draft_prose"]) | st.text(max_size=12)
TABLES = st.sampled_from(["rooms", "equipment", "maintenance", "ghost", "", "rooms; DROP"])
COLUMNS = st.sampled_from(["room_id", "standard", "floor", "equipment_type", "nope", ""])


@pytest.fixture(scope="module")
def pack() -> Pack:
    return load_pack(FACILITY)


@pytest.fixture(scope="module")
def pools(pack: Pack, tmp_path_factory: pytest.TempPathFactory) -> Pools:
    from ontology import load_pools

    return load_pools(pack, tmp_path_factory.mktemp("pools"))


def _request() -> ProposalRequest:
    art = Artifact.model_validate_json(LINE)
    report = CritiqueReport(gate="value_gate", attempt=1, critiques=(), spine=Spine.of(art, set()))
    return ProposalRequest(run_id="r1", attempt=2, candidate=art, critique=report)


tool_args = st.one_of(
    st.none(),
    st.text(max_size=60),
    json_value.map(json.dumps),
    st.fixed_dictionaries(
        {},
        optional={
            "table": TABLES | json_leaf,
            "column": COLUMNS | json_leaf,
            "rows": st.lists(st.integers(-5, 2**40), max_size=5) | json_value,
            "within": st.text(max_size=20) | json_leaf,
            "tables": json_value
            | st.dictionaries(TABLES, st.lists(st.dictionaries(COLUMNS, json_leaf), max_size=3)),
            "extra": json_leaf,
        },
    ).map(json.dumps),
    st.just("[" * 50_000),
    st.just("x" * 300_000),
)


@given(name=NAMES, args=tool_args)
@FUZZ
def test_any_tool_call_gets_a_json_answer(
    pack: Pack, pools: Pools, name: str, args: str | None
) -> None:
    tools = ScaffoldTools.for_request(pack, pools, _request(), seed=0)
    out = tools.dispatch(name, args)
    assert isinstance(json.loads(out), dict)
    assert len(tools.calls) == 1


calls = st.one_of(
    json_value,
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "id": json_leaf,
                "type": json_leaf,
                "function": json_value
                | st.fixed_dictionaries(
                    {}, optional={"name": NAMES | json_leaf, "arguments": tool_args | json_value}
                ),
            },
        ),
        max_size=4,
    ),
)


@given(calls=calls)
@FUZZ
def test_any_tool_calls_list_is_answered_or_refused(
    pack: Pack, pools: Pools, tmp_path: Path, calls: Any
) -> None:
    proposer = OpenAIProposer(pack, pools, LlmConfig(model="x"), environ={})
    tools = ScaffoldTools.for_request(pack, pools, _request(), seed=0)
    try:
        out = proposer._run_tools(calls, tools)
    except ProposalFailed as exc:
        assert exc.code == "proposal.schema_invalid"
    else:
        assert all(m["role"] == "tool" and isinstance(m["content"], str) for m in out)


class _Body:
    """The one reply the server gives next (hypothesis sets it per example)."""

    def __init__(self) -> None:
        self.reply = Reply()

    def __call__(self, body: dict[str, Any]) -> Reply:
        return self.reply


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[ScriptedServer, _Body]]:
    body = _Body()
    srv = ScriptedServer(body).start()
    yield srv, body
    srv.stop()


message = st.fixed_dictionaries(
    {},
    optional={
        "role": json_leaf,
        "content": st.text(max_size=40) | json_value,
        "tool_calls": calls,
    },
)
completion_body = st.one_of(
    json_value,
    st.fixed_dictionaries(
        {
            "choices": json_value
            | st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "message": message | json_value,
                        "finish_reason": st.sampled_from(["stop", "length", "tool_calls"])
                        | json_leaf,
                    },
                ),
                max_size=2,
            )
        },
        optional={
            "usage": json_value
            | st.dictionaries(
                st.sampled_from(["prompt_tokens", "completion_tokens", "total_tokens"]), json_leaf
            )
        },
    ),
).map(lambda b: json.dumps(b).encode())
raw_body = st.binary(max_size=80)


@given(data=completion_body | raw_body, status=st.sampled_from([200, 200, 200, 400, 500]))
@FUZZ
def test_any_completion_body_is_a_proposal_or_a_typed_failure(
    pack: Pack,
    pools: Pools,
    tmp_path: Path,
    server: tuple[ScriptedServer, _Body],
    data: bytes,
    status: int,
) -> None:
    srv, body = server
    body.reply = Reply(status=status, body=data, headers={"Content-Type": "application/json"})
    cfg = LlmConfig(
        base_url=srv.base_url,
        model="scripted",
        backoff_s=0,
        retries=0,
        max_tool_rounds=1,
        timeout_s=5,
    )
    client = ChatClient(cfg, sleep=lambda s: None)
    proposer = OpenAIProposer(pack, pools, cfg, client=client, environ={})
    try:
        proposal = proposer.propose(_request())
    except (ProposalFailed, InfrastructureError):
        pass
    else:
        assert proposal.artifact.id == _request().candidate.id

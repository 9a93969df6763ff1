"""Token budgets do not trust the server (issue 17, item 4): a reply without `usage`, or
with negative, zero or non-integer counts, is charged an estimate from the text (4
characters a token), flagged `estimated`; a plausible count is taken as reported."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from effectors.proposers.openai_client import ChatClient
from harness.workspace import LlmConfig
from tests.proposers.server import Reply, Responder, ScriptedServer, completion, script

Serve = Callable[[Responder], ScriptedServer]
BODY = {"model": "m", "messages": [{"role": "user", "content": "x" * 4000}]}


def reply_with(usage: Any) -> Reply:
    r = completion("y" * 400)
    assert isinstance(r.body, dict)
    if usage is None:
        del r.body["usage"]
    else:
        r.body["usage"] = usage
    return r


@pytest.mark.parametrize(
    "usage",
    [
        None,
        {"prompt_tokens": -5, "completion_tokens": -1},
        {"prompt_tokens": 0, "completion_tokens": 0},
        {"prompt_tokens": "lots", "completion_tokens": 1.5},
        {"prompt_tokens": True, "completion_tokens": False},
        "not an object",
    ],
)
def test_missing_or_impossible_usage_is_estimated(serve: Serve, usage: Any) -> None:
    srv = serve(script([reply_with(usage)]))
    client = ChatClient(
        LlmConfig(base_url=srv.base_url, model="m", backoff_s=0), sleep=lambda s: None
    )
    u = client.complete(BODY).usage
    assert u.estimated and u.tokens_prompt >= 1000 and u.tokens_completion >= 100


def test_a_plausible_count_is_taken_as_reported(serve: Serve) -> None:
    srv = serve(script([reply_with({"prompt_tokens": 1200, "completion_tokens": 90})]))
    client = ChatClient(
        LlmConfig(base_url=srv.base_url, model="m", backoff_s=0), sleep=lambda s: None
    )
    u = client.complete(BODY).usage
    assert (u.tokens_prompt, u.tokens_completion, u.estimated) == (1200, 90, False)

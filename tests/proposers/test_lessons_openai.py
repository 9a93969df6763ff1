"""The lesson injection path end to end with an LLM proposer: a scripted OpenAI-compatible
model on loopback that makes the cascade mistake (repairs only what the critique names)
unless its prompt carries a lesson against it. Batches 2 and 3 get the lessons batch 1
taught, in the prompt's `lessons` data block, and need fewer calls; the trace records which
lessons were in context. What this shows: the lessons reach the model's prompt and a model
that heeds them saves the calls. What it does not show: that a real model heeds them."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.learning import CASCADE_MIX, corpus
from effectors.proposers.offline import OfflineProposer
from harness.api import run_batch
from harness.models import LessonHint
from harness.pack import Pack
from harness.pools import Pools
from tests.conftest import FACILITY
from tests.proposers.conftest import answer, blocks, request_of, write_config
from tests.proposers.server import Reply, Responder, ScriptedServer

pytestmark = [pytest.mark.java, pytest.mark.slow]
Serve = Callable[[Responder], ScriptedServer]

_CHECK = re.compile(r"check every (\w+\.\w+) reference")


class HeedfulModel:
    """Repairs like the offline proposer; reads the lessons block (text only, as an LLM
    would) and follows the two kinds of advice it recognises."""

    def __init__(self, pack: Pack, pools: Pools) -> None:
        self.offline = OfflineProposer(pack, pools, seed=0)
        self.lock = threading.Lock()
        self.prompts_with_lessons = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        req = request_of(body)
        lessons = blocks(body).get("lessons", [])
        hints = []
        for i, item in enumerate(lessons):
            text = str(item.get("advice", ""))
            if m := _CHECK.search(text):
                advice = {"kind": "check_references", "column": m.group(1)}
            elif text.startswith("Redraft the prose"):
                advice = {"kind": "redraft_prose"}
            else:
                continue
            hints.append(LessonHint(key=f"read{i}", text=text, confidence=0.9, advice=advice))
        with self.lock:
            self.prompts_with_lessons += bool(lessons)
        heard = req.model_copy(update={"lessons": tuple(hints)})
        return answer(self.offline.propose(heard).artifact)


def test_lessons_reach_the_models_prompt_and_save_calls(
    tmp_path: Path,
    facility_pack: Pack,
    facility_pools: Pools,
    serve: Serve,
) -> None:
    model = HeedfulModel(facility_pack, facility_pools)
    srv = serve(model)
    ws = tmp_path / "ws"
    write_config(ws, srv.base_url)
    calls = []
    for b in range(3):
        path = tmp_path / f"b{b}.jsonl"
        path.write_text("".join(a.model_dump_json() + "\n" for a in corpus(b, 36, CASCADE_MIX)))
        result = run_batch(ws, path, FACILITY)
        assert all(r.state == "COMMITTED" for r in result.runs)
        calls.append(sum(r.attempts - 1 for r in result.runs))
        if b == 0:
            assert model.prompts_with_lessons == 0  # nothing learned yet
            assert result.lessons and result.lessons["applied"]
    assert model.prompts_with_lessons > 0
    assert calls[2] <= 0.6 * calls[0], calls
    traced = [
        json.loads(line)
        for p in (ws / "trace").glob("b3-*.jsonl")
        for line in p.read_text().splitlines()
    ]
    assert any(e["kind"] == "proposal" and e.get("lessons") for e in traced)

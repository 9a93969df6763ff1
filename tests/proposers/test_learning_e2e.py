"""Done-when 2 of the learning issue, end to end through the CLI with the real gates: a
proposer (an OpenAI-compatible model on loopback) that keeps writing the same value error
is, after three failures, running under an overlay that HOLDs its passing artifacts;
`review approve` publishes one, `review reject` does not; the offline proposer on the same
pack and workspace is unaffected. Only the model is scripted."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from effectors.proposers.offline import OfflineProposer
from harness.cli import main
from harness.models import Artifact
from harness.pack import Pack
from harness.pools import Pools
from tests.conftest import FACILITY
from tests.proposers.conftest import answer, request_of, write_config
from tests.proposers.server import Reply, Responder, ScriptedServer

pytestmark = [pytest.mark.java, pytest.mark.slow]

DEMO = FACILITY / "corpus" / "demo.jsonl"
Serve = Callable[[Responder], ScriptedServer]


class SloppyModel:
    """Answers with the offline repair, except that for the first `spoil` runs whose
    critique points at cells it writes "TBD" into those cells on its first try: the same
    value error (value.placeholder), made by the proposer, again and again."""

    def __init__(self, pack: Pack, pools: Pools, spoil: int) -> None:
        self.offline = OfflineProposer(pack, pools, seed=0)
        self.left = spoil
        self.spoiled: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        req = request_of(body)
        cells = [
            (c.location.table, c.location.row, c.location.column)
            for c in req.critique.critiques
            if c.location.cell() is not None and c.severity == "error"
        ]
        with self.lock:
            spoil = req.attempt == 2 and cells and self.left > 0
            if spoil:
                self.left -= 1
                self.spoiled.append(req.candidate.id)
        if not spoil:
            return answer(self.offline.propose(req).artifact)
        tables = json.loads(json.dumps(req.candidate.tables))
        for table, row, column in cells:
            assert table is not None and row is not None and column is not None
            tables[table][row][column] = "TBD"
        return answer(Artifact(id=req.candidate.id, tables=tables, prose=req.candidate.prose))


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def batch(
    capsys: pytest.CaptureFixture[str], ws: Path, corpus: Path, *extra: str
) -> tuple[int, Any]:
    return cli(
        capsys,
        "batch",
        str(corpus),
        "--pack",
        str(FACILITY),
        "-w",
        str(ws),
        "--no-progress",
        "--no-report",
        *extra,
    )


def test_a_proposer_that_keeps_failing_is_held_and_a_person_decides(
    tmp_path: Path,
    facility_pack: Pack,
    facility_pools: Pools,
    serve: Serve,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = DEMO.read_text().splitlines(keepends=True)
    parts = {"first": lines[:24], "second": lines[24:36], "offline": lines[36:60]}
    corpora = {}
    for name, chunk in parts.items():
        corpora[name] = tmp_path / f"{name}.jsonl"
        corpora[name].write_text("".join(chunk))
    model = SloppyModel(facility_pack, facility_pools, spoil=3)
    srv = serve(model)
    ws = tmp_path / "ws"
    write_config(ws, srv.base_url)

    # 1. three runs in which the model wrote the same value error: the pattern reaches 3
    code, first = batch(capsys, ws, corpora["first"])
    assert len(model.spoiled) == 3, "the corpus gave the model fewer than 3 cells to spoil"
    assert all(r["state"] == "COMMITTED" for r in first["runs"]), first["runs"]
    code, status = cli(capsys, "learn", "status", "-w", str(ws))
    assert code == 0
    key = "openai:scripted::value.placeholder"
    pattern = next(p for p in status["patterns"] if p["key"] == key)
    assert pattern["occurrences"] == 3 and pattern["confidence"] == 0.65
    overlay = status["proposers"]["openai:scripted"]["overlay"]
    assert overlay["require_approval"] and "value.placeholder" in overlay["reason"]

    # 2. its next runs pass every gate, and are HELD for a person, saying why
    code, second = batch(capsys, ws, corpora["second"])
    states = [r["state"] for r in second["runs"]]
    assert "COMMITTED" not in states and states.count("HELD") >= 2, states
    code, queue = cli(capsys, "review", "list", "-w", str(ws))
    assert code == 0 and len(queue) == states.count("HELD")
    assert all("overlay for openai:scripted" in h["why"] for h in queue)
    yes, no = queue[0], queue[1]
    code, shown = cli(capsys, "review", "show", yes["run_id"], "-w", str(ws))
    assert code == 0 and shown["blocked_by"] == []

    def published() -> set[str]:
        text = (ws / "current" / "corpus.jsonl").read_text()
        return {json.loads(x)["id"] for x in text.splitlines()}

    assert yes["artifact_id"] not in published()
    code, _ = cli(capsys, "review", "approve", yes["run_id"], "-w", str(ws), "--note", "ok")
    assert code == 0 and yes["artifact_id"] in published()
    code, _ = cli(capsys, "review", "reject", no["run_id"], "-w", str(ws), "--reason", "no")
    assert code == 0 and no["artifact_id"] not in published()
    code, _ = cli(capsys, "review", "approve", no["run_id"], "-w", str(ws))
    assert code == 2  # rejected is final; approve never publishes it
    code, verified = cli(capsys, "trace", "verify", "-w", str(ws))
    assert code == 0 and verified["failed"] == []

    # 3. the offline proposer on the same pack and workspace is unaffected
    code, offline = batch(capsys, ws, corpora["offline"], "--proposer", "offline")
    assert code == 0
    assert all(r["state"] == "COMMITTED" for r in offline["runs"]), offline["runs"]
    code, status = cli(capsys, "learn", "status", "-w", str(ws))
    assert not any(p["key"].startswith("offline::") for p in status["patterns"])
    off = status["proposers"]["offline"]["overlay"]
    assert off is None or not off["require_approval"]
    code, rebuilt = cli(capsys, "learn", "rebuild", "-w", str(ws))
    assert code == 0 and rebuilt["rebuilt_equals_incremental"] is True

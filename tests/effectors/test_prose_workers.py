"""PROSE_GATE with worker processes (`ProseGate(workers=N)`): the same verdicts as one
process, nothing lost when a worker dies, small cohorts kept in-process, clean shutdown."""

from __future__ import annotations

import json
import logging
import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from effectors.prose.workers import chunks
from effectors.prose_gate import ProseGate
from harness.models import Artifact, RunState
from harness.pack import load_pack
from harness.pools import Pools
from tests.conftest import FACILITY

pytestmark = pytest.mark.java  # the facility pools come from the reasoned ontology


def _artifacts(name: str) -> list[Artifact]:
    text = (FACILITY / "corpus" / name).read_text(encoding="utf-8")
    out = []
    for line in text.splitlines():
        if line:
            raw: dict[str, Any] = json.loads(line)
            out.append(Artifact.model_validate(raw.get("artifact", raw)))
    return out


@pytest.fixture(scope="module")
def real_pools(tmp_path_factory: pytest.TempPathFactory) -> Pools:
    from ontology import load_pools

    return load_pools(load_pack(FACILITY), tmp_path_factory.mktemp("pools"))


@pytest.fixture(scope="module")
def cases() -> list[Artifact]:
    """The labelled prose cases (every prose critique code, and clean prose) and the demo."""
    return _artifacts("prose_cases.jsonl") + _artifacts("demo.jsonl")


@pytest.fixture
def parallel(real_pools: Pools) -> Iterator[ProseGate]:
    gate = ProseGate(load_pack(FACILITY), real_pools, workers=2, min_parallel=8)
    assert gate.wait_ready()
    yield gate
    gate.close()


def test_workers_judge_as_one_process_does(parallel: ProseGate, real_pools: Pools,
                                           cases: list[Artifact]) -> None:
    alone = ProseGate(load_pack(FACILITY), real_pools).judge(cases)
    assert sum(len(v.critiques) for v in alone) > 300  # the comparison has teeth
    assert parallel.judge(cases) == alone
    assert parallel.judge(cases[:37]) == alone[:37]  # uneven chunks, still in order


def test_a_dead_worker_loses_no_verdict(parallel: ProseGate, real_pools: Pools,
                                        cases: list[Artifact],
                                        caplog: pytest.LogCaptureFixture) -> None:
    alone = ProseGate(load_pack(FACILITY), real_pools).judge(cases[:100])
    pool = parallel._pool
    assert pool is not None and pool._executor is not None
    for process in pool._executor._processes.values():  # SIGKILL, as the OOM killer would
        process.kill()
        process.join()
    with caplog.at_level(logging.WARNING):
        assert parallel.judge(cases[:100]) == alone
    assert "judging in-process from now on" in caplog.text
    assert not pool.alive
    assert parallel.judge(cases[:100]) == alone  # later cohorts: in-process


def test_small_cohorts_never_reach_the_workers(real_pools: Pools, cases: list[Artifact],
                                              caplog: pytest.LogCaptureFixture) -> None:
    gate = ProseGate(load_pack(FACILITY), real_pools, workers=2, min_parallel=50)
    try:
        assert gate.wait_ready()
        pool = gate._pool
        assert pool is not None and pool._executor is not None
        for process in pool._executor._processes.values():
            process.kill()
            process.join()
        with caplog.at_level(logging.WARNING):
            gate.judge(cases[:49])
        assert caplog.text == "" and pool.alive  # the dead worker was never asked
    finally:
        gate.close()
        gate.close()  # idempotent
    assert len(gate.judge(cases[:60])) == 60  # a closed gate still judges, in-process


def test_workers_must_be_positive(real_pools: Pools) -> None:
    with pytest.raises(ValueError, match="workers must be >= 1"):
        ProseGate(load_pack(FACILITY), real_pools, workers=0)


def test_chunks_keep_order_and_balance_prose(cases: list[Artifact]) -> None:
    for parts in (1, 2, 3, 7):
        cut = chunks(cases, parts)
        assert len(cut) == parts and [a for c in cut for a in c] == cases
        sizes = [sum(len(a.prose) for a in c) for c in cut]
        longest = max(len(a.prose) for a in cases)
        assert max(sizes) - min(sizes) <= 2 * longest


@pytest.mark.slow
def test_a_batch_with_prose_workers_commits_the_same_corpus(tmp_path: Path) -> None:
    """`prose_workers = 2` in membrane.toml: the demo batch commits byte for byte what one
    process commits, and no worker outlives the batch."""
    from harness.api import run_batch

    corpus = FACILITY / "corpus" / "demo.jsonl"
    out = {}
    for workers in (1, 2):
        ws = tmp_path / f"w{workers}"
        ws.mkdir()
        (ws / "membrane.toml").write_text(f"prose_workers = {workers}\n")
        result = run_batch(ws, corpus, FACILITY, clock=lambda: "2026-01-01T00:00:00+00:00")
        assert not multiprocessing.active_children()
        out[workers] = (ws / "current" / "corpus.jsonl").read_bytes()
        assert result.count(RunState.COMMITTED) == 240
    assert out[1] == out[2]


def test_prose_workers_must_be_a_count(tmp_path: Path) -> None:
    from harness.errors import ConfigError
    from harness.workspace import Workspace

    (tmp_path / "membrane.toml").write_text("prose_workers = -1\n")
    with pytest.raises(ConfigError, match="prose_workers"):
        Workspace(tmp_path).config()

"""Done-when of the LLM proposer issue, through the CLI with the real gates: `membrane batch
--proposer openai` refines the demo corpus against a scripted loopback model and commits;
`--replay` reproduces the committed corpus byte for byte with the server down; a dead
endpoint stops the batch with exit code 5; `membrane report` shows tokens and time."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from harness.output import EXIT_OK, EXIT_UNAVAILABLE
from tests.conftest import FACILITY
from tests.proposers.conftest import offline_model, write_config
from tests.proposers.server import Reply, Responder, ScriptedServer, script

pytestmark = pytest.mark.java

DEMO = FACILITY / "corpus" / "demo.jsonl"
Serve = Callable[[Responder], ScriptedServer]


def batch(
    capsys: pytest.CaptureFixture[str], ws: Path, corpus: Path, *extra: str
) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(
        [
            "batch",
            str(corpus),
            "--pack",
            str(FACILITY),
            "-w",
            str(ws),
            "--json",
            "--no-progress",
            "--no-report",
            *extra,
        ]
    )
    out = capsys.readouterr().out
    return code, json.loads(out)


def refine_and_replay(
    tmp_path: Path,
    corpus: Path,
    serve_ctx: Callable[[], ScriptedServer],
    capsys: pytest.CaptureFixture[str],
) -> tuple[dict, dict, Path, Path]:  # type: ignore[type-arg]
    live, replay = tmp_path / "live", tmp_path / "replay"
    srv = serve_ctx()
    write_config(live, srv.base_url)
    code, first = batch(capsys, live, corpus, "--proposer", "openai")
    assert code == EXIT_OK, first
    srv.stop()  # the model is gone: replay needs nothing but the transcripts
    write_config(replay, srv.base_url)
    shutil.copytree(live / ".membrane" / "transcripts", replay / ".membrane" / "transcripts")
    code, again = batch(capsys, replay, corpus, "--proposer", "openai", "--replay")
    assert code == EXIT_OK, again
    return first, again, live, replay


def _check(first: dict, again: dict, live: Path, replay: Path, n: int) -> None:  # type: ignore[type-arg]
    states = [r["state"] for r in first["runs"]]
    assert len(states) == n and states.count("COMMITTED") >= 0.95 * n
    assert sum(r["attempts"] > 1 for r in first["runs"]) > 0  # the model was needed
    assert first["tokens"] > 0 and again["tokens"] == first["tokens"]
    assert [(r["state"], r["attempts"]) for r in again["runs"]] == [
        (r["state"], r["attempts"]) for r in first["runs"]
    ]
    corpus_live = (live / "current" / "corpus.jsonl").read_bytes()
    assert corpus_live and (replay / "current" / "corpus.jsonl").read_bytes() == corpus_live


@pytest.mark.slow
def test_openai_batch_commits_and_replay_reproduces_it_byte_for_byte(
    facility_pack,
    facility_pools,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
) -> None:
    corpus = tmp_path / "subset.jsonl"
    corpus.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:12]))
    first, again, live, replay = refine_and_replay(
        tmp_path,
        corpus,
        lambda: ScriptedServer(offline_model(facility_pack, facility_pools)).start(),
        capsys,
    )
    _check(first, again, live, replay, 12)
    code = main(["report", "-w", str(live), "--pack", str(FACILITY), "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK
    (b,) = rep["cost"]["batches"]
    assert b["tokens"] == first["tokens"] and b["calls"] > 0 and b["model_seconds"] > 0
    assert b["wall_seconds"] > 0 and b["runs"] == 12
    assert sum(r["tokens"] for r in rep["cost"]["runs"]) == first["tokens"]
    assert main(["report", "-w", str(live), "--pack", str(FACILITY)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "cost per batch" in out and "cost per run" in out
    assert main(["trace", "verify", "-w", str(replay)]) == EXIT_OK
    retried = next(r["run_id"] for r in first["runs"] if r["attempts"] > 1)
    capsys.readouterr()
    assert main(["trace", "show", retried, "-w", str(replay)]) == EXIT_OK
    shown = capsys.readouterr().out
    assert "usage" in shown and "(transcript)" in shown  # replayed calls, no network


@pytest.mark.slow
def test_the_full_demo_corpus_with_openai_and_replay(
    facility_pack,
    facility_pools,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
) -> None:
    first, again, live, replay = refine_and_replay(
        tmp_path,
        DEMO,
        lambda: ScriptedServer(offline_model(facility_pack, facility_pools)).start(),
        capsys,
    )
    _check(first, again, live, replay, len(DEMO.read_text().splitlines()))


def test_a_dead_endpoint_stops_the_batch_with_exit_5_and_commits_nothing_invalid(
    serve: Serve, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = serve(script([Reply(status=503, body={"error": {"message": "overloaded"}})]))
    corpus = tmp_path / "subset.jsonl"
    corpus.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:8]))
    ws = tmp_path / "ws"
    write_config(ws, srv.base_url, retries=1, breaker_failures=2)
    code, out = batch(capsys, ws, corpus, "--cohort-size", "4")
    assert code == EXIT_UNAVAILABLE
    assert "circuit breaker" in (out["halted"] or "")
    assert out["not_started"] == 4  # the second cohort never started
    assert len(srv.requests) == 4  # two failed calls of two tries each, then nothing
    failed = [r for r in out["runs"] if r["state"] == "FAILED"]
    assert failed and all(r["error"] for r in failed)
    assert all(r["state"] in ("FAILED", "COMMITTED") for r in out["runs"])
    # the failed runs are not settled: a rerun with a working endpoint retries them
    code, _ = batch(capsys, ws, corpus, "--replay")
    assert code == EXIT_UNAVAILABLE


def test_replay_with_no_transcripts_fails_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "subset.jsonl"
    corpus.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:3]))
    ws = tmp_path / "ws"
    write_config(ws, "http://127.0.0.1:9/v1")
    code = main(
        [
            "batch",
            str(corpus),
            "--pack",
            str(FACILITY),
            "-w",
            str(ws),
            "--replay",
            "--no-progress",
            "--no-report",
        ]
    )
    err = capsys.readouterr().err
    assert code == EXIT_UNAVAILABLE and "replay: no transcript" in err

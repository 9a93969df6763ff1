"""Issue 21: `batch --strict` on a workspace where the corpus already settled reflects the
settled state: exit 3 when a settled run did not commit (EXHAUSTED), though nothing ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.ledger import Ledger
from tests.conftest import FACILITY

pytestmark = pytest.mark.java


def _corpus(tmp_path: Path) -> Path:
    """Two artifacts: one the offline proposer repairs, one it cannot (an unknown table
    value that no repair reaches with a budget of one attempt)."""
    lines = (FACILITY / "corpus" / "demo.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "two.jsonl"
    path.write_text(lines[1] + "\n" + lines[0] + "\n", encoding="utf-8")
    return path


def test_strict_rerun_of_a_settled_workspace_with_an_exhausted_run_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, ws = _corpus(tmp_path), tmp_path / "ws"
    argv = ["batch", str(corpus), "--pack", str(FACILITY), "-w", str(ws), "--no-progress",
            "--no-report", "--max-attempts", "1", "--json"]
    first = main([*argv, "--strict"])
    runs = json.loads(capsys.readouterr().out)["runs"]
    states = {r["artifact_id"]: r["state"] for r in runs}
    assert "EXHAUSTED" in states.values(), states  # fac-0001 needs a repair: 1 attempt fails
    assert first == 3
    # the rerun runs nothing: every artifact settled; --strict still says some did not commit
    code = main([*argv, "--strict"])
    out = json.loads(capsys.readouterr().out)
    assert out["runs"] == [] and sorted(out["skipped"]) == sorted(states)
    assert out["skipped_states"] == states
    assert code == 3
    # without --strict the rerun is a success, as before
    assert main(argv) == 0
    capsys.readouterr()
    code = main([*argv[:-1], "--strict"])  # the human summary names the settled states
    text = capsys.readouterr().out
    assert code == 3 and "EXHAUSTED" in text


def test_the_ledger_reports_the_newest_settled_state_per_input(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    try:
        ledger.start_run("a.r1", "a", "b1", "h1", "2026-01-01T00:00:00")
        ledger.finish_run("a.r1", "EXHAUSTED", 1, "x", None)
        ledger.start_run("b.r1", "b", "b1", "h2", "2026-01-01T00:00:01")
        ledger.finish_run("b.r1", "FAILED", 1, "y", None)  # not settled: it reruns
        assert ledger.settled_inputs() == {("a", "h1"): "EXHAUSTED"}
        assert ledger.finished_inputs() == {("a", "h1")}
    finally:
        ledger.close()

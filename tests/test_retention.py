"""`membrane gc` (issue 16, retention): superseded archive versions and old traces go,
verification stays whole: `trace verify` reports a pruned trace as "pruned, anchor kept",
`trace verify --checkpoint` still proves the workspace extends an older checkpoint, the
report still runs, a revert to a pruned version and a `trace show` of a pruned run say
why; a dry run removes nothing, a second gc nothing more, and a kill between the
tombstones and the unlinks loses nothing. Real batches (HermiT, DuckDB, SQLite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.ledger import Ledger
from harness.retention import apply_plan, plan_gc
from harness.workspace import Workspace
from tests.conftest import FACILITY

pytestmark = [pytest.mark.java, pytest.mark.slow]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    """The exit code and the output (JSON when it parses); stderr is in `_ERR[0]`."""
    code = main(list(argv))
    got = capsys.readouterr()
    _ERR[0] = got.err
    try:
        return code, json.loads(got.out)
    except ValueError:
        return code, got.out


_ERR = [""]


def _corpus(path: Path, arts: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(a) + "\n" for a in arts), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six artifacts batched, then three of them changed and batched again: three
    superseded versions in archive/ and three traces of superseded runs."""
    root = tmp_path_factory.mktemp("gc")
    lines = (FACILITY / "corpus" / "demo.clean.jsonl").read_text(encoding="utf-8").splitlines()
    arts = [json.loads(x) for x in lines[:6]]
    ws = root / "ws"
    first = _corpus(root / "first.jsonl", arts)
    assert main(["batch", str(first), "--pack", str(FACILITY), "-w", str(ws), "--no-progress",
                 "--no-report", "--json"]) == 0
    for a in arts[:3]:
        a["tables"]["rooms"][0]["floor"] = int(a["tables"]["rooms"][0]["floor"]) + 1
    second = _corpus(root / "second.jsonl", arts)
    assert main(["batch", str(second), "--pack", str(FACILITY), "-w", str(ws), "--no-progress",
                 "--no-report", "--json"]) == 0
    assert main(["recover", "-w", str(ws), "--json"]) == 0  # superseded files -> archive/
    return ws


def test_gc_prunes_and_verification_stays_whole(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    ws = tmp_path / "ws"
    shutil.copytree(workspace, ws)
    capsys.readouterr()
    code, cp = _run(capsys, "trace", "checkpoint", "-w", str(ws), "--json")
    assert code == 0
    root = cp["root"]
    code, before = _run(capsys, "report", "-w", str(ws), "--pack", str(FACILITY), "--json")
    assert code == 0
    archived = sorted(p.name for p in (ws / "archive" / "artifacts").glob("*.json"))
    traces = sorted(p.name for p in (ws / "trace").glob("*.jsonl"))
    assert len(archived) == 3 and len(traces) == 9

    code, text = _run(capsys, "gc", "-w", str(ws))
    assert code == 2 and "--keep-archive" in _ERR[0] + str(text)

    code, dry = _run(capsys, "gc", "-w", str(ws), "--keep-archive", "0",
                     "--keep-traces-days", "0", "--json")
    assert code == 0 and not dry["applied"] and dry["removed"] == 0
    assert len(dry["archive"]) == 3 and len(dry["traces"]) == 3
    assert sorted(p.name for p in (ws / "trace").glob("*.jsonl")) == traces  # nothing went
    # the first-batch runs of the changed artifacts: superseded, not the newest
    assert all(t.endswith(".r1") for t in dry["traces"])

    code, done = _run(capsys, "gc", "-w", str(ws), "--keep-archive", "0",
                      "--keep-traces-days", "0", "--apply", "--json")
    assert code == 0 and done["applied"] and done["removed"] == 6
    assert not list((ws / "archive" / "artifacts").glob("*.json"))
    assert len(list((ws / "trace").glob("*.jsonl"))) == 6

    code, ver = _run(capsys, "trace", "verify", "-w", str(ws), "--json",
                     "--checkpoint", root)
    assert code == 0, ver
    assert ver["verified"] == 9 and not ver["failed"]
    assert sorted(ver["against_checkpoint"]["pruned_runs"]) == sorted(done["traces"])
    assert not ver["against_checkpoint"]["problems"]
    code, text = _run(capsys, "trace", "verify", "-w", str(ws))
    assert code == 0 and "3 of them pruned by `membrane gc` (anchor kept)" in text

    code, _ = _run(capsys, "trace", "show", done["traces"][0], "-w", str(ws))
    assert code == 2 and "pruned by `membrane gc`" in _ERR[0]
    artifact = done["traces"][0].rsplit(".", 1)[0]
    code, _ = _run(capsys, "revert", artifact, "--to", "1", "-w", str(ws))
    assert code == 2 and "pruned from archive/ by `membrane gc`" in _ERR[0]
    code, rep = _run(capsys, "report", "-w", str(ws), "--pack", str(FACILITY), "--json")
    assert code == 0
    assert (rep["runs"], rep["refined"], rep["baseline"]) == (
        before["runs"], before["refined"], before["baseline"])
    assert rep["cost"] == before["cost"]  # each run recorded its cost as it finished

    code, again = _run(capsys, "gc", "-w", str(ws), "--keep-archive", "0",
                       "--keep-traces-days", "0", "--apply", "--json")
    assert code == 0 and again["removed"] == 0 and not again["traces"]


def test_a_kill_between_tombstones_and_unlinks_loses_nothing(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    ws_path = tmp_path / "ws"
    shutil.copytree(workspace, ws_path)
    ws = Workspace(ws_path)
    plan = plan_gc(ws, keep_archive=0, keep_traces_days=0)
    victim = next(r for r in plan.removals if r.kind == "trace")
    led = Ledger(ws.ledger_path)  # the tombstones were written, then the process died
    led.record_pruned([(victim.name, victim.trace_len, victim.trace_head)], [], "t")
    led.close()
    code, ver = _run(capsys, "trace", "verify", "-w", str(ws_path), "--json")
    assert code == 0 and ver["verified"] == 9  # the file is still there: verified in full
    assert apply_plan(ws, plan_gc(ws, keep_archive=0, keep_traces_days=0), "t2") == 6
    code, ver = _run(capsys, "trace", "verify", "-w", str(ws_path), "--json")
    assert code == 0 and not ver["failed"]


def test_keep_counts_and_ages_are_respected(workspace: Path) -> None:
    ws = Workspace(workspace)
    assert not plan_gc(ws, keep_archive=1, keep_traces_days=None).removals
    assert not plan_gc(ws, keep_archive=None, keep_traces_days=3650).removals
    kept = plan_gc(ws, keep_archive=None, keep_traces_days=0).kept
    assert kept == {"trace: the newest commit's run": 6}


def test_gc_waits_for_no_writer(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = Workspace(workspace)
    with ws.lock():
        code, _ = _run(capsys, "gc", "-w", str(workspace), "--keep-archive", "0", "--apply")
    assert code == 2 and "another membrane process" in _ERR[0]


def test_gc_keeps_the_trace_a_reverted_version_is_explained_by(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A revert's metrics sidecar names no run: `trace why` of the restored content reads
    the run that first published it, so gc keeps that run's trace (it pruned it before)."""
    import shutil

    ws = tmp_path / "ws"
    shutil.copytree(workspace, ws)
    changed = [json.loads(x) for x in
               (FACILITY / "corpus" / "demo.clean.jsonl").read_text().splitlines()[:3]]
    art = changed[0]
    room = art["tables"]["rooms"][0]["room_id"]
    assert main(["revert", art["id"], "--to", "1", "-w", str(ws), "--json"]) == 0
    capsys.readouterr()
    code, done = _run(capsys, "gc", "-w", str(ws), "--keep-traces-days", "0", "--apply", "--json")
    assert code == 0
    # the other changed artifacts' first runs, and the run of the version the revert undid
    assert sorted(done["traces"]) == sorted(
        [f"{a['id']}.r1" for a in changed[1:]] + [f"{art['id']}.r2"]
    )
    code, why = _run(capsys, "trace", "why", art["id"], "rooms", room, "floor", "-w", str(ws),
                     "--json")
    assert code == 0, _ERR[0]
    assert why["version"] == 3 and why["value"] == art["tables"]["rooms"][0]["floor"]
    kept = plan_gc(Workspace(ws), keep_archive=None, keep_traces_days=0).kept
    assert kept.get("trace: the run that published the newest content") == 1

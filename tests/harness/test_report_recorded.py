"""`membrane report` from what the runs recorded (issue 22) against the re-audit.

For every figure both compute over the same artifacts, the recorded report equals the
re-audit: on the demo corpus, on generated corpora (several defects an artifact, so the
cascade leaves inputs unjudged by later gates), on a workspace with runs in flight and
one killed mid-batch (torn trace line, no recovery yet). A baseline figure the cascade
left partial is checked against the re-audit of exactly the inputs that gate judged.
Real HermiT, DuckDB and SQLite; the offline proposer.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.corpus import KINDS, generator
from harness import api
from harness.models import Artifact
from harness.pack import Pack
from harness.report import (
    SOURCE_REAUDIT,
    SOURCE_RECORDED,
    CorpusFigures,
    Report,
    audit,
    build_report,
    figures,
    recorded_report,
)
from harness.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "packs" / "facility"
DEMO = PACK / "corpus" / "demo.jsonl"
pytestmark = pytest.mark.java

_BY_GATE = {
    "value_gate": ("placeholder_rate", "value_coherence"),
    "ri_gate": ("ri_violations",),
    "prose_gate": ("prose_unknown_entities", "prose_coverage", "prose_truncated"),
}


def _gates(facility_gates: dict[str, object]) -> list[Any]:
    return [facility_gates[g] for g in ("value_gate", "ri_gate", "prose_gate")]


def _partial_figure(
    ws: Workspace, pack: Pack, gates: Sequence[Any], gate: str, runs: list[str]
) -> CorpusFigures:
    """The re-audit of only the inputs whose recorded attempt 1 has a `gate` verdict."""
    picked = []
    for run_id in runs:
        lines = ws.trace_path(run_id).read_bytes().splitlines()
        events = [orjson.loads(x) for x in lines if b'"kind":"verdict"' in x]
        if any(e["attempt"] == 1 and e["gate"] == gate for e in events):
            first = orjson.loads(lines[0])
            picked.append(first["input_hash"])
    arts = [Artifact.model_validate_json((ws.inputs / f"{h}.json").read_bytes()) for h in picked]
    return figures(pack, arts, audit(gates, arts))


def _baseline_runs(ws: Workspace) -> list[str]:
    from harness.ledger import Ledger

    ledger = Ledger.reader(ws.ledger_path)
    try:
        latest: dict[str, str] = {}
        for r in ledger.runs():
            if r.status not in ("running", "INTERRUPTED", "REVERT"):
                latest[r.artifact_id] = r.run_id
    finally:
        ledger.close()
    return list(latest.values())


def assert_same(
    ws: Workspace, pack: Pack, gates: Sequence[Any], fast: Report, slow: Report
) -> None:
    assert fast.source == SOURCE_RECORDED and slow.source == SOURCE_REAUDIT
    assert (fast.runs, fast.mean_attempts, fast.max_attempts) == (
        slow.runs,
        slow.mean_attempts,
        slow.max_attempts,
    )
    assert [c.to_dict() for c in fast.run_costs] == [c.to_dict() for c in slow.run_costs]
    assert [c.to_dict() for c in fast.batch_costs] == [c.to_dict() for c in slow.batch_costs]
    assert vars(fast.refined) == vars(slow.refined)  # every gate judged every committed one
    b, s = vars(fast.baseline), vars(slow.baseline)
    for key in ("artifacts", "mean_words", "passing"):
        assert b[key] == s[key], key
    partial = []
    for gate, keys in _BY_GATE.items():
        if fast.baseline.judged.get(gate, 0) == fast.baseline.artifacts:
            for key in keys:
                assert b[key] == s[key], key
            continue
        partial.append(gate)
        sub = vars(_partial_figure(ws, pack, gates, gate, _baseline_runs(ws)))
        for key in keys:
            if key not in ("placeholder_rate", "value_coherence"):  # cell denominators
                assert b[key] == sub[key], key
    assert len(fast.notes) == len(partial)
    for gate, note in zip(partial, fast.notes, strict=True):
        assert f"inputs {gate} judged" in note


def _batch(ws: Path, corpus: Path) -> None:
    api.run_batch(ws, corpus, PACK)


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("demo")
    _batch(ws, DEMO)
    return ws


@pytest.mark.slow
def test_recorded_report_equals_the_reaudit_on_the_demo(
    demo_ws: Path, facility_pack: Pack, facility_gates: dict[str, object]
) -> None:
    ws = Workspace(demo_ws)
    gates = _gates(facility_gates)
    fast = recorded_report(ws, facility_pack)
    slow = build_report(ws, facility_pack, gates, chunk=50)  # chunked like a big workspace
    assert_same(ws, facility_pack, gates, fast, slow)
    assert fast.baseline.ri_violations > 0 and fast.refined.placeholder_rate == 0
    assert fast.baseline.judged["ri_gate"] < fast.baseline.artifacts  # the cascade's gap
    # the CLI's default is the recorded report, --reaudit the slow one
    assert api.run_report(demo_ws, PACK).source == SOURCE_RECORDED


@pytest.mark.slow
def test_an_old_workspace_falls_back_to_the_reaudit_and_says_so(
    demo_ws: Path, tmp_path: Path
) -> None:
    old = tmp_path / "old"
    shutil.copytree(demo_ws, old)
    db = sqlite3.connect(Workspace(old).ledger_path)  # a ledger from before run figures
    db.execute("DROP TABLE run_figures")
    db.commit()
    db.close()
    for path in (old / "current" / "metrics").iterdir():  # sidecars without the run
        m = orjson.loads(path.read_bytes())
        del m["run_id"]
        path.write_bytes(orjson.dumps(m))
    rep = api.run_report(old, PACK)
    assert rep.source == SOURCE_REAUDIT
    assert rep.notes[0].startswith("re-audited: this workspace lacks the records")
    assert vars(rep.refined) == vars(api.run_report(demo_ws, PACK).refined)


def _corpus(path: Path, plans: list[tuple[bool, frozenset[str]]], seed: int) -> None:
    gen = generator()
    lines = []
    for i, (placeholders, kinds) in enumerate(plans):
        plan = gen.Plan()
        plan.placeholders = placeholders
        plan.kinds = set(kinds)
        plan.clean = not placeholders and not kinds
        flawed, _clean, _truth = gen.build_artifact(seed, i, plan, False)
        lines.append(orjson.dumps(flawed))
    path.write_bytes(b"\n".join(lines) + b"\n")


_KIND = st.sampled_from([k for k in KINDS if k != "placeholders"])
_PLAN = st.tuples(st.booleans(), st.frozensets(_KIND, max_size=3))


@pytest.mark.slow
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plans=st.lists(_PLAN, min_size=2, max_size=10), seed=st.integers(0, 10_000))
def test_recorded_report_equals_the_reaudit_on_generated_corpora(
    plans: list[tuple[bool, frozenset[str]]],
    seed: int,
    tmp_path_factory: pytest.TempPathFactory,
    facility_pack: Pack,
    facility_gates: dict[str, object],
) -> None:
    root = tmp_path_factory.mktemp("gen")
    _corpus(root / "c.jsonl", plans, seed)
    _batch(root / "ws", root / "c.jsonl")
    ws = Workspace(root / "ws")
    gates = _gates(facility_gates)
    assert_same(
        ws,
        facility_pack,
        gates,
        recorded_report(ws, facility_pack),
        build_report(ws, facility_pack, gates, chunk=3),
    )


@pytest.mark.slow
def test_report_with_runs_in_flight_and_after_a_kill(
    tmp_path: Path, facility_pack: Pack, facility_gates: dict[str, object]
) -> None:
    """A batch stepped part of the way: some runs committed, others still running (their
    traces end mid-run, one with a torn last line as a kill leaves it). Both reports skip
    the unsettled runs' inputs and count every commit; then recovery, and again."""
    corpus = tmp_path / "c.jsonl"
    shutil.copy(DEMO, corpus)
    lines = corpus.read_bytes().splitlines()[:24]
    arts = [Artifact.model_validate_json(x) for x in lines]
    root = tmp_path / "ws"
    ws = Workspace(root)
    gates = _gates(facility_gates)
    _batch(root, _first(tmp_path, lines[:8]))  # a finished batch first
    with api.open_session(root, PACK) as session:
        batch = session.batch(arts[8:], cohort_size=8)
        for _ in range(12):  # the first cohort settles, the second is mid-way
            if batch.step() is None:
                break
        running = [r for r in (batch._cohort or []) if not r.state.terminal]
        assert running, "the batch should still have runs in flight"
        fast = recorded_report(ws, facility_pack)  # while they are in flight
        assert_same(ws, facility_pack, gates, fast, build_report(ws, facility_pack, gates))
        for r in running:
            r.trace.abandon()  # killed: no final record, no fsync
        with open(ws.trace_path(running[0].run_id), "ab") as fh:
            fh.write(b'{"at":"2026-01-01T00:00:00+00:00","kind":"verd')  # a torn line
    fast = recorded_report(ws, facility_pack)
    assert fast.runs == build_report(ws, facility_pack, gates).runs
    assert_same(ws, facility_pack, gates, fast, build_report(ws, facility_pack, gates))
    api.run_recover(root)
    assert_same(
        ws,
        facility_pack,
        gates,
        recorded_report(ws, facility_pack),
        build_report(ws, facility_pack, gates),
    )


def _first(tmp_path: Path, lines: list[bytes]) -> Path:
    path = tmp_path / "first.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_value_coherence_counts_class_cells_and_is_never_negative() -> None:
    """A pack whose entity cells name classes (`kind = "class"`, packs/facility-brick) has
    no object columns: coherence is over the cells VALUE_GATE resolves, object and class."""
    from harness.pack import load_pack
    from harness.report import _object_cells, _Tally

    pack = load_pack(Path(__file__).resolve().parents[2] / "packs" / "facility-brick")
    table, binding = next(
        (t, b) for t, b in pack.tables.items() if any(c.kind == "class" for c in b.columns.values())
    )
    column = next(c for c, col in binding.columns.items() if col.kind == "class")
    rows = [{column: "Chiller"}, {column: "Pump"}]
    assert _object_cells(pack, {table: rows}) == 2
    corpus = _Tally()
    corpus.add(0, 10, {})  # an artifact with no such cells ...
    corpus.value_bad = 3  # ... and value errors on data cells
    assert corpus.figures().value_coherence == 0.0

"""What a run records for `membrane report` as it finishes (`harness.trace.figures`, the
ledger's `run_figures`), against what the report reads from the run's files.

* The fold over the records a run writes equals the report's scan of the trace file,
  for any sequence of usage and verdict records (hypothesis).
* The recorded shape of an artifact counts the cells the report counts in its JSON, for
  any tables; the record's parser takes any text without raising (a trust boundary: the
  ledger is a file a person can edit).
* On real workspaces (HermiT, DuckDB, SQLite; the offline proposer), with held, approved,
  rejected and reverted artifacts and a second batch, the report from the records equals
  the report from the files byte for byte, and a damaged record is read from the files.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import api
from harness.ledger import Ledger, RunRow
from harness.models import Artifact, Critique
from harness.pack import Pack
from harness.report import _ObjectColumns, _scan, recorded_report
from harness.store import artifact_bytes
from harness.trace import TraceWriter
from harness.trace.events import RunStarted, UsageEvent, VerdictEvent
from harness.trace.figures import RecordedRun, shape_of
from harness.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "packs" / "facility"
DEMO = PACK / "corpus" / "demo.jsonl"


def _clock() -> Any:
    n = iter(range(10**6))
    return lambda: f"2026-01-01T00:{next(n):06d}"  # increasing, as a clock's times are


_code = st.from_regex(r"(value|ri|prose|harness)\.[a-z][a-z_]{0,6}", fullmatch=True)
_critique = st.builds(
    lambda code, sev: Critique(code=code, severity=sev, gate="g"),
    _code,
    st.sampled_from(["error", "warn", "info"]),
)
_verdict = st.fixed_dictionaries(
    {
        "attempt": st.integers(1, 4),
        "gate": st.sampled_from(["value_gate", "ri_gate", "prose_gate", "harness"]),
        "crashed": st.booleans(),
        "critiques": st.lists(_critique, max_size=3).map(tuple),
        "metrics": st.dictionaries(
            st.sampled_from(["coverage", "cells"]),
            st.floats(allow_nan=True, allow_infinity=True) | st.integers(0, 9).map(float),
            max_size=2,
        ),
    }
)
_usage = st.fixed_dictionaries(
    {
        "attempt": st.integers(1, 4),
        "tokens_prompt": st.integers(0, 10**6),
        "tokens_completion": st.integers(0, 10**6),
        "seconds": st.floats(0, 1e4, allow_nan=False),
        "cached": st.booleans(),
    }
)


@settings(max_examples=60, deadline=None)
@given(records=st.lists(st.tuples(st.sampled_from(["usage", "verdict"]), _usage, _verdict)))
def test_the_fold_equals_the_scan_of_the_trace(
    tmp_path_factory: pytest.TempPathFactory, records: list[tuple[str, Any, Any]]
) -> None:
    ws = Workspace(tmp_path_factory.mktemp("ws"))
    trace = TraceWriter(ws.trace_path("a.r1"), "a.r1", _clock())
    trace.append(
        RunStarted,
        artifact_id="a",
        batch_id="b",
        pack="p",
        pack_version="1",
        proposer="offline",
        agenda="x",
        input_hash="h",
        max_attempts=3,
    )
    for kind, usage, verdict in records:
        if kind == "usage":
            trace.append(UsageEvent, proposer="offline", request="r", **usage)
        else:
            passed = not verdict["crashed"] and all(
                c.severity != "error" for c in verdict["critiques"]
            )
            trace.append(VerdictEvent, passed=passed, rejected=(), batch_size=1, **verdict)
    trace.close()
    art = Artifact(id="a", tables={"rooms": [{"room_id": "R1"}]}, prose="one two")
    rec = RecordedRun.parse(trace.figures.to_json(shape_of(art), None), {"rooms": frozenset()})
    assert rec is not None
    row = RunRow("a.r1", "a", "b", "h", "COMMITTED", "", None, None, None)
    scanned = _scan(ws, row, frozenset(range(1, 5)))
    assert scanned is not None
    cost = scanned.cost
    assert (rec.first_at, rec.last_at) == (cost.first_at, cost.last_at)
    assert (rec.calls, rec.cached_calls, rec.tokens_prompt, rec.tokens_completion) == (
        cost.calls,
        cost.cached_calls,
        cost.tokens_prompt,
        cost.tokens_completion,
    )
    assert rec.model_seconds == cost.model_seconds
    assert rec.verdicts == scanned.verdicts


_cell = st.none() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=3)
_columns = st.sampled_from(["room_id", "department", "floor", "equipment_id", "x"])
_tables = st.dictionaries(
    st.sampled_from(["rooms", "equipment", "maintenance", "other"]),
    st.lists(st.dictionaries(_columns, _cell, max_size=5), max_size=5),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(tables=_tables, prose=st.text(max_size=60))
def test_a_recorded_shape_counts_what_the_report_counts_in_the_file(
    facility_pack: Pack, tables: dict[str, list[dict[str, Any]]], prose: str
) -> None:
    art = Artifact(id="a", tables=tables, prose=prose)
    payload = orjson.loads(artifact_bytes(art))
    cells = _ObjectColumns(facility_pack)
    rec = RecordedRun.parse(_figures(art), cells.of)
    assert rec is not None
    assert rec.inputs.cells == cells.count(payload)
    assert rec.inputs.words == len(payload.get("prose", "").split())
    assert rec.published is not None and rec.published.counted == rec.inputs


def _figures(art: Artifact) -> str:
    from harness.trace.figures import Published, RunFigures

    shape = shape_of(art)
    return RunFigures().to_json(shape, Published("c", "m", 2, shape))


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    doc=_json
    | st.binary(max_size=40)
    | _json.map(lambda x: {"v": 1, "input": x, "published": x, "verdicts": x})
)
def test_a_record_of_any_content_parses_or_reads_as_none(doc: Any) -> None:
    text = doc if isinstance(doc, bytes) else json.dumps(doc)
    rec = RecordedRun.parse(text, {"rooms": frozenset({"room_id"})})
    assert rec is None or isinstance(rec, RecordedRun)


def test_each_field_of_a_good_record_is_checked() -> None:
    art = Artifact(id="a", tables={"rooms": [{"room_id": "R1", "floor": 2}]}, prose="a b c")
    good = json.loads(_figures(art))
    named = {"rooms": frozenset({"room_id"})}
    rec = RecordedRun.parse(json.dumps(good), named)
    assert rec is not None and (rec.inputs.cells, rec.inputs.words) == (1, 3)
    for key, bad in (
        ("v", 2),
        ("calls", 1.5),
        ("input", [3, {"rooms": {"room_id": "1"}}]),
        ("input", ["3", {}]),
        ("published", ["c", "m", "2", 3, None]),
        ("verdicts", {"1": {"value_gate": ["yes", [], None]}}),
        ("verdicts", {"x": {}}),
    ):
        assert RecordedRun.parse(json.dumps({**good, key: bad}), named) is None, key
    assert RecordedRun.parse("{", named) is None
    assert RecordedRun.parse(json.dumps({k: v for k, v in good.items() if k != "input"}), named) is None


# -- real workspaces ---------------------------------------------------------------------


def _from_files(ws: Workspace, pack: Pack, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The recorded report as it reads a workspace without the runs' records."""
    with monkeypatch.context() as m:
        m.setattr(Ledger, "run_figures", lambda self: {})
        return recorded_report(ws, pack).to_dict()


def _settled(ws: Workspace) -> tuple[set[str], set[str]]:
    ledger = Ledger.reader(ws.ledger_path)
    try:
        settled = {r.run_id for r in ledger.runs() if r.status not in ("running", "REVERT")}
        return settled, set(ledger.run_figures())
    finally:
        ledger.close()


@pytest.mark.java
@pytest.mark.slow
def test_the_report_from_the_records_equals_the_report_from_the_files(
    tmp_path: Path, facility_pack: Pack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held, approved, rejected and reverted artifacts, then a second batch over edited
    inputs: every figure, cost and note the same, and the same bytes as JSON."""
    pack = tmp_path / "pack"
    shutil.copytree(PACK, pack, ignore=shutil.ignore_patterns("corpus"))
    toml = pack / "pack.toml"
    toml.write_text(toml.read_text().replace("require_approval = false", "require_approval = true", 1))
    lines = DEMO.read_text().splitlines(keepends=True)
    first = tmp_path / "first.jsonl"
    first.write_text("".join(lines[:8]))
    root = tmp_path / "ws"
    held = api.run_batch(root, first, pack)
    assert [r.state for r in held.runs] == ["HELD"] * 8
    for r in held.runs[:5]:
        api.review_approve(root, r.run_id, note="checked")
    api.review_reject(root, held.runs[5].run_id, "not this one")
    # a second batch (no approval) over edited prose: new versions of some artifacts
    second = tmp_path / "second.jsonl"
    edited = []
    for line in lines[:4] + lines[8:14]:
        doc = json.loads(line)
        doc["prose"] = doc.get("prose", "") + " Checked again."
        edited.append(json.dumps(doc) + "\n")
    second.write_text("".join(edited))
    api.run_batch(root, second, PACK)
    ws = Workspace(root)
    settled, recorded = _settled(ws)
    assert recorded == settled  # every run that finished recorded its figures
    fast = recorded_report(ws, facility_pack)
    assert fast.source == "recorded"
    slow = _from_files(ws, facility_pack, monkeypatch)
    assert fast.to_dict() == slow
    assert orjson.dumps(fast.to_dict()) == orjson.dumps(slow)

    # damaged records (a person edited the ledger): those runs are read from their files
    damaged = tmp_path / "damaged"
    shutil.copytree(root, damaged)
    db = sqlite3.connect(Workspace(damaged).ledger_path)
    try:
        ids = [r for (r,) in db.execute("SELECT run_id FROM run_figures ORDER BY run_id")]
        bad = ["{", "[]", '{"v": 1}', '{"v": 99}', "null", '{"v": 1, "input": [1, []]}']
        for run_id, text in zip(ids[::3], bad, strict=False):
            db.execute("UPDATE run_figures SET figures = ? WHERE run_id = ?", (text, run_id))
        db.commit()
    finally:
        db.close()
    assert recorded_report(Workspace(damaged), facility_pack).to_dict() == slow

    # a revert: its sidecar names the version it restored, whose run recorded the verdicts
    # (the files alone cannot say: that version's sidecar left current/ with it)
    art = json.loads(lines[0])["id"]
    api.revert_artifact(root, art, to=1, note="the first was right")
    after = api.run_report(root)
    assert after.source == "recorded"
    assert not any(n.startswith("re-audited") for n in after.notes)
    again = api.run_report(root, reaudit=True)
    assert vars(after.refined) == vars(again.refined)
    assert [c.to_dict() for c in after.run_costs] == [c.to_dict() for c in again.run_costs]


@pytest.mark.java
def test_a_ledger_from_before_the_records_is_read_from_the_files(
    tmp_path: Path, facility_pack: Pack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older ledger has no `run_figures` table: a read-only reader finds none, the report
    reads every run's files; a batch opening the ledger adds the table, and its new runs
    record their figures."""
    lines = DEMO.read_text().splitlines(keepends=True)
    first = tmp_path / "first.jsonl"
    first.write_text("".join(lines[:3]))
    root = tmp_path / "ws"
    api.run_batch(root, first, PACK)
    ws = Workspace(root)
    db = sqlite3.connect(ws.ledger_path)
    db.execute("DROP TABLE run_figures")
    db.commit()
    db.close()
    assert _settled(ws)[1] == set()
    rep = recorded_report(ws, facility_pack)
    assert rep.source == "recorded" and rep.to_dict() == _from_files(ws, facility_pack, monkeypatch)
    more = tmp_path / "more.jsonl"
    more.write_text("".join(lines[3:5]))
    api.run_batch(root, more, PACK)
    settled, recorded = _settled(ws)
    assert len(recorded) == 2 and recorded < settled
    assert recorded_report(ws, facility_pack).to_dict() == _from_files(
        ws, facility_pack, monkeypatch
    )

"""Issue 21: the offline proposer repairs a number a CHECK, a datatype range or an assertion
rejected (it used to repeat empty proposals until EXHAUSTED when no other value in the column
could be copied), and points a dangling foreign key on an object column at an existing row
(it used to pick any individual of the class)."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from effectors.proposers.offline import OfflineProposer
from effectors.proposers.offline_numbers import (
    Interval,
    column_ranges,
    into_range,
    parse_check,
    parse_described,
    shrink,
)
from harness.models import Artifact, CellRef, Critique, Location
from harness.pack import Pack, PackConfig
from tests.conftest import FACILITY
from tests.effectors.test_offline_proposer import make_request
from tests.effectors.test_prose_gate import make_artifact, make_pack, make_pools

PACK = make_pack()
POOLS = make_pools()


def _crit(code: str, table: str, row: int, column: str | None = None,
          expected: str | None = None) -> Critique:
    gate = "value_gate" if code.startswith("value.") else "ri_gate"
    return Critique(code=code, gate=gate, location=Location(table=table, row=row, column=column),
                    expected=expected)


def _with(artifact: Artifact, **cells: Any) -> Artifact:
    """`rooms_0_floor=99`: the artifact with those cells changed."""
    tables = {t: [dict(r) for r in rows] for t, rows in artifact.tables.items()}
    for key, value in cells.items():
        table, row, column = key.split("_", 2)
        tables[table][int(row)][column] = value
    return Artifact.model_validate({**artifact.model_dump(), "tables": tables})


def _propose(artifact: Artifact, critiques: list[Critique], attempt: int = 2,
             unlock: tuple[CellRef, ...] = ()) -> Artifact:
    request = make_request(artifact, critiques, attempt=attempt, unlock=unlock)
    return OfflineProposer(PACK, POOLS).propose(request).artifact


# -- the ranges the proposer reads -------------------------------------------------------


def test_the_facility_spine_gives_each_checked_column_its_range() -> None:
    ranges = column_ranges(PACK)
    assert ranges[("rooms", "floor")] == Interval(low=-3, high=40, integer=True)
    assert ranges[("equipment", "rated_power_kw")] == Interval(low=0, low_open=True)
    assert ranges[("maintenance", "interval_months")] == Interval(low=1, high=120, integer=True)


@pytest.mark.parametrize(("expression", "want"), [
    ("(floor BETWEEN -3 AND 40)", Interval(low=-3, high=40)),
    ("((x >= 1) AND (x < 5))", Interval(low=1, high=5, high_open=True)),
    ("(0 < x)", Interval(low=0, low_open=True)),
    ('("x" <= 2.5e3)', Interval(high=2500)),
    ("(x > 1 OR x < 0)", None),
    ("(x NOT BETWEEN 1 AND 5)", None),
    ("(x > y)", None),
    ("(length(x) < 5)", None),
])
def test_check_expressions(expression: str, want: Interval | None) -> None:
    assert parse_check(expression, "x" if "floor" not in expression else "floor") == want


@pytest.mark.parametrize(("text", "want"), [
    ("xsd:integer ≥ 1 and ≤ 120", Interval(low=1, high=120, integer=True)),
    ("number > 0", Interval(low=0, low_open=True)),
    ("xsd:integer", Interval(integer=True)),
    ("number", None),
])
def test_described_facets(text: str, want: Interval | None) -> None:
    assert parse_described(text) == want


_BOUND = st.one_of(st.none(), st.integers(-10**6, 10**6).map(float))


@st.composite
def intervals(draw: st.DrawFn) -> Interval:
    low, high = draw(_BOUND), draw(_BOUND)
    if low is not None and high is not None and low > high:
        low, high = high, low
    return Interval(low=low, high=high, low_open=draw(st.booleans()),
                    high_open=draw(st.booleans()), integer=draw(st.booleans()))


@settings(max_examples=300, deadline=None)
@given(intervals(), st.floats(allow_nan=True, allow_infinity=True))
def test_a_repaired_number_is_inside_its_interval(interval: Interval, value: float) -> None:
    got = into_range(value, interval)
    if interval.empty():
        assert got is None
    else:
        assert got is not None and interval.contains(got), (interval, value, got)
        if interval.contains(value):
            assert got == value


@settings(max_examples=300, deadline=None)
@given(intervals(), st.floats(-1e7, 1e7))
def test_shrinking_gives_a_smaller_number_inside_the_interval_or_nothing(
    interval: Interval, value: float
) -> None:
    got = shrink(value, interval)
    assert got is None or (got < value and interval.contains(got))


@settings(max_examples=200, deadline=None)
@given(intervals())
def test_a_check_as_text_reads_back_as_its_interval(interval: Interval) -> None:
    parts = []
    if interval.low is not None:
        parts.append(f"(x {'>' if interval.low_open else '>='} {interval.low:g})")
    if interval.high is not None:
        parts.append(f"(x {'<' if interval.high_open else '<='} {interval.high:g})")
    want = Interval(interval.low, interval.high, interval.low_open and interval.low is not None,
                    interval.high_open and interval.high is not None)
    got = parse_check("(" + " AND ".join(parts) + ")", "x") if parts else None
    assert got == (want if parts else None)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_parses_to_an_interval_or_none(text: str) -> None:
    for got in (parse_check(text, "x"), parse_described(text)):
        assert got is None or isinstance(got, Interval)


# -- repairs ---------------------------------------------------------------------------


def test_a_checked_floor_with_no_value_to_copy_is_moved_into_its_range() -> None:
    bad = _with(make_artifact(), rooms_0_floor=99, rooms_1_floor=99)
    fixed = _propose(bad, [_crit("ri.check", "rooms", r, "floor", "(floor BETWEEN -3 AND 40)")
                           for r in (0, 1)])
    assert [r["floor"] for r in fixed.tables["rooms"]] == [40, 40]


def test_a_range_finding_uses_the_facets_in_the_critique() -> None:
    bad = _with(make_artifact(), maintenance_0_interval_months=0,
                maintenance_1_interval_months=500)
    fixed = _propose(bad, [
        _crit("value.range", "maintenance", r, "interval_months", "xsd:integer ≥ 1 and ≤ 60")
        for r in (0, 1)])
    assert [r["interval_months"] for r in fixed.tables["maintenance"]] == [1, 60]


def test_a_negative_power_becomes_positive() -> None:
    bad = _with(make_artifact(), equipment_0_rated_power_kw=-5.0,
                equipment_1_rated_power_kw=-5.0)
    fixed = _propose(bad, [_crit("ri.check", "equipment", r, "rated_power_kw",
                                 "(rated_power_kw > 0)") for r in (0, 1)])
    powers = [r["rated_power_kw"] for r in fixed.tables["equipment"]]
    assert all(isinstance(p, float) and p > 0 for p in powers)


def test_a_copied_value_must_lie_in_the_range_too() -> None:
    """The only other value of the column is out of range as well: not copied."""
    bad = _with(make_artifact(), rooms_0_floor=99, rooms_1_floor=-9)
    fixed = _propose(bad, [_crit("ri.check", "rooms", 0, "floor", "(floor BETWEEN -3 AND 40)")])
    assert fixed.tables["rooms"][0]["floor"] == 40


def test_numbers_an_assertion_rejected_get_smaller_each_attempt() -> None:
    """A room over its power budget: both power cells hold the same value, so there is
    nothing else to copy; each attempt halves them toward the range's low end."""
    bad = _with(make_artifact(), equipment_1_room_id="R-101",
                equipment_0_rated_power_kw=1500.0, equipment_1_rated_power_kw=1500.0)
    unlock = tuple(CellRef(table="equipment", row=r, column="rated_power_kw") for r in (0, 1))
    finding = _crit("ri.room_power_budget", "rooms", 0)
    fixed = _propose(bad, [finding], unlock=unlock)
    powers = [r["rated_power_kw"] for r in fixed.tables["equipment"]]
    assert powers == [750.0, 750.0]
    again = _propose(_with(bad, equipment_0_rated_power_kw=750.0,
                           equipment_1_rated_power_kw=750.0), [finding], attempt=3,
                     unlock=unlock)
    assert [r["rated_power_kw"] for r in again.tables["equipment"]] == [375.0, 375.0]


def _department_pack(tmp_path: Path) -> Pack:
    """The facility pack with a `departments` table that rooms.department references: a
    foreign key on an object column."""
    spine = (FACILITY / "spine.sql").read_text(encoding="utf-8")
    spine = spine.replace("department  VARCHAR NOT NULL,",
                          "department  VARCHAR NOT NULL REFERENCES departments (department),")
    spine = "CREATE TABLE departments (department VARCHAR PRIMARY KEY);\n\n" + spine
    (tmp_path / "spine.sql").write_text(spine, encoding="utf-8")
    raw = tomllib.loads((FACILITY / "pack.toml").read_text(encoding="utf-8"))
    raw["files"]["ontology"] = str(FACILITY / raw["files"]["ontology"])
    raw["tables"] = {"departments": {"row_class": "DepartmentRow", "key": ["department"],
                                     "columns": {"department": {"kind": "object",
                                                                "property": "hasDepartment"}}},
                     **raw["tables"]}
    return Pack(root=tmp_path, config=PackConfig.model_validate(raw))


@pytest.mark.parametrize("attempt", [2, 3, 4, 5])
def test_a_dangling_key_on_an_object_column_points_at_an_existing_row(
    tmp_path: Path, attempt: int
) -> None:
    pack = _department_pack(tmp_path)
    art = make_artifact()
    tables: dict[str, Any] = {**art.tables, "departments": [{"department": "Estates"}]}
    rooms = [dict(r) for r in art.tables["rooms"]]
    rooms[0]["department"] = "Cardiology"  # no such row (and no such individual)
    bad = Artifact.model_validate({**art.model_dump(), "tables": {**tables, "rooms": rooms}})
    finding = _crit("ri.fk_orphan", "rooms", 0, "department", "departments.department")
    request = make_request(bad, [finding], attempt=attempt)
    fixed = OfflineProposer(pack, POOLS).propose(request).artifact
    assert fixed.tables["rooms"][0]["department"] == "Estates"


# -- end to end, real gates --------------------------------------------------------------


def _cases(tmp_path: Path) -> Path:
    lines = (FACILITY / "corpus" / "demo.clean.jsonl").read_text(encoding="utf-8").splitlines()
    out: list[dict[str, Any]] = []

    def variant(i: int, change: Any) -> None:
        a = json.loads(lines[i])
        a["id"] = f"case-{len(out)}"
        change(a["tables"])
        out.append(a)

    def single(t: dict[str, Any]) -> None:  # one row per table: nothing else to copy
        t["rooms"] = t["rooms"][:1]
        room = t["rooms"][0]
        room["floor"] = 77
        t["equipment"] = [e for e in t["equipment"] if e["room_id"] == room["room_id"]][:1]
        eq = t["equipment"][0]
        eq["rated_power_kw"] = 0
        t["maintenance"] = [m for m in t["maintenance"]
                            if m["equipment_id"] == eq["equipment_id"]][:1]
        t["maintenance"][0]["interval_months"] = 500

    def budget(t: dict[str, Any]) -> None:  # one room, every power the same, over budget
        t["rooms"] = t["rooms"][:1]
        t["equipment"] = [e for e in t["equipment"] if e["room_id"] == t["rooms"][0]["room_id"]]
        for e in t["equipment"]:
            e["rated_power_kw"] = math.ceil(2100 / len(t["equipment"]))
        ids = {e["equipment_id"] for e in t["equipment"]}
        t["maintenance"] = [m for m in t["maintenance"] if m["equipment_id"] in ids]

    variant(0, lambda t: t["rooms"][0].__setitem__("floor", 99))
    variant(1, lambda t: t["equipment"][0].__setitem__("rated_power_kw", -5.0))
    variant(2, lambda t: t["maintenance"][0].__setitem__("interval_months", 0))
    variant(3, single)
    variant(4, budget)
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in out), encoding="utf-8")
    return path


@pytest.mark.java
@pytest.mark.slow
def test_numbers_out_of_range_or_over_a_budget_are_committed_not_exhausted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main

    cases = _cases(tmp_path)
    argv = ["batch", str(cases), "--pack", str(FACILITY), "-w", str(tmp_path / "ws"),
            "--no-progress", "--json", "--no-report"]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    states = {r["artifact_id"]: (r["state"], r["attempts"]) for r in out["runs"]}
    assert code == 0, states
    assert all(s == "COMMITTED" and n <= 3 for s, n in states.values()), states

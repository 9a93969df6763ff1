"""Hostile cell values never crash RI_GATE or change anything: property tests (hypothesis)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from effectors.ri_gate import RiGate
from harness.models import Artifact, Cell
from harness.pack import load_pack
from tests.effectors.test_ri_gate import FACILITY, facility_artifact

KNOWN_CODES = {"ri.type", "ri.not_null", "ri.pk_duplicate", "ri.fk_orphan", "ri.check",
               "ri.room_power_budget", "ri.unmaintained_equipment", "ri.assertion_error"}
MEGABYTE = "x" * 1_000_000
HOSTILE: list[Cell] = [
    "'); DROP TABLE rooms; --", "\"; DELETE FROM equipment; --", "' OR '1'='1", "a\x00b",
    "\x00", "R0", "EQ-000", "ünïcødé ✓ 🏥", "\u202eRTL", "\ud800", "NULL", "null", "", " ",
    "12", "3.5", "1e400", "-0", "nan", "inf", "true", "0x10", MEGABYTE, 10**5000, 2**70,
    -(2**63), 0, 3.5, float("nan"), float("inf"), -0.0, 1e308, True, False, None,
]
cells = st.one_of(
    st.sampled_from(HOSTILE), st.none(), st.booleans(), st.integers(), st.floats(),
    st.text(max_size=30),
)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def gate() -> RiGate:
    return RiGate.from_pack(load_pack(FACILITY))


@st.composite
def hostile_artifacts(draw: st.DrawFn, aid: str = "fz") -> Artifact:
    """A facility artifact with a few cells replaced by hostile values (or removed)."""
    a = facility_artifact(aid, rooms=2, per_room=2)
    tables = copy.deepcopy(a.tables)
    for _ in range(draw(st.integers(1, 6))):
        table = draw(st.sampled_from(sorted(tables)))
        rows = tables[table]
        row = rows[draw(st.integers(0, len(rows) - 1))]
        column = draw(st.sampled_from(sorted(row)))
        if draw(st.booleans()) and draw(st.booleans()):
            del row[column]
        else:
            row[column] = draw(cells)
    return Artifact(id=aid, tables=tables)


def _shape_ok(gate: RiGate, arts: list[Artifact]) -> None:
    verdicts = gate.judge(arts)
    assert [v.artifact_id for v in verdicts] == [a.id for a in arts]
    for v, a in zip(verdicts, arts, strict=True):
        assert not v.crashed
        assert {c.code for c in v.critiques} <= KNOWN_CODES
        assert all(len(c.message) <= 1000 for c in v.critiques)
        assert all(len(c.observed or "") <= 300 for c in v.critiques)
        for ref in v.rejected:
            assert ref.column in a.tables[ref.table][ref.row]
        errors = sum(c.severity == "error" for c in v.critiques)
        assert v.metrics["ri_violations"] == errors
        assert v.passed == (errors == 0)


@SETTINGS
@given(st.lists(hostile_artifacts(), min_size=1, max_size=3))
def test_hostile_cells_give_findings_never_crashes(gate: RiGate, arts: list[Artifact]) -> None:
    arts = [a.model_copy(update={"id": f"fz{i}"}) for i, a in enumerate(arts)]
    clean = facility_artifact("clean")
    _shape_ok(gate, [*arts, clean])
    # nothing leaked between artifacts or into the gate: the clean one still passes, and
    # every artifact gets the same verdict alone as in the cohort
    *hostile, v_clean = gate.judge([*arts, clean])
    assert v_clean.passed and v_clean.critiques == ()
    assert hostile == [v for a in arts for v in gate.judge([a])]


@SETTINGS
@given(key=st.one_of(st.sampled_from([h for h in HOSTILE if isinstance(h, str)]),
                     st.text(min_size=1, max_size=40)))
def test_values_are_data_not_sql(gate: RiGate, key: str) -> None:
    """A hostile key used as a room id and as the foreign key to it matches exactly."""
    a = facility_artifact("k")
    a.tables["rooms"][0]["room_id"] = key
    for e in a.tables["equipment"]:
        if e["room_id"] == "R0":
            e["room_id"] = key
    (v,) = gate.judge([a])
    if "\ud800" in key or key in ("R1", "R2", "R3"):
        return  # an unrepresentable string is a type finding; R1..R3 duplicate a key
    assert v.critiques == ()


def test_gate_state_is_unchanged_by_hostile_input(gate: RiGate) -> None:
    before = (gate.schema, gate.assertions)
    a = facility_artifact("evil")
    a.tables["rooms"][0]["room_type"] = "x'); DROP TABLE rooms; --"
    a.tables["rooms"][1]["floor"] = "1; DROP TABLE equipment"
    (v,) = gate.judge([a])
    assert [c.code for c in v.critiques] == ["ri.type"]
    assert (gate.schema, gate.assertions) == before
    assert gate.judge([facility_artifact()])[0].passed

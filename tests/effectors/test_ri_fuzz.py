"""Hostile cell values never crash RI_GATE or change anything: property tests (hypothesis)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from effectors.ri_gate import RiGate
from harness.models import Artifact, Cell, Verdict
from tests.effectors.test_ri_gate import facility_artifact, facility_gate

KNOWN_CODES = {"ri.type", "ri.not_null", "ri.pk_duplicate", "ri.fk_orphan", "ri.check",
               "ri.room_power_budget", "ri.unmaintained_equipment", "ri.assertion_error",
               "ri.activity_equipment_kind", "ri.row_count", "ri.aggregate"}
pytestmark = pytest.mark.java  # the facility gate's pool table comes from HermiT
MEGABYTE = "x" * 1_000_000
HOSTILE: list[Cell] = [
    "'); DROP TABLE rooms; --", "\"; DELETE FROM equipment; --", "' OR '1'='1", "a\x00b",
    "\x00", "R0", "EQ-000", "ünïcødé ✓ 🏥", "\u202eRTL", "\ud800", "NULL", "null", "", " ",
    "12", "3.5", "1e400", "-0", "nan", "inf", "true", "0x10", MEGABYTE, 10**5000, 2**70,
    -(2**63), 0, 3.5, float("nan"), float("inf"), -0.0, 1e308, True, False, None,
]
cells = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(),
    st.text(max_size=30),
)
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> RiGate:
    return facility_gate(tmp_path_factory.mktemp("pools"))


# Edits are drawn as small recipes (hostile values by index into HOSTILE), because
# hypothesis prints the drawn arguments and a 1 MB string or a 5,000-digit int cannot be.
Edit = tuple[int, int, int, str, int, Cell]
edits = st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 5),
                  st.sampled_from(["hostile", "value", "delete"]),
                  st.integers(0, len(HOSTILE) - 1), cells)
recipes = st.lists(edits, min_size=1, max_size=6)


def build(aid: str, recipe: list[Edit]) -> Artifact:
    """A small facility artifact with the recipe's cells replaced or removed."""
    tables = copy.deepcopy(facility_artifact(aid, rooms=2, per_room=2).tables)
    for t_i, r_i, c_i, op, h_i, value in recipe:
        rows = tables[sorted(tables)[t_i]]
        row = rows[r_i % len(rows)]
        column = sorted(row)[c_i % len(row)] if row else "room_id"
        if op == "delete":
            row.pop(column, None)
        else:
            row[column] = HOSTILE[h_i] if op == "hostile" else value
    # not validated: the gate must survive what the boundary refuses too (integers past
    # 64 bits, which `Artifact` rejects when it is read)
    return Artifact.model_construct(id=aid, tables=tables)


def _shape_ok(gate: RiGate, arts: list[Artifact]) -> list[Verdict]:
    verdicts = gate.judge(arts)
    assert [v.artifact_id for v in verdicts] == [a.id for a in arts]
    for v, a in zip(verdicts, arts, strict=True):
        assert not v.crashed
        assert {c.code for c in v.critiques} <= KNOWN_CODES
        assert all(len(c.message) <= 1000 for c in v.critiques)
        assert all(len(c.observed or "") <= 200 for c in v.critiques)
        for ref in v.rejected:
            assert ref.column in a.tables[ref.table][ref.row]
        errors = sum(c.severity == "error" for c in v.critiques)
        assert v.metrics["ri_violations"] == errors
        assert v.passed == (errors == 0)
    return verdicts


@SETTINGS
@given(st.lists(recipes, min_size=1, max_size=3))
def test_hostile_cells_give_findings_never_crashes(gate: RiGate, plan: list[list[Edit]]) -> None:
    arts = [build(f"fz{i}", recipe) for i, recipe in enumerate(plan)]
    clean = facility_artifact("clean")
    # nothing leaked between artifacts or into the gate: the clean one still passes, and
    # every artifact gets the same verdict alone as in the cohort
    *hostile, v_clean = _shape_ok(gate, [*arts, clean])
    assert v_clean.passed and v_clean.critiques == ()
    alone = [v for a in arts for v in gate.judge([a])]
    # verdicts serialise (no lone surrogates leak into critique text) and are cohort-free
    assert [v.model_dump_json() for v in hostile] == [v.model_dump_json() for v in alone]


@SETTINGS
@given(pick=st.one_of(st.integers(0, len(HOSTILE) - 1), st.text(min_size=1, max_size=40)))
def test_values_are_data_not_sql(gate: RiGate, pick: int | str) -> None:
    """A hostile key used as a room id and as the foreign key to it matches exactly."""
    key = HOSTILE[pick] if isinstance(pick, int) else pick
    if not isinstance(key, str):
        return
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

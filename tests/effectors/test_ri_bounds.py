"""RI_GATE `[bounds]` from pack.toml (real DuckDB): row counts, aggregates, setup errors; and
the merged key checks (several constraints answered by one query) attributing correctly."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.ri_gate import RiGate
from harness.errors import PackError
from harness.models import CellRef
from harness.pack import Pack, load_pack
from tests.effectors.test_ri_gate import art, codes, judge1, make_pack

SPINE = """
CREATE TABLE rooms (room_id VARCHAR PRIMARY KEY, dept VARCHAR, floor INTEGER);
CREATE TABLE equipment (equipment_id VARCHAR PRIMARY KEY, room_id VARCHAR, kw DOUBLE,
                        FOREIGN KEY (room_id) REFERENCES rooms (room_id));
"""
KEYS = {"rooms": ["room_id"], "equipment": ["equipment_id"]}
BOUNDS = """
[bounds.rows]
rooms = { min = 1, max = 3 }
equipment = { max = 4, severity = "warn" }

[[bounds.aggregate]]
table = "equipment"
function = "sum"
column = "kw"
group_by = ["room_id"]
max = 100.0

[[bounds.aggregate]]
table = "rooms"
function = "count_distinct"
column = "dept"
max = 1
severity = "warn"

[[bounds.aggregate]]
table = "equipment"
function = "count"
column = "equipment_id"
min = 1
"""


def bounded_pack(root: Path, bounds: str = BOUNDS, spine: str = SPINE) -> Pack:
    make_pack(root, spine, KEYS)
    with open(root / "pack.toml", "a", encoding="utf-8") as fh:
        fh.write(bounds)
    return load_pack(root)


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> RiGate:
    return RiGate.from_pack(bounded_pack(tmp_path_factory.mktemp("bounds")))


def room(rid: str, dept: str = "A", floor: int = 1) -> dict[str, object]:
    return {"room_id": rid, "dept": dept, "floor": floor}


def eq(eid: str, rid: str, kw: float) -> dict[str, object]:
    return {"equipment_id": eid, "room_id": rid, "kw": kw}


def test_within_bounds_passes(gate: RiGate) -> None:
    v = judge1(gate, art(rooms=[room("R1")], equipment=[eq("E1", "R1", 60.0),
                                                        eq("E2", "R1", 40.0)]))
    assert v.critiques == ()


def test_row_count_min_and_max(gate: RiGate) -> None:
    none = art("none", equipment=[eq("E1", "R1", 1.0)])
    many = art("many", rooms=[room(f"R{i}") for i in range(5)],
               equipment=[eq(f"E{i}", "R0", 1.0) for i in range(6)])
    v_none, v_many = gate.judge([none, many])
    (c,) = [c for c in v_none.critiques if c.code == "ri.row_count"]
    assert (c.location.table, c.observed, c.severity) == ("rooms", "0", "error")
    assert "between 1 and 3" in (c.expected or "")
    found = [(c.location.table, c.observed, c.severity)
             for c in v_many.critiques if c.code == "ri.row_count"]
    assert found == [("equipment", "6", "warn"), ("rooms", "5", "error")]
    # an error rejects the rows beyond max (so they may be dropped); a warning rejects nothing
    assert set(v_many.rejected) == {CellRef(table="rooms", row=r, column=c)
                                    for r in (3, 4) for c in ("room_id", "dept", "floor")}


def test_grouped_sum_names_the_group_and_rejects_its_cells(gate: RiGate) -> None:
    a = art(rooms=[room("R1"), room("R2")],
            equipment=[eq("E1", "R1", 60.0), eq("E2", "R2", 10.0), eq("E3", "R1", 50.5)])
    v = judge1(gate, a)
    (c,) = v.critiques
    assert c.code == "ri.aggregate" and c.severity == "error"
    assert (c.location.table, c.location.row, c.location.column) == ("equipment", 0, "kw")
    assert c.observed == "110.5" and "room_id = R1" in c.message
    assert set(v.rejected) == {CellRef(table="equipment", row=0, column="kw"),
                               CellRef(table="equipment", row=2, column="kw")}


def test_count_distinct_over_the_artifact_is_a_warning(gate: RiGate) -> None:
    v = judge1(gate, art(rooms=[room("R1", "A"), room("R2", "B"), room("R3", "A")],
                         equipment=[eq("E1", "R1", 1.0)]))
    (c,) = v.critiques
    assert (c.code, c.severity, c.observed, c.location.row) == ("ri.aggregate", "warn", "2", None)
    assert v.passed and v.rejected == ()


def test_count_of_an_absent_table_is_zero(gate: RiGate) -> None:
    v = judge1(gate, art(rooms=[room("R1")]))
    assert [(c.code, c.observed) for c in v.critiques] == [("ri.aggregate", "0")]
    assert "count(equipment_id)" in v.critiques[0].message


def test_min_max_avg_and_null_only_sums(tmp_path: Path) -> None:
    bounds = "".join(
        f'[[bounds.aggregate]]\ntable = "equipment"\nfunction = "{fn}"\ncolumn = "kw"\n'
        f"min = {lo}\nmax = {hi}\n\n"
        for fn, lo, hi in (("min", 1, 50), ("max", 1, 50), ("avg", 10, 20), ("sum", 1, 1000))
    )
    gate = RiGate.from_pack(bounded_pack(tmp_path, bounds))
    rooms = [room("R1")]
    ok, low_high, nulls = gate.judge([
        art("ok", rooms=rooms, equipment=[eq("E1", "R1", 12.0), eq("E2", "R1", 18.0)]),
        art("lh", rooms=rooms, equipment=[eq("E1", "R1", 0.5), eq("E2", "R1", 60.0)]),
        art("nulls", rooms=rooms, equipment=[{"equipment_id": "E1", "room_id": "R1"}]),
    ])
    assert ok.critiques == ()
    assert [c.observed for c in low_high.critiques] == ["0.5", "60", "30.25"]
    # no values: no min/max/avg (those bounds pass); the sum of nothing is 0
    assert [(c.code, c.observed) for c in nulls.critiques] == [("ri.aggregate", "0")]
    assert "sum(kw)" in nulls.critiques[0].message


def test_merged_key_checks_attribute_each_constraint(tmp_path: Path) -> None:
    """Keys of the same types share one query (VARCHAR primary keys of a and b; the
    foreign keys b->a and c->b are of different types, so they do not); findings still
    name their own table and constraint."""
    spine = """
    CREATE TABLE a (id VARCHAR PRIMARY KEY, n INTEGER UNIQUE);
    CREATE TABLE b (id VARCHAR PRIMARY KEY, big BIGINT UNIQUE, a_id VARCHAR REFERENCES a (id));
    CREATE TABLE c (id VARCHAR PRIMARY KEY, b_big BIGINT REFERENCES b (big));
    """
    gate = RiGate.from_pack(make_pack(tmp_path, spine, {"a": ["id"], "b": ["id"], "c": ["id"]}))
    v = judge1(gate, art(
        a=[{"id": "x", "n": 1}, {"id": "x", "n": 1}],
        b=[{"id": "x", "big": 7, "a_id": "x"}, {"id": "x", "big": 8, "a_id": "y"}],
        c=[{"id": "1", "b_big": 7}, {"id": "2", "b_big": 9}],
    ))
    found = [(c.code, c.location.table, c.location.row, c.expected) for c in v.critiques]
    assert found == [
        ("ri.pk_duplicate", "a", 1, "a primary key (id) not used by a[0]"),
        ("ri.pk_duplicate", "a", 1, "a unique key (n) not used by a[0]"),
        ("ri.pk_duplicate", "b", 1, "a primary key (id) not used by b[0]"),
        ("ri.fk_orphan", "b", 1, "a.id"),
        ("ri.fk_orphan", "c", 1, "b.big"),
    ]


@pytest.mark.parametrize(("bounds", "fragment", "line"), [
    ('[bounds.rows]\nghost = { max = 1 }\n', "ghost", 8),
    ('[bounds.rows.ghost]\nmax = 1\n', "ghost", 7),
    ('[[bounds.aggregate]]\ntable = "ghost"\nfunction = "sum"\ncolumn = "kw"\nmax = 1\n',
     "ghost", 7),
    ('[[bounds.aggregate]]\ntable = "equipment"\nfunction = "sum"\ncolumn = "watts"\n'
     "max = 1\n", "watts", 7),
    ('[[bounds.aggregate]]\ntable = "rooms"\nfunction = "sum"\ncolumn = "dept"\nmax = 1\n',
     "numeric", 7),
    ('[[bounds.aggregate]]\ntable = "rooms"\nfunction = "max"\ncolumn = "floor"\n'
     "max = inf\n", "finite", 7),
])
def test_bounds_naming_what_the_spine_lacks_are_setup_errors(
    tmp_path: Path, bounds: str, fragment: str, line: int
) -> None:
    pack = bounded_pack(tmp_path, "\n" + bounds)
    with pytest.raises(PackError) as info:
        RiGate.from_pack(pack)
    assert info.value.file is not None and info.value.file.endswith("pack.toml")
    assert fragment in info.value.message
    assert info.value.line is not None and info.value.line >= line


@pytest.mark.parametrize(("bounds", "fragment"), [
    ('[bounds.rows.rooms]\nmin = 5\nmax = 2\n', "min"),
    ('[[bounds.aggregate]]\ntable = "rooms"\nfunction = "median"\ncolumn = "floor"\nmax = 1\n',
     "function"),
    ('[[bounds.aggregate]]\ntable = "rooms"\nfunction = "sum"\ncolumn = "floor"\n', "min"),
    ('[bounds.rows.rooms]\nmax = -1\n', "max"),
])
def test_malformed_bounds_are_pack_errors(tmp_path: Path, bounds: str, fragment: str) -> None:
    with pytest.raises(PackError) as info:
        bounded_pack(tmp_path, "\n" + bounds)
    assert info.value.file is not None and info.value.file.endswith("pack.toml")
    assert "bounds" in info.value.message and fragment in str(info.value)


def test_bounds_are_in_the_check_codes(gate: RiGate) -> None:
    v_batch = gate.judge([art("x", rooms=[room("R1")]), art("y")])
    assert [codes(v) for v in v_batch] == [["ri.aggregate"], ["ri.row_count", "ri.aggregate"]]
    assert v_batch == gate.judge_transient([art("x", rooms=[room("R1")]), art("y")])

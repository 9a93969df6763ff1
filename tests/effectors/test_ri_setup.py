"""RI_GATE setup errors: every pack problem is a PackError naming the file (and line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.ri_gate import RiGate
from harness.errors import PackError
from tests.effectors.test_ri_gate import make_pack

SPINE = """-- two tables
CREATE TABLE rooms (room_id VARCHAR PRIMARY KEY, floor INTEGER);

CREATE TABLE equipment (equipment_id VARCHAR PRIMARY KEY,
                        room_id VARCHAR REFERENCES rooms (room_id));
"""
KEYS = {"rooms": ["room_id"], "equipment": ["equipment_id"]}
HEADER = "-- code: ri.sample\n-- severity: error\n-- message: room {room_id}\n"
GOOD = HEADER + "-- table: rooms\nSELECT _artifact, _row, room_id FROM rooms WHERE floor > 3\n"


def setup_error(tmp_path: Path, spine: str = SPINE, assertion: str | None = None,
                keys: dict[str, list[str]] | None = None) -> PackError:
    pack = make_pack(tmp_path, spine, keys or KEYS,
                     {"check.sql": assertion} if assertion is not None else None)
    with pytest.raises(PackError) as info:
        RiGate.from_pack(pack)
    return info.value


def test_good_assertion_loads(tmp_path: Path) -> None:
    gate = RiGate.from_pack(make_pack(tmp_path, SPINE, KEYS, {"check.sql": GOOD}))
    (a,) = gate.assertions
    assert (a.code, a.severity, a.table, a.limit) == ("ri.sample", "error", "rooms", 1000)


def test_ddl_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    err = setup_error(tmp_path, SPINE + "\nCREATE TABEL oops (x INT);\n")
    assert err.file is not None and err.file.endswith("spine.sql")
    assert err.line == 7


def test_ddl_binder_error_names_statement_line(tmp_path: Path) -> None:
    spine = SPINE + "\n\nCREATE TABLE m (id VARCHAR REFERENCES nowhere (id));\n"
    err = setup_error(tmp_path, spine)
    assert err.file is not None and err.file.endswith("spine.sql") and err.line == 8
    assert "nowhere" in err.message


@pytest.mark.parametrize("extra", [
    "CREATE VIEW v AS SELECT 1;",
    "INSERT INTO rooms VALUES ('R1', 1);",
    "COPY rooms TO '/tmp/x.csv';",
])
def test_spine_must_be_create_table_only(tmp_path: Path, extra: str) -> None:
    err = setup_error(tmp_path, SPINE + extra)
    assert err.file is not None and err.file.endswith("spine.sql")


def test_reserved_column_names(tmp_path: Path) -> None:
    err = setup_error(tmp_path, "CREATE TABLE rooms (room_id VARCHAR, _row INTEGER);"
                      "CREATE TABLE equipment (equipment_id VARCHAR);")
    assert "_row" in err.message


def test_binding_for_a_table_the_spine_lacks(tmp_path: Path) -> None:
    err = setup_error(tmp_path, keys={**KEYS, "ghost": ["id"]})
    assert "ghost" in err.message


@pytest.mark.parametrize(("assertion", "line", "fragment"), [
    ("-- severity: error\n-- message: m\nSELECT _artifact FROM rooms\n", 1, "code"),
    ("-- code: ri.x\n-- message: m\nSELECT _artifact FROM rooms\n", 1, "severity"),
    ("-- code: ri.x\n-- severity: error\nSELECT _artifact FROM rooms\n", 1, "message"),
    ("-- code: Bad Code\n-- severity: error\n-- message: m\nSELECT 1\n", 1, "code"),
    ("-- code: ri.x\n-- severity: fatal\n-- message: m\nSELECT 1\n", 2, "severity"),
    ("-- code: ri.x\n-- severity: warn\n-- message: m\n-- limit: lots\nSELECT 1\n", 4, "limit"),
    ("-- code: ri.x\n-- code: ri.y\n-- severity: warn\n-- message: m\nSELECT 1\n", 2, "twice"),
    (HEADER + "-- table: nowhere\nSELECT 1\n", 4, "nowhere"),
    (HEADER + "-- table: rooms\n-- columns: nope\nSELECT 1\n", 5, "nope"),
    (HEADER + "\nSELECT _artifact, room_id\nFROM rooms\nWHERE flor > 3\n", 7, "flor"),
    (HEADER + "SELECT _artifact, room_id FROM\n  ghosts\n", 5, "ghosts"),
    (HEADER + "SELEC _artifact FROM rooms\n", 4, "parse"),
])
def test_bad_assertion_names_file_and_line(
    tmp_path: Path, assertion: str, line: int, fragment: str
) -> None:
    err = setup_error(tmp_path, assertion=assertion)
    assert err.file is not None and err.file.endswith("check.sql")
    assert err.line == line
    assert fragment in err.message


@pytest.mark.parametrize(("body", "fragment"), [
    ("SELECT room_id FROM rooms", "_artifact"),
    ("-- table: rooms\nSELECT _artifact, room_id FROM rooms", "_row"),
    ("SELECT _artifact FROM rooms", "room_id"),  # the template names a column not returned
    ("SELECT _artifact, room_id FROM rooms; DROP TABLE rooms", "one SELECT"),
    ("DELETE FROM rooms", "one SELECT"),
    ("SELECT _artifact, room_id FROM read_csv('/etc/passwd')", "invalid"),
])
def test_assertion_shape_errors(tmp_path: Path, body: str, fragment: str) -> None:
    err = setup_error(tmp_path, assertion=HEADER + body + "\n")
    assert err.file is not None and err.file.endswith("check.sql")
    assert fragment in err.message


def test_template_cannot_reach_attributes(tmp_path: Path) -> None:
    sql = ("-- code: ri.x\n-- severity: warn\n-- message: {room_id.__class__}\n"
           "SELECT _artifact, room_id FROM rooms\n")
    err = setup_error(tmp_path, assertion=sql)
    assert err.line == 3


def test_underscore_table_names_are_reserved(tmp_path: Path) -> None:
    err = setup_error(tmp_path, SPINE + "CREATE TABLE _assertion_0 (x INTEGER);")
    assert "_assertion_0" in err.message

"""The recorded report's file reading and cell counting (issue 16's report speed): the same
bytes and counts as the plain definitions, on any file and any payload shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.pack import Pack
from harness.report import _ObjectColumns, _read_bytes


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=3000) | st.sampled_from([b"", b"x" * 70_000, b"\n" * 65_537]))
def test_read_bytes_reads_the_whole_file(tmp_path_factory: Any, data: bytes) -> None:
    path = tmp_path_factory.mktemp("r") / "f.json"
    path.write_bytes(data)
    assert _read_bytes(path) == data
    assert _read_bytes(str(path)) == data


_cell = st.none() | st.integers() | st.text(max_size=3)
_row = st.dictionaries(st.sampled_from(["room_id", "department", "floor", "x"]), _cell) | _cell
_rows = st.lists(_row, max_size=4) | _cell | st.dictionaries(st.text(max_size=2), _cell)


@settings(max_examples=200, deadline=None)
@given(tables=st.dictionaries(st.sampled_from(["rooms", "equipment", "other"]), _rows) | _cell)
def test_object_cells_counted_as_defined(facility_pack: Pack, tables: Any) -> None:
    """`count` over any JSON shape: the object-kind cells of the rows that are objects."""
    counter = _ObjectColumns(facility_pack)
    expected = 0
    if isinstance(tables, dict):
        for t, rows in tables.items():
            cols = {c for c, col in facility_pack.tables[t].columns.items()
                    if col.kind in ("object", "class")} if t in facility_pack.tables else set()
            if isinstance(rows, list):
                expected += sum(len(cols & set(r)) for r in rows if isinstance(r, dict))
    assert counter.count({"tables": tables}) == expected


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    try:
        _read_bytes(tmp_path / "absent.json")
    except FileNotFoundError:
        return
    raise AssertionError("no FileNotFoundError")

"""CellRef.parse is the exact inverse of str(CellRef), and refuses what is not a cell."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.models import CellRef

_tables = st.text(min_size=1, max_size=30)  # a table name may hold any character
_columns = st.text(min_size=1, max_size=30).filter(lambda c: not set(c) & set(".[]"))


@given(table=_tables, row=st.integers(0, 10**9), column=_columns)
def test_parse_inverts_str(table: str, row: int, column: str) -> None:
    ref = CellRef(table=table, row=row, column=column)
    assert CellRef.parse(str(ref)) == ref


@pytest.mark.parametrize(
    "text",
    ["", "equipment", "equipment[0]", "equipment[-1].x", "[0].x", "t[0].", "t[x].c", "t[0].a.b"],
)
def test_parse_refuses_what_is_not_a_cell(text: str) -> None:
    with pytest.raises(ValueError, match="not a cell reference"):
        CellRef.parse(text)

"""Proposal diffs as plain dicts (issue 22): `cell_changes` gives the changes and removals the
per-cell pydantic path gave, and the sealed ProposalEvent line is byte for byte the one the
old `CellChange` model produced."""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, ValidationError

from harness.models import Artifact
from harness.trace.chain import seal
from harness.trace.events import EVENT_ADAPTER, ProposalEvent, cell_changes


class _OldCellChange(BaseModel):  # the model the trace carried before (one per cell)
    model_config = ConfigDict(frozen=True, extra="forbid")

    cell: str
    value: Any


class _OldProposalEvent(ProposalEvent):
    changes: tuple[_OldCellChange, ...]  # type: ignore[assignment]


def _old_diff(
    previous: Artifact | None, new: Artifact
) -> tuple[list[_OldCellChange], tuple[str, ...]]:
    """The diff `_record_proposal` computed before, verbatim."""
    old_cells = {str(r): previous.value(r) for r in previous.cells()} if previous else {}
    changes = [
        _OldCellChange(cell=str(r), value=new.value(r))
        for r in new.cells()
        if str(r) not in old_cells or old_cells[str(r)] != new.value(r)
    ]
    new_keys = {str(r) for r in new.cells()}
    return changes, tuple(k for k in old_cells if k not in new_keys)


_cells = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),  # NaN is refused by the corpus reader; -0.0, inf kept
    st.sampled_from([0, 1, 1.0, True, False, 0.0, "1", ""]),  # equal across types
    st.text(max_size=8),
)
_names = st.sampled_from(["t", "equipment", "room[0].x", "é"])
_columns = st.sampled_from(["a", "b", "standard", "ü"])
_tables = st.dictionaries(
    _names, st.lists(st.dictionaries(_columns, _cells, max_size=4), max_size=4), max_size=3
)


def _art(tables: dict[str, list[dict[str, Any]]]) -> Artifact:
    return Artifact(id="a1", tables=tables, prose="p.")


def _line(event_cls: type[ProposalEvent], changes: Any, removed: tuple[str, ...]) -> bytes:
    event = event_cls(
        seq=3,
        run_id="r1",
        at="2026-01-01T00:00:00Z",
        prev="ab" * 32,
        attempt=2,
        proposer="offline",
        content_hash="cd" * 32,
        changes=tuple(changes),
        removed=removed,
        prose_changed=False,
        lessons=("k",),
    )
    return seal(event)[0]


@settings(max_examples=300, deadline=None)
@given(_tables, st.one_of(st.none(), _tables))
def test_the_sealed_proposal_line_is_byte_identical_to_the_per_cell_model_one(
    new_tables: dict[str, list[dict[str, Any]]],
    old_tables: dict[str, list[dict[str, Any]]] | None,
) -> None:
    new = _art(new_tables)
    previous = None if old_tables is None else _art(old_tables)
    changes, removed = cell_changes(previous, new)
    want_changes, want_removed = _old_diff(previous, new)
    assert [(c["cell"], c["value"]) for c in changes] == [(c.cell, c.value) for c in want_changes]
    assert removed == want_removed
    assert _line(ProposalEvent, changes, removed) == _line(
        _OldProposalEvent, want_changes, want_removed
    )


def test_equal_values_of_other_types_are_no_change_as_before() -> None:
    before = _art({"t": [{"a": 1, "b": 0.0, "c": "x"}]})
    after = _art({"t": [{"a": True, "b": -0.0, "c": "y"}], "u": [{"a": None}]})
    changes, removed = cell_changes(before, after)
    assert changes == ({"cell": "t[0].c", "value": "y"}, {"cell": "u[0].a", "value": None})
    assert removed == ()
    changes, removed = cell_changes(after, before)
    assert [c["cell"] for c in changes] == ["t[0].c"] and removed == ("u[0].a",)


def test_the_seed_records_every_cell_in_cell_order() -> None:
    a = _art({"t": [{"a": 1, "b": math.pi}, {"a": 2}], "u": [{"z": "q"}]})
    changes, removed = cell_changes(None, a)
    assert [c["cell"] for c in changes] == [str(r) for r in a.cells()] and removed == ()


def test_a_change_with_an_unknown_key_is_refused_when_read_back() -> None:
    """The dicts are validated once per event, with the strictness the model had."""
    payload = _line(ProposalEvent, ({"cell": "t[0].a", "value": 1},), ())
    record = orjson.loads(payload)
    assert EVENT_ADAPTER.validate_python(record).changes == ({"cell": "t[0].a", "value": 1},)  # type: ignore[union-attr]
    record["changes"][0]["extra"] = 1
    with pytest.raises(ValidationError):
        EVENT_ADAPTER.validate_python(record)
    del record["changes"][0]["extra"], record["changes"][0]["value"]
    with pytest.raises(ValidationError):
        EVENT_ADAPTER.validate_python(record)

"""Property tests for the prose gate's parsers at the trust boundary: number words in prose,
the qualifiers before a number, and the extended `[prose]` pack format."""

from __future__ import annotations

import math
import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from effectors.prose.quantity import Reading, numeric_view, qualifier
from harness.pack import PackConfig
from tests.conftest import FACILITY

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def words(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    rest = n % 100
    return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " and " + words(rest))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_numeric_view_keeps_every_offset(text: str) -> None:
    view, moved = numeric_view(text)
    assert len(view) == len(text)
    for digits_at, words_at in moved.items():
        assert words_at <= digits_at < len(text) and view[digits_at].isdigit()


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=999), st.sampled_from(["kW", "months", "floor"]))
def test_number_words_read_as_their_value(n: int, unit: str) -> None:
    text = f"it is {words(n)} {unit} here"
    view, moved = numeric_view(text)
    assert view.split()[2] == str(n) and len(moved) == 1


@settings(max_examples=300, deadline=None)
@given(
    st.floats(min_value=0.01, max_value=1e5),
    st.floats(min_value=0.01, max_value=1e5),
    st.sampled_from(
        ["under", "below", "at most", "up to", "above", "over", "at least", "about", "", "rated at"]
    ),
)
def test_a_qualified_number_holds_exactly_where_its_words_say(
    bound: float, held: float, words_before: str
) -> None:
    reading = qualifier(f"EQ-001 draws {words_before} ", bound, 1.0)
    assert reading is not None
    ok = reading.holds(held, 0.0)
    if words_before in ("under", "below", "at most", "up to"):
        assert ok == (held <= bound + 1e-9)
    elif words_before in ("above", "over", "at least"):
        assert ok == (held >= bound - 1e-9)
    elif words_before == "about":
        assert ok == (abs(held - bound) <= 0.1 * abs(held) + 1e-9)
    else:
        assert ok == (abs(held - bound) <= 1e-9)


def test_a_range_reads_both_ends() -> None:
    assert qualifier("between 40 and ", 60.0, 1.0) == Reading(40.0, 60.0)
    assert qualifier("draws 40-", 60.0, 1.0) == Reading(40.0, 60.0)
    assert qualifier("0.2 and ", 0.4, 1000.0) is None  # "0.2 and 0.4 MW": no "between"
    assert Reading(-math.inf, 10.0).holds(9.0, 0.0)


def _config(**quantity: Any) -> dict[str, Any]:
    raw = tomllib.loads((FACILITY / "pack.toml").read_text(encoding="utf-8"))
    raw["prose"]["quantities"] = [{"column": "rooms.floor", **quantity}]
    raw["prose"]["aggregates"] = []  # they name the quantities this replaces
    return raw


_QUANTITY = st.fixed_dictionaries(
    {},
    optional={
        "prefixes": st.lists(st.text(max_size=8), max_size=3),
        "phrases": st.dictionaries(st.text(max_size=12), st.floats(allow_nan=False), max_size=3),
        "units": st.dictionaries(st.text(max_size=6), st.floats(allow_nan=False), max_size=3),
        "through": st.lists(
            st.sampled_from(
                [
                    "equipment.room_id",
                    "maintenance.task_id",
                    "rooms.room_id",
                    "nowhere.x",
                    "equipment",
                ]
            ),
            max_size=2,
        ),
        "negate": st.lists(st.text(max_size=10), max_size=2),
    },
)


@settings(max_examples=200, deadline=None)
@given(_QUANTITY)
def test_prose_quantities_validate_or_fail_cleanly(quantity: dict[str, Any]) -> None:
    try:
        config = PackConfig.model_validate(_config(**quantity))
    except ValidationError:
        return
    (q,) = config.prose.quantities
    assert q.units or q.prefixes or q.phrases
    assert all(f > 0 for f in q.units.values())
    for ref in q.through:  # an id column of another table, never the quantity's own table
        table, _, column = ref.partition(".")
        assert table != "rooms" and config.tables[table].columns[column].kind == "id"


def test_through_names_an_id_column_of_another_table() -> None:
    PackConfig.model_validate(_config(prefixes=["floor"], through=["equipment.room_id"]))
    for bad in (["equipment.rated_power_kw"], ["rooms.room_id"], ["nowhere.x"]):
        with pytest.raises(ValidationError, match="through"):
            PackConfig.model_validate(_config(prefixes=["floor"], through=bad))


_AGGREGATE = st.fixed_dictionaries(
    {"kind": st.sampled_from(["count", "sum", "range", "compare", "median"])},
    optional={
        "table": st.sampled_from(["equipment", "rooms", "nowhere"]),
        "column": st.sampled_from(
            [
                "equipment.rated_power_kw",
                "rooms.floor",
                "maintenance.interval_months",
                "equipment.x",
                "nowhere.y",
            ]
        ),
        "nouns": st.lists(st.text(max_size=10), max_size=2),
        "cues": st.lists(st.text(max_size=10), max_size=2),
        "more": st.lists(st.text(max_size=10), max_size=2),
        "less": st.lists(st.text(max_size=10), max_size=2),
    },
)


@settings(max_examples=200, deadline=None)
@given(_AGGREGATE)
def test_prose_aggregates_validate_or_fail_cleanly(aggregate: dict[str, Any]) -> None:
    raw = tomllib.loads((FACILITY / "pack.toml").read_text(encoding="utf-8"))
    raw["prose"]["aggregates"] = [aggregate]
    try:
        config = PackConfig.model_validate(raw)
    except ValidationError:
        return
    (a,) = config.prose.aggregates
    if a.kind == "count":
        assert a.table in config.tables and a.nouns and a.cues
    else:
        table, _, column = str(a.column).partition(".")
        assert column in config.tables[table].columns
        if a.kind in ("sum", "range"):  # the column's units come from its quantity
            assert any(q.column == a.column and q.units for q in config.prose.quantities)

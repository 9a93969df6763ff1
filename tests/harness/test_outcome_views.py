"""Reading the outcome log fast (`read_records`, msgspec views) is the strict validation of
`parse_record`, never looser: every line is accepted or refused as `parse_record` would,
an accepted one carries the same values, a refused one carries `parse_record`'s own error,
and a log read back folds to the same state, to the byte."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from harness.learning import rebuild
from harness.learning.outcomes import (
    OverrideView,
    RelaxView,
    RunView,
    parse_record,
    read_records,
)
from harness.learning.store import state_bytes
from tests.harness.test_learning import _LINES, _OVERRIDE, _RELAX, _RUN, _logs


def _canonical(r: object) -> bytes:
    """A record's fields as canonical JSON (a view and a model alike; -0.0 stays -0.0)."""
    if isinstance(r, BaseModel):
        return orjson.dumps(r.model_dump(), option=orjson.OPT_SORT_KEYS)
    data = {"kind": "run", **msgspec.to_builtins(r)}  # an untagged run has no kind
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


def _agrees(line: str) -> None:
    """`read_records` says of the line what `parse_record` says."""
    try:
        want: object = parse_record(line)
    except ValidationError as exc:
        want = exc
    good, bad = read_records([line])
    if isinstance(want, ValidationError):
        assert good == []
        assert [(i, str(exc)) for i, exc in bad] == [(0, str(want))]
    else:
        assert bad == []
        assert [_canonical(r) for r in good] == [_canonical(want)]


@pytest.mark.parametrize("line", _LINES)
def test_each_line_of_the_hand_made_log_reads_as_parse_record_says(line: str) -> None:
    _agrees(line)


def test_a_log_reads_in_order_with_each_refusal_at_its_line() -> None:
    good, bad = read_records(_LINES)
    want: list[bytes | int] = []
    for i, line in enumerate(_LINES):
        try:
            want.append(_canonical(parse_record(line)))
        except ValidationError:
            want.append(i)
    assert [i for i, _exc in bad] == [w for w in want if isinstance(w, int)]
    assert [_canonical(r) for r in good] == [w for w in want if isinstance(w, bytes)]


def test_well_formed_records_take_the_fast_way() -> None:
    good, bad = read_records([json.dumps(d) for d in (_RUN, _OVERRIDE, _RELAX)])
    assert bad == []
    assert [type(r) for r in good][1:] == [OverrideView, RelaxView]
    assert isinstance(good[0], RunView)
    no_kind = json.dumps({k: v for k, v in _RUN.items() if k != "kind"})
    assert isinstance(read_records([no_kind])[0][0], RunView)  # a log older than kinds


# -- a property: mutations of valid records --------------------------------------------

_strings = st.one_of(
    st.text(alphabet="ab.:_-Az09 \n\t\r\x00\x1c\x85\xa0\u2028\u3000\U0001f600", max_size=12),
    st.sampled_from(["offline", "openai:m", "a.b", "value.disjoint", "x" * 200, "x" * 201]),
    st.sampled_from(["\U0001f600" * 200, "\U0001f600" * 201, "y" * 100, "y" * 101, "z" * 2001]),
    st.sampled_from(["success", "failure", "partial", "approved", "rejected", "reverted"]),
    st.sampled_from(["run", "override", "relax", "Run", "", "offline\n", "a.b\n", " offline"]),
)
_numbers = st.one_of(
    st.integers(-3, 1003),
    st.sampled_from([2**64, -(2**63), True, False]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-0.0, 0.0, 1.0, 2.0, 0.5, 1e-320, 1.0000000000000002, 999.0]),
)
_leaves: st.SearchStrategy[Any] = st.one_of(st.none(), _strings, _numbers)
_values = st.one_of(
    _leaves,
    st.lists(_leaves, max_size=3),
    st.dictionaries(_strings, _leaves, max_size=2),
    st.lists(
        st.fixed_dictionaries(
            {"attempt": st.integers(0, 5), "codes": st.lists(_strings, max_size=2)},
            optional={"fix_hints": st.dictionaries(_strings, _leaves, max_size=2), "x": _leaves},
        ),
        max_size=2,
    ),
)
_KEYS = sorted({*_RUN, *_OVERRIDE, *_RELAX, "surprise"})


@st.composite
def _lines(draw: st.DrawFn) -> str:
    record = dict(draw(st.sampled_from([_RUN, _OVERRIDE, _RELAX])))
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(_KEYS))
        if draw(st.booleans()):
            record[key] = draw(_values)
        else:
            record.pop(key, None)
    line = json.dumps(record, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 5)) == 0 and len(record) > 0:  # a key twice: the last one counts
        key = draw(st.sampled_from(_KEYS))
        extra = json.dumps({key: draw(_values)})[1:-1]
        line = (
            "{" + extra + ", " + line[1:] if draw(st.booleans()) else line[:-1] + ", " + extra + "}"
        )
    return line


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(json.dumps({**_RUN, "attempts": 2.0}))  # lax ints: refused by the views, a model
@example(json.dumps({**_RUN, "proposer": "openai:a\x1cb"}))  # python's \s is wider than rust's
@example(json.dumps({**_RUN, "quality": -0.0}))
@example(json.dumps({**_RUN, "quality": 1}))
@example('{"quality": 5, ' + json.dumps(_RUN)[1:])
@example(json.dumps(_RUN)[:-1] + ', "quality": 0.25}')
@given(_lines())
def test_any_line_reads_as_parse_record_says(line: str) -> None:
    _agrees(line)


@settings(max_examples=150, deadline=None)
@given(_logs())
def test_a_log_read_back_folds_to_the_same_state(records: list[Any]) -> None:
    good, bad = read_records([r.model_dump_json() for r in records])
    assert bad == []
    assert all(isinstance(r, (RunView, OverrideView, RelaxView)) for r in good)
    assert state_bytes(rebuild(good), 1) == state_bytes(rebuild(records), 1)

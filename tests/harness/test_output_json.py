"""`--json` output (`harness.output.dumps`): orjson's own conversion where it agrees with
`jsonable`, the walk where it does not; the same bytes, or the same refusal, either way."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import ConfigError
from harness.output import dumps, jsonable


@dataclasses.dataclass
class _Row:
    name: str
    value: Any
    items: tuple[Any, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class _Frozen:
    when: str
    inner: Any = None


_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=4)
    | st.just(datetime(2026, 11, 27, 9, 0, tzinfo=UTC))
    | st.builds(lambda m: ConfigError(m, file="pack.toml", line=3, hint="fix it"), st.text(max_size=3))
)
_key = st.text(max_size=3) | st.integers(-3, 3) | st.booleans() | st.none()


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        | st.dictionaries(_key, inner, max_size=3)
        | st.builds(_Row, st.text(max_size=3), inner, st.lists(inner, max_size=2).map(tuple))
        | st.builds(_Frozen, st.text(max_size=3), inner)
    )


_value = st.recursive(_scalar, _containers, max_leaves=12)


def _reference(obj: Any) -> bytes:
    return orjson.dumps(jsonable(obj), option=orjson.OPT_INDENT_2)


@settings(max_examples=400, deadline=None)
@given(obj=_value)
def test_the_same_bytes_as_the_walk(obj: Any) -> None:
    assert dumps(obj) == _reference(obj)


@pytest.mark.parametrize(
    "obj", [{"p": Path("x")}, [{1, 2}], {"big": 2**70}, _Row("r", {"nested": object()})]
)
def test_what_the_walk_refuses_is_refused(obj: Any) -> None:
    with pytest.raises(TypeError):
        _reference(obj)
    with pytest.raises(TypeError):
        dumps(obj)

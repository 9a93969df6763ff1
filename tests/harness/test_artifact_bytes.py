"""An artifact's canonical bytes (its content hash is of them): `artifact_bytes` writes the
fields directly when they hold JSON's own types, and must give the bytes of pydantic's JSON
serialiser for any artifact at all (issue 16)."""

from __future__ import annotations

import datetime
import decimal
import enum
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.models import Artifact
from harness.store import artifact_bytes


def _reference(artifact: Artifact) -> bytes:
    """What the bytes were defined as before the fast path."""
    return orjson.dumps(artifact.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)


_cells = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
_names = st.text(alphabet="abcxyz_é", min_size=1, max_size=6)
_json = st.recursive(
    _cells,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_names, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    tables=st.dictionaries(
        _names, st.lists(st.dictionaries(_names, _cells, max_size=4), max_size=3), max_size=3
    ),
    prose=st.text(max_size=30),
    fields=st.dictionaries(st.sampled_from(["summary", "notes_2"]), st.text(max_size=10)),
    meta=st.dictionaries(_names, _json, max_size=3),
)
def test_same_bytes_as_the_serialiser(
    tables: dict[str, Any], prose: str, fields: dict[str, str], meta: dict[str, Any]
) -> None:
    artifact = Artifact(id="a-1", tables=tables, prose=prose, prose_fields=fields, meta=meta)
    assert artifact_bytes(artifact) == _reference(artifact)


class _Colour(enum.Enum):
    RED = "red"


class _Text(str):
    pass


@dataclass
class _Point:
    x: int


@pytest.mark.parametrize(
    "value",
    [
        datetime.datetime(2026, 11, 27, 6, 0, tzinfo=datetime.UTC),
        datetime.date(2026, 11, 27),
        (1, "two"),
        {1, 2},
        frozenset({"a"}),
        _Colour.RED,
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        _Text("sub"),
        _Point(3),
        decimal.Decimal("1.50"),
        b"bytes",
        {"nested": [datetime.time(6, 30), {"deeper": _Text("x")}]},
    ],
    ids=lambda v: type(v).__name__,
)
def test_other_values_are_written_as_pydantic_writes_them(value: object) -> None:
    """A meta value built in Python (a proposer's) is written as pydantic writes it, or
    fails the same way."""
    artifact = Artifact(id="a-1", tables={}, meta={"v": value})
    try:
        expected = _reference(artifact)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            artifact_bytes(artifact)
        return
    assert artifact_bytes(artifact) == expected


def test_every_field_is_written() -> None:
    """The fast path names the model's fields, so a field added later is not left out."""
    artifact = Artifact(
        id="a-1", tables={"t": [{"c": 1}]}, prose="P.", prose_fields={"summary": "S."},
        meta={"m": 1},
    )
    assert set(orjson.loads(artifact_bytes(artifact))) == set(Artifact.model_fields)
    empty = Artifact(id="a-1", tables={})
    assert "prose_fields" not in orjson.loads(artifact_bytes(empty))

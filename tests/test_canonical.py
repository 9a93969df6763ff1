"""apply_canonical: the canonical table written back into a candidate, exactly and only."""

from __future__ import annotations

import pytest

from harness.canonical import CanonicalError, apply_canonical, raw_values
from harness.models import Artifact, CanonicalCell


def _art() -> Artifact:
    return Artifact(
        id="a1",
        tables={
            "arm": [{"drug": "Lipitor®", "dose_mg": 800}, {"drug": "metformin", "dose_mg": 500}]
        },
        prose="x",
    )


def test_replaces_listed_cells_only() -> None:
    cells = (
        CanonicalCell(
            cell="arm[0].drug",
            raw="Lipitor®",
            value="atorvastatin",
            iri="urn:x#atorvastatin",
            via="alias",
        ),
    )
    out = apply_canonical(_art(), cells)
    assert out.tables["arm"][0] == {"drug": "atorvastatin", "dose_mg": 800}
    assert out.tables["arm"][1] == _art().tables["arm"][1]
    assert _art().tables["arm"][0]["drug"] == "Lipitor®"  # input untouched
    assert raw_values(cells) == {"arm[0].drug": "Lipitor®"}


def test_no_cells_is_identity() -> None:
    a = _art()
    assert apply_canonical(a, ()) is a


@pytest.mark.parametrize(
    "cell,raw",
    [
        ("arm[5].drug", "x"),
        ("nope[0].drug", "x"),
        ("arm[0].missing", "x"),
        ("arm[0].drug", "atorvastatin"),
        ("garbage", "x"),
    ],
)
def test_unknown_or_stale_cells_are_errors(cell: str, raw: str) -> None:
    with pytest.raises(CanonicalError):
        apply_canonical(_art(), [CanonicalCell(cell=cell, raw=raw, value="y", via="label")])

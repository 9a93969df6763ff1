"""Issue 27, "also found": an integer quantity (a spine INTEGER column: years, counts,
intervals) compares exactly by default; a quantity may set a relative `tolerance` or an
absolute `abs_tolerance` (in the column's unit). Other quantities keep `[prose]
value_tolerance` (relative)."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from effectors.prose.quantity import Reading
from effectors.prose_gate import ProseGate
from harness.pack import Pack, PackConfig
from tests.conftest import FACILITY
from tests.effectors.test_prose_gate import GOOD_PROSE, make_artifact, make_pools


def _gate(**interval: Any) -> ProseGate:
    raw = tomllib.loads((FACILITY / "pack.toml").read_text(encoding="utf-8"))
    raw["files"]["references"] = "no-such-references"
    for q in raw["prose"]["quantities"]:
        if q["column"] == "maintenance.interval_months":
            q.update(interval)
    return ProseGate(Pack(root=FACILITY, config=PackConfig.model_validate(raw)), make_pools())


def _codes(gate: ProseGate, sentence: str, months: int = 120) -> list[str]:
    artifact = make_artifact(GOOD_PROSE + " " + sentence)
    artifact.tables["maintenance"][0]["interval_months"] = months
    return [c.code for c in gate.judge([artifact])[0].critiques]


def test_an_integer_quantity_compares_exactly_by_default() -> None:
    gate = _gate()
    assert _codes(gate, "Task T-1 recurs every 120 months.") == []
    # 119 is within 1% of 120: value_tolerance admitted it before
    assert _codes(gate, "Task T-1 recurs every 119 months.") == ["prose.value_mismatch"]
    assert _codes(gate, "Task T-1 recurs every 10 years.") == []
    # a quantity of a DOUBLE column keeps the relative value_tolerance
    assert _codes(gate, "EQ-001 draws 80.4 kW.") == []


@pytest.mark.parametrize(("setting", "sentence", "passes"), [
    ({"tolerance": 0.01}, "Task T-1 recurs every 119 months.", True),
    ({"abs_tolerance": 1.0}, "Task T-1 recurs every 119 months.", True),
    ({"abs_tolerance": 1.0}, "Task T-1 recurs every 118 months.", False),
    ({"abs_tolerance": 1.0}, "Task T-1 recurs at most every 119 months.", True),
    ({"abs_tolerance": 1.0}, "Task T-1 recurs at most every 118 months.", False),
])
def test_a_quantity_may_set_its_tolerance(
    setting: dict[str, float], sentence: str, passes: bool
) -> None:
    assert (_codes(_gate(**setting), sentence) == []) is passes


def test_reading_holds_with_both_tolerances() -> None:
    assert Reading(100.0, 100.0).holds(101.0, 0.0, 1.0)
    assert not Reading(100.0, 100.0).holds(101.5, 0.0, 1.0)
    assert Reading(100.0, 100.0).holds(101.5, 0.01, 1.0)  # both apply: they add up
    assert Reading(float("-inf"), 100.0).holds(101.0, 0.0, 1.0)
    assert not Reading(float("-inf"), 100.0).holds(101.0, 0.0)

"""Issue 28's unit edge: a claim stated in a larger unit is converted into the cell's unit
and compared with the pack's tolerance on the cell's value; the cell is never rounded to the
claim's precision ("metformin 1 g" is no 500 mg or 600 mg dose; "1 MW" is no 600 kW)."""

from __future__ import annotations

import pytest

from effectors.prose_gate import ProseGate
from tests.effectors.test_prose_gate import GOOD_PROSE, _mismatches, make_pack, make_pools


@pytest.fixture(scope="module")
def gate() -> ProseGate:
    return ProseGate(make_pack(references=False), make_pools())


@pytest.mark.parametrize("held", [500.0, 600.0, 1400.0])
def test_a_claim_in_a_larger_unit_is_not_rounded_to_the_cell(gate: ProseGate, held: float) -> None:
    found = _mismatches(gate, GOOD_PROSE + " EQ-001 is rated at 1 MW.",
                        equipment_0_rated_power_kw=held)
    assert [o for o, _ in found] == ["1 MW"]


@pytest.mark.parametrize(("claim", "held"), [("1 MW", 1000.0), ("0.6 MW", 600.0),
                                              ("1 MW", 1009.0), ("1.2 MW", 1195.0)])
def test_a_converted_claim_within_the_tolerance_passes(
    gate: ProseGate, claim: str, held: float
) -> None:
    found = _mismatches(gate, GOOD_PROSE + f" EQ-001 is rated at {claim}.",
                        equipment_0_rated_power_kw=held)
    assert found == []


@pytest.mark.parametrize(("claim", "held"), [("1 kW", 0.6), ("0 kW", 0.5), ("48 kW", 48.6)])
def test_a_claim_in_the_cells_own_unit_is_not_rounded_either(
    gate: ProseGate, claim: str, held: float
) -> None:
    found = _mismatches(gate, GOOD_PROSE + f" EQ-001 is rated at {claim}.",
                        equipment_0_rated_power_kw=held)
    assert [o for o, _ in found] == [claim]


@pytest.mark.parametrize(("claim", "held"), [("48 kW", 48.3), ("80 kW", 80.4), ("0.6 kW", 0.6)])
def test_rounding_within_the_tolerance_passes(gate: ProseGate, claim: str, held: float) -> None:
    found = _mismatches(gate, GOOD_PROSE + f" EQ-001 is rated at {claim}.",
                        equipment_0_rated_power_kw=held)
    assert found == []

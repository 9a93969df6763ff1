"""Issue 21: a "%" unit in `[prose.quantities]` is read ("12.5% ABV", "12.5 %"), and a unit,
prefix or phrase the matcher cannot use is a setup error naming pack.toml and the key."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from effectors.prose_gate import ProseGate
from harness.errors import PackError
from harness.pack import load_pack
from tests.effectors.test_prose_gate import GOOD_PROSE, _mismatches, make_pack, make_pools

FACILITY = Path(__file__).resolve().parent.parent / "packs" / "facility"
_RAW = tomllib.loads((FACILITY / "pack.toml").read_text(encoding="utf-8"))


def _quantities(units: dict[str, float]) -> list[dict[str, Any]]:
    """The facility's quantities with the power column's units replaced by `units` (a
    stand-in for an ABV column: the mechanics are the same)."""
    out = [dict(q) for q in _RAW["prose"]["quantities"]]
    out[0]["units"] = units
    return out


@pytest.fixture(scope="module")
def percent_gate() -> ProseGate:
    return ProseGate(make_pack(references=False, quantities=_quantities({"%": 1.0})), make_pools())


@pytest.mark.parametrize("claim", ["12.5% ABV", "12.5 %", "12.5\u00a0%", "about 12.5%",
                                   "between 12 and 13%"])
def test_a_percent_claim_that_holds_passes(percent_gate: ProseGate, claim: str) -> None:
    found = _mismatches(percent_gate, GOOD_PROSE + f" EQ-001 is bottled at {claim}.",
                        equipment_0_rated_power_kw=12.5)
    assert found == []


@pytest.mark.parametrize("claim", ["12.5% ABV", "12.5 %", "under 10%"])
def test_a_percent_claim_that_does_not_hold_is_a_mismatch(percent_gate: ProseGate,
                                                          claim: str) -> None:
    found = _mismatches(percent_gate, GOOD_PROSE + f" EQ-001 is bottled at {claim}.",
                        equipment_0_rated_power_kw=14.0)
    assert len(found) == 1 and "%" in (found[0][0] or "")


def test_a_percent_sign_inside_a_key_or_word_is_no_claim(percent_gate: ProseGate) -> None:
    found = _mismatches(percent_gate, GOOD_PROSE + " EQ-001 has 100%-recycled packaging.",
                        equipment_0_rated_power_kw=12.5)
    assert found == []


@pytest.mark.parametrize("unit", ["‰", "°C"])
def test_other_symbol_units_are_read_too(unit: str) -> None:
    gate = ProseGate(make_pack(references=False, quantities=_quantities({unit: 1.0})),
                     make_pools())
    prose = GOOD_PROSE + f" EQ-001 is kept at 21 {unit}."
    assert _mismatches(gate, prose, equipment_0_rated_power_kw=21.0) == []
    assert len(_mismatches(gate, prose, equipment_0_rated_power_kw=30.0)) == 1


def _pack_with(tmp_path: Path, table: str) -> Path:
    d = tmp_path / "p"
    d.mkdir(exist_ok=True)
    text = (FACILITY / "pack.toml").read_text(encoding="utf-8")
    text = text.replace('ontology = "', f'ontology = "{FACILITY.as_posix()}/', 1)
    text = text.replace('[[prose.quantities]]            # "48.5 kW"', table + "\n\n"
                        '[[prose.quantities]]            # "48.5 kW"', 1)
    (d / "pack.toml").write_text(text, encoding="utf-8")
    (d / "spine.sql").write_text((FACILITY / "spine.sql").read_text(encoding="utf-8"))
    return d


@pytest.mark.parametrize(("entry", "key"), [
    ('units = { "#" = 1.0 }', "units"),
    ('prefixes = ["#"]', "prefixes"),
    ('phrases = { "---" = 1.0 }', "phrases"),
])
def test_a_word_the_matcher_cannot_use_is_a_setup_error(tmp_path: Path, entry: str,
                                                        key: str) -> None:
    d = _pack_with(tmp_path, '[[prose.quantities]]\ncolumn = "maintenance.interval_months"\n'
                   + entry)
    with pytest.raises(PackError) as err:
        load_pack(d)
    assert str(err.value.file) == str(d / "pack.toml")
    assert f"prose.quantities.0.{key}" in str(err.value)


def test_the_shipped_pack_still_loads() -> None:
    assert load_pack(FACILITY).config.prose.quantities


_UNIT_CHARS = st.sampled_from(list("kWgmLhs%‰°#$/·µ²'\"-.! "))


@settings(max_examples=60, deadline=None)
@given(st.text(_UNIT_CHARS, min_size=1, max_size=4))
@example(" ‰")  # found by `make reliability`'s longer hypothesis run: a unit with a space
def test_a_unit_the_pack_accepts_is_one_the_matcher_reads(unit: str) -> None:
    """The trust boundary: every unit is refused when the pack loads, or a claim stated with
    it is judged (never silently matched to nothing)."""
    try:
        gate = ProseGate(make_pack(references=False, quantities=_quantities({unit: 1.0})),
                         make_pools())
    except (ValueError, PackError):
        return
    prose = GOOD_PROSE + f" EQ-001 is rated at 21 {unit.strip()} now."
    found = _mismatches(gate, prose, equipment_0_rated_power_kw=30.0)
    assert any((o or "").startswith("21") for o, _ in found), (unit, found)


@pytest.mark.parametrize("units", [{"L·h": 1.0}, {"µg": 0.001, "g": 1.0}])
def test_units_the_scan_reads_otherwise_are_a_setup_error_when_the_gate_is_built(
    units: dict[str, float],
) -> None:
    with pytest.raises(PackError) as err:
        ProseGate(make_pack(references=False, quantities=_quantities(units)), make_pools())
    assert "prose.quantities.0.units" in str(err.value)
    assert str(err.value.file).endswith("pack.toml")

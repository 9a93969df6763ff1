"""ValueGate on the facility pack with real HermiT (one code per test, batch == single)."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.value_gate import ValueGate
from harness.models import Artifact, CellRef, Verdict
from harness.pack import Pack

pytestmark = pytest.mark.java

CLEAN_EQUIPMENT = {
    "equipment_id": "EQ-1", "room_id": "R1", "equipment_type": "CT scanner",
    "standard": "IEC 60601-1", "manufacturer": "Siemens Healthineers", "rated_power_kw": 80,
}


def artifact(aid: str, **equipment: object) -> Artifact:
    return Artifact(id=aid, tables={
        "rooms": [{"room_id": "R1", "room_type": "diagnostic imaging suite",
                   "department": "radiology department", "floor": 2}],
        "equipment": [{**CLEAN_EQUIPMENT, **equipment}],
        "maintenance": [{"task_id": "T1", "equipment_id": "EQ-1",
                         "activity": "electrical safety test", "interval_months": 12}],
    })


@pytest.fixture(scope="module")
def gate(facility_pack: Pack, tmp_path_factory: pytest.TempPathFactory) -> ValueGate:
    return ValueGate.from_pack(facility_pack, tmp_path_factory.mktemp("cache"))


def codes(v: Verdict) -> list[tuple[str, str | None]]:
    return [(c.code, c.location.column) for c in v.critiques]


def test_clean_artifact_is_admitted_whole(gate: ValueGate) -> None:
    (v,) = gate.judge([artifact("clean")])
    assert v.passed and v.critiques == () and v.rejected == ()
    assert v.metrics["admission_rate"] == 1.0
    assert v.metrics["object_cells"] == 6


def test_canonical_ashrae_on_a_ct_scanner_is_disjoint(gate: ValueGate) -> None:
    (v,) = gate.judge([artifact("ashrae", standard="ASHRAE 62.1")])
    assert codes(v) == [("value.disjoint", "standard")]
    c = v.critiques[0]
    assert (c.location.table, c.location.row, c.location.key) == ("equipment", 0, "EQ-1")
    assert c.observed == "ASHRAE 62.1" and c.expected == "ImagingStandard"
    assert "ImagingEquipmentRow ⊑ ∀hasStandard.ImagingStandard" in c.evidence
    assert "HVACStandard ⊓ ImagingStandard ⊑ ⊥ (disjoint)" in c.evidence
    assert "ASHRAE_62_1 : HVACStandard" in c.evidence
    assert c.fix_hint and "IEC 60601-1" in c.fix_hint
    assert v.rejected == (CellRef(table="equipment", row=0, column="standard"),)
    assert not v.passed


def test_wrong_top_level_class_is_disjoint(gate: ValueGate) -> None:
    a = artifact("top").model_copy(update={"tables": {**artifact("top").tables, "maintenance": [
        {"task_id": "T1", "equipment_id": "EQ-1", "activity": "ASHRAE 62.1", "interval_months": 12}
    ]}})
    (v,) = gate.judge([a])
    assert codes(v) == [("value.disjoint", "activity")]
    assert v.critiques[0].expected == "MaintenanceActivity"


def test_placeholder(gate: ValueGate) -> None:
    (v,) = gate.judge([artifact("ph", manufacturer="TBD", standard="")])
    assert codes(v) == [("value.placeholder", "manufacturer"), ("value.placeholder", "standard")]
    assert v.critiques[0].expected == "ImagingManufacturer"  # given the CT scanner
    assert v.metrics["placeholders"] == 2


def test_unknown_with_did_you_mean(gate: ValueGate) -> None:
    (v,) = gate.judge([artifact("unk", manufacturer="Siemens Healthineer")])
    assert codes(v) == [("value.unknown", "manufacturer")]
    assert v.critiques[0].fix_hint and "siemens_healthineers" in v.critiques[0].fix_hint


def test_data_range(gate: ValueGate) -> None:
    (v,) = gate.judge([artifact("rng", rated_power_kw=-5)])
    assert codes(v) == [("value.range", "rated_power_kw")]
    (v,) = gate.judge([artifact("typ", rated_power_kw="lots")])
    assert codes(v) == [("value.range", "rated_power_kw")]


def test_labels_fragments_and_numeric_strings_resolve(gate: ValueGate) -> None:
    (v,) = gate.judge([artifact("frag", standard="IEC_60601_1", rated_power_kw="7.5")])
    assert v.critiques == ()


def test_batch_verdicts_equal_single_verdicts(gate: ValueGate) -> None:
    distinct = [
        artifact("d0"),
        artifact("d1", standard="ASHRAE 62.1"),
        artifact("d2", manufacturer="Carrier Corporation"),
        artifact("d3", equipment_type="water-cooled chiller", standard="ASHRAE 62.1",
                 manufacturer="TBD"),
        artifact("d4", equipment_type="water-cooled chiller", standard="NFPA 70"),
        artifact("d5", manufacturer="nobody"),
    ]
    filler = [artifact(f"f{i}", **({"standard": "ASHRAE 62.1"} if i % 3 == 0 else {}))
              for i in range(200)]
    cohort = filler[:100] + distinct + filler[100:]
    batch = {v.artifact_id: v for v in gate.judge(cohort)}
    assert len(batch) == len(cohort)
    for a in distinct:
        (single,) = gate.judge([a])
        assert batch[a.id] == single
    assert batch["d0"].passed and not batch["d1"].passed


def test_cache_is_reused(facility_pack: Pack, gate: ValueGate, tmp_path: Path) -> None:
    from ontology import HermitRunner, load_pools

    first = ValueGate.from_pack(facility_pack, tmp_path)
    runner = HermitRunner()
    again = ValueGate.from_pack(facility_pack, tmp_path, runner)
    assert runner.calls == 0
    assert again.pools == first.pools == load_pools(facility_pack, tmp_path)

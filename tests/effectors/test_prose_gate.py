"""PROSE_GATE against hand-built pools shaped like the facility ontology.

The builders here (`make_pools`, `make_pack`, `make_artifact`) are shared with the other
effector tests.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from effectors.prose_gate import EntityMatcher, ProseGate, truncation_rules
from harness.models import Artifact
from harness.pack import Pack, PackConfig, load_pack
from harness.pools import ClassInfo, IndividualInfo, Pools, RowRule, normalize_label
from tests.conftest import FACILITY

# individual -> (label, most specific classes)
_INDIVIDUALS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ct_scanner": ("CT scanner", ("ImagingEquipmentType",)),
    "pet_ct_scanner": ("PET-CT scanner", ("ImagingEquipmentType",)),
    "mri_scanner": ("MRI scanner", ("ImagingEquipmentType",)),
    "air_handling_unit": ("air handling unit", ("HVACEquipmentType",)),
    "chiller": ("chiller", ("HVACEquipmentType",)),
    "infusion_pump": ("infusion pump", ("EquipmentType",)),
    "ASHRAE_62_1": ("ASHRAE 62.1", ("HVACStandard",)),
    "ASHRAE_170": ("ASHRAE 170", ("HVACStandard",)),
    "IEC_60601_1": ("IEC 60601-1", ("ImagingStandard",)),
    "IEC_60601_2_44": ("IEC 60601-2-44", ("ImagingStandard",)),
    "siemens_healthineers": ("Siemens Healthineers", ("Manufacturer",)),
    "carrier": ("Carrier", ("Manufacturer",)),
    "imaging_suite": ("imaging suite", ("RoomType",)),
    "plant_room": ("plant room", ("RoomType",)),
    "radiology": ("Radiology", ("Department",)),
    "estates": ("Estates", ("Department",)),
    "calibration": ("calibration", ("Activity",)),
    "filter_change": ("filter change", ("Activity",)),
}
_SUPER = {
    "ImagingEquipmentType": ("EquipmentType",),
    "HVACEquipmentType": ("EquipmentType",),
    "ImagingStandard": ("Standard",),
    "HVACStandard": ("Standard",),
}
_DISJOINT = {
    "ImagingStandard": ("HVACStandard",),
    "HVACStandard": ("ImagingStandard",),
    "ImagingEquipmentType": ("HVACEquipmentType",),
    "HVACEquipmentType": ("ImagingEquipmentType",),
}


def make_pools() -> Pools:
    """Pools shaped like the facility ontology (imaging rows need imaging standards...)."""
    individuals: dict[str, IndividualInfo] = {}
    members: dict[str, list[str]] = {}
    for name, (label, most_specific) in _INDIVIDUALS.items():
        types = sorted({c for cls in most_specific for c in (cls, *_SUPER.get(cls, ()))})
        individuals[name] = IndividualInfo(name=name, labels=(label,), types=tuple(types))
        for t in types:
            members.setdefault(t, []).append(name)
    class_names = set(members) | set(_SUPER)
    classes = {
        c: ClassInfo(
            name=c,
            members=tuple(sorted(members.get(c, []))),
            superclasses=_SUPER.get(c, ()),
            disjoint_with=_DISJOINT.get(c, ()),
        )
        for c in sorted(class_names)
    }
    rules = (
        RowRule(row_class="EquipmentRow", base_class="EquipmentRow",
                require={"hasEquipmentType": "EquipmentType", "hasStandard": "Standard",
                         "hasManufacturer": "Manufacturer"}),
        RowRule(row_class="ImagingEquipmentRow", base_class="EquipmentRow",
                when={"hasEquipmentType": "ImagingEquipmentType"},
                require={"hasStandard": "ImagingStandard"},
                axioms=("ImagingEquipmentRow ⊑ ∀hasStandard.ImagingStandard",)),
        RowRule(row_class="HVACEquipmentRow", base_class="EquipmentRow",
                when={"hasEquipmentType": "HVACEquipmentType"},
                require={"hasStandard": "HVACStandard"}),
        RowRule(row_class="RoomRow", base_class="RoomRow",
                require={"hasRoomType": "RoomType", "hasDepartment": "Department"}),
        RowRule(row_class="MaintenanceRow", base_class="MaintenanceRow",
                require={"hasActivity": "Activity"}),
    )
    return Pools(ontology_hash="test", individuals=individuals, classes=classes, row_rules=rules)


def make_pack(*, references: bool = True, **prose: Any) -> Pack:
    """The facility pack (its real pack.toml, spine.sql and references), prose settings
    overridable; `references=False` names a folder without samples (no length check)."""
    raw = tomllib.loads((FACILITY / "pack.toml").read_text(encoding="utf-8"))
    raw["prose"].update(prose)
    if not references:
        raw["files"]["references"] = "no-such-references"
    return Pack(root=FACILITY, config=PackConfig.model_validate(raw))


GOOD_PROSE = (
    "The CT scanner in room R-101 complies with IEC 60601-1. "
    "The air handling unit in the plant room follows ASHRAE 62.1."
)


def make_artifact(prose: str = GOOD_PROSE, **changes: Any) -> Artifact:
    """Two rooms, a CT scanner and an air handling unit, two maintenance tasks."""
    equipment = [
        {"equipment_id": "EQ-001", "room_id": "R-101", "equipment_type": "CT scanner",
         "standard": "IEC 60601-1", "manufacturer": "Siemens Healthineers",
         "rated_power_kw": 80.0},
        {"equipment_id": "EQ-002", "room_id": "R-B01", "equipment_type": "air handling unit",
         "standard": "ASHRAE 62.1", "manufacturer": "Carrier", "rated_power_kw": 15.0},
    ]
    for key, value in changes.items():  # e.g. equipment_0_standard="ASHRAE 62.1"
        _, row, column = key.split("_", 2)
        equipment[int(row)][column] = value
    return Artifact(
        id="chapter-01",
        tables={
            "rooms": [
                {"room_id": "R-101", "room_type": "imaging suite", "department": "Radiology",
                 "floor": 1},
                {"room_id": "R-B01", "room_type": "plant room", "department": "Estates",
                 "floor": -1},
            ],
            "equipment": equipment,
            "maintenance": [
                {"task_id": "T-1", "equipment_id": "EQ-001", "activity": "calibration",
                 "interval_months": 12},
                {"task_id": "T-2", "equipment_id": "EQ-002", "activity": "filter change",
                 "interval_months": 3},
            ],
        },
        prose=prose,
    )


@pytest.fixture(scope="module")
def gate() -> ProseGate:
    return ProseGate(make_pack(references=False), make_pools())


def codes(gate: ProseGate, artifact: Artifact) -> list[str]:
    return [c.code for c in gate.judge([artifact])[0].critiques]


# -- matcher ---------------------------------------------------------------------------


def test_matcher_finds_labels_and_maps_spans_back() -> None:
    m = EntityMatcher(make_pools())
    text = "A ct  SCANNER, per IEC 60601-1."
    found = m.find(text)
    assert [f.individual for f in found] == ["ct_scanner", "IEC_60601_1"]
    assert [text[f.start : f.end] for f in found] == ["ct  SCANNER", "IEC 60601-1"]


def test_matcher_longest_match_first() -> None:
    m = EntityMatcher(make_pools())
    assert [x.individual for x in m.find("The PET-CT scanner and the CT scanner.")] == [
        "pet_ct_scanner", "ct_scanner"]
    assert m.mentioned("It follows IEC 60601-2-44 closely.") == {"IEC_60601_2_44"}


def test_matcher_reads_iri_fragments_and_plurals() -> None:
    m = EntityMatcher(make_pools())
    assert m.mentioned("see ASHRAE_62_1 and ashrae 62 1") == {"ASHRAE_62_1"}
    assert m.mentioned("Two CT scanners and three air handling units.") == {
        "ct_scanner", "air_handling_unit"}


def test_matcher_matches_whole_words_only() -> None:
    m = EntityMatcher(make_pools())
    assert m.mentioned("CTscanner, ACT scanner, chillers2, carrierX of estatesX") == set()


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(st.sampled_from(sorted(_INDIVIDUALS)), min_size=1, max_size=5),
    filler=st.lists(st.sampled_from(["the", "is", "near", "42", ",", ";", "room"]), max_size=3),
)
def test_matcher_spans_normalise_to_a_label(names: list[str], filler: list[str]) -> None:
    pools = make_pools()
    m = EntityMatcher(pools)
    text = " zz ".join(" ".join([*filler, pools.label(n)]) for n in names) + "."
    found = m.find(text)
    assert [f.individual for f in found] == names
    for f in found:
        assert normalize_label(text[f.start : f.end]) == normalize_label(pools.label(f.individual))


# -- the gate --------------------------------------------------------------------------


def test_clean_prose_passes_with_metrics(gate: ProseGate) -> None:
    (v,) = gate.judge([make_artifact()])
    assert v.passed and v.critiques == () and v.rejected == ()
    assert v.metrics["coverage"] == 1.0
    assert v.metrics["mentions"] == 5  # CT scanner, IEC, air handling unit, plant room, ASHRAE
    assert v.metrics["unknown_entities"] == 0 and v.metrics["missing_entities"] == 0
    assert v.metrics["words"] == len(GOOD_PROSE.split())


def test_unknown_entity_once_per_individual_with_first_span(gate: ProseGate) -> None:
    prose = GOOD_PROSE + " An MRI scanner is planned. Another MRI scanner may follow."
    (v,) = gate.judge([make_artifact(prose)])
    (c,) = v.critiques
    assert c.code == "prose.unknown_entity" and c.observed == "mri_scanner"
    assert c.location.span is not None
    start, end = c.location.span
    assert prose[start:end] == "MRI scanner" and start == prose.index("MRI")
    assert c.evidence == ("An MRI scanner is planned.",)
    assert v.rejected == () and v.metrics["unknown_entities"] == 1


def test_longest_match_does_not_count_the_shorter_entity(gate: ProseGate) -> None:
    prose = GOOD_PROSE.replace("The CT scanner", "The PET-CT scanner")
    (v,) = gate.judge([make_artifact(prose)])
    assert sorted((c.code, c.observed) for c in v.critiques) == [
        ("prose.missing_entity", "ct_scanner"), ("prose.unknown_entity", "pet_ct_scanner")]


def test_missing_entity_names_the_key_and_its_label(gate: ProseGate) -> None:
    (v,) = gate.judge([make_artifact(GOOD_PROSE.replace(" follows ASHRAE 62.1", " is new"))])
    (c,) = v.critiques
    assert (c.code, c.observed, c.expected) == ("prose.missing_entity", "ASHRAE_62_1",
                                                "ASHRAE 62.1")
    assert v.metrics["coverage"] == 0.75


def test_entities_of_non_key_columns_may_be_mentioned_but_need_not_be(gate: ProseGate) -> None:
    assert codes(gate, make_artifact(GOOD_PROSE + " Carrier serviced it.")) == []
    assert codes(gate, make_artifact(GOOD_PROSE.replace(" in the plant room", ""))) == []


def test_min_coverage_tolerates_some_missing_keys() -> None:
    gate = ProseGate(make_pack(references=False, min_coverage=0.5), make_pools())
    prose = "The CT scanner complies with IEC 60601-1. The air handling unit is new."
    assert codes(gate, make_artifact(prose)) == []
    assert codes(gate, make_artifact("The CT scanner is new.")) == ["prose.missing_entity"] * 3


def test_empty_prose_misses_every_key_and_is_not_truncated(gate: ProseGate) -> None:
    (v,) = gate.judge([make_artifact("")])
    assert [c.code for c in v.critiques] == ["prose.missing_entity"] * 4
    assert [c.observed for c in v.critiques] == [
        "ct_scanner", "air_handling_unit", "IEC_60601_1", "ASHRAE_62_1"]
    assert v.metrics["coverage"] == 0.0 and v.metrics["words"] == 0


def test_disabled_prose_passes_anything() -> None:
    gate = ProseGate(make_pack(enabled=False), make_pools())
    assert codes(gate, make_artifact("An MRI scanner with")) == []


@pytest.mark.parametrize(
    ("ending", "rule"),
    [
        (" It is serviced by", "no terminal punctuation"),
        (" It is serviced and", "connector word 'and'"),
        (" It is fitted with.", "connector word 'with'"),
        (" More to follow...", "ellipsis"),
        (" More to follow…", "ellipsis"),
        (" It (mostly works.", "unbalanced ()"),
        (' He said "it works.', 'unbalanced "'),
        (" Done,", "no terminal punctuation"),
    ],
)
def test_truncation_rules(gate: ProseGate, ending: str, rule: str) -> None:
    prose = GOOD_PROSE + ending
    (v,) = gate.judge([make_artifact(prose)])
    (c,) = v.critiques
    assert c.code == "prose.truncated"
    assert any(rule in e for e in c.evidence)
    assert c.observed == prose.rstrip()[-40:]


@pytest.mark.parametrize(
    "ending", ["", " Is it?", " It works!", ' He said "it works."', " (It works.)",
               " It is what it was built for.", " It is fine.\n\n"],
)
def test_proper_endings_are_not_truncated(ending: str) -> None:
    assert truncation_rules(GOOD_PROSE + ending) == []


def test_judges_a_batch_in_order(gate: ProseGate) -> None:
    a = make_artifact()
    b = make_artifact("").model_copy(update={"id": "chapter-02"})
    verdicts = gate.judge([a, b])
    assert [v.artifact_id for v in verdicts] == ["chapter-01", "chapter-02"]
    assert [v.passed for v in verdicts] == [True, False]
    assert all(v.gate == "prose_gate" for v in verdicts)


# -- against the real facility ontology (HermiT) ---------------------------------------


def read_corpus(name: str) -> list[dict[str, Any]]:
    path = FACILITY / "corpus" / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def real_pools(tmp_path_factory: pytest.TempPathFactory) -> Pools:
    from ontology import load_pools

    return load_pools(load_pack(FACILITY), tmp_path_factory.mktemp("pools"))


@pytest.mark.java
def test_real_gate_finds_exactly_the_labelled_prose_flaws(real_pools: Pools) -> None:
    gate = ProseGate(load_pack(FACILITY), real_pools)
    demo = [Artifact.model_validate(d) for d in read_corpus("demo.jsonl")]
    found = {
        (a.id, c.code, c.observed if c.code == "prose.truncated" else c.location.span)
        for a, v in zip(demo, gate.judge(demo), strict=True) for c in v.critiques
    }
    truth = {
        (t["artifact_id"], t["code"],
         t["observed"] if t["code"] == "prose.truncated" else tuple(t["span"]))
        for t in read_corpus("demo.truth.jsonl") if t["code"].startswith("prose.")
    }
    assert truth and found == truth
    clean = [Artifact.model_validate(d) for d in read_corpus("demo.clean.jsonl")]
    assert all(v.passed for v in gate.judge(clean))

"""PROSE_GATE against hand-built pools shaped like the facility ontology.

The builders here (`make_pools`, `make_pack`, `make_artifact`) are shared with the other
effector tests.
"""

from __future__ import annotations

import functools
import json
import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from effectors.prose.claims import ArtifactIndex
from effectors.prose.matcher import EntityMatcher
from effectors.prose.text import truncation_rules
from effectors.prose_gate import ProseGate
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


@functools.cache
def an_index() -> ArtifactIndex:
    """An artifact's index, for the parts that only carry one (a real one: the compiled
    modules check the types of what they are given)."""
    return ProseGate(make_pack(), make_pools()).claims.index(make_artifact())


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


# -- value claims ----------------------------------------------------------------------


def _mismatches(gate: ProseGate, prose: str, **changes: Any) -> list[tuple[str | None, str]]:
    (v,) = gate.judge([make_artifact(prose, **changes)])
    return [(c.observed, c.expected or "") for c in v.critiques]


@pytest.mark.parametrize(
    "sentence",
    [
        "EQ-001 is rated at 80 kW.",
        "EQ-001 draws 80.4 kW.",  # within the 1% tolerance
        "The CT scanner is rated at 80 kilowatts.",
        "EQ-002 draws 0.015 MW.",
        "Rated at 15 kW, EQ-002 sits in the plant room.",
        "EQ-001 complies with IEC 60601-1.",
        "The CT scanner in room R-101 complies with IEC 60601-1.",
        "EQ-002 is installed in room R-B01.",
        "EQ-002 is installed in the plant room.",
        "EQ-001 is made by Siemens Healthineers.",
        "Room R-B01 is on floor -1.",
        "Task T-2, the filter change, is performed on EQ-002 every 3 months.",
        "The register lists 2 items rated at 95 kW in all.",  # no row named: not judged
        "EQ-001 comes from the Radiology department.",  # a department is no manufacturer
    ],
)
def test_true_claims_pass(gate: ProseGate, sentence: str) -> None:
    assert _mismatches(gate, GOOD_PROSE + " " + sentence) == []


@pytest.mark.parametrize(
    ("sentence", "observed", "held"),
    [
        ("EQ-001 is rated at 120 kW.", "120 kW", "EQ-001: 80"),
        ("EQ-002 draws 0.5 MW.", "0.5 MW", "EQ-002: 15"),
        ("The air handling unit complies with IEC 60601-1.", "complies with IEC 60601-1",
         "EQ-002: ASHRAE 62.1"),
        ("EQ-001 is installed in room R-B01.", "installed in room R-B01", "EQ-001: R-101"),
        ("EQ-001 is installed in the plant room.", "installed in the plant room",
         "EQ-001: R-101"),
        ("EQ-002 is made by Siemens Healthineers.", "made by Siemens Healthineers",
         "EQ-002: Carrier"),
        ("Room R-101 is on floor 3.", "floor 3", "R-101: 1"),
        ("Task T-1 recurs every 6 months.", "6 months", "T-1: 12"),
        ("Task T-1 is performed on EQ-002.", "performed on EQ-002", "T-1: EQ-001"),
    ],
)
def test_false_claims_are_value_mismatches(
    gate: ProseGate, sentence: str, observed: str, held: str
) -> None:
    prose = GOOD_PROSE + " " + sentence
    (v,) = gate.judge([make_artifact(prose)])
    (c,) = v.critiques
    assert (c.code, c.observed, c.expected) == ("prose.value_mismatch", observed, held)
    assert c.location.span is not None and prose[slice(*c.location.span)] == observed
    assert c.location.cell() is None and v.rejected == ()  # the prose is wrong, not a cell
    assert c.evidence[0] == sentence
    assert v.metrics["value_mismatches"] == 1


def test_the_nearest_mentions_name_the_row_of_a_claim(gate: ProseGate) -> None:
    prose = ("EQ-001 sits beside the air handling unit, which complies with ASHRAE 62.1. "
             "The CT scanner complies with IEC 60601-1 and the air handling unit with "
             "ASHRAE 62.1.")
    assert _mismatches(gate, prose) == []
    bad = "The CT scanner and the air handling unit complies with IEC 60601-1."
    assert [o for o, _ in _mismatches(gate, GOOD_PROSE + " " + bad)] == [
        "complies with IEC 60601-1"]


def test_units_are_case_sensitive_and_claims_inside_labels_are_not_numbers(
    gate: ProseGate,
) -> None:
    assert _mismatches(gate, GOOD_PROSE + " EQ-001 uses 500 mW in standby.") == []
    assert _mismatches(gate, GOOD_PROSE + " EQ-002 follows ASHRAE 62.1 kW rules.") == []


def test_tolerance_comes_from_the_pack() -> None:
    loose = ProseGate(make_pack(references=False, value_tolerance=0.5), make_pools())
    assert _mismatches(loose, GOOD_PROSE + " EQ-001 is rated at 110 kW.") == []


def test_pack_rejects_claim_rules_on_unbound_or_wrong_kind_columns() -> None:
    from pydantic import ValidationError

    for rule in ({"quantities": [{"column": "equipment.standard", "units": {"kW": 1.0}}]},
                 {"quantities": [{"column": "equipment.rated_power_kw"}]},
                 {"relations": [{"column": "equipment.colour", "phrases": ["painted"]}]},
                 {"relations": [{"column": "equipment.standard", "phrases": []}]},
                 {"length_band": [0.9, 0.1]}):
        with pytest.raises(ValidationError):
            make_pack(**rule)


# -- length ----------------------------------------------------------------------------


def test_length_band_comes_from_the_reference_percentiles() -> None:
    from effectors.prose.length import LengthBand, percentile

    assert percentile([10, 20, 30, 40], 0.5) == 25.0
    band = LengthBand.from_references(["a " * 10, "a " * 20, "a " * 30], (0.0, 1.0))
    assert band is not None and (band.low, band.high) == (10, 30)
    assert LengthBand.from_references([], (0.0, 1.0)) is None
    gate = ProseGate(make_pack(length_band=[0.0, 1.0]), make_pools())
    assert gate.band is not None and gate.band.low >= 40 and gate.band.high >= 800


@pytest.mark.parametrize(("words", "ok"), [(10, False), (60, True), (700, True), (2000, False)])
def test_prose_length_against_the_band(words: int, ok: bool) -> None:
    gate = ProseGate(make_pack(), make_pools())
    assert gate.band is not None
    filler = " ".join(["Nothing further is noted here."] * (words // 5))
    prose = GOOD_PROSE + " " + filler
    (v,) = gate.judge([make_artifact(prose)])
    found = [c for c in v.critiques if c.code == "prose.length"]
    assert (found == []) is ok
    if found:
        assert found[0].observed == f"{len(prose.split())} words"
        assert "percentiles" in (found[0].expected or "")


# -- truncation of lists and tables ----------------------------------------------------


@pytest.mark.parametrize(
    ("ending", "rule"),
    [
        ("\n\nActions:\n- check access;\n- update the rec", "last item lacks"),
        ("\n\nActions:\n- check access;\n-", "empty item"),
        ("\n\n| task | owner |\n|---|---|\n| T-1 | estates |\n| T-2 | est", "cut off"),
        ("\n\n| task | owner |\n|---|---|\n| T-1 |", "1 of 2 cells"),
        (" The open actions are:", "colon"),
        (" The steps are: 1) isolate, 2) test, 3)", "list marker"),
    ],
)
def test_cut_lists_and_tables_are_truncations(ending: str, rule: str) -> None:
    fired = truncation_rules(GOOD_PROSE + ending)
    assert any(rule in f for f in fired), fired


@pytest.mark.parametrize(
    "ending",
    [
        "\n\nActions:\n- check access;\n- update the records.",
        "\n\nActions:\n- check access\n- update the records",
        "\n\n| task | owner |\n|---|---|\n| T-1 | estates |",
        " It is on floor 3.",
        " It was serviced (see note 3).",
    ],
)
def test_complete_lists_and_tables_end_properly(ending: str) -> None:
    assert truncation_rules(GOOD_PROSE + ending) == []


# -- untrusted text --------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ct scanner IEC 60601-1 air handling unit.,-()\"")),
               max_size=120))
def test_ascii_and_general_paths_find_the_same_mentions(text: str) -> None:
    m = EntityMatcher(make_pools())
    # a trailing accented word forces the general path (apart: "1é" would be another word)
    assert m.find(text) == m.find(text + " é")


def test_huge_and_odd_unicode_prose_is_judged_safely(gate: ProseGate) -> None:
    odd = "ＣＴ ｓｃａｎｎｅｒ\u200b complies with IEC 60601‑1 ﬁlter 😀 " * 2000
    (v,) = gate.judge([make_artifact(GOOD_PROSE + " " + odd + "(" * 5000)])
    assert not v.crashed
    assert "prose.truncated" in {c.code for c in v.critiques}
    m = EntityMatcher(make_pools())
    assert m.mentioned("ＣＴ ｓｃａｎｎｅｒ") == {"ct_scanner"}


# -- fast paths agree with the plain definitions they stand for -------------------------

_SHAPES = ["EQ-", "R-", "R-B", "R-1-", "Q-", "MT-", "T-", "A B", "x_"]
_ODD = st.text(alphabet=st.sampled_from(list("EQRMTBAx_-– 0123 .,\n(")), max_size=60)


@settings(max_examples=150, deadline=None)
@given(text=_ODD, shapes=st.sets(st.sampled_from(_SHAPES), min_size=1, max_size=4))
def test_key_finder_finds_what_one_alternation_finds(text: str, shapes: set[str]) -> None:
    import re

    from effectors.prose.claims import _KeyFinder

    prefixes = sorted(shapes, key=lambda x: (-len(x), x))
    one = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, prefixes))
                     + r")[0-9]*(?!\w|-\w)")
    assert _KeyFinder(prefixes).spans(text) == [m.span() for m in one.finditer(text)]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\t\"')”:1-*•(")), max_size=60))
def test_text_fast_paths_agree_with_their_definitions(text: str) -> None:
    import re

    from effectors.prose import text as T
    from effectors.prose.length import word_count

    assert word_count(text) == len(text.split())
    spans, start = [], 0  # the sentence splitter as first written
    for m in re.finditer(r"([.!?][\"')\]”’»]*)\s+|\n\s*\n", text):
        spans.append((start, m.end(1) if m.group(1) else m.start()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    assert T.Sentences(text).spans == spans
    stripped = text.rstrip()
    if stripped:
        tokens = T._TOKEN.findall(stripped, max(0, len(stripped) - 200))
        assert T._last_token(stripped) == (tokens[-1] if tokens else "")
        if T._EMPTY_MARKER.search(stripped, max(0, len(stripped) - 400)):
            assert T._may_end_at_marker(stripped)


_WORDS = st.lists(st.sampled_from(
    ["the", "this", "that", "othe", "chiller", "fan", "coil", "fan-coil", "in", "total",
     "register", "more", "than", "every", "e.g", "such as", "per", "while", "but", "whereas",
     "48", "1,200", "0.5", "-3", "−2", "R-12", "kW", ";", ":", ".", ",", "-", "_", "é"]),
    max_size=24)
_SEPS = st.sampled_from([" ", " ", " ", "  ", "\n", "\t", "-", "", "\u00a0"])


@settings(max_examples=200, deadline=None)
@given(words=_WORDS, seps=st.lists(_SEPS, min_size=24, max_size=24))
def test_speed_prefilters_agree_with_what_they_skip(words: list[str], seps: list[str]) -> None:
    """The prose gate's prefilters (issue 20, speed) find what the plain scans find."""
    import re

    from effectors.prose import claims as C
    from effectors.prose import scope as S
    from effectors.prose import text as T
    from effectors.prose.aggregate import AggregateChecker
    from effectors.prose.subject import breaks

    text = "".join(w + sep for w, sep in zip(words, seps, strict=False))
    low = text.lower()
    # aggregate cues: tried only where a phrase's first word starts
    agg = AggregateChecker(load_pack(FACILITY))
    assert agg._lower is not None
    assert agg._starts(agg._lower, low) == [m.start() for m in agg._lower.finditer(low)]
    # one-word heads after a determiner: one scan for the determiners
    for head in ("chiller", "fan", "coil", "fan-coil"):
        found = S._after_determiners(low, {head: "x"})
        assert [(s, e) for s, e, _ in found] == S._finds(low, head, None)
    # clause breaks: looked for only where ";", ":", "but", "while" or "whereas" occurs
    memo = C._Memo(text, an_index())
    assert memo.cuts(0, 0, len(text)) == breaks(text, 0, len(text))
    # a unit's number: searched from the run of number characters before it
    for m in re.finditer("kW", text):
        lo = max(0, m.start() - 60)
        plain = C._NUM_BEFORE.search(text, lo, m.start())
        found = C._number_before(C._NUM_BEFORE, text, lo, m.start())
        if plain is not None:
            assert found == (plain.start(1), plain.group(1))
    # "ends with e.g." searched only where such an ending can start
    stripped = text.rstrip()
    if stripped:
        plain = T._DANGLING.search(stripped, max(0, len(stripped) - 400))
        fired = [r for r in truncation_rules(stripped) if r.startswith("ends with '")
                 or r.startswith('ends with "')]
        assert fired == ([f"ends with {plain.group(1)!r}: what it introduces never follows"]
                         if plain else [])


def _scan_apart(m: EntityMatcher, text: str, cues: Any) -> tuple[list[Any], list[Any]]:
    """Mentions, and cue hits outside them, found by two scans (no `_Combined`)."""
    from effectors.prose.matcher import _FOLD, Cue, _inside

    mentions = m.find(text)
    low = " " + text.translate(_FOLD)
    hits = [Cue(cues.payload(x.group(1)), x.start(1) - 1, x.end(1) - 1)
            for x in cues.regex.finditer(low)]
    return mentions, [h for h in hits if not _inside(mentions, h.start)]


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(["ct", "scanner", "scanners", "in", "room", "plant", "the",
                                 "filter", "change", "changes", "complies", "with", "iec",
                                 "60601", "1", "made", "by", "carrier", "X-", ",", "."]),
                max_size=24))
def test_one_pass_scan_finds_what_two_scans_find(words: list[str]) -> None:
    from effectors.prose.matcher import CueSet

    m = EntityMatcher(make_pools())
    text = " ".join(words)
    # benign cues lie inside labels ("scanner"); risky ones overlap one ("in the plant");
    # the one-pass scan falls back to two scans on those
    for phrases in (["complies with", "made by", "scanner", "change"],
                    ["complies with", "in the plant", "room complies", "filter", "ct"]):
        cues = CueSet((p, k) for k, p in enumerate(phrases))
        assert m.scan(text, cues) == _scan_apart(m, text, cues)


# the Aho-Corasick automaton (ahocorasick-rs) against the regex it stands for: separators
# runs ("ct, scanner": the regex joins words across them), words cut or run on ("scannerx",
# "handlingx"), plurals, prefixes of labels that never complete ("air handling the")
_AC_WORDS = ["ct", "scanner", "scanners", "scannerx", "in", "room", "plant", "the", "pet",
             "air", "handling", "handlingx", "unit", "units", "filter", "change", "changes",
             "complies", "with", "iec", "60601", "1", "made", "by", "carrier", "x"]
_AC_SEPS = [" ", " ", " ", ", ", ". ", "  ", "-", " (", ") ", "\n\n", " - "]


def _ac_matchers() -> tuple[EntityMatcher, EntityMatcher]:
    pytest.importorskip("ahocorasick_rs")
    fast, slow = EntityMatcher(make_pools()), EntityMatcher(make_pools(), automaton=False)
    assert fast._automaton is not None and slow._automaton is None
    return fast, slow


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_AC_WORDS), st.sampled_from(_AC_SEPS)), max_size=30))
def test_automaton_finds_what_the_regex_finds(parts: list[tuple[str, str]]) -> None:
    from effectors.prose.matcher import CueSet

    fast, slow = _ac_matchers()
    text = "".join(w + s for w, s in parts)
    for t in (text, text.rstrip(), text.upper()):
        assert fast.find(t) == slow.find(t)
        for phrases in (["complies with", "made by", "scanner", "change"],
                        ["complies with", "in the plant", "room complies", "filter", "ct"]):
            cues = CueSet((p, k) for k, p in enumerate(phrases))
            assert fast.scan(t, cues) == slow.scan(t, cues)
            assert fast.anchors(t, cues) == slow.anchors(t, cues)


@pytest.mark.parametrize("text", [
    "The CT, scanner in the air  handling unit.",  # words joined across runs
    "A CT scannerx then the CT scanner.",  # a longer label cut inside a word
    "The air handlingx unit and the air, handling; units.",  # a prefix cut inside a word
    "The air handling the unit, then the air handling. Then air.",  # prefixes, no label
    "PET-CT scanners, CT scanners and PET CT, scanner.",  # plurals, runs inside labels
])
def test_automaton_edge_cases_match_the_regex(text: str) -> None:
    fast, slow = _ac_matchers()
    assert fast.find(text) == slow.find(text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_AC_WORDS), st.sampled_from(_AC_SEPS)), max_size=30))
def test_automaton_as_an_nfa_finds_what_the_regex_finds(parts: list[tuple[str, str]]) -> None:
    """The automaton is a DFA while its patterns are small, else a contiguous NFA: the same
    matches either way."""
    from effectors.prose import matcher

    _, slow = _ac_matchers()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matcher, "_DFA_BYTES", 0)
        fast = EntityMatcher(make_pools())
    text = "".join(w + s for w, s in parts)
    for t in (text, text.upper()):
        assert fast.find(t) == slow.find(t)


def test_automaton_finds_what_the_regex_finds_on_the_benchmark(real_pools: Pools) -> None:
    from bench.prose_gate import deterministic_pack, long_artifacts

    pytest.importorskip("ahocorasick_rs")
    pack = deterministic_pack()
    fast, slow = ProseGate(pack, real_pools), ProseGate(pack, real_pools)
    slow.matcher = EntityMatcher(real_pools, automaton=False)
    cues = fast.claims.cues
    assert cues is not None
    for a in long_artifacts(60):
        assert fast.matcher.anchors(a.prose, cues) == slow.matcher.anchors(a.prose, cues)
        assert fast.matcher.find(a.prose) == slow.matcher.find(a.prose)

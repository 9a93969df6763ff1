"""PROSE_GATE on prose as people and models write it (issue 20), one class of writing per
test, against the real facility pack and ontology: aliases and acronyms, plurals, short
references, negation and history, quantities in words and bounds, claim attribution,
truncation, joined and aggregate claims."""

from __future__ import annotations

from typing import Any

import pytest

from effectors.prose.matcher import EntityMatcher
from effectors.prose_gate import ProseGate
from harness.models import Artifact
from harness.pack import load_pack
from harness.pools import Pools
from tests.conftest import FACILITY

pytestmark = pytest.mark.java


@pytest.fixture(scope="module")
def real_pools(tmp_path_factory: pytest.TempPathFactory) -> Pools:
    from ontology import load_pools

    return load_pools(load_pack(FACILITY), tmp_path_factory.mktemp("pools"))


@pytest.fixture(scope="module")
def gate(real_pools: Pools) -> ProseGate:
    return ProseGate(load_pack(FACILITY), real_pools)


ROOMS = [
    {
        "room_id": "R-B01",
        "room_type": "mechanical plant room",
        "department": "facilities engineering department",
        "floor": -1,
    },
    {
        "room_id": "R-301",
        "room_type": "diagnostic imaging suite",
        "department": "radiology department",
        "floor": 3,
    },
]
EQUIPMENT = [
    {
        "equipment_id": "EQ-001",
        "room_id": "R-B01",
        "equipment_type": "air handling unit",
        "standard": "ASHRAE 170",
        "manufacturer": "Trane Technologies",
        "rated_power_kw": 60.0,
    },
    {
        "equipment_id": "EQ-002",
        "room_id": "R-B01",
        "equipment_type": "water-cooled chiller",
        "standard": "ASHRAE 15",
        "manufacturer": "Daikin Applied",
        "rated_power_kw": 420.0,
    },
    {
        "equipment_id": "EQ-003",
        "room_id": "R-301",
        "equipment_type": "VAV box",
        "standard": "ASHRAE 62.1",
        "manufacturer": "Trane Technologies",
        "rated_power_kw": 0.3,
    },
]
MAINTENANCE = [
    {
        "task_id": "MT-001",
        "equipment_id": "EQ-001",
        "activity": "filter replacement",
        "interval_months": 6,
    },
    {
        "task_id": "MT-002",
        "equipment_id": "EQ-002",
        "activity": "refrigerant leak check",
        "interval_months": 12,
    },
]
# names every equipment type and standard (coverage), with no value claim
BASE = "The AHU follows ASHRAE 170, the water-cooled chiller ASHRAE 15 and the VAV box ASHRAE 62.1."


def artifact(prose: str, **rated: float) -> Artifact:
    equipment = [dict(e) for e in EQUIPMENT]
    for row in equipment:
        key = str(row["equipment_id"]).replace("-", "_")
        if key in rated:
            row["rated_power_kw"] = rated[key]
    tables: dict[str, Any] = {"rooms": ROOMS, "equipment": equipment, "maintenance": MAINTENANCE}
    return Artifact.model_validate({"id": "nat-t", "tables": tables, "prose": prose})


def found(gate: ProseGate, prose: str, **rated: float) -> list[tuple[str, str | None]]:
    (v,) = gate.judge([artifact(prose, **rated)])
    return [(c.code, c.observed) for c in v.critiques if c.code != "prose.length"]


# -- mentions --------------------------------------------------------------------------


def test_pack_aliases_and_acronyms_are_mentions(gate: ProseGate) -> None:
    prose = (
        "The AHU follows ASHRAE 170. The water-cooled chiller follows ASHRAE 15. "
        "The VAV box follows ASHRAE 62.1."
    )
    assert found(gate, prose) == []
    # an acronym of an entity the tables do not hold is an unknown entity, like its label
    assert found(gate, prose + " A UPS was added last month.") == [
        ("prose.unknown_entity", "uninterruptible_power_supply")
    ]


def test_es_plurals_read_as_the_label(real_pools: Pools) -> None:
    m = EntityMatcher(real_pools)
    text = "two VAV boxes, three automatic transfer switches and the AHUs"
    assert [x.individual for x in m.find(text)] == [
        "vav_box",
        "automatic_transfer_switch",
        "air_handling_unit",
    ]
    assert EntityMatcher(real_pools, automaton=False).find(text) == m.find(text)


def test_abbreviated_words_of_a_label_are_mentions(real_pools: Pools) -> None:
    plain = EntityMatcher(real_pools)
    m = EntityMatcher(real_pools, abbreviations={"Std": "Standard"})
    assert plain.mentioned("built to ASHRAE Std. 170") == set()
    assert m.mentioned("built to ASHRAE Std. 170") == {"ASHRAE_170"}


def test_the_head_word_names_the_one_entity_of_the_tables_with_it(gate: ProseGate) -> None:
    prose = "The AHU follows ASHRAE 170; the chiller follows ASHRAE 15, the VAV box ASHRAE 62.1."
    assert found(gate, prose) == []
    # "the transformer" names nothing the tables hold: neither a mention nor unknown
    assert found(gate, prose + " The transformer is elsewhere.") == []
    # a short reference is a subject for a claim
    assert found(gate, prose + " The chiller draws 300 kW.") == [("prose.value_mismatch", "300 kW")]


@pytest.mark.parametrize(
    "sentence",
    [
        "There is no MRI scanner on this site.",
        "Unlike a CT scanner, none of these assets needs a dedicated supply.",
        "The old hot water boiler was removed in 2019.",
        "It replaced a diesel generator.",
        "The register does not include a UPS.",
        "(The cooling tower in the east wing is outside the scope of this register.)",
        "No fan coil units are installed here.",
    ],
)
def test_negated_contrasted_and_past_mentions_are_not_unknown(
    gate: ProseGate, sentence: str
) -> None:
    assert found(gate, BASE + " " + sentence) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "A new MRI scanner was installed next to it.",
        "The room also houses a cooling tower, which is not yet commissioned.",
    ],
)
def test_asserted_mentions_are_still_unknown(gate: ProseGate, sentence: str) -> None:
    assert [c for c, _ in found(gate, BASE + " " + sentence)] == ["prose.unknown_entity"]


# -- quantities ------------------------------------------------------------------------


def mismatches(gate: ProseGate, sentence: str, **rated: float) -> list[str | None]:
    return [
        o for c, o in found(gate, BASE + " " + sentence, **rated) if c == "prose.value_mismatch"
    ]


@pytest.mark.parametrize(
    ("sentence", "wrong"),
    [
        # number words, ordinals, named values and frequency words
        ("EQ-001 draws sixty kilowatts.", []),
        ("EQ-001 draws ninety kilowatts.", ["ninety kilowatts"]),
        ("EQ-002 is rated at four hundred and twenty kW.", []),
        ("EQ-002 is rated at one hundred and thirty kW.", ["one hundred and thirty kW"]),
        ("Room R-301 is on the third floor.", []),
        ("Room R-301 is on the 5th floor.", ["5th floor"]),
        ("Room R-B01 is on basement level 1.", []),
        ("Room R-B01 is on the ground floor.", ["ground floor"]),
        ("Task MT-001 is done twice a year.", []),
        ("Task MT-001 is done every six months.", []),
        ("Task MT-001 is done annually.", ["annually"]),
        # unit spelling and case ("mW" stays milliwatts, never megawatts)
        ("EQ-001 draws 60 KW.", []),
        ("EQ-001 draws 90 KW.", ["90 KW"]),
        ("EQ-001 draws 90kW.", ["90kW"]),
        ("EQ-001 is a 90-kilowatt unit.", ["90-kilowatt"]),
        # bounds, ranges and approximations
        ("EQ-003 draws under 1 kW.", []),
        ("EQ-003 draws less than 0.2 kW.", ["0.2 kW"]),
        ("EQ-002 draws above 250 kW.", []),
        ("EQ-001 draws at least 100 kW.", ["100 kW"]),
        ("EQ-001 draws between 40 and 80 kW.", []),
        ("EQ-001 draws between 100 and 200 kW.", ["200 kW"]),
        ("EQ-001 draws 40-80 kW.", []),
        ("EQ-001 draws about 62 kW.", []),
    ],
)
def test_quantities_as_people_write_them(gate: ProseGate, sentence: str, wrong: list[str]) -> None:
    assert mismatches(gate, sentence) == wrong


# -- claim attribution ---------------------------------------------------------------


def test_respectively_pairs_claims_with_rows_in_order(gate: ProseGate) -> None:
    ok = "EQ-001 and EQ-002 are rated at 60 kW and 420 kW, respectively."
    assert mismatches(gate, ok) == []
    swapped = "EQ-001 and EQ-002 are rated at 420 kW and 60 kW, respectively."
    assert mismatches(gate, swapped) == ["420 kW", "60 kW"]
    (v,) = gate.judge([artifact(BASE + " " + swapped)])
    assert v.metrics["claims"] >= 2


def test_ambiguous_claims_are_skipped_and_said_so(gate: ProseGate) -> None:
    # three values for two rows: nothing in the sentence is judged
    uneven = "EQ-001 and EQ-002 are rated at 1 kW, 2 kW and 3 kW respectively."
    (v,) = gate.judge([artifact(BASE + " " + uneven)])
    assert [c for c in v.critiques if c.code != "prose.length"] == []
    assert v.metrics["claims_skipped"] == 3
    # two rows coordinated before one value: whose is it?
    assert mismatches(gate, "EQ-001 and EQ-002 draw 60 kW.") == []
    # the skipped claims are named in the evidence of a mismatch the gate does report
    (v,) = gate.judge([artifact(BASE + " EQ-001 and EQ-002 draw 60 kW. EQ-003 draws 9 kW.")])
    (c,) = [c for c in v.critiques if c.code == "prose.value_mismatch"]
    assert c.observed == "9 kW" and any("'60 kW'" in e for e in c.evidence)


def test_claims_stay_in_their_clause(gate: ProseGate) -> None:
    ok = "The AHU draws 60 kW; the water-cooled chiller, by contrast, draws 420 kW."
    assert mismatches(gate, ok) == []
    bad = "The AHU draws 60 kW, while the chiller draws 60 kW."
    assert mismatches(gate, bad) == ["60 kW"]


def test_it_after_a_sentence_about_one_row_is_that_row(gate: ProseGate) -> None:
    assert mismatches(gate, "EQ-002 is a water-cooled chiller. It draws 420 kW.") == []
    assert mismatches(gate, "EQ-002 is a water-cooled chiller. It draws 300 kW.") == ["300 kW"]
    # a sentence about two rows leaves "It" unresolved: not judged
    assert mismatches(gate, "EQ-001 and EQ-002 are HVAC plant. It draws 300 kW.") == []


# -- joined claims -----------------------------------------------------------------------


def test_facts_of_a_row_reached_through_a_foreign_key(gate: ProseGate) -> None:
    assert mismatches(gate, "EQ-003 serves the radiology department.") == []
    assert mismatches(gate, "EQ-003 serves the facilities engineering department.") == [
        "serves the facilities engineering department"
    ]
    assert mismatches(gate, "EQ-001 sits on basement level 1.") == []
    assert mismatches(gate, "EQ-001 sits on floor 3.") == ["floor 3"]


# -- truncation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ending",
    [
        "Filters are replaced every.",
        "Several assets are shared, e.g.",
        "The plant is listed below.\n\n## Maintenance",
    ],
)
def test_cut_endings_closed_with_a_period_or_a_heading_are_truncated(
    gate: ProseGate, ending: str
) -> None:
    assert "prose.truncated" in [c for c, _ in found(gate, BASE + " " + ending)]


@pytest.mark.parametrize(
    "ending",
    [
        "\n\nNext review: Q3",
        "\n\nFollow-up:\n- replace the worn drive belt",
        "\n\nAsset: EQ-001\nType: AHU\nRating: 60 kW\nStandard: ASHRAE 170",
        " Consumables are stocked on site: belts, lamps, fuses, etc.",
    ],
)
def test_complete_endings_that_are_no_sentence_pass(gate: ProseGate, ending: str) -> None:
    assert "prose.truncated" not in [c for c, _ in found(gate, BASE + ending)]


# -- aggregate claims ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "wrong"),
    [
        ("The register holds three assets in two rooms.", []),
        ("The register holds five assets in two rooms.", ["five assets"]),
        ("The register holds 3 assets in four rooms.", ["four rooms"]),
        ("Two assets sit in the plant room.", []),  # a part, not the register: not judged
        ("Together they draw 480.3 kW.", []),
        ("Together they draw 600 kW.", ["600 kW"]),
        ("EQ-001 and EQ-003 together draw 60.3 kW.", []),
        ("EQ-001 and EQ-003 together draw 90 kW.", ["90 kW"]),
        ("Maintenance intervals run from 6 to 12 months.", []),
        ("Maintenance intervals run from 3 to 24 months.", ["24 months"]),
        ("EQ-002 draws more power than EQ-001.", []),
        ("EQ-001 draws more power than EQ-002.", ["more power than"]),
        ("The AHU draws less power than the water-cooled chiller.", []),
    ],
)
def test_aggregate_claims_declared_by_the_pack(
    gate: ProseGate, sentence: str, wrong: list[str]
) -> None:
    (v,) = gate.judge([artifact(BASE + " " + sentence)])
    found = [c for c in v.critiques if c.code == "prose.value_mismatch"]
    assert [c.observed for c in found] == wrong
    for c in found:  # the evidence names the rows (or what they hold)
        assert c.expected and c.evidence[0] == sentence

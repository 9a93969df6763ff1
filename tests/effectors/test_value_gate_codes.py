"""The critique codes the example pack's own data cannot show, on copies of the facility
pack with one binding or individual added, and on the `crew` test pack (cardinalities,
owl:sameAs, equivalent classes). Real HermiT throughout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from effectors.value_gate import ValueGate
from harness.models import Artifact, Verdict
from harness.pack import load_pack
from tests.conftest import FACILITY, ROOT

pytestmark = pytest.mark.java

CREW = ROOT / "tests" / "packs" / "crew"
EQUIPMENT = {
    "equipment_id": "EQ-1", "room_id": "R1", "equipment_type": "CT scanner",
    "standard": "IEC 60601-1", "manufacturer": "Siemens Healthineers", "rated_power_kw": 80,
}
ROOM = {"room_id": "R1", "room_type": "diagnostic imaging suite",
        "department": "radiology department", "floor": 2}


def facility_variant(tmp: Path, toml: tuple[str, str] | None = None,
                     owl: tuple[str, str] | None = None) -> ValueGate:
    dest = tmp / "facility"
    shutil.copytree(FACILITY, dest, ignore=shutil.ignore_patterns("corpus", "__pycache__"))
    for name, change in (("pack.toml", toml), ("ontology/facility.owl", owl)):
        if change:
            path = dest / name
            text = path.read_text()
            assert change[0] in text
            path.write_text(text.replace(change[0], change[1], 1))
    return ValueGate.from_pack(load_pack(dest), tmp / "cache")


def artifact(rooms: dict[str, object] | None = None, **equipment: object) -> Artifact:
    return Artifact(id="a", tables={
        "rooms": [{**ROOM, **(rooms or {})}],
        "equipment": [{**EQUIPMENT, **equipment}],
    })


def found(v: Verdict) -> list[tuple[str, int | None, str | None]]:
    return [(c.code, c.location.row, c.location.column) for c in v.critiques]


def test_not_entailed_on_the_facility_ontology(tmp_path: Path) -> None:
    """A manufacturer only known to be a Manufacturer: consistent on a CT scanner row, but not
    entailed to be an ImagingManufacturer (open world)."""
    gate = facility_variant(tmp_path, owl=("</rdf:RDF>", (
        '<owl:NamedIndividual rdf:about="#generic_supplier">'
        '<rdf:type rdf:resource="#Manufacturer"/><rdfs:label>Generic Supplier</rdfs:label>'
        "</owl:NamedIndividual>\n</rdf:RDF>")))
    (v,) = gate.judge([artifact(manufacturer="Generic Supplier")])
    assert found(v) == [("value.not_entailed", 0, "manufacturer")]
    c = v.critiques[0]
    assert c.expected == "ImagingManufacturer" and c.evidence == ("generic_supplier : Manufacturer",)
    assert c.fix_hint and "Siemens Healthineers" in c.fix_hint


def test_functional_property_two_columns_is_cardinality(tmp_path: Path) -> None:
    gate = facility_variant(tmp_path, toml=(
        'standard = { kind = "object", property = "hasStandard" }',
        'standard = { kind = "object", property = "hasStandard" }\n'
        'second_standard = { kind = "object", property = "hasStandard" }'))
    (v,) = gate.judge([artifact(second_standard="IEC 60601-1")])  # the same standard twice
    assert v.critiques == ()
    (v,) = gate.judge([artifact(second_standard="IEC 60601-2-44")])
    assert found(v) == [("value.cardinality", 0, "second_standard")]
    c = v.critiques[0]
    assert c.expected == "≤1 hasStandard" and "Functional(hasStandard)" in c.evidence
    assert [r.column for r in v.rejected] == ["second_standard"]


def test_other_inconsistency_is_unsat_with_the_row(tmp_path: Path) -> None:
    """A room row citing a standard: domain(hasStandard) = EquipmentRow, disjoint with RoomRow
    — no ∀ restriction explains it, so it is isolated by bisection."""
    gate = facility_variant(tmp_path, toml=(
        'department = { kind = "object", property = "hasDepartment" }',
        'department = { kind = "object", property = "hasDepartment" }\n'
        'standard = { kind = "object", property = "hasStandard" }'))
    bad = Artifact(id="bad", tables={
        "rooms": [{**ROOM, "room_id": "R0", "standard": None}, {**ROOM, "standard": "NFPA 70"}],
        "equipment": [EQUIPMENT],
    })
    (v,) = gate.judge([bad])
    assert ("value.unsat", 1, None) in found(v)
    unsat = next(c for c in v.critiques if c.code == "value.unsat")
    assert unsat.location.key == "R1"
    assert any("hasStandard NFPA_70" in e for e in unsat.evidence)
    assert not any(r.table == "equipment" for r in v.rejected)


@pytest.fixture(scope="module")
def crew(tmp_path_factory: pytest.TempPathFactory) -> ValueGate:
    return ValueGate.from_pack(load_pack(CREW), tmp_path_factory.mktemp("crew"))


def flight(fid: str, aircraft: str = "A320", captain: str = "Ann", fo: str = "Cat",
           relief: str = "Dan", cabin: tuple[str, ...] = ("Eve", "Fay", "Gus", "Eve")
           ) -> dict[str, object]:
    row: dict[str, object] = {"flight_id": fid, "aircraft": aircraft, "captain": captain,
                              "first_officer": fo, "relief_pilot": relief}
    row.update({f"cabin_{i + 1}": name for i, name in enumerate(cabin)})
    return row


def judge(gate: ValueGate, *rows: dict[str, object]) -> Verdict:
    (v,) = gate.judge([Artifact(id="flights", tables={"flights": list(rows)})])
    return v


def errors(v: Verdict) -> list[tuple[str, int | None, str | None, str | None]]:
    return [(c.code, c.location.row, c.location.column, c.expected)
            for c in v.critiques if c.severity == "error"]


def test_crew_index(crew: ValueGate) -> None:
    axioms = {r.axiom for r in crew.index.cardinalities}
    assert axioms == {
        "FlightRow ⊑ ≥2 hasPilot.Pilot", "FlightRow ⊑ =1 hasCaptain.Captain",
        "FlightRow ⊑ ≤3 hasAttendant", "LongHaulRow ⊑ ≥3 hasPilot.Pilot",
        "Functional(hasAircraft)",
    }
    assert crew.index.rows_independent


def test_max_cardinality_blames_the_surplus_cell(crew: ValueGate) -> None:
    v = judge(crew, flight("F1", cabin=("Eve", "Fay", "Gus", "Hal")))
    assert errors(v) == [("value.cardinality", 0, "cabin_4", "≤3 hasAttendant")]


def test_min_qualified_counts_same_as_once_and_sub_properties(crew: ValueGate) -> None:
    """Captain ann (hasCaptain ⊑ hasPilot) and first officer Annie (= ann): one pilot."""
    v = judge(crew, flight("F2", fo="Annie", relief="ann"))
    assert errors(v) == [("value.cardinality", 0, "first_officer", "≥2 hasPilot.Pilot"),
                         ("value.cardinality", 0, "relief_pilot", "≥2 hasPilot.Pilot")]
    assert "ann = annie (owl:sameAs)" in v.critiques[0].evidence


def test_exact_qualified(crew: ValueGate) -> None:
    v = judge(crew, flight("F3", captain="Cat", fo="Dan", relief="Dan"))
    assert errors(v) == [("value.cardinality", 0, "captain", "=1 hasCaptain.Captain")]


def test_min_on_an_inferred_row_class(crew: ValueGate) -> None:
    v = judge(crew, flight("F4", aircraft="A350", relief="Cat"))
    assert errors(v) == [("value.cardinality", 0, "relief_pilot", "≥3 hasPilot.Pilot")]
    c = next(c for c in v.critiques if c.code == "value.cardinality")
    assert "LongHaulRow ≡ FlightRow ⊓ ∃hasAircraft.WideBody" in c.evidence
    assert "a350 : WideBody" in c.evidence


def test_same_as_and_equivalent_class_are_info(crew: ValueGate) -> None:
    v = judge(crew, flight("F5", captain="Bob", fo="Annie"))
    assert v.passed and errors(v) == []
    info = {(c.code, c.location.column) for c in v.critiques}
    assert ("value.same_as", "first_officer") in info
    assert ("value.equivalent_class", "first_officer") in info
    same = next(c for c in v.critiques if c.code == "value.same_as")
    assert same.severity == "info" and same.evidence == ("annie = ann (owl:sameAs)",)
    assert v.rejected == ()


def test_crew_disjoint_beside_a_cardinality(crew: ValueGate) -> None:
    v = judge(crew, flight("F6", fo="Eve"), flight("F7", cabin=("Eve", "Fay", "Gus", "Hal")))
    assert errors(v) == [("value.disjoint", 0, "first_officer", "Aviator"),
                         ("value.cardinality", 1, "cabin_4", "≤3 hasAttendant")]

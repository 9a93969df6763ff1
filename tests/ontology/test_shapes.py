"""Issue 27: SHACL shapes (set aside from the reasoner's input, not lost) checked by VALUE_GATE
over the rows as RDF, one pass per cohort: `value.shape` critiques citing the shape and its
message. Hand-written ontologies and shapes, no network."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.value_gate import ValueGate
from harness.errors import PackError
from harness.models import Artifact, Verdict
from harness.pack import load_pack
from ontology.shapes import RowNode, load_shapes

EX = "http://ex.org/plant#"

_ONTO = """@prefix : <http://ex.org/plant#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
<http://ex.org/plant> a owl:Ontology .
:Row a owl:Class .
:Equipment a owl:Class .
:Pump a owl:Class ; rdfs:subClassOf :Equipment .
:Fan a owl:Class ; rdfs:subClassOf :Equipment .
:Place a owl:Class .
:Room a owl:Class ; rdfs:subClassOf :Place .
:Site a owl:Class ; rdfs:subClassOf :Place .
:Medium a owl:Class .
:hasLocation a owl:ObjectProperty .
:hasMedium a owl:ObjectProperty .
:ratedPower a owl:DatatypeProperty ; rdfs:range xsd:decimal .
:room1 a :Room .
:campus a :Site .
:water a :Medium .
:glycol a :Medium .
:steam a :Medium .
# a shape that comes with the ontology: the class is its own shape (implicit class target)
:Pump a sh:NodeShape ;
  sh:property [ sh:path :hasMedium ; sh:in ( :water :glycol ) ;
                sh:message "a pump moves water or glycol" ] .
"""

_SHAPES = """@prefix : <http://ex.org/plant#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:EquipmentShape a sh:NodeShape ;
  sh:targetClass :Equipment ;
  sh:property [ sh:path :hasLocation ; sh:minCount 1 ; sh:class :Room ;
                sh:message "equipment stands in a room" ] ;
  sh:property [ sh:path :ratedPower ; sh:datatype xsd:decimal ; sh:maxInclusive 500 ] .
:FanShape a sh:NodeShape ;
  sh:targetClass :Fan ;
  sh:property [ sh:path :hasMedium ; sh:maxCount 0 ; sh:severity sh:Warning ] .
:PumpPlace a sh:NodeShape ;
  sh:targetClass :Pump ;
  sh:property [ sh:path :hasLocation ; sh:or ( [ sh:class :Room ] [ sh:class :Site ] ) ] .
:MediumShape a sh:NodeShape ;
  sh:targetClass :Medium ;
  sh:property [ sh:path :hasMedium ; sh:maxCount 0 ] .
:Unbound a sh:NodeShape ;
  sh:targetClass :Equipment ;
  sh:property [ sh:path :serialNumber ; sh:minCount 1 ] .
:Fancy a sh:NodeShape ;
  sh:targetClass :Equipment ;
  sh:property [ sh:path :hasMedium ; sh:or ( [ sh:class :Medium ] [ sh:hasValue :water ] ) ] .
"""

_TOML = """
[pack]
name = "plant"
version = "0.1.0"
[files]
ontology = "plant.ttl"
spine = "spine.sql"
[ontology]
namespace = "http://ex.org/plant#"
{shapes}
[tables.equipment]
row_class = "Row"
key = ["id"]
[tables.equipment.columns]
id = {{ kind = "id" }}
type = {{ kind = "class", root = "Equipment" }}
location = {{ kind = "object", property = "hasLocation" }}
medium = {{ kind = "object", property = "hasMedium" }}
power = {{ kind = "data", property = "ratedPower" }}
[prose]
enabled = false
"""


def _pack(tmp_path: Path, shapes: str) -> Path:
    d = tmp_path / "plant"
    d.mkdir()
    (d / "plant.ttl").write_text(_ONTO, encoding="utf-8")
    (d / "shapes.ttl").write_text(_SHAPES, encoding="utf-8")
    (d / "pack.toml").write_text(_TOML.format(shapes=shapes), encoding="utf-8")
    (d / "spine.sql").write_text(
        "CREATE TABLE equipment (id VARCHAR PRIMARY KEY, type VARCHAR, location VARCHAR, "
        "medium VARCHAR, power DOUBLE);",
        encoding="utf-8",
    )
    return d


def _row(
    i: str, kind: str, location: str | None, medium: str | None, power: object = 10.5
) -> dict[str, object]:
    return {"id": i, "type": kind, "location": location, "medium": medium, "power": power}


def _shape_critiques(v: Verdict) -> list[tuple[str | None, int | None, str | None, str]]:
    return [
        (c.location.column, c.location.row, c.observed, c.severity)
        for c in v.critiques
        if c.code == "value.shape"
    ]


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> ValueGate:
    tmp = tmp_path_factory.mktemp("shapes")
    pack = load_pack(_pack(tmp, 'shapes = true\nshape_files = ["shapes.ttl"]'))
    return ValueGate.from_pack(pack, tmp / "cache")


@pytest.mark.java
def test_a_clean_cohort_has_no_shape_critique(gate: ValueGate) -> None:
    a = Artifact(
        id="a",
        tables={
            "equipment": [_row("P1", "Pump", "room1", "water"), _row("F1", "Fan", "room1", None, 3)]
        },
    )
    (v,) = gate.judge([a])
    assert _shape_critiques(v) == []


@pytest.mark.java
def test_each_constraint_kind_is_a_typed_critique_on_its_cell(gate: ValueGate) -> None:
    bad = Artifact(
        id="b",
        tables={
            "equipment": [
                _row("P1", "Pump", "room1", "steam"),  # sh:in (the ontology's own shape)
                _row("P2", "Pump", "campus", "water"),  # sh:class Room (a Site is a Place, no Room)
                _row("P3", "Pump", None, "glycol"),  # sh:minCount 1
                _row("F1", "Fan", "room1", "water"),  # sh:maxCount 0, a warning
                _row("P4", "Pump", "room1", "water", 900),  # sh:maxInclusive 500
                _row("P5", "Pump", "room1", "water", "lots"),  # sh:datatype xsd:decimal
                _row("P6", "Pump", "water", "water"),  # sh:class Room, and sh:or (Room | Site)
                _row("X7", "Medium", None, "steam"),  # outside the root: the row is no Equipment
            ]
        },
    )
    good = Artifact(id="g", tables={"equipment": [_row("P1", "Pump", "room1", "glycol")]})
    v, g = gate.judge([bad, good])  # one cohort, one pass
    assert _shape_critiques(g) == []
    found = _shape_critiques(v)
    assert ("medium", 0, "steam", "error") in found
    assert ("location", 1, "campus", "error") in found
    assert ("location", 2, None, "error") in found
    assert ("medium", 3, "water", "warn") in found
    assert ("power", 4, "900", "error") in found
    assert ("power", 5, "lots", "error") in found
    assert found.count(("location", 6, "water", "error")) == 2
    assert not [f for f in found if f[1] == 7]
    assert gate._shapes is not None  # the row is RDF as the reasoner sees it: not a Medium
    node = gate._shapes._node((0, "equipment", 7), "equipment", bad.tables["equipment"][7])
    assert EX + "Medium" not in node.types and EX + "Row" in node.types
    assert any(c.code == "value.outside_root" and c.location.row == 7 for c in v.critiques)
    assert ("location", 1, "campus", "error") in found and found.count(
        ("location", 1, "campus", "error")
    ) == 1  # a Site passes the sh:or
    # the critique cites the shape and its message
    c = next(c for c in v.critiques if c.code == "value.shape" and c.location.row == 0)
    assert "a pump moves water or glycol" in c.message
    assert any(e.startswith("shape ") for e in c.evidence)
    assert any("sh:in" in e for e in c.evidence)
    assert not v.passed


@pytest.mark.java
def test_shapes_are_off_unless_the_pack_enables_them(tmp_path: Path) -> None:
    pack = load_pack(_pack(tmp_path, ""))
    gate = ValueGate.from_pack(pack, tmp_path / "cache")
    (v,) = gate.judge(
        [Artifact(id="a", tables={"equipment": [_row("P1", "Pump", "room1", "steam")]})]
    )
    assert _shape_critiques(v) == []


@pytest.mark.java
def test_only_the_ontologys_own_shapes(tmp_path: Path) -> None:
    pack = load_pack(_pack(tmp_path, "shapes = true"))
    gate = ValueGate.from_pack(pack, tmp_path / "cache")
    (v,) = gate.judge(
        [Artifact(id="a", tables={"equipment": [_row("P1", "Pump", "campus", "steam")]})]
    )
    assert _shape_critiques(v) == [("medium", 0, "steam", "error")]


@pytest.mark.java
def test_a_missing_shape_file_is_a_setup_error(tmp_path: Path) -> None:
    pack = load_pack(_pack(tmp_path, 'shape_files = ["nope.ttl"]'))
    with pytest.raises(PackError, match=r"nope\.ttl"):
        ValueGate.from_pack(pack, tmp_path / "cache")


def test_what_is_not_checked_is_counted_not_passed_off(tmp_path: Path) -> None:
    f = tmp_path / "s.ttl"
    f.write_text(_SHAPES, encoding="utf-8")
    shapes = load_shapes([f])
    assert shapes.skipped["sh:or"] == 1
    kinds = {(c.target, c.path.rsplit("#")[-1], c.kind) for c in shapes.constraints}
    assert (EX + "Equipment", "hasLocation", "minCount") in kinds
    assert (EX + "Fan", "hasMedium", "maxCount") in kinds
    bound = shapes.bind({"t": {EX + "Equipment", EX + "Fan"}}, {"t": {EX + "hasLocation"}})
    assert {c.path for c in bound.constraints} == {EX + "hasLocation"}
    assert {c.path for c in bound.unbound} >= {EX + "serialNumber"}


def test_sql_validation_without_a_gate(tmp_path: Path) -> None:
    f = tmp_path / "s.ttl"
    f.write_text(_SHAPES, encoding="utf-8")
    shapes = load_shapes([f])
    rows = [
        RowNode(
            "ok",
            frozenset({EX + "Equipment"}),
            ((EX + "hasLocation", EX + "r", True, ""),),
            ((EX + "r", EX + "Room"),),
        ),
        RowNode("none", frozenset({EX + "Equipment"}), ()),
        RowNode("other", frozenset({EX + "Place"}), ()),  # no shape targets it
    ]
    found = {
        (v.key, v.constraint.path.rsplit("#")[-1], v.constraint.kind) for v in shapes.validate(rows)
    }
    assert ("none", "hasLocation", "minCount") in found
    assert ("none", "serialNumber", "minCount") in found
    assert not any(k == "ok" and p == "hasLocation" for k, p, _ in found)
    assert not any(k == "other" for k, _, _ in found)
    shapes.close()


@pytest.mark.java
def test_pack_check_says_what_of_the_shapes_is_not_checked(tmp_path: Path) -> None:
    from harness.packcheck import check_pack

    report = check_pack(_pack(tmp_path, 'shapes = true\nshape_files = ["shapes.ttl"]'))
    assert not report.errors, [p.render() for p in report.errors]
    codes = [p.code for p in report.warnings]
    assert "shapes-not-checked" in codes and "shape-unbound" in codes
    unbound = next(p for p in report.warnings if p.code == "shape-unbound")
    assert EX + "serialNumber" in unbound.message
    assert any("sh:or" in p.message for p in report.warnings if p.code == "shapes-not-checked")
    (tmp_path / "off").mkdir()
    quiet = check_pack(_pack(tmp_path / "off", ""))
    assert not {"shapes-not-checked", "shape-unbound"} & {p.code for p in quiet.warnings}

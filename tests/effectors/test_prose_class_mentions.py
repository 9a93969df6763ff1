"""Issue 27: a class-valued cell's class labels are prose mentions of its row.

The prose pool holds the classes the pack binds (satisfiable, not deprecated, under a class
column's declared `root`), by their labels (rdfs:label, skos:altLabel) and IRI fragment (`_`
read as a space), each mention keyed by the class's IRI. A row's class and its superclasses
under the roots are what its cell names, so "the air handling unit AHU-1 is rated at 50 kW"
is a claim about that row, "the fan" is true of a Supply_Fan row, and a class under a root
that no cell names is `prose.unknown_entity`. Classes under no declared root never match.
A hand-written Turtle ontology, HermiT through the pools cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.prose_gate import ProseGate
from harness.models import Artifact, Verdict
from harness.pack import load_pack
from harness.pools import Pools
from ontology.pools import load_pools

pytestmark = pytest.mark.java

EX = "http://ex.org/plant#"

_ONTO = """@prefix : <http://ex.org/plant#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
<http://ex.org/plant> a owl:Ontology .
:Row a owl:Class .
:Equipment a owl:Class ; rdfs:label "equipment" .
:Air_Handling_Unit a owl:Class ; rdfs:subClassOf :Equipment ;
    rdfs:label "air handling unit" ; skos:altLabel "air handler" .
:Fan a owl:Class ; rdfs:subClassOf :Equipment ; rdfs:label "fan" .
:Supply_Fan a owl:Class ; rdfs:subClassOf :Fan .
:Chiller a owl:Class ; rdfs:subClassOf :Equipment ; rdfs:label "chiller" .
:Old_Pump a owl:Class ; rdfs:subClassOf :Equipment ; rdfs:label "old pump" ;
    owl:deprecated true .
:Instrument a owl:Class .
:Thermometer a owl:Class ; rdfs:subClassOf :Instrument ; rdfs:label "thermometer" .
:ratedPower a owl:DatatypeProperty ; rdfs:range xsd:decimal .
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
[tables.equipment]
row_class = "Row"
key = ["id"]
[tables.equipment.columns]
id = {{ kind = "id" }}
type = {{ kind = "class", root = "Equipment" }}
power = {{ kind = "data", property = "ratedPower" }}
[prose]
entity_columns = {entity_columns}
exclude_labels = {exclude_labels}
entailment = "off"
[[prose.quantities]]
column = "equipment.power"
units = {{ "kW" = 1.0 }}
"""


def _pack_dir(tmp: Path, entity_columns: str, exclude_labels: str) -> Path:
    d = tmp / "plant"
    d.mkdir()
    (d / "plant.ttl").write_text(_ONTO, encoding="utf-8")
    (d / "pack.toml").write_text(
        _TOML.format(entity_columns=entity_columns, exclude_labels=exclude_labels), encoding="utf-8"
    )
    (d / "spine.sql").write_text(
        "CREATE TABLE equipment (id VARCHAR PRIMARY KEY, type VARCHAR, power DOUBLE);",
        encoding="utf-8",
    )
    return d


def _gate(
    tmp: Path, entity_columns: str = "[]", exclude_labels: str = "[]"
) -> tuple[ProseGate, Pools]:
    pack = load_pack(_pack_dir(tmp, entity_columns, exclude_labels))
    pools = load_pools(pack, tmp / "cache")
    return ProseGate(pack, pools), pools


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> ProseGate:
    return _gate(tmp_path_factory.mktemp("classes"))[0]


def _judge(gate: ProseGate, rows: list[tuple[str, str, float]], prose: str) -> Verdict:
    tables = {"equipment": [{"id": i, "type": t, "power": p} for i, t, p in rows]}
    (v,) = gate.judge([Artifact(id="a", tables=tables, prose=prose)])
    return v


def _codes(v: Verdict) -> list[tuple[str, str | None]]:
    return [(c.code, c.observed) for c in v.critiques]


def test_the_pool_holds_the_classes_under_the_declared_roots_only(gate: ProseGate) -> None:
    pools = gate.pools
    assert set(pools.mentionable_classes) == {
        "Equipment",
        "Air_Handling_Unit",
        "Fan",
        "Supply_Fan",
        "Chiller",
    }
    # a class under no declared root (Thermometer) and a deprecated one never match
    assert gate.matcher.find("The thermometer and the old pump were checked.") == []


def test_labels_alt_labels_and_fragments_are_mentions_keyed_by_iri(gate: ProseGate) -> None:
    text = "The air handling unit, the air handler and the supply fan were serviced."
    found = gate.matcher.find(text)
    assert [(m.individual, text[m.start : m.end]) for m in found] == [
        (EX + "Air_Handling_Unit", "air handling unit"),  # rdfs:label
        (EX + "Air_Handling_Unit", "air handler"),  # skos:altLabel
        (EX + "Supply_Fan", "supply fan"),  # no label: the IRI fragment, "_" as a space
    ]


def test_a_claim_about_a_row_named_by_its_class_label_is_checked(gate: ProseGate) -> None:
    rows = [("AHU-1", "Air_Handling_Unit", 50.0), ("CH-1", "Chiller", 350.0)]
    ok = _judge(
        gate, rows, "The air handling unit AHU-1 is rated at 50 kW. The chiller is rated at 350 kW."
    )
    assert _codes(ok) == []
    assert ok.metrics["claims"] == 2.0
    # no row key in the sentence: the class label alone names the row
    bad = _judge(gate, rows, "The air handler is rated at 70 kW. The chiller is rated at 350 kW.")
    assert _codes(bad) == [("prose.value_mismatch", "70 kW")]
    assert bad.critiques[0].location.key == "AHU-1"


def test_a_superclass_is_true_of_the_row_and_an_unnamed_class_is_unknown(
    gate: ProseGate,
) -> None:
    rows = [("SF-1", "Supply_Fan", 3.0)]
    assert _codes(_judge(gate, rows, "The fan is rated at 3 kW. The equipment runs daily.")) == []
    wrong = _judge(gate, rows, "The fan is rated at 4 kW.")
    assert _codes(wrong) == [("prose.value_mismatch", "4 kW")]
    unknown = _judge(gate, rows, "The supply fan and the chiller run daily.")
    assert _codes(unknown) == [("prose.unknown_entity", EX + "Chiller")]


def test_a_class_entity_column_must_be_mentioned_by_a_label(tmp_path: Path) -> None:
    gate, _ = _gate(tmp_path, '["equipment.type"]')
    rows = [("AHU-1", "air handling unit", 50.0), ("CH-1", "Chiller", 350.0)]
    v = _judge(gate, rows, "AHU-1 is an air handler rated at 50 kW.")
    assert _codes(v) == [("prose.missing_entity", EX + "Chiller")]
    assert v.critiques[0].expected == "chiller"
    assert _codes(_judge(gate, rows, "AHU-1 is an air handler; CH-1 is a chiller.")) == []


def test_a_pack_may_leave_an_ordinary_word_class_label_out(tmp_path: Path) -> None:
    gate, _ = _gate(tmp_path, exclude_labels='["Fan"]')  # [prose] exclude_labels
    rows = [("CH-1", "Chiller", 350.0)]
    assert gate.matcher.find("The fan runs daily.") == []
    assert _codes(_judge(gate, rows, "The chiller has a fan.")) == []

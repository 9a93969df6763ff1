"""Issue 27: the base ontology is classified in the warm JVM (`ontology.classify`), with the
same answers as HermiT's command line (`-c -I`), whose per-individual type loop made Brick's
first classification take ~58 s. Hand-written ontologies here; Brick 1.4 itself when its
wheel is in the bench cache (`python -m bench ontology` puts it there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.brick import brick_ttl
from harness.pack import load_pack
from ontology import load_index
from ontology.classify import WarmClassifier, default_classifier
from ontology.load import load_ontology, ontology_files
from ontology.reason import Classification, HermitRunner

pytestmark = pytest.mark.java

EX = "http://ex.org/c#"
_TTL = """@prefix : <http://ex.org/c#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
:Equipment a owl:Class .
:Point a owl:Class .
:Equipment owl:disjointWith :Point .
:AHU a owl:Class ; rdfs:subClassOf :Equipment .
:Air_Handling_Unit a owl:Class ; owl:equivalentClass :AHU .
:Sensor a owl:Class ; rdfs:subClassOf :Point .
:Odd a owl:Class ; rdfs:subClassOf :Equipment, :Point .
:Tag a owl:Class .
:hasTag a owl:ObjectProperty .
:Air a :Tag .
:loose a owl:NamedIndividual .
:AHU :hasTag :Air .
:ahu1 a :Air_Handling_Unit .
:s1 a :Sensor ; :hasTag :Air .
"""


def _semantics(c: Classification, classes: list[str]) -> tuple[object, ...]:
    """What the gates read: each class's ancestors, each individual's types, unsat classes
    (which member of an equivalence HermiT prints as its representative may differ)."""
    return (
        {k: frozenset(c.ancestors(k)) for k in classes},
        {i: frozenset(c.individual_types(i)) for i in c.types},
        set(c.types),
        frozenset(c.unsatisfiable),
    )


def _nt(tmp_path: Path, text: str) -> str:
    f = tmp_path / "c.ttl"
    f.write_text(text, encoding="utf-8")
    return load_ontology(f).ntriples()


def test_the_warm_classification_answers_as_the_command_line(tmp_path: Path) -> None:
    nt = _nt(tmp_path, _TTL)
    warm, cold = WarmClassifier(timeout_s=120).classify(nt), HermitRunner(120).classify(nt)
    assert warm is not None and cold is not None
    names = [EX + n for n in ("Equipment", "Point", "AHU", "Air_Handling_Unit", "Sensor", "Odd")]
    assert _semantics(warm, names) == _semantics(cold, names)
    assert EX + "Odd" in warm.unsatisfiable
    assert warm.individual_types(EX + "ahu1") == {
        EX + "AHU",
        EX + "Air_Handling_Unit",
        EX + "Equipment",
    }
    # a class punned by a property value is an individual; one with no type is one too
    assert EX + "AHU" in warm.types and EX + "loose" in warm.types
    assert warm.individual_types(EX + "loose") == set()


def test_an_inconsistent_ontology_classifies_to_none(tmp_path: Path) -> None:
    nt = _nt(tmp_path, _TTL + ":both a :Sensor, :AHU .\n")
    assert WarmClassifier(timeout_s=120).classify(nt) is None
    assert HermitRunner(120).classify(nt) is None


def test_the_default_classifier_is_warm_and_counts_its_calls(tmp_path: Path) -> None:
    runner = default_classifier(60)
    assert isinstance(runner, WarmClassifier)
    runner.classify(_nt(tmp_path, _TTL))
    assert runner.calls == 1 and runner.seconds > 0


def test_the_import_list_is_remembered_until_a_file_changes(tmp_path: Path) -> None:
    main, extra = tmp_path / "main.ttl", tmp_path / "extra.ttl"
    main.write_text("<http://ex.org/m> a <http://www.w3.org/2002/07/owl#Ontology> .\n")
    extra.write_text("<http://ex.org/extra> a <http://www.w3.org/2002/07/owl#Ontology> .\n")
    assert ontology_files(main) == [main]
    main.write_text(
        "<http://ex.org/m> <http://www.w3.org/2002/07/owl#imports> <http://ex.org/extra.ttl> .\n"
    )
    assert ontology_files(main) == [main, extra]  # the file changed: read again


@pytest.mark.slow
def test_brick_classifies_warm_with_the_command_lines_answers(tmp_path: Path) -> None:
    ttl = brick_ttl()
    if ttl is None:
        pytest.skip("Brick 1.4 is not in the bench cache (python -m bench ontology fetches it)")
    pack = tmp_path / "brick"
    pack.mkdir()
    (pack / "Brick.ttl").write_bytes(ttl.read_bytes())
    (pack / "pack.toml").write_text(_BRICK_TOML, encoding="utf-8")
    (pack / "spine.sql").write_text(
        "CREATE TABLE points (id VARCHAR PRIMARY KEY, quantity VARCHAR);", encoding="utf-8"
    )
    warm = load_index(load_pack(pack), tmp_path / "warm")[0]
    cold = load_index(load_pack(pack), tmp_path / "cold", HermitRunner(600))[0]
    assert warm.pools == cold.pools and warm.equivalents == cold.equivalents
    assert len(warm.pools.classes) >= 1400


_BRICK_TOML = """
[pack]
name = "brick-classify"
version = "0.1.0"
[files]
ontology = "Brick.ttl"
spine = "spine.sql"
[ontology]
namespace = "https://brickschema.org/schema/Brick#"
[ontology.imports]
"http://data.ashrae.org/bacnet/2020" = "skip"
"http://datashapes.org/dash" = "skip"
"http://qudt.org/3.1.8/vocab/quantitykind" = "skip"
"http://qudt.org/3.1.8/vocab/unit" = "skip"
"https://brickschema.org/schema/Brick/ref" = "skip"
"https://w3id.org/rec/brickpatches" = "skip"
"https://w3id.org/rec/recimports" = "skip"
[tables.points]
row_class = "Point"
key = ["id"]
[tables.points.columns]
id = { kind = "id" }
quantity = { kind = "object", property = "hasQuantity" }
[prose]
enabled = false
"""

"""Issue 27: fragment collisions, deprecation and class-valued columns, on a small Turtle
ontology written here (no network).

* Two IRIs with one fragment: the pack's namespace keeps the fragment, the other is keyed by
  its IRI (a cell may give the IRI or a prefixed name); with neither in the namespace a cell
  naming the fragment is `value.ambiguous`, naming every candidate. `pack check` warns.
* `owl:deprecated` / `deprecatedInVersion` with `isReplacedBy`: `value.deprecated`, a warning
  or an error as `[ontology] deprecated` says, naming the replacement.
* `kind = "class"` columns under a `root`: exists, satisfiable, under the root, not
  deprecated, all from the cached classification; the row is typed by the class, so its
  restrictions apply to the row's other cells (`value.unsat`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.value_gate import ValueGate
from harness.models import Artifact, Verdict
from harness.pack import load_pack
from ontology import load_pools

pytestmark = pytest.mark.java

NS = "http://membrane.dev/tests/reg#"

TOML = """
[pack]
name = "reg"
version = "0.1.0"
[files]
ontology = "reg.ttl"
spine = "spine.sql"
[ontology]
namespace = "http://membrane.dev/tests/reg#"
prefixes = { ext = "http://other.example/ext#", third = "http://third.example/t#" }
{extra}
[tables.things]
row_class = "Row"
key = ["id"]
[tables.things.columns]
id = { kind = "id" }
colour = { kind = "object", property = "hasColour" }
type = { kind = "class", root = "Equipment" }
[prose]
enabled = false
"""

TTL = """@prefix : <http://membrane.dev/tests/reg#> .
@prefix ext: <http://other.example/ext#> .
@prefix third: <http://third.example/t#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix dcterms: <http://purl.org/dc/terms/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .

<http://membrane.dev/tests/reg> a owl:Ontology .
:Row a owl:Class .
:Colour a owl:Class .
:Blueish a owl:Class ; rdfs:subClassOf :Colour .
:Reddish a owl:Class ; rdfs:subClassOf :Colour ; owl:disjointWith :Blueish .
ext:Reddish a owl:Class ; owl:disjointWith :Pump .
:hasColour a owl:ObjectProperty ; rdfs:range :Colour .
:red a owl:NamedIndividual, :Reddish ; rdfs:label "red" .
ext:red a owl:NamedIndividual, :Reddish ; rdfs:label "crimson" .
ext:teal a owl:NamedIndividual, :Blueish ; rdfs:label "teal" .
third:teal a owl:NamedIndividual, :Blueish ; rdfs:label "teal" .
:blue a owl:NamedIndividual, :Blueish ; rdfs:label "blue" .
:maroon a owl:NamedIndividual, :Reddish ; rdfs:label "maroon" ;
    owl:deprecated true ; dcterms:isReplacedBy :red .

:Tag a owl:Class .
:building a owl:NamedIndividual, :Tag ; rdfs:label "building" .
:deprecatedInVersion a owl:DatatypeProperty .
:isReplacedBy a owl:AnnotationProperty .
:Equipment a owl:Class ; owl:disjointWith :Location .
:Location a owl:Class .
:Air_Handling_Unit a owl:Class ; rdfs:subClassOf :Equipment ; rdfs:label "Air Handling Unit" ;
    rdfs:subClassOf [ a owl:Restriction ; owl:onProperty :hasColour ;
                      owl:allValuesFrom :Blueish ] .
:Pump a owl:Class ; rdfs:subClassOf :Equipment ; rdfs:label "Pump" .
:Hot_Water_Pump a owl:Class ; rdfs:subClassOf :Pump ; rdfs:label "Hot Water Pump" .
:Room a owl:Class ; rdfs:subClassOf :Location ; rdfs:label "Room" .
:Old_Pump a owl:Class ; rdfs:subClassOf :Equipment ; rdfs:label "Old Pump" ;
    :deprecatedInVersion "1.4.0" ; :isReplacedBy :Pump .
:Broken a owl:Class ; rdfs:subClassOf :Equipment, :Location .
"""


def _write(dest: Path, extra: str = "") -> Path:
    dest.mkdir()
    (dest / "pack.toml").write_text(TOML.replace("{extra}", extra))
    (dest / "reg.ttl").write_text(TTL)
    (dest / "spine.sql").write_text(
        "CREATE TABLE things (id VARCHAR PRIMARY KEY, colour VARCHAR, type VARCHAR);")
    return dest


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")  # one classification for the module


@pytest.fixture(scope="module")
def reg_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(tmp_path_factory.mktemp("p") / "reg")


@pytest.fixture(scope="module")
def gate(reg_pack: Path, cache: Path) -> ValueGate:
    return ValueGate.from_pack(load_pack(reg_pack), cache)


def _judge(gate: ValueGate, *rows: dict[str, str]) -> Verdict:
    table = [{"id": str(i), "colour": "blue", "type": "Pump", **r} for i, r in enumerate(rows)]
    return gate.judge([Artifact(id="a", tables={"things": table})])[0]


def _codes(v: Verdict) -> list[tuple[str, str, int | None, str | None]]:
    return [(c.code, c.severity, c.location.row, c.location.column) for c in v.critiques]


# -- fragment collisions ----------------------------------------------------------------------
def test_pools_are_keyed_by_iri_when_fragments_collide(reg_pack: Path, cache: Path) -> None:
    pools = load_pools(load_pack(reg_pack), cache)
    assert pools.individuals["red"].iri == NS + "red"
    assert pools.individuals["http://other.example/ext#red"].labels == ("crimson",)
    assert pools.collisions["red"] == ("http://membrane.dev/tests/reg#red",
                                       "http://other.example/ext#red")
    assert set(pools.collisions["teal"]) == {"http://other.example/ext#teal",
                                             "http://third.example/t#teal"}
    assert pools.resolve("red") == "red"  # the pack's namespace keeps the fragment
    assert pools.resolve("crimson") == "http://other.example/ext#red"
    assert pools.resolve("ext:red") == "http://other.example/ext#red"
    assert pools.resolve("http://other.example/ext#red") == "http://other.example/ext#red"
    assert pools.resolve("teal") is None  # neither in the namespace, same label too
    assert pools.ambiguous("teal") == ("http://other.example/ext#teal",
                                       "http://third.example/t#teal")
    assert pools.resolve("third:teal") == "http://third.example/t#teal"
    # two classes share `Reddish`: each keeps its own disjointness
    assert pools.collisions["Reddish"] == ("http://membrane.dev/tests/reg#Reddish",
                                           "http://other.example/ext#Reddish")
    ours, theirs = pools.classes["Reddish"], pools.classes["http://other.example/ext#Reddish"]
    assert "Blueish" in ours.disjoint_with and "Pump" not in ours.disjoint_with
    assert {"Pump", "Hot_Water_Pump"} <= set(theirs.disjoint_with)
    assert "Blueish" not in theirs.disjoint_with
    assert pools.individuals["red"].types == ("Colour", "Reddish")


def test_an_ambiguous_cell_names_its_candidates(gate: ValueGate) -> None:
    v = _judge(gate, {"colour": "teal"}, {"colour": "third:teal"}, {"colour": "crimson"})
    assert _codes(v) == [("value.ambiguous", "error", 0, "colour")]
    crit = v.critiques[0]
    assert "http://other.example/ext#teal" in crit.message
    assert "http://third.example/t#teal" in crit.message
    assert "ext:teal" in (crit.fix_hint or "")


def test_pack_check_warns_of_each_collision(reg_pack: Path) -> None:
    from harness.packcheck import check_pack

    report = check_pack(reg_pack)
    found = [p for p in report.warnings if p.code == "fragment-collision"]
    assert len(found) == 3, [p.render() for p in report.problems]
    red = next(p for p in found if "ext#red" in p.message)
    assert "http://membrane.dev/tests/reg#red" in red.message


# -- deprecation ------------------------------------------------------------------------------
def test_a_deprecated_individual_is_a_warning_naming_its_replacement(gate: ValueGate) -> None:
    v = _judge(gate, {"colour": "maroon"})
    assert _codes(v) == [("value.deprecated", "warn", 0, "colour")]
    assert "red" in (v.critiques[0].fix_hint or "")
    assert v.passed and not v.rejected


def test_the_pack_may_make_deprecation_an_error(tmp_path: Path, cache: Path) -> None:
    pack = _write(tmp_path / "reg", 'deprecated = "error"')
    gate = ValueGate.from_pack(load_pack(pack), cache)
    v = _judge(gate, {"colour": "maroon"}, {"type": "Old Pump"})
    assert _codes(v) == [("value.deprecated", "error", 0, "colour"),
                         ("value.deprecated", "error", 1, "type")]
    assert "Pump" in (v.critiques[1].fix_hint or "")
    assert not v.passed and len(v.rejected) == 2


def test_deprecation_is_read_from_the_ontology(reg_pack: Path, cache: Path) -> None:
    pools = load_pools(load_pack(reg_pack), cache)
    assert pools.individuals["maroon"].deprecated
    assert pools.individuals["maroon"].replaced_by == ("red",)
    assert pools.classes["Old_Pump"].deprecated
    assert pools.classes["Old_Pump"].replaced_by == ("Pump",)
    assert not pools.individuals["red"].deprecated and not pools.classes["Pump"].deprecated


# -- class-valued columns ---------------------------------------------------------------------
def test_class_cells_under_the_root_pass(gate: ValueGate) -> None:
    v = _judge(gate, {"type": "Air Handling Unit"}, {"type": "Hot_Water_Pump"},
               {"type": "Equipment"}, {"type": "Pump"})
    assert v.critiques == ()
    assert [c.value for c in v.canonical if c.cell.endswith("type")] == [
        "Hot Water Pump"]


def test_class_cells_outside_their_root_unknown_or_unsatisfiable(gate: ValueGate) -> None:
    v = _judge(gate, {"type": "Room"}, {"type": "Pumpp"}, {"type": "Broken"},
               {"type": "Old Pump"})
    assert _codes(v) == [("value.outside_root", "error", 0, "type"),
                         ("value.unknown", "error", 1, "type"),
                         ("value.unsatisfiable", "error", 2, "type"),
                         ("value.deprecated", "warn", 3, "type")]
    room, typo, broken, old = v.critiques
    assert "Equipment" in room.message and room.expected == "Equipment"
    assert "'Pump'" in (typo.fix_hint or "")
    assert "Broken" in broken.message
    assert "Pump" in (old.fix_hint or "")


def test_the_row_is_typed_by_its_class(gate: ValueGate) -> None:
    # Air_Handling_Unit ⊑ ∀hasColour.Blueish, red is Reddish, Reddish ⊓ Blueish ⊑ ⊥
    v = _judge(gate, {"type": "Air_Handling_Unit", "colour": "red"},
               {"type": "Pump", "colour": "red"}, {"type": "Air_Handling_Unit"})
    assert [(c.code, c.location.row) for c in v.critiques] == [("value.unsat", 0)]
    assert any("Air_Handling_Unit" in e for e in v.critiques[0].evidence)


def test_the_offline_proposer_repairs_a_class_cell_from_the_hints(
    reg_pack: Path, gate: ValueGate
) -> None:
    from effectors.proposers.offline import OfflineProposer
    from harness.models import CritiqueReport, ProposalRequest, Spine

    bad = Artifact(id="a", tables={"things": [
        {"id": "0", "colour": "blue", "type": "Hot Water Pumpp"},
        {"id": "1", "colour": "blue", "type": "Room"}]})
    verdict = gate.judge([bad])[0]
    proposer = OfflineProposer(load_pack(reg_pack), gate.pools)
    cells = {ref for c in verdict.critiques if (ref := c.location.cell()) is not None}
    report = CritiqueReport(gate="value_gate", attempt=2, critiques=verdict.critiques,
                            spine=Spine.of(bad, cells))
    request = ProposalRequest(run_id="r", attempt=2, candidate=bad, critique=report)
    fixed = proposer.propose(request).artifact
    assert fixed.tables["things"][0]["type"] == "Hot_Water_Pump"
    assert gate.judge([fixed])[0].critiques == ()


def test_the_prose_pool_holds_what_the_pack_binds(gate: ValueGate) -> None:
    from effectors.prose.matcher import EntityMatcher

    matcher = EntityMatcher(gate.pools)
    # `maroon` is deprecated; `pump` is a class under the class column's root (a mention of
    # the rows typed by it, keyed by IRI)
    assert matcher.mentioned("a maroon pump next to the red one") == {"red", NS + "Pump"}
    # `building` is an individual, but of no range the pack binds: an ordinary word
    assert "building" in gate.pools.individuals
    assert matcher.mentioned("the building has a blue door") == {"blue"}
    # an individual keyed by its IRI is mentioned by its label and its fragment
    assert matcher.mentioned("crimson paint") == {"http://other.example/ext#red"}

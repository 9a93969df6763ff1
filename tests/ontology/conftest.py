"""Fixtures: tmp copies of packs (facility, pizza, a tiny inline one) to break on purpose."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FACILITY, PIZZA_OWL, ROOT

PIZZA_PACK = ROOT / "tests" / "packs" / "pizza"

TINY_TOML = """
[pack]
name = "tiny"
version = "0.1.0"
[files]
ontology = "tiny.owl"
spine = "spine.sql"
[ontology]
namespace = "http://membrane.dev/tests/tiny#"
[tables.things]
row_class = "Row"
key = ["id"]
[tables.things.columns]
id = { kind = "id" }
colour = { kind = "object", property = "hasColour" }
[prose]
enabled = false
"""

# Row ⊑ ¬∃hasColour.Red: not a ∀ restriction the violation classes cover -> value.unsat.
TINY_OWL = """<?xml version="1.0"?>
<rdf:RDF xmlns="http://membrane.dev/tests/tiny#" xml:base="http://membrane.dev/tests/tiny"
  xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
  xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#" xmlns:owl="http://www.w3.org/2002/07/owl#">
  <owl:Ontology rdf:about="http://membrane.dev/tests/tiny"/>
  <owl:Class rdf:about="#Colour"/>
  <owl:Class rdf:about="#Red"><rdfs:subClassOf rdf:resource="#Colour"/></owl:Class>
  <owl:Class rdf:about="#Row">
    <rdfs:subClassOf><owl:Class><owl:complementOf><owl:Restriction>
      <owl:onProperty rdf:resource="#hasColour"/><owl:someValuesFrom rdf:resource="#Red"/>
    </owl:Restriction></owl:complementOf></owl:Class></rdfs:subClassOf>
  </owl:Class>
  <owl:ObjectProperty rdf:about="#hasColour">
    <rdfs:range rdf:resource="#Colour"/>
  </owl:ObjectProperty>
  <owl:NamedIndividual rdf:about="#red"><rdf:type rdf:resource="#Red"/></owl:NamedIndividual>
  <owl:NamedIndividual rdf:about="#blue"><rdf:type rdf:resource="#Colour"/></owl:NamedIndividual>
</rdf:RDF>
"""


@pytest.fixture
def facility_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "facility"
    shutil.copytree(FACILITY, dest)
    return dest


@pytest.fixture
def tiny_pack(tmp_path: Path) -> Path:
    dest = tmp_path / "tiny"
    dest.mkdir()
    (dest / "pack.toml").write_text(TINY_TOML)
    (dest / "tiny.owl").write_text(TINY_OWL)
    (dest / "spine.sql").write_text("CREATE TABLE things (id VARCHAR PRIMARY KEY, colour VARCHAR);")
    return dest


@pytest.fixture(scope="module")
def pizza_pack_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("pizza") / "pizza"
    shutil.copytree(PIZZA_PACK, dest, ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
    shutil.copy(PIZZA_OWL, dest / "ontology" / "pizza.owl")
    return dest

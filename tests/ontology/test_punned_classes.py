"""Issue 27, item 6: a class that is an individual only by a pun (Brick gives each deprecated
class a `deprecatedInVersion` literal, which makes it an individual too) is no pool
individual: its name in ordinary prose is not an unknown entity, and no cell may name it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.pack import load_pack
from ontology import load_pools
from tests.ontology.conftest import TINY_OWL

pytestmark = pytest.mark.java

_PUNS = """  <owl:DatatypeProperty rdf:about="#deprecatedInVersion"/>
  <owl:Class rdf:about="#Site"><deprecatedInVersion>1.4</deprecatedInVersion></owl:Class>
  <owl:Class rdf:about="#Green"><rdfs:subClassOf rdf:resource="#Colour"/></owl:Class>
  <owl:NamedIndividual rdf:about="#Green"><rdf:type rdf:resource="#Colour"/></owl:NamedIndividual>
</rdf:RDF>
"""


def test_a_class_punned_only_by_a_literal_is_no_pool_individual(
    tiny_pack: Path, tmp_path: Path
) -> None:
    (tiny_pack / "tiny.owl").write_text(TINY_OWL.replace("</rdf:RDF>\n", _PUNS))
    pools = load_pools(load_pack(tiny_pack), tmp_path / "cache")
    assert "Site" in pools.classes and "Site" not in pools.individuals
    # a pun the ontology types on purpose stays an individual of its class
    assert "Green" in pools.individuals and "Green" in pools.classes["Colour"].members
    assert {"red", "blue"} <= set(pools.individuals)

"""The value ontology: loading OWL (owlready2, fresh World per load), HermiT reasoning,
the cached classification (`Pools` + `OntologyIndex`) and rows rendered as individuals.

The only package that imports owlready2.

    check_ontology(pack, cache_dir) -> None          the PackErrors that need no reasoner
                                                     (OWL 2 DL simple properties ...), no writes
    load_pools(pack, cache_dir) -> Pools           classified once per content hash, cached
    index_cached(pack, cache_dir) -> bool            load_pools would not classify
    load_index(pack, cache_dir) -> (OntologyIndex, base N-Triples, violation N-Triples)
    localise(rows, ...) -> Findings                  cohort reasoning (see ontology.localise)
"""

from __future__ import annotations

from ontology.index import CODE_VERSION, CardinalityRule, DataRule, OntologyIndex, ViolationClass
from ontology.load import LoadedOntology, load_ontology, ontology_hash
from ontology.localise import Findings, localise
from ontology.pools import build_index, check_ontology, index_cached, load_index, load_pools
from ontology.reason import BaseOntology, Classification, HermitRunner, Reasoner, java_executable
from ontology.render import RowFacts, render_rows

__all__ = [
    "CODE_VERSION",
    "BaseOntology",
    "CardinalityRule",
    "Classification",
    "DataRule",
    "Findings",
    "HermitRunner",
    "LoadedOntology",
    "OntologyIndex",
    "Reasoner",
    "RowFacts",
    "ViolationClass",
    "build_index",
    "check_ontology",
    "index_cached",
    "java_executable",
    "load_index",
    "load_ontology",
    "load_pools",
    "localise",
    "ontology_hash",
    "render_rows",
]

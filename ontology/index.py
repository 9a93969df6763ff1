"""`OntologyIndex`: everything the value gate needs from a classified pack ontology, as data.

It wraps the plain `harness.pools.Pools` (what proposers and other gates read) with what
only the value gate needs: the IRIs of bound classes/properties, the *violation classes*
(see `ontology.localise`) and the datatype rules of data columns. It is JSON, cached
under the cache folder keyed by the content hash of the ontology files, the pack's
bindings and `CODE_VERSION`, next to two N-Triples files: the base ontology and its
violation-class transform.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from harness.pools import Pools

__all__ = ["CODE_VERSION", "CardinalityRule", "DataRule", "OntologyIndex", "ViolationClass"]

CODE_VERSION = "membrane-ontology-index-9"  # 9: disjointness, equivalents, sameAs keyed like the pools
VIOLATION_NS = "urn:membrane:violation#"
PROBE_NS = "urn:membrane:not#"
ROW_NS = "urn:membrane:row#"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ViolationClass(_Frozen):
    """`iri ≡ on_class ⊓ ∃property.¬required`, standing in for the removed axiom `axiom`.

    kind "restriction": `on_class ⊑ ∀property.required` (on a row class or one of its
    entailed sub/superclasses); kind "range": `range(property) = required`.
    """

    iri: str
    kind: Literal["restriction", "range"]
    on_class: str  # fragment; "⊤" for ranges
    property: str  # fragment
    required: str  # fragment when named, else the rendered expression
    required_named: bool
    axiom: str


class DataRule(_Frozen):
    """The datatype and facets a data property's literal must satisfy (checked in Python)."""

    property: str
    datatype: Literal["integer", "decimal", "boolean", "string", "any"] = "any"
    min_inclusive: float | None = None
    max_inclusive: float | None = None
    min_exclusive: float | None = None
    max_exclusive: float | None = None
    axioms: tuple[str, ...] = ()


class CardinalityRule(_Frozen):
    """`on_class ⊑ ≥min / ≤max property[.qualifier]` (or a functional `property`: ≤1, on ⊤).

    Checked on the row as a closed record: its values of the `counted` bound properties
    (`property` and its sub-properties), distinct individuals modulo owl:sameAs, in
    `qualifier` when there is one.
    """

    on_class: str  # fragment; "⊤" for functional properties
    property: str  # fragment of the restricted property
    counted: tuple[str, ...]  # fragments of the bound properties whose values count
    min: int | None = None
    max: int | None = None
    qualifier: str | None = None  # fragment of a named filler; None = any individual
    axiom: str


class OntologyIndex(_Frozen):
    code_version: str
    key: str  # cache key (ontology files + bindings + code version)
    ontology_file: str
    pools: Pools
    row_class_iris: dict[str, str]  # table -> IRI of its row class
    property_iris: dict[str, str]  # property fragment -> IRI (bound properties)
    individual_iris: dict[str, str]  # individual fragment -> IRI
    violations: tuple[ViolationClass, ...] = ()
    data_rules: dict[str, DataRule] = {}
    definitions: dict[str, tuple[str, ...]] = {}  # class fragment -> its rendered axioms
    cardinalities: tuple[CardinalityRule, ...] = ()
    same_as: dict[str, tuple[str, ...]] = {}  # individual fragment -> its owl:sameAs others
    equivalents: dict[str, tuple[str, ...]] = {}  # class fragment -> named equivalent classes
    # rows never constrain one another (see ontology.independence): rows with the same class
    # and values have the same findings, so the gate reasons once per distinct row
    rows_independent: bool = False
    independence_note: str = ""

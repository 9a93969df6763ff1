"""Normalisation to what owlready2 and HermiT take (OWL 2 DL), before anything reasons.

Published ontologies carry triples outside OWL 2 DL, or that owlready2 cannot hold. They
are *set aside* (not lost: the report counts them, by reason, with examples), the rest is
kept:

* `property-typed-by-class`  `p rdf:type C` where p is a property and C a class of the
  ontology (not OWL/RDF/RDFS): metamodeling (Brick types its relationships
  `brick:Relationship`). owlready2 fails on it with a bare `TypeError: metaclass conflict`.
* `class-and-property`  an IRI declared both a class and a property: OWL 2 DL allows the pun,
  owlready2 cannot hold it (the class silently becomes a property). Its class axioms
  (declaration, sub/equivalent/disjoint class triples) are set aside.
* `rdf-property`  `p rdf:type rdf:Property`: redundant beside an OWL property type, not OWL
  2 DL alone; owlready2 fails on it (`TypeError: Property() takes no arguments`).
* `shacl`  SHACL shapes (`sh:` types and predicates, every triple of a shape that is no
  class, and the blank nodes only they use): constraints on data, not axioms for a reasoner.

`--strict-dl` (`membrane pack check`) refuses a pack whose ontology needs any of it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from ontology.rdf import ParsedFile, Triple

__all__ = ["REASONS", "IntakeReport", "SetAside", "SkippedImport", "normalise", "short"]

OWL = "http://www.w3.org/2002/07/owl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
XSD = "http://www.w3.org/2001/XMLSchema#"
SH = "http://www.w3.org/ns/shacl#"
_BUILTIN = (OWL, RDF, RDFS, XSD)
_PREFIXES = {OWL: "owl:", RDF: "rdf:", RDFS: "rdfs:", XSD: "xsd:", SH: "sh:"}
_TYPE = ox.NamedNode(RDF + "type")
_PROPERTY_TYPES = {RDF + "Property"} | {OWL + k for k in (
    "ObjectProperty", "DatatypeProperty", "AnnotationProperty", "OntologyProperty",
    "FunctionalProperty", "InverseFunctionalProperty", "TransitiveProperty",
    "SymmetricProperty", "AsymmetricProperty", "ReflexiveProperty", "IrreflexiveProperty")}
_CLASS_TYPES = {OWL + "Class", RDFS + "Class"}
_RDF_PROPERTY = RDF + "Property"
_CLASS_AXIOMS = {RDFS + "subClassOf", OWL + "equivalentClass", OWL + "disjointWith"}

REASONS = {
    "property-typed-by-class": (
        "rdf:type triples typing a property with a class of the ontology (metamodeling, "
        "outside OWL 2 DL)",
        "nothing to do if the reasoner need not see them; else type the property with "
        "owl:ObjectProperty/owl:DatatypeProperty only"),
    "class-and-property": (
        "class axioms of IRIs also declared as properties (a pun owlready2 cannot hold)",
        "give the class and the property different IRIs if rows must use the class"),
    "rdf-property": (
        "rdf:type rdf:Property triples (owlready2 cannot hold an rdf:Property; OWL 2 DL "
        "types properties as object, datatype or annotation properties)",
        "if rows use such a property, declare it owl:ObjectProperty or owl:DatatypeProperty"),
    "shacl": (
        "SHACL shapes (data constraints, not axioms for the reasoner)",
        "nothing to do: shapes are not reasoned over"),
}


@dataclass(frozen=True)
class SetAside:
    reason: str
    count: int
    examples: tuple[str, ...]  # up to three, "file: triple"

    @property
    def why(self) -> str:
        return REASONS[self.reason][0]

    @property
    def fix(self) -> str:
        return REASONS[self.reason][1]


@dataclass(frozen=True)
class SkippedImport:
    iri: str
    importer: Path
    lost: str  # what the ontology loses without it, in words


@dataclass(frozen=True)
class IntakeReport:
    """What the intake did: files read, triples kept and set aside by reason, imports skipped."""

    files: tuple[tuple[Path, str, int], ...] = ()  # (file, syntax, triples)
    kept: int = 0
    set_aside: tuple[SetAside, ...] = ()
    skipped: tuple[SkippedImport, ...] = ()

    @property
    def set_aside_triples(self) -> int:
        return sum(s.count for s in self.set_aside)


def short(term: object) -> str:
    text = str(term)
    for ns, prefix in _PREFIXES.items():
        if text.startswith(f"<{ns}"):
            return prefix + text[len(ns) + 1:-1]
    return text


def _iri(t: object) -> str | None:
    return t.value if isinstance(t, ox.NamedNode) else None


def _builtin(iri: str) -> bool:
    return iri.startswith(_BUILTIN)


def normalise(files: Sequence[ParsedFile]) -> tuple[list[list[Triple]], IntakeReport]:
    """The triples of each file to hand owlready2, and the report of what was set aside."""
    types: dict[str, set[str]] = defaultdict(set)
    for f in files:
        for t in f.triples:
            s, o = _iri(t.subject), _iri(t.object)
            if s is not None and o is not None and t.predicate == _TYPE:
                types[s].add(o)
    properties = {s for s, ts in types.items() if ts & _PROPERTY_TYPES}
    puns = {s for s in properties if types[s] & _CLASS_TYPES}
    kept: list[list[Triple]] = []
    counts: dict[str, int] = defaultdict(int)
    examples: dict[str, list[str]] = defaultdict(list)
    for f in files:
        reasons = _reasons(f.triples, properties, puns)
        keep = [t for t in f.triples if t not in reasons]
        for t, why in reasons.items():
            counts[why] += 1
            if len(examples[why]) < 3:
                examples[why].append(f"{f.path.name}: {short(t.subject)} "
                                     f"{short(t.predicate)} {short(t.object)}")
        kept.append(keep)
    report = IntakeReport(
        files=tuple((f.path, f.format, len(f.triples)) for f in files),
        kept=sum(len(k) for k in kept),
        set_aside=tuple(SetAside(r, counts[r], tuple(examples[r]))
                        for r in REASONS if counts[r]),
    )
    return kept, report


def _reasons(triples: Sequence[Triple], properties: set[str], puns: set[str]
             ) -> dict[Triple, str]:
    out: dict[Triple, str] = {}
    shapes = {t.subject for t in triples if t.predicate == _TYPE
              and (_iri(t.object) or "").startswith(SH)}
    # a class that is also a shape (Brick's classes are `owl:Class, sh:NodeShape`) keeps its
    # class triples; only its sh: triples go
    shapes -= {t.subject for t in triples if t.predicate == _TYPE
               and _iri(t.object) in _CLASS_TYPES}
    for t in triples:
        s, p, o = _iri(t.subject), t.predicate.value, _iri(t.object)
        if t.subject in shapes or p.startswith(SH) or (
                p == RDF + "type" and (o or "").startswith(SH)):
            out[t] = "shacl"
        elif p == RDF + "type" and s in properties and o is not None and not _builtin(o):
            out[t] = "property-typed-by-class"
        elif p == RDF + "type" and o == _RDF_PROPERTY:
            out[t] = "rdf-property"
        elif (s in puns and ((p == RDF + "type" and o in _CLASS_TYPES) or p in _CLASS_AXIOMS)
              ) or (o in puns and p in _CLASS_AXIOMS):
            out[t] = "class-and-property"
    _close_blank_nodes(triples, out)
    return out


def _close_blank_nodes(triples: Sequence[Triple], out: dict[Triple, str]) -> None:
    """Blank nodes only set-aside triples point at go with them (a shape's property lists)."""
    by_subject: dict[object, list[Triple]] = defaultdict(list)
    kept_refs: dict[object, int] = defaultdict(int)
    for t in triples:
        if isinstance(t.subject, ox.BlankNode):
            by_subject[t.subject].append(t)
        if isinstance(t.object, ox.BlankNode) and t not in out:
            kept_refs[t.object] += 1
    todo = [(t.object, why) for t, why in out.items() if isinstance(t.object, ox.BlankNode)]
    while todo:
        node, why = todo.pop()
        if kept_refs[node]:
            continue
        for t in by_subject.get(node, ()):
            if t in out:
                continue
            out[t] = why
            if isinstance(t.object, ox.BlankNode):
                kept_refs[t.object] -= 1
                todo.append((t.object, why))

"""OWL 2 DL's global restriction on simple properties, checked before any reasoner runs.

A property is *non-simple* (composite) when it is transitive, has a property chain
(owl:propertyChainAxiom), or has a non-simple sub-property (through rdfs:subPropertyOf,
owl:equivalentProperty or owl:inverseOf). OWL 2 DL (Structural Specification §11.2, "The
Restrictions on the Axiom Closure") forbids non-simple properties in cardinality restrictions
(min/max/exact, qualified or not), in owl:hasSelf, and as functional, inverse-functional,
irreflexive, asymmetric or disjoint properties. HermiT refuses such an ontology with a Java
stack trace ("Non-simple property ... in a cardinality restriction"); this module finds the
same axioms on the N-Triples and makes each a `PackError` naming the file, the axiom, the
rule and the usual rewrite.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.errors import PackError
from ontology.ntriples import OWL, RDF, RDFS, TripleGraph

__all__ = ["check_simple_properties", "non_simple_uses"]

_CARDINALITIES = {
    "cardinality": "=",
    "minCardinality": "≥",
    "maxCardinality": "≤",
    "qualifiedCardinality": "=",
    "minQualifiedCardinality": "≥",
    "maxQualifiedCardinality": "≤",
}
_CHARACTERISTICS = (
    "FunctionalProperty",
    "InverseFunctionalProperty",
    "IrreflexiveProperty",
    "AsymmetricProperty",
)
RULE = (
    "OWL 2 DL (Structural Specification §11.2): a non-simple property (transitive, with a "
    "property chain, or with such a sub-property) may not occur in a cardinality "
    "restriction, hasSelf, or a functional/inverse-functional/irreflexive/asymmetric/"
    "disjoint property axiom"
)
ADVICE = (
    "the usual rewrite: keep the chain (or transitivity) on a super-property of its own "
    "(e.g. hasXIndirect ⊒ hasX, with the chain on hasXIndirect) and put the cardinality "
    "on the simple property hasX; or drop one of the two axioms"
)


def _short(iri: str) -> str:
    return iri.rsplit("#", 1)[-1].rsplit("/", 1)[-1] if not iri.startswith("_:") else iri


def _literal(text: str) -> str:
    m = re.match(r'^"([^"]*)"', text)
    return m.group(1) if m else text


class _Graph(TripleGraph):
    def items(self, node: str) -> list[str]:
        seq: list[str] = []
        while node and node != RDF + "nil" and len(seq) < 100:
            seq += self.objects(node, RDF + "first")
            rest = self.objects(node, RDF + "rest")
            node = rest[0] if rest else ""
        return seq

    def named(self, prop: str) -> str:
        inverse = self.objects(prop, OWL + "inverseOf") if prop.startswith("_:") else []
        return inverse[0] if inverse else prop


def _non_simple(g: _Graph) -> dict[str, str]:
    """Non-simple property -> why (transitive, a chain, or a non-simple sub-property)."""
    why: dict[str, str] = {}
    for s, pairs in g.out.items():
        for p, o in pairs:
            if p == RDF + "type" and o == OWL + "TransitiveProperty":
                why.setdefault(s, f"{_short(s)} is transitive")
            elif p == OWL + "propertyChainAxiom":
                chain = " ∘ ".join(_short(x) for x in g.items(o))
                why.setdefault(s, f"{chain} ⊑ {_short(s)} (property chain)")
    links: list[tuple[str, str]] = []  # (source, target): target is non-simple if source is
    for s, pairs in g.out.items():
        for p, o in pairs:
            if p == RDFS + "subPropertyOf":
                links.append((s, o))
            elif p in (OWL + "equivalentProperty", OWL + "inverseOf"):
                links += [(s, o), (o, s)]
    changed = True
    while changed:
        changed = False
        for source, target in links:
            if source in why and target not in why:
                why[target] = f"{_short(source)} is non-simple ({why[source]})"
                changed = True
    return why


def _restriction_uses(g: _Graph, why: dict[str, str]) -> set[str]:
    found: set[str] = set()
    for s, pairs in g.out.items():
        for prop in (g.named(o) for p, o in pairs if p == OWL + "onProperty"):
            if prop not in why:
                continue
            owners = [
                f"{_short(c)} ⊑ "
                for q, c in g.inc.get(s, ())
                if q in (RDFS + "subClassOf", OWL + "equivalentClass")
            ] or [""]
            for p, o in pairs:
                local = p.rsplit("#", 1)[-1]
                if local in _CARDINALITIES:
                    what = (
                        f"{_CARDINALITIES[local]} {_literal(o)} {_short(prop)} "
                        "(cardinality restriction)"
                    )
                elif local == "hasSelf":
                    what = f"{_short(prop)} some Self (hasSelf)"
                else:
                    continue
                found.update(f"{owner}{what}; {why[prop]}" for owner in owners)
    return found


def non_simple_uses(nt: str) -> list[str]:
    """Each axiom that uses a non-simple property where OWL 2 DL requires a simple one,
    rendered for humans with the reason the property is non-simple, sorted."""
    g = _Graph(nt)
    why = _non_simple(g)
    found = _restriction_uses(g, why)
    for prop, reason in why.items():
        for kind in _CHARACTERISTICS:
            if (RDF + "type", OWL + kind) in g.out.get(prop, ()):
                found.add(f"{kind}({_short(prop)}); {reason}")
        for other in g.objects(prop, OWL + "propertyDisjointWith"):
            found.add(f"DisjointObjectProperties({_short(prop)} {_short(other)}); {reason}")
    return sorted(found)


def check_simple_properties(nt: str, file: Path) -> None:
    """PackError naming `file`, the first offending axiom (and how many in all), the OWL 2
    DL rule and the usual rewrite, if the ontology breaks the restriction on simple
    properties. Runs before HermiT, which would fail with a stack trace."""
    uses = non_simple_uses(nt)
    if uses:
        more = f" (and {len(uses) - 1} more: {'; '.join(uses[1:4])})" if len(uses) > 1 else ""
        raise PackError(
            f"the ontology is not OWL 2 DL: {uses[0]}{more}. {RULE}",
            file=file,
            hint=ADVICE,
        )

"""Do rows constrain one another? Read off the base ontology's N-Triples.

A row is a fresh individual `r` with a row class and object-property assertions to pool
individuals. Rows can only interact (so that a set of rows is inconsistent though each row
alone is consistent, or two rows with the same class and values behave differently) when
something points *back* at a row or forces rows to be equal:

* an inverse (`owl:inverseOf`, or an inverse property expression), a symmetric or an
  inverse-functional property among the bound properties and their super-properties;
* an `owl:hasKey` anywhere;
* a nominal (`owl:oneOf`) that a row could be forced into: at the top level (through
  `intersectionOf`/`unionOf`) of a general class axiom, of a domain of a bound property, or
  of the definition of a named class that is not entailed disjoint with every row class.

When none of these is present, a row's findings depend only on its class and values: the
value gate reasons once per distinct row (`OntologyIndex.rows_independent`). Otherwise it
reasons over whole cohorts (slower, same answers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ontology.ntriples import OWL, RDF, RDFS, TripleGraph

__all__ = ["rows_independent"]

_TOP_LEVEL = (OWL + "intersectionOf", OWL + "unionOf", RDF + "first", RDF + "rest")


class _Graph(TripleGraph):
    def has_nominal(self, node: str, seen: set[str] | None = None) -> bool:
        """Does a oneOf occur in `node` through intersectionOf/unionOf/list structure?"""
        seen = seen if seen is not None else set()
        if node in seen:
            return False
        seen.add(node)
        for p, o in self.out.get(node, ()):
            if p == OWL + "oneOf":
                return True
            if p in _TOP_LEVEL and self.has_nominal(o, seen):
                return True
        return False


def _closure(g: _Graph, props: Iterable[str]) -> set[str]:
    todo, seen = list(props), set[str]()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo += g.objects(p, RDFS + "subPropertyOf")
        todo += g.objects(p, OWL + "equivalentProperty")
        todo += [s for q, s in g.inc.get(p, ()) if q == OWL + "equivalentProperty"]
    return seen


def rows_independent(
    nt: str,
    bound_props: Iterable[str],
    row_classes: Iterable[str],
    disjoint: dict[str, set[str]],
    name: Callable[[str], str],
) -> tuple[bool, str]:
    """(independent?, why not). `row_classes` and `disjoint` (class -> classes entailed
    disjoint with it) use the names `name(iri)` gives."""
    g = _Graph(nt)
    why = _property_problem(g, _closure(g, bound_props))
    if why:
        return False, why
    rows = list(row_classes)
    for s, edges in g.out.items():
        for p, o in edges:
            if p == OWL + "hasKey":
                return False, "the ontology has an owl:hasKey axiom"
            if p not in (RDFS + "subClassOf", OWL + "equivalentClass") or not g.has_nominal(o):
                continue
            if s.startswith("_:"):
                return False, "a general class axiom uses a nominal (owl:oneOf)"
            if not all(name(s) in disjoint.get(r, set()) for r in rows):
                return False, f"<{s}> is defined by a nominal and a row could belong to it"
    return True, ""


def _property_problem(g: _Graph, closure: set[str]) -> str:
    for q in sorted(closure):
        if g.objects(q, OWL + "inverseOf") or any(
            p == OWL + "inverseOf" for p, _ in g.inc.get(q, ())
        ):
            return f"<{q}> has an inverse"
        kinds = set(g.objects(q, RDF + "type"))
        for kind in ("InverseFunctionalProperty", "SymmetricProperty"):
            if OWL + kind in kinds:
                return f"<{q}> is an owl:{kind}"
        for dom in g.objects(q, RDFS + "domain"):
            if g.has_nominal(dom):
                return f"the domain of <{q}> is a nominal"
    return ""

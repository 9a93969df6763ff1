"""Enumerated classes (`owl:oneOf` of named individuals), decided without the reasoner.

A class defined by a nominal, `C ≡ {a, b, c}`, has exactly those members: HermiT's
classification of the base ontology already realises them. What the value gate still needs
is which classes are *disjoint* with `C`. The general way, a probe class `N_C ≡ ¬C` in a
second HermiT call, is what made enumeration-heavy ontologies (the W3C wine ontology:
colour, body, flavour, sugar) crawl: a complement of nominals is hard for a tableau. The
nominals decide it instead: `X ⊓ {a, b, c} ⊑ ⊥` exactly when none of `a, b, c` can be an `X`.
This module finds the enumerations and the declared distinctness (`owl:AllDifferent`,
`owl:differentFrom`); `ontology.pools` marks `X` disjoint with `C` when every member of `C`
is declared different from every member of `X` (`X` an enumeration too), or has a
classified type already disjoint with `X`. That is sound (never a disjointness HermiT would
not entail) and, for the classes rows are checked against, what the probe found (tested on
the vino pack).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ontology.ntriples import OWL, RDF, TripleGraph

__all__ = ["different_pairs", "enumerations", "nominal_pairs"]


def _items(g: TripleGraph, head: str) -> list[str] | None:
    """The members of an RDF list; None when it is not a well-formed list."""
    out: list[str] = []
    seen: set[str] = set()
    while head != RDF + "nil":
        if head in seen:
            return None
        seen.add(head)
        first, rest = g.objects(head, RDF + "first"), g.objects(head, RDF + "rest")
        if len(first) != 1 or len(rest) != 1:
            return None
        out.append(first[0])
        head = rest[0]
    return out


def _named(nodes: list[str]) -> bool:
    return all(not n.startswith(("_:", '"')) for n in nodes)


def enumerations(nt: str, g: TripleGraph | None = None) -> dict[str, tuple[str, ...]]:
    """Named class IRI -> its members, for each class defined as `owl:oneOf` a list of
    named individuals: directly, or through `owl:equivalentClass` to such a class."""
    g = g or TripleGraph(nt)
    out: dict[str, tuple[str, ...]] = {}
    for s, edges in list(g.out.items()):
        if s.startswith("_:"):
            continue
        nodes = [s] + [o for p, o in edges if p == OWL + "equivalentClass"]
        nodes += [x for p, x in g.inc.get(s, ()) if p == OWL + "equivalentClass"]
        for node in nodes:
            for head in g.objects(node, OWL + "oneOf"):
                items = _items(g, head)
                if items and _named(items):
                    out[s] = tuple(sorted(set(out.get(s, ())) | set(items)))
    return out


def different_pairs(nt: str, g: TripleGraph | None = None) -> set[frozenset[str]]:
    """Pairs of individuals declared different (`owl:AllDifferent`, `owl:differentFrom`)."""
    g = g or TripleGraph(nt)
    pairs: set[frozenset[str]] = set()
    for s, edges in g.out.items():
        for p, o in edges:
            if p == OWL + "differentFrom" and s != o:
                pairs.add(frozenset((s, o)))
            if p in (OWL + "distinctMembers", OWL + "members") and (
                    (RDF + "type", OWL + "AllDifferent") in edges):
                items = _items(g, o) or []
                pairs |= {frozenset((a, b)) for i, a in enumerate(items)
                          for b in items[i + 1:] if a != b}
    return pairs


def nominal_pairs(
    enums: Mapping[str, tuple[str, ...]],
    required: Iterable[str],
    different: set[frozenset[str]],
    types_of: Callable[[str], Iterable[str]],
    disjoint: Mapping[str, set[str]],
    classes: Iterable[str],
    frag: Callable[[str], str],
) -> list[tuple[str, str]]:
    """(C, X) for each required enumeration C and named class X that cannot share a member:
    X is an enumeration whose members are all declared different from C's, or every member
    of C has a classified type (`types_of`) already disjoint with X (`disjoint`: fragment ->
    fragments, asserted and probed)."""
    out: list[tuple[str, str]] = []
    for c in required:
        members = enums.get(c)
        if not members:
            continue
        for x in classes:
            if x == c:
                continue
            if x in enums:
                ok = all(frozenset((m, n)) in different for m in members for n in enums[x])
            else:
                fx = frag(x)
                ok = all(any(fx in disjoint.get(frag(t), ()) for t in types_of(m))
                         for m in members)
            if ok:
                out.append((c, x))
    return out

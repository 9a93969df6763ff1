"""A graph over N-Triples text (what owlready2 serialises), for structural checks that need
no reasoner: which properties are simple (`dl`), whether rows are independent
(`independence`). Subjects and objects are IRIs without brackets, blank nodes as `_:x`,
literals as written."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

__all__ = ["OWL", "RDF", "RDFS", "TripleGraph", "triples"]

OWL = "http://www.w3.org/2002/07/owl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_TRIPLE = re.compile(r"^(\S+) <([^>]+)> (.+?) \.\s*$")


def triples(nt: str) -> Iterable[tuple[str, str, str]]:
    for line in nt.splitlines():
        m = _TRIPLE.match(line)
        if m:
            s, p, o = m.groups()
            yield s.strip("<>"), p, o.strip("<>") if o.startswith("<") else o


class TripleGraph:
    """Outgoing and incoming (predicate, node) edges of every node."""

    def __init__(self, nt: str) -> None:
        self.out: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.inc: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for s, p, o in triples(nt):
            self.out[s].append((p, o))
            self.inc[o].append((p, s))

    def objects(self, s: str, p: str) -> list[str]:
        return [o for q, o in self.out.get(s, ()) if q == p]

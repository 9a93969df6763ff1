"""Naming what makes a pack's own ontology inconsistent, before any artifact runs.

If the ontology without its named individuals' assertions is consistent, the culprits are
individuals: QuickXplain over the individuals (each with all its triples) finds a minimal
set whose assertions contradict the axioms. Otherwise the contradiction is in the axioms
themselves (an unsatisfiable class with a forced member, ...) and nothing is named.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from ontology.reason import BaseOntology, Reasoner

__all__ = ["inconsistent_individuals"]

_NAMED = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://www.w3.org/2002/07/owl#NamedIndividual>"


def inconsistent_individuals(nt: str, reasoner: Reasoner, limit: int = 40) -> list[str]:
    """IRIs of a minimal set of individuals whose assertions make `nt` inconsistent."""
    lines = nt.splitlines()
    named = {line.split(" ", 1)[0] for line in lines if _NAMED in line}
    tbox: list[str] = []
    abox: dict[str, list[str]] = defaultdict(list)
    for line in lines:
        subject = line.split(" ", 1)[0]
        (abox[subject] if subject in named else tbox).append(line)
    people = sorted(abox)

    def consistent(chosen: list[str]) -> bool:
        text = "\n".join(tbox + [t for s in chosen for t in abox[s]]) + "\n"
        return reasoner.consistent(BaseOntology.of(text), [])

    if not people or not consistent([]):
        return []
    found = _quickxplain(consistent, [], False, people, [limit])
    return [s.strip("<>") for s in found]


def _quickxplain(check: Callable[[list[str]], bool], background: list[str], added: bool,
                 candidates: list[str], budget: list[int]) -> list[str]:
    budget[0] -= 1
    if budget[0] < 0:
        return []
    if added and not check(background):
        return []
    if len(candidates) == 1:
        return list(candidates)
    mid = len(candidates) // 2
    c1, c2 = candidates[:mid], candidates[mid:]
    d2 = _quickxplain(check, background + c1, True, c2, budget)
    d1 = _quickxplain(check, background + d2, bool(d2), c1, budget)
    return d1 + d2

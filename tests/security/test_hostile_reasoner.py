"""A reasoner given an ontology that blows up fails closed (issue 17, hostile packs): past
its heap cap HermiT's OutOfMemoryError is an `InfrastructureError` that says so, past
`[ontology] reasoner_timeout_s` a `ReasonerTimeout` naming the setting (the time cap's
batch-level tests are in tests/test_issue21_reasoner_timeout.py)."""

from __future__ import annotations

import pytest

from harness.errors import InfrastructureError
from ontology.reason import HermitRunner, ReasonerTimeout

OWL = "http://www.w3.org/2002/07/owl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"


def _chain(n: int) -> str:
    """n classes, each a subclass of `r some` the next (a cycle), each with an individual:
    every individual needs a model of the whole cycle."""
    lines = [
        f"<http://x.org/o> <{RDF}type> <{OWL}Ontology> .",
        f"<http://x.org/r> <{RDF}type> <{OWL}ObjectProperty> .",
    ]
    for i in range(n):
        c = f"<http://x.org/C{i}>"
        lines += [
            f"{c} <{RDF}type> <{OWL}Class> .",
            f"_:b{i} <{RDF}type> <{OWL}Restriction> .",
            f"_:b{i} <{OWL}onProperty> <http://x.org/r> .",
            f"_:b{i} <{OWL}someValuesFrom> <http://x.org/C{(i + 1) % n}> .",
            f"{c} <{RDFS}subClassOf> _:b{i} .",
            f"<http://x.org/i{i}> <{RDF}type> {c} .",
        ]
    return "\n".join(lines) + "\n"


@pytest.mark.java
@pytest.mark.slow
def test_an_ontology_past_the_heap_cap_fails_closed_with_a_clear_message() -> None:
    with pytest.raises(InfrastructureError) as info:
        HermitRunner(memory_mb=32, timeout_s=600).classify(_chain(20_000))
    assert "ran out of memory" in str(info.value) and "-Xmx32M" in str(info.value)


@pytest.mark.java
def test_an_ontology_past_the_time_cap_fails_closed_naming_the_setting() -> None:
    with pytest.raises(ReasonerTimeout) as info:
        HermitRunner(timeout_s=0.5).classify(_chain(20_000))
    assert "reasoner_timeout_s" in str(info.value)

"""Rows rendered as OWL individuals, as N-Triples text (~2 µs a row, no object API).

A row becomes `<urn:membrane:row#aAtTrR> rdf:type <RowClass>` plus one object-property
assertion per resolved object cell, and `rdf:type <C>` per admitted class-valued cell. Placeholders, unknown values and data cells are not
rendered (data facets are checked in Python: numeric facets make HermiT explode).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ontology.index import ROW_NS

__all__ = ["RDF_TYPE", "RowFacts", "render_rows"]

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"  # a value pair (RDF_TYPE, class
# IRI) types the row by a class (a class-valued cell, issue 27) instead of asserting a property

_RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_NAMED_INDIVIDUAL = "<http://www.w3.org/2002/07/owl#NamedIndividual>"


@dataclass(frozen=True)
class RowFacts:
    """One row of one candidate of a cohort, as the reasoner sees it."""

    owner: int  # index of the candidate in the cohort
    table: str
    table_index: int  # position of the table in the pack's bindings (IRI-safe)
    row: int
    row_class: str  # IRI
    values: tuple[tuple[str, str], ...] = ()  # (property IRI, individual IRI)

    @property
    def iri(self) -> str:
        return f"{ROW_NS}a{self.owner}t{self.table_index}r{self.row}"

    def without(self, properties: set[str]) -> RowFacts:
        """The row with its assertions on `properties` dropped."""
        return replace(self, values=tuple(v for v in self.values if v[0] not in properties))


def render_rows(rows: Iterable[RowFacts]) -> str:
    out: list[str] = []
    for r in rows:
        s = f"<{r.iri}>"
        out.append(f"{s} {_RDF_TYPE} {_NAMED_INDIVIDUAL} .")
        out.append(f"{s} {_RDF_TYPE} <{r.row_class}> .")
        out.extend(f"{s} <{p}> <{v}> ." for p, v in r.values)
    return "\n" + "\n".join(out) + "\n"

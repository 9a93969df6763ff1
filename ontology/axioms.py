"""Rendering owlready2 class expressions and axioms for humans (critique evidence).

Names are IRI fragments; constructs use DL notation: `⊑`, `≡`, `⊓`, `⊔`, `¬`, `∀p.C`,
`∃p.C`, `∃p.{i}`, `≥n p.C`, `C ⊓ D ⊑ ⊥`.
"""

from __future__ import annotations

from typing import Any

import owlready2

from harness.pools import fragment_of

__all__ = ["fragment", "render", "render_value"]

_QUANT = {
    owlready2.SOME: "∃",
    owlready2.ONLY: "∀",
}
_CARD = {owlready2.EXACTLY: "=", owlready2.MIN: "≥", owlready2.MAX: "≤"}


fragment = fragment_of  # the IRI's fragment (after '#', else after the last '/' or ':')


def render_value(value: Any) -> str:
    """A literal or an entity, briefly."""
    if hasattr(value, "iri"):
        return fragment(str(value.iri))
    if isinstance(value, type):
        return value.__name__
    return repr(value)


def render(expr: Any) -> str:  # noqa: C901 - one case per construct
    """A class expression in DL notation."""
    if expr is owlready2.Thing:
        return "⊤"
    if expr is owlready2.Nothing:
        return "⊥"
    if isinstance(expr, owlready2.Restriction):
        prop = render(expr.property)
        if expr.type in _QUANT:
            return f"{_QUANT[expr.type]}{prop}.{_paren(expr.value)}"
        if expr.type == owlready2.VALUE:
            return f"∃{prop}.{{{render_value(expr.value)}}}"
        if expr.type in _CARD:
            plain = expr.value is None or expr.value is owlready2.Thing
            filler = "" if plain else f".{_paren(expr.value)}"
            return f"{_CARD[expr.type]}{expr.cardinality} {prop}{filler}"
        return str(expr)
    if isinstance(expr, owlready2.And):
        return " ⊓ ".join(_paren(c) for c in expr.Classes)
    if isinstance(expr, owlready2.Or):
        return " ⊔ ".join(_paren(c) for c in expr.Classes)
    if isinstance(expr, owlready2.Not):
        return f"¬{_paren(expr.Class)}"
    if isinstance(expr, owlready2.OneOf):
        return "{" + ", ".join(render_value(i) for i in expr.instances) + "}"
    if isinstance(expr, owlready2.Inverse):
        return f"{render(expr.property)}⁻"
    if isinstance(expr, owlready2.ConstrainedDatatype):
        facets = [
            f"{k}={v}" for k, v in vars(expr).items()
            if k not in ("base_datatype", "ontology", "storid") and not k.startswith("_")
            and v is not None
        ]
        return f"{render_value(expr.base_datatype)}[{', '.join(facets)}]"
    return render_value(expr)


def _paren(expr: Any) -> str:
    text = render(expr)
    if isinstance(expr, owlready2.And | owlready2.Or):
        return f"({text})"
    return text

"""Data cells against a `DataRule` (XSD type and numeric facets), checked in Python:
violation classes over numeric ranges make HermiT blow up (ENGINE_NOTES)."""

from __future__ import annotations

import math
import re

from harness.models import Cell
from ontology.index import DataRule

__all__ = ["data_problem", "describe"]

_INT_RE = re.compile(r"^[+-]?\d+$")
_NUM_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def describe(rule: DataRule) -> str:
    """`xsd:integer ≥ 20 and ≤ 50`, `number > 0`, ..."""
    bounds = []
    for name, sym in (("min_inclusive", "≥"), ("min_exclusive", ">"),
                      ("max_inclusive", "≤"), ("max_exclusive", "<")):
        value = getattr(rule, name)
        if value is not None:
            bounds.append(f"{sym} {value:g}")
    kind = {"integer": "xsd:integer", "decimal": "number"}.get(rule.datatype, rule.datatype)
    return kind + (f" {' and '.join(bounds)}" if bounds else "")


def data_problem(raw: Cell, rule: DataRule) -> str | None:
    """Why `raw` does not satisfy `rule`, or None."""
    if rule.datatype in ("string", "any"):
        return None
    if rule.datatype == "boolean":
        return None if isinstance(raw, bool) else f"{raw!r} is not a boolean"
    number: float
    if isinstance(raw, bool) or raw is None:
        return f"{raw!r} is not a number"
    if isinstance(raw, int | float):
        number = float(raw)
        is_int = isinstance(raw, int) or float(raw).is_integer()
    else:
        text = raw.strip()
        if not _NUM_RE.match(text):
            return f"{raw!r} is not a number"
        number, is_int = float(text), bool(_INT_RE.match(text))
    if not math.isfinite(number):
        return f"{raw!r} is not a finite number"
    if rule.datatype == "integer" and not is_int:
        return f"{raw!r} is not an integer"
    outside = (
        (rule.min_inclusive is not None and number < rule.min_inclusive)
        or (rule.max_inclusive is not None and number > rule.max_inclusive)
        or (rule.min_exclusive is not None and number <= rule.min_exclusive)
        or (rule.max_exclusive is not None and number >= rule.max_exclusive)
    )
    if outside:
        return f"{raw!r} is outside the range ({describe(rule)})"
    return None

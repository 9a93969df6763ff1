"""The offline proposer's numbers: the range a numeric cell must lie in, and a repair into it.

The range of a column comes from what the pack states, read without a reasoner:

* the spine's CHECK constraints on that one column (`floor BETWEEN -3 AND 40`,
  `rated_power_kw > 0`; conjunctions of comparisons with a number; anything else, such as
  an OR or another column, is not read, and the column has no known range from it);
* the `expected` of a critique on the cell: a CHECK expression (`ri.check`) or the
  datatype facets VALUE_GATE describes (`value.range`: "xsd:integer ≥ 1 and ≤ 120",
  "number > 0");
* an INTEGER-like column type (or an `xsd:integer` facet) makes the range integral.

`into_range` moves a number into its range (the nearest admissible value); `shrink` moves it
halfway toward the low end of the range (or toward 0), for a number an assertion rejected
whose rule the proposer cannot read (such as a per-room power budget): each attempt tries a
smaller value. An assertion that needs a *larger* number is not repaired this way.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from harness.pack import Pack

__all__ = ["Interval", "column_ranges", "into_range", "parse_check", "parse_described", "shrink"]

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_CMP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "==": "=="}


@dataclass(frozen=True)
class Interval:
    """low..high (None: unbounded), each end open or closed; `integer`: whole numbers only."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False

    def contains(self, x: float) -> bool:
        if not math.isfinite(x) or (self.integer and not float(x).is_integer()):
            return False
        if self.low is not None and (x < self.low or (self.low_open and x == self.low)):
            return False
        return not (self.high is not None and (x > self.high or (self.high_open and x == self.high)))

    def empty(self) -> bool:
        lo, hi = self.inner_low(), self.inner_high()
        return lo is not None and hi is not None and lo > hi

    def inner_low(self) -> float | None:
        """The smallest admissible value (an open end nudged inside)."""
        if self.low is None:
            return None
        if self.integer:
            return math.floor(self.low) + 1 if self.low_open or not self.low.is_integer() \
                else self.low
        return self.low + _step(self.low, self.high) if self.low_open else self.low

    def inner_high(self) -> float | None:
        if self.high is None:
            return None
        if self.integer:
            return math.ceil(self.high) - 1 if self.high_open or not self.high.is_integer() \
                else self.high
        return self.high - _step(self.high, self.low) if self.high_open else self.high

    def meet(self, other: Interval | None) -> Interval:
        """Both intervals at once."""
        if other is None:
            return self
        out = replace(self, integer=self.integer or other.integer)
        if other.low is not None and (out.low is None or other.low > out.low or (
                other.low == out.low and other.low_open)):
            out = replace(out, low=other.low, low_open=other.low_open)
        if other.high is not None and (out.high is None or other.high < out.high or (
                other.high == out.high and other.high_open)):
            out = replace(out, high=other.high, high_open=other.high_open)
        return out


def _step(bound: float, other: float | None) -> float:
    """How far inside an open end a repair goes: 1% of the span, or of the bound, or 0.1."""
    if other is not None and other != bound:
        return abs(other - bound) / 100
    return abs(bound) / 100 if bound else 0.1


def _bound(op: str, value: float) -> Interval | None:
    return {
        ">": Interval(low=value, low_open=True),
        ">=": Interval(low=value),
        "<": Interval(high=value, high_open=True),
        "<=": Interval(high=value),
        "=": Interval(low=value, high=value),
        "==": Interval(low=value, high=value),
    }.get(op)


def _strip_parens(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def parse_check(expression: str | None, column: str) -> Interval | None:
    """The interval a CHECK predicate allows `column`, when it is a conjunction of
    comparisons of that column with numbers (BETWEEN too); None when any part is not."""
    if not expression or len(expression) > 2000:
        return None
    text = _strip_parens(expression)
    col = rf'(?:"{re.escape(column)}"|{re.escape(column)})'
    between = re.compile(rf"{col}\s+BETWEEN\s+({_NUM})\s+AND\s+({_NUM})", re.IGNORECASE)
    out = Interval()
    rest = text
    for bm in list(between.finditer(text)):
        out = out.meet(Interval(low=float(bm.group(1)), high=float(bm.group(2))))
        rest = rest.replace(bm.group(0), "TRUE", 1)
    left = re.compile(rf"^{col}\s*(<=|>=|==|<|>|=)\s*({_NUM})$", re.IGNORECASE)
    right = re.compile(rf"^({_NUM})\s*(<=|>=|==|<|>|=)\s*{col}$", re.IGNORECASE)
    for raw in re.split(r"\s+AND\s+", rest, flags=re.IGNORECASE):
        part = _strip_parens(raw)
        if part.upper() == "TRUE":
            continue
        if lm := left.match(part):
            got = _bound(lm.group(1), float(lm.group(2)))
        elif rm := right.match(part):
            got = _bound(_CMP[rm.group(2)], float(rm.group(1)))
        else:
            return None
        if got is None:
            return None
        out = out.meet(got)
    return None if out == Interval() else out


_DESCRIBED = re.compile(rf"(≥|>|≤|<)\s*({_NUM})")


def parse_described(expected: str | None) -> Interval | None:
    """The interval of VALUE_GATE's description of a data rule ("xsd:integer ≥ 1 and ≤ 120",
    "number > 0"); None when it states no bound and no integer type."""
    if not expected or len(expected) > 500:
        return None
    out = Interval(integer=expected.startswith("xsd:integer"))
    ops = {"≥": ">=", ">": ">", "≤": "<=", "<": "<"}
    for m in _DESCRIBED.finditer(expected):
        got = _bound(ops[m.group(1)], float(m.group(2)))
        out = out.meet(got)
    return None if out == Interval() else out


def column_ranges(pack: Pack) -> dict[tuple[str, str], Interval]:
    """(table, column) -> the interval the spine's CHECKs and column types allow."""
    from effectors.ri_gate.ddl import parse_spine  # the DDL reader RI_GATE uses

    out: dict[tuple[str, str], Interval] = {}
    for table in parse_spine(pack.spine_path).tables:
        for col in table.columns:
            if col.numeric_kind == "exact" and not col.type.startswith("DECIMAL"):
                out[(table.name, col.name)] = Interval(integer=True)
        for c in table.constraints:
            if c.kind == "check" and len(c.columns) == 1:
                got = parse_check(c.expression, c.columns[0])
                if got is not None:
                    key = (table.name, c.columns[0])
                    out[key] = got.meet(out.get(key))
    return out


def _fit(x: float, interval: Interval) -> float:
    """`x` (rounded, for an integral interval), or the admissible end nearest it when it
    lies outside."""
    if interval.integer:
        x = float(round(x))
    lo, hi = interval.low, interval.high
    inner_lo, inner_hi = interval.inner_low(), interval.inner_high()
    if lo is not None and inner_lo is not None and (x < lo or (interval.low_open and x == lo)):
        x = inner_lo
    elif hi is not None and inner_hi is not None and (
            x > hi or (interval.high_open and x == hi)):
        x = inner_hi
    return x


def into_range(value: float, interval: Interval) -> float | None:
    """The admissible number nearest `value` (None: the interval is empty)."""
    if interval.empty():
        return None
    if not math.isfinite(value):
        lo, hi = interval.inner_low(), interval.inner_high()
        value = lo if lo is not None else hi if hi is not None else 0.0
    return _fit(value, interval)


def shrink(value: float, interval: Interval | None) -> float | None:
    """Halfway from `value` toward the low end of `interval` (or toward 0), kept inside it;
    None when that is `value` itself (nothing smaller to try)."""
    interval = interval or Interval()
    if interval.empty() or not math.isfinite(value):
        return None
    lo = interval.low
    floor = lo if lo is not None else (0.0 if value > 0 else None)
    if floor is None or value <= floor:
        return None
    out = _fit(floor + (value - floor) / 2, interval)
    if interval.integer and out >= value:
        out = value - 1
    return out if out != value and interval.contains(out) else None

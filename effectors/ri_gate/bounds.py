"""Row-count and aggregate bounds declared in `pack.toml` (`[bounds]`), checked per artifact.

    [bounds.rows.rooms]                 # ri.row_count: rows of one artifact's table
    min = 1
    max = 40

    [[bounds.aggregate]]                # ri.aggregate: function(column) within [min, max]
    table = "equipment"
    function = "sum"                    # sum | count | count_distinct | min | max | avg
    column = "rated_power_kw"
    group_by = ["room_id"]              # optional: one value per group of rows
    max = 2000.0
    severity = "error"                  # error (default) | warn

An artifact with no rows in the table has row count 0, `sum`, `count` and
`count_distinct` 0 (when not grouped; a sum over only NULLs is 0 too), and no `min`/`max`/`avg` (that bound passes).
A violated error bound rejects the cells it is about: the aggregated column of the rows
in the group, or the rows beyond `max` for a row count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from effectors.ri_gate.ddl import Schema, quote
from effectors.ri_gate.staging import Hit, safe_text
from harness.errors import PackError
from harness.models import Artifact
from harness.pack import AggregateBound, Pack, RowBound

__all__ = [
    "Bounds",
    "aggregate_hit",
    "aggregate_sql",
    "empty_table_hits",
    "load_bounds",
    "row_count_hits",
]

_AGG_SQL = {"sum": "coalesce(sum({}), 0)", "count": "count({})", "count_distinct": "count(DISTINCT {})",
            "min": "min({})", "max": "max({})", "avg": "avg({})"}
_ZERO_WHEN_EMPTY = ("sum", "count", "count_distinct")


@dataclass(frozen=True)
class Bounds:
    """The pack's bounds, validated against the spine."""

    rows: tuple[tuple[str, RowBound], ...] = ()
    aggregates: tuple[AggregateBound, ...] = ()


def _toml_line(path: Path, section: str, occurrence: int, key: str | None) -> int | None:
    """Best-effort line of `key` in the `occurrence`-th `[section]` / `[[section]]` header."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    seen = -1
    header = re.compile(r"^\s*\[\[?\s*" + re.escape(section) + r"\s*\]\]?\s*(#.*)?$")
    for i, line in enumerate(lines):
        if header.match(line):
            seen += 1
            if seen == occurrence:
                if key is None:
                    return i + 1
                for j in range(i + 1, len(lines)):
                    if lines[j].lstrip().startswith("["):
                        break
                    if re.match(r"^\s*" + re.escape(key) + r"\s*=", lines[j]):
                        return j + 1
                return i + 1
    return None


def _check_aggregate(b: AggregateBound, schema: Schema) -> str | None:
    if b.table not in schema.names:
        return f"bounds.aggregate names table {b.table!r}, which the spine lacks"
    cols = schema.table(b.table).column_names
    missing = [c for c in (b.column, *b.group_by) if c not in cols]
    if missing:
        return f"bounds.aggregate names {b.table}.{missing}, not columns of the spine"
    col = schema.table(b.table).columns[cols.index(b.column)]
    if b.function not in ("count", "count_distinct") and col.numeric_kind == "other":
        return f"{b.function}({b.column}) needs a numeric column; {b.column} is {col.type}"
    if any(v is not None and not math.isfinite(v) for v in (b.min, b.max)):
        return "bounds.aggregate min and max must be finite numbers"
    return None


def load_bounds(pack: Pack, schema: Schema) -> Bounds:
    """The pack's `[bounds]`, checked against the spine; a problem is a `PackError`."""
    toml = pack.root / "pack.toml"
    cfg = pack.config.bounds
    for table in cfg.rows:
        if table not in schema.names:
            raise PackError(f"bounds.rows names table {table!r}, which the spine lacks",
                            file=toml, line=_toml_line(toml, f"bounds.rows.{table}", 0, None)
                            or _toml_line(toml, "bounds.rows", 0, table),
                            hint=f"tables: {', '.join(schema.names)}")
    for i, b in enumerate(cfg.aggregate):
        problem = _check_aggregate(b, schema)
        if problem is not None:
            raise PackError(problem, file=toml,
                            line=_toml_line(toml, "bounds.aggregate", i, None),
                            hint="fix that [[bounds.aggregate]] entry")
    return Bounds(rows=tuple(sorted(cfg.rows.items())), aggregates=tuple(cfg.aggregate))


def _range_text(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"between {_num(lo)} and {_num(hi)}"
    return f"at least {_num(lo)}" if lo is not None else f"at most {_num(hi)}"


def _num(v: float | int | None) -> str:
    if v is None:
        return "none"
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else f"{v:.6g}"


def row_count_hits(
    bounds: Bounds, counts: dict[str, list[int]], candidates: Sequence[Artifact]
) -> list[Hit]:
    """`ri.row_count` findings, from the row counts counted while staging."""
    hits: list[Hit] = []
    for table, b in bounds.rows:
        for a_idx, n in enumerate(counts.get(table, [0] * len(candidates))):
            if b.min <= n and (b.max is None or n <= b.max):
                continue
            extra: tuple[str, ...] = ()
            if b.max is not None and n > b.max:
                rows = candidates[a_idx].tables.get(table, [])
                extra = tuple(f"{table}[{r}].{c}" for r in range(b.max, n) for c in rows[r])
            want = _range_text(b.min, b.max)
            hits.append(Hit(
                code="ri.row_count", artifact=a_idx, table=table, row=None,
                severity=b.severity, observed=str(n), expected=f"{want} rows",
                evidence=(f"[bounds.rows.{table}] min = {b.min}, max = {_num(b.max)}",),
                message=f"{table} has {n} rows; expected {want}",
                fix_hint=("drop rows" if b.max is not None and n > b.max else "add rows")
                + f" so that {table} has {want} rows",
                reject=b.severity == "error", extra_cells=extra,
            ))
    return hits


def aggregate_sql(k: int, b: AggregateBound, source: str) -> str:
    """One part of the check query: the groups of `b` whose aggregate is out of range.
    `source`: the table's rows (a subquery over the stage with `_artifact`, `_row` and
    the bound's columns)."""
    agg = "CAST(" + _AGG_SQL[b.function].format(quote(b.column)) + " AS DOUBLE)"
    out = []
    if b.min is not None:
        out.append(f"{agg} < {float(b.min)!r}")
    if b.max is not None:
        out.append(f"{agg} > {float(b.max)!r}")
    keys = "".join(f", {quote(g)}" for g in b.group_by)
    names = ", ".join(f"CAST({quote(g)} AS VARCHAR)" for g in b.group_by)
    first = "min(_row)" if b.group_by else "NULL::INTEGER"
    return (f"SELECT {k} AS k, _artifact, {first} AS _row, NULL::INTEGER AS x, "
            f"NULL::BOOLEAN[] AS f, {agg} AS v, [{names}]::VARCHAR[] AS g, "
            f"list(_row) AS r FROM {source} "
            f"GROUP BY _artifact{keys} HAVING {' OR '.join(out)}")


def _describe(b: AggregateBound) -> str:
    fn = f"count(DISTINCT {b.column})" if b.function == "count_distinct" else (
        f"{b.function}({b.column})")
    return fn


def aggregate_hit(
    b: AggregateBound, a_idx: int, first: int | None, value: float | None,
    group: Sequence[object], rows: Sequence[int],
) -> Hit:
    fn = _describe(b)
    where = ", ".join(f"{g} = {safe_text(v, 80)}" for g, v in zip(b.group_by, group, strict=True))
    scope = f"{b.table} rows with {where}" if where else b.table
    want = _range_text(b.min, b.max)
    cells = tuple(f"{b.table}[{r}].{b.column}" for r in rows)
    return Hit(
        code="ri.aggregate", artifact=a_idx, table=b.table, row=first,
        columns=(b.column,) if first is not None else (), severity=b.severity,
        observed=_num(value), expected=want,
        evidence=(f"[[bounds.aggregate]] {fn} over {b.table}"
                  + (f" per {', '.join(b.group_by)}" if b.group_by else "")
                  + f" {want}",),
        message=f"{fn} over {scope} is {_num(value)}; expected {want}",
        fix_hint=f"change {b.column} (or the rows) so that {fn} is {want}",
        reject=b.severity == "error", extra_cells=cells if b.severity == "error" else (),
    )


def empty_table_hits(
    bounds: Bounds, counts: dict[str, list[int]], n_candidates: int
) -> list[tuple[int, AggregateBound]]:
    """(artifact, bound) pairs of ungrouped count/sum bounds violated by a table with no
    rows in that artifact (the SQL over staged rows cannot see an absent table)."""
    out = []
    for b in bounds.aggregates:
        if b.group_by or b.function not in _ZERO_WHEN_EMPTY:
            continue
        if (b.min is None or b.min <= 0) and (b.max is None or b.max >= 0):
            continue
        for a_idx, n in enumerate(counts.get(b.table, [0] * n_candidates)):
            if n == 0:
                out.append((a_idx, b))
    return out

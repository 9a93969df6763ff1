"""Stage a cohort of artifacts in DuckDB: one wide table, typed views, Arrow only.

All rows of all spine tables of a cohort go into one unconstrained table `_stage`
(`_table`, `_artifact`, `_row`, then one typed column per spine column, named
`t<table>_c<column>`), loaded with one `INSERT ... SELECT` from a registered Arrow table.
Each spine table `T(c1, ..., cn)` is a view `T(_artifact, _row, c1, ..., cn)` over it:
`_artifact` is the candidate's 0-based position in the cohort, `_row` the row's 0-based
index in the artifact's table. One statement loads a cohort, whatever its size; the
warm connection keeps the table and views and only its rows change.

Cells travel as Arrow data only, never as SQL text. A column whose Python values are
provably clean for its type (ints in range for an integer column, finite floats for a
DOUBLE, strings for a VARCHAR) is sent typed. Any other column is rendered to text and
cast with `TRY_CAST`; a cell that does not cast (or would be rounded into an exact
numeric type, or is a non-finite float) becomes NULL in the stage and a `ri.type`
finding. A value that cannot even be rendered (a lone surrogate, an int too large for
`str`) is a `ri.type` finding found in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa  # type: ignore[import-untyped]

from effectors.ri_gate.ddl import Column, Schema, Table, quote
from harness.models import Artifact

__all__ = ["Hit", "Layout", "Staged", "cell_text", "safe_text", "stage", "type_predicate"]

_NONE = type(None)
_EXACT = 2**53  # ints beyond this are left to DuckDB's own cast rules
_INT_RANGES = {
    "TINYINT": (-(2**7), 2**7 - 1), "SMALLINT": (-(2**15), 2**15 - 1),
    "INTEGER": (-(2**31), 2**31 - 1), "BIGINT": (-_EXACT, _EXACT), "HUGEINT": (-_EXACT, _EXACT),
    "UTINYINT": (0, 2**8 - 1), "USMALLINT": (0, 2**16 - 1), "UINTEGER": (0, 2**32 - 1),
    "UBIGINT": (0, _EXACT), "UHUGEINT": (0, _EXACT),
}


@dataclass(frozen=True)
class Hit:
    """One violation found by a query, before it becomes a `Critique`."""

    code: str
    artifact: int
    table: str | None
    row: int | None
    columns: tuple[str, ...] = ()
    severity: str = "error"
    observed: str | None = None
    expected: str | None = None
    evidence: tuple[str, ...] = ()
    message: str = ""
    fix_hint: str | None = None
    reject: bool = True
    extra_cells: tuple[str, ...] = ()  # more cells to reject, as `table[row].column`


def safe_text(value: object, cap: int = 200, *, as_repr: bool = False) -> str:
    """Render an untrusted value for a critique: at most `cap` characters, valid UTF-8."""
    try:
        text = repr(value) if as_repr else str(value)
    except ValueError:  # an int with more digits than int->str allows
        bits = value.bit_length() if isinstance(value, int) else 0
        text = f"<integer of {bits} bits>"
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) > cap:
        suffix = f"… ({len(text)} chars)"
        text = text[: max(cap - len(suffix), 0)] + suffix
    return text


def cell_text(value: object) -> tuple[str | None, str | None]:
    """Render a cell as text for loading: `(text, None)` or `(None, problem)`."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        return ("true" if value else "false"), None
    if isinstance(value, int):
        try:
            return str(value), None
        except ValueError:  # more digits than int->str allows
            return None, "an integer too large to represent"
    if isinstance(value, float):
        return repr(value), None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None, "text that is not valid Unicode (lone surrogate)"
        return value, None
    return None, f"an unsupported value of type {type(value).__name__}"


def type_predicate(raw: str, column: Column) -> str | None:
    """SQL predicate over raw text `raw` that is true when it is not a clean `column.type`."""
    if column.type == "VARCHAR":
        return None
    cast = f"TRY_CAST({raw} AS {column.type})"
    pred = f"{cast} IS NULL"
    if column.numeric_kind == "exact":
        as_double = f"TRY_CAST({raw} AS DOUBLE)"
        pred += f" OR {as_double} IS NULL OR {as_double} <> {cast}"
    elif column.numeric_kind == "float":
        pred += f" OR NOT isfinite({cast})"
    return pred


@dataclass(frozen=True)
class Layout:
    """Names and DDL of the stage for one schema."""

    schema: Schema

    @staticmethod
    def column(t_idx: int, c_idx: int) -> str:
        return f"t{t_idx}_c{c_idx}"

    def create_sql(self) -> str:
        cols = ", ".join(f"{self.column(t, c)} {col.type}"
                         for t, table in enumerate(self.schema.tables)
                         for c, col in enumerate(table.columns))
        return f"CREATE TABLE _stage (_table INTEGER, _artifact INTEGER, _row INTEGER, {cols})"

    def view_sql(self, t_idx: int) -> str:
        table = self.schema.tables[t_idx]
        cols = ", ".join(f"{self.column(t_idx, c)} AS {quote(col.name)}"
                         for c, col in enumerate(table.columns))
        return (f"CREATE TEMP VIEW {quote(table.name)} AS SELECT _artifact, _row, {cols} "
                f"FROM _stage WHERE _table = {t_idx}")

    def source(self, table: str, columns: Sequence[str]) -> str:
        """A subquery reading only `columns` (plus `_artifact`, `_row`) of a spine table from
        the stage: cheaper to plan than the table's view, which names every column."""
        t_idx = self.schema.names.index(table)
        names = self.schema.tables[t_idx].column_names
        cols = "".join(f", {self.column(t_idx, names.index(c))} AS {quote(c)}"
                       for c in dict.fromkeys(columns))
        return f"(SELECT _artifact, _row{cols} FROM _stage WHERE _table = {t_idx})"

    def insert_sql(self, arrow_name: str) -> str:
        casts = ", ".join(f"TRY_CAST({self.column(t, c)} AS {col.type})"
                          for t, table in enumerate(self.schema.tables)
                          for c, col in enumerate(table.columns))
        return f"INSERT INTO _stage SELECT _table, _artifact, _row, {casts} FROM {arrow_name}"

    def type_check_sql(self, arrow_name: str, flagged: Sequence[tuple[int, int]]) -> str | None:
        """Rows of text columns `flagged` whose cell is not a clean value of its type."""
        parts = []
        for t, c in flagged:
            col = self.schema.tables[t].columns[c]
            pred = type_predicate(self.column(t, c), col)
            if pred is not None:
                parts.append(f"SELECT _artifact, {t} AS t, _row, {c} AS c FROM {arrow_name} "
                              f"WHERE _table = {t} AND {self.column(t, c)} IS NOT NULL "
                              f"AND ({pred})")
        if not parts:
            return None
        return " UNION ALL ".join(parts) + " ORDER BY 1, 2, 3, 4"


@dataclass
class Staged:
    """A cohort rendered for loading: the Arrow table, findings made in Python, the text
    columns DuckDB must type-check, and each table's row count per artifact."""

    arrow: pa.Table
    hits: list[Hit] = field(default_factory=list)
    flagged: list[tuple[int, int]] = field(default_factory=list)
    counts: list[list[int]] = field(default_factory=list)  # [table][artifact]


def _typed(col: Column, values: Sequence[object], kinds: set[type]) -> pa.Array | None:
    """A typed Arrow array when every value is provably a clean `col.type`, else None."""
    # imported on first use (~40 ms): a session that judges nothing (a rerun) never needs it
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    try:
        if col.type == "VARCHAR" and kinds <= {str, _NONE}:
            return pa.array(values, pa.large_string())
        if col.type in _INT_RANGES and kinds <= {int, _NONE}:
            arr = pa.array(values, pa.int64())
            lo, hi = _INT_RANGES[col.type]
            mm = pc.min_max(arr).as_py()
            if mm["min"] is None or (lo <= mm["min"] and mm["max"] <= hi):
                return arr
        elif col.type == "DOUBLE" and kinds <= {int, float, _NONE}:
            arr = pa.array(values, pa.float64())  # refuses ints a double cannot hold exactly
            if pc.all(pc.is_finite(arr)).as_py() is not False:
                return arr
    except (pa.ArrowException, OverflowError, UnicodeEncodeError):
        pass
    return None


def _text(
    table: Table, c_idx: int, values: Sequence[object], where: tuple[list[int], list[int]],
    hits: list[Hit],
) -> pa.Array:
    col = table.columns[c_idx]
    texts: list[str | None] = []
    for i, value in enumerate(values):
        text, problem = cell_text(value)
        texts.append(text)
        if problem is not None:
            hits.append(Hit(
                code="ri.type", artifact=where[0][i], table=table.name, row=where[1][i],
                columns=(col.name,), expected=col.type,
                observed=safe_text(value, as_repr=True),
                evidence=(f"{table.name}.{col.name} {col.type}",),
                message=f"{col.name} holds {problem}, not a {col.type}",
                fix_hint=f"give {col.name} a {col.type} value",
            ))
    return pa.array(texts, pa.large_string())


def stage(layout: Layout, candidates: Sequence[Artifact]) -> Staged:
    """Render a cohort as one Arrow table for `_stage` (no DuckDB involved)."""
    out = Staged(arrow=pa.table({}))
    parts: list[pa.Table] = []
    for t_idx, table in enumerate(layout.schema.tables):
        per = [a.tables.get(table.name, []) for a in candidates]
        out.counts.append([len(rows) for rows in per])
        rows = [r for rs in per for r in rs]
        arts = [a for a, rs in enumerate(per) for _ in rs]
        idx = [i for rs in per for i in range(len(rs))]
        arrays = [pa.repeat(pa.scalar(t_idx, pa.int32()), len(rows)),
                  pa.array(arts, pa.int32()), pa.array(idx, pa.int32())]
        names = ["_table", "_artifact", "_row"]
        for c_idx, col in enumerate(table.columns):
            values = [r.get(col.name) for r in rows]
            arr = _typed(col, values, set(map(type, values)))
            if arr is None:
                arr = _text(table, c_idx, values, (arts, idx), out.hits)
                if col.type != "VARCHAR":
                    out.flagged.append((t_idx, c_idx))
            arrays.append(arr)
            names.append(layout.column(t_idx, c_idx))
        parts.append(pa.Table.from_arrays(arrays, names=names))
    out.arrow = pa.concat_tables(parts, promote_options="default")
    return out


def type_hits(
    con: duckdb.DuckDBPyConnection, layout: Layout, staged: Staged, arrow_name: str,
    candidates: Sequence[Artifact],
) -> list[Hit]:
    """`ri.type` findings of the flagged text columns (the registered `arrow_name`)."""
    sql = layout.type_check_sql(arrow_name, staged.flagged)
    if sql is None:
        return []
    hits = []
    for a, t, r, c in con.execute(sql).fetchall():
        table = layout.schema.tables[t]
        col = table.columns[c]
        value = candidates[a].tables[table.name][r].get(col.name)
        hits.append(Hit(
            code="ri.type", artifact=a, table=table.name, row=r, columns=(col.name,),
            expected=col.type, observed=safe_text(value, as_repr=True),
            evidence=(f"{table.name}.{col.name} {col.type}",),
            message=f"{col.name} = {safe_text(value, as_repr=True)} is not a clean {col.type}",
            fix_hint=f"give {col.name} a {col.type} value",
        ))
    return hits

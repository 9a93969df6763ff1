"""Load a cohort of artifacts into unconstrained, typed staging tables.

Every spine table `T(c1, ..., cn)` becomes a staging table `T(_artifact, _row, c1, ...,
cn)` without any constraint: `_artifact` is the candidate's 0-based position in the
cohort, `_row` the row's 0-based index in the artifact's table. Cells travel as Arrow
data only (never as SQL text): each cell is rendered to text in Python, loaded into a raw
text table, and cast to the column's type with `TRY_CAST`. A cell that does not cast
(or would be rounded into an exact numeric type, or is a non-finite float) becomes NULL
in the staging table and a `ri.type` finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import pyarrow as pa  # type: ignore[import-untyped]

from effectors.ri_gate.ddl import Column, Schema, Table, quote
from harness.models import Artifact

__all__ = ["Hit", "cell_text", "create_empty", "load_cohort", "safe_text", "type_predicate"]


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


def _raw_name(index: int) -> str:
    return f"_raw_{index}"


def _arrow_schema(table: Table) -> pa.Schema:
    fields = [pa.field("_artifact", pa.int32()), pa.field("_row", pa.int32())]
    fields += [pa.field(f"c{i}", pa.large_string()) for i in range(len(table.columns))]
    return pa.schema(fields)


def create_empty(con: duckdb.DuckDBPyConnection, schema: Schema) -> None:
    """Create empty staging tables (used to validate assertions at setup)."""
    for t in schema.tables:
        cols = ", ".join(f"{quote(c.name)} {c.type}" for c in t.columns)
        con.execute(f"CREATE TABLE {quote(t.name)} (_artifact INTEGER, _row INTEGER, {cols})")


def _columns_of(
    table: Table, candidates: Sequence[Artifact], hits: list[Hit]
) -> tuple[list[list[object]], int]:
    """Column-major text data for one table across the cohort, plus its row count."""
    data: list[list[object]] = [[] for _ in range(len(table.columns) + 2)]
    names = table.column_names
    for a_idx, art in enumerate(candidates):
        for r_idx, row in enumerate(art.tables.get(table.name, [])):
            data[0].append(a_idx)
            data[1].append(r_idx)
            for c_idx, name in enumerate(names):
                text, problem = cell_text(row.get(name))
                data[c_idx + 2].append(text)
                if problem is not None:
                    col = table.columns[c_idx]
                    hits.append(Hit(
                        code="ri.type", artifact=a_idx, table=table.name, row=r_idx,
                        columns=(name,), expected=col.type,
                        observed=safe_text(row.get(name), as_repr=True),
                        evidence=(f"{table.name}.{name} {col.type}",),
                        message=f"{name} holds {problem}, not a {col.type}",
                        fix_hint=f"give {name} a {col.type} value",
                    ))
    return data, len(data[0])


def _sql_type_hits(
    con: duckdb.DuckDBPyConnection, t_idx: int, table: Table
) -> list[tuple[int, int, int]]:
    parts = []
    for c_idx, col in enumerate(table.columns):
        pred = type_predicate(f"c{c_idx}", col)
        if pred is not None:
            parts.append(
                f"SELECT _artifact, _row, {c_idx} AS col FROM {_raw_name(t_idx)} "
                f"WHERE c{c_idx} IS NOT NULL AND ({pred})"
            )
    if not parts:
        return []
    sql = " UNION ALL ".join(parts) + " ORDER BY _artifact, _row, col"
    return [(int(a), int(r), int(c)) for a, r, c in con.execute(sql).fetchall()]


def load_cohort(
    con: duckdb.DuckDBPyConnection, schema: Schema, candidates: Sequence[Artifact]
) -> tuple[list[Hit], int]:
    """Fill the staging tables; return the `ri.type` hits and the number of rows loaded."""
    hits: list[Hit] = []
    total = 0
    for t_idx, table in enumerate(schema.tables):
        data, n = _columns_of(table, candidates, hits)
        total += n
        arrow = pa.Table.from_arrays(
            [pa.array(col, type=f.type) for col, f in zip(data, _arrow_schema(table), strict=True)],
            schema=_arrow_schema(table),
        )
        con.register(_raw_name(t_idx), arrow)
        for a, r, c in _sql_type_hits(con, t_idx, table):
            col = table.columns[c]
            value = candidates[a].tables[table.name][r].get(col.name)
            hits.append(Hit(
                code="ri.type", artifact=a, table=table.name, row=r, columns=(col.name,),
                expected=col.type, observed=safe_text(value, as_repr=True),
                evidence=(f"{table.name}.{col.name} {col.type}",),
                message=f"{col.name} = {safe_text(value, as_repr=True)} is not a clean {col.type}",
                fix_hint=f"give {col.name} a {col.type} value",
            ))
        casts = ", ".join(
            f"TRY_CAST(c{i} AS {c.type}) AS {quote(c.name)}" for i, c in enumerate(table.columns)
        )
        con.execute(
            f"CREATE TABLE {quote(table.name)} AS "
            f"SELECT _artifact, _row, {casts} FROM {_raw_name(t_idx)}"
        )
        con.unregister(_raw_name(t_idx))
    order = {t.name: (i, t.column_names) for i, t in enumerate(schema.tables)}

    def _key(h: Hit) -> tuple[int, int, int, int]:
        t_idx, names = order[h.table or ""]
        return (h.artifact, t_idx, h.row or 0, names.index(h.columns[0]))

    hits.sort(key=_key)
    return hits, total

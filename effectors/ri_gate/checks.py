"""Checks derived from the spine's constraints, run over the staging tables.

Each constraint is one query over the whole cohort that returns *every* violating row
(`_artifact`, `_row`, ...), ordered by artifact and row. Identifiers come only from the
pack's DDL (quoted); CHECK predicates are the DDL's own expression text as DuckDB's
catalog reports it. No cell value ever appears in SQL text.

* `ri.not_null`     NOT NULL (and the implicit NOT NULL of a PRIMARY KEY)
* `ri.pk_duplicate` PRIMARY KEY / UNIQUE, composite too: every row after the first with
                    the same key within one artifact (rows with a NULL key part are skipped)
* `ri.fk_orphan`    FOREIGN KEY, composite too: a fully non-NULL reference with no parent
                    row in the same artifact
* `ri.check`        CHECK: rows where the predicate is FALSE (NULL passes, as in SQL)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import duckdb

from effectors.ri_gate.ddl import Constraint, Schema, Table, first_message_line, quote
from effectors.ri_gate.staging import Hit

__all__ = ["constraint_hits"]

Rows = list[tuple[int, int, tuple[object, ...]]]


def _fetch(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> Rows:
    return [(int(r[0]), int(r[1]), tuple(r[2:])) for r in con.execute(sql, params).fetchall()]


def _not_null(con: duckdb.DuckDBPyConnection, table: Table) -> Iterator[Hit]:
    cons = [c for c in table.constraints if c.kind == "not_null"]
    if not cons:
        return
    parts = [
        f"SELECT _artifact, _row, {i} AS k FROM {quote(table.name)} "
        f"WHERE {quote(c.columns[0])} IS NULL"
        for i, c in enumerate(cons)
    ]
    sql = " UNION ALL ".join(parts) + " ORDER BY _artifact, _row, k"
    for a, r, (k,) in _fetch(con, sql):
        c = cons[int(str(k))]
        col = c.columns[0]
        yield Hit(code="ri.not_null", artifact=a, table=table.name, row=r, columns=(col,),
                  observed="NULL", expected="a value", evidence=(f"{table.name}.{col} NOT NULL",),
                  message=f"{col} is missing but required",
                  fix_hint=f"give {col} a value")


def _unique(con: duckdb.DuckDBPyConnection, c: Constraint) -> Iterator[Hit]:
    cols = ", ".join(quote(x) for x in c.columns)
    present = " AND ".join(f"{quote(x)} IS NOT NULL" for x in c.columns)
    sql = (
        "SELECT _artifact, _row, first_row FROM ("
        " SELECT _artifact, _row, row_number() OVER w AS rn, first_value(_row) OVER w AS first_row"
        f" FROM {quote(c.table)} WHERE {present}"
        f" WINDOW w AS (PARTITION BY _artifact, {cols} ORDER BY _row)"
        ") WHERE rn > 1 ORDER BY _artifact, _row"
    )
    what = "primary key" if c.kind == "primary_key" else "unique key"
    for a, r, (first,) in _fetch(con, sql):
        yield Hit(code="ri.pk_duplicate", artifact=a, table=c.table, row=r, columns=c.columns,
                  expected=f"a {what} ({', '.join(c.columns)}) not used by {c.table}[{first}]",
                  evidence=(c.text,),
                  message=f"repeats the {what} ({', '.join(c.columns)}) of {c.table}[{first}]",
                  fix_hint=f"give this row a {what} no other {c.table} row has")


def _foreign(con: duckdb.DuckDBPyConnection, c: Constraint) -> Iterator[Hit]:
    assert c.ref_table is not None
    present = " AND ".join(f"ch.{quote(x)} IS NOT NULL" for x in c.columns)
    match = " AND ".join(
        f"pa.{quote(p)} = ch.{quote(x)}" for x, p in zip(c.columns, c.ref_columns, strict=True)
    )
    sql = (
        f"SELECT ch._artifact, ch._row FROM {quote(c.table)} AS ch WHERE {present} AND NOT EXISTS"
        f" (SELECT 1 FROM {quote(c.ref_table)} AS pa WHERE pa._artifact = ch._artifact"
        f" AND {match}) ORDER BY 1, 2"
    )
    ref = c.ref_columns[0] if len(c.ref_columns) == 1 else f"({', '.join(c.ref_columns)})"
    expected = f"{c.ref_table}.{ref}"
    for a, r, _ in _fetch(con, sql):
        yield Hit(code="ri.fk_orphan", artifact=a, table=c.table, row=r, columns=c.columns,
                  expected=expected, evidence=(c.text,),
                  message=f"({', '.join(c.columns)}) refers to no row of {expected}",
                  fix_hint=f"use a value that exists in {expected}, or add that row")


def _check_rows(con: duckdb.DuckDBPyConnection, c: Constraint) -> list[tuple[int, int, str]]:
    """Violating rows of a CHECK; if the predicate errors, narrow down to the rows that do."""
    base = f"SELECT _artifact, _row FROM {quote(c.table)} WHERE"
    pred = f"NOT ({c.expression})"
    try:
        return [(a, r, "") for a, r, _ in _fetch(con, f"{base} {pred} ORDER BY 1, 2")]
    except duckdb.Error:
        pass
    out: list[tuple[int, int, str]] = []
    keys = con.execute(f"SELECT _artifact, _row FROM {quote(c.table)} ORDER BY 1, 2").fetchall()
    for a, r in keys:  # rare path: evaluate row by row, a row that errors violates
        try:
            if _fetch(con, f"{base} CASE WHEN _artifact = ? AND _row = ? THEN {pred} "
                           "ELSE FALSE END", [a, r]):
                out.append((int(a), int(r), ""))
        except duckdb.Error as exc:
            out.append((int(a), int(r), first_message_line(exc)))
    return out


def _check(con: duckdb.DuckDBPyConnection, c: Constraint) -> Iterator[Hit]:
    for a, r, err in _check_rows(con, c):
        yield Hit(code="ri.check", artifact=a, table=c.table, row=r, columns=c.columns,
                  expected=c.expression, evidence=(c.text,),
                  message=(f"violates {c.text}" if not err
                           else f"cannot be evaluated against {c.text}: {err}"),
                  fix_hint=f"change {', '.join(c.columns)} so that {c.expression} holds")


_PER_CONSTRAINT: dict[str, Callable[[duckdb.DuckDBPyConnection, Constraint], Iterator[Hit]]] = {
    "primary_key": _unique,
    "unique": _unique,
    "foreign_key": _foreign,
    "check": _check,
}


def constraint_hits(con: duckdb.DuckDBPyConnection, schema: Schema) -> list[Hit]:
    """All constraint violations of the cohort: not-null, keys, foreign keys, checks."""
    hits: list[Hit] = []
    for table in schema.tables:
        hits.extend(_not_null(con, table))
    for kind in ("primary_key", "unique", "foreign_key", "check"):
        for table in schema.tables:
            for c in table.constraints:
                if c.kind == kind:
                    hits.extend(_PER_CONSTRAINT[kind](con, c))
    return hits

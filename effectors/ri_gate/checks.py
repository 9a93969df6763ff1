"""Checks derived from the spine's constraints (and `[bounds]`), compiled into one query.

`CheckPlan.compile` turns the schema into a single `UNION ALL` query over the staging
views that returns *every* violating row of the whole cohort (ordered in Python, by
artifact, check, row): the fixed cost of planning a query dwarfs checking a cohort, so
there are as few parts as the constraints allow:

* one scan per table for the row-level constraints: `ri.not_null` (NOT NULL, and the
  implicit NOT NULL of a PRIMARY KEY) and `ri.check` (CHECK: rows where the predicate
  is FALSE; NULL passes, as in SQL), returning one flag per constraint;
* one aggregate for all PRIMARY KEY / UNIQUE constraints with the same key types
  (`ri.pk_duplicate`, composite too: every row after the first with the same key within
  one artifact; rows with a NULL key part are skipped);
* one anti-join for all FOREIGN KEYs with the same key types (`ri.fk_orphan`, composite
  too: a fully non-NULL reference with no parent row in the same artifact);
* one aggregate per `[[bounds.aggregate]]` (`ri.aggregate`, see `bounds`).

Identifiers come only from the pack's DDL (quoted); CHECK predicates are the DDL's own
expression text as DuckDB's catalog reports it. No cell value ever appears in SQL text.
If the query fails (a CHECK predicate that errors on some value), each part runs on its
own and a failing CHECK is evaluated row by row: a row that errors violates it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import duckdb

from effectors.ri_gate.bounds import Bounds, aggregate_hit, aggregate_sql
from effectors.ri_gate.ddl import Constraint, first_message_line, quote
from effectors.ri_gate.staging import Hit, Layout
from harness.pack import AggregateBound

__all__ = ["Check", "CheckPlan"]

_NULLS = "NULL::INTEGER AS x, NULL::BOOLEAN[] AS f, NULL::DOUBLE AS v, NULL::VARCHAR[] AS g, " \
         "NULL::INTEGER[] AS r"
Row = tuple[int, int, int | None, int | None, list[bool] | None, float | None,
            list[str] | None, list[int] | None]


@dataclass(frozen=True)
class Check:
    """What one `k` of the check query means."""

    kind: Literal["row", "unique", "foreign_key", "aggregate"]
    table: str
    constraints: tuple[Constraint, ...] = ()  # row: flag order; unique/foreign_key: one
    bound: AggregateBound | None = None


def _key(alias: str, columns: Sequence[str]) -> str:
    cols = [f"{alias}{quote(c)}" for c in columns]
    return cols[0] if len(cols) == 1 else f"row({', '.join(cols)})"


def _present(alias: str, columns: Sequence[str]) -> str:
    return " AND ".join(f"{alias}{quote(c)} IS NOT NULL" for c in columns)


def _row_exprs(c: Constraint) -> str:
    if c.kind == "not_null":
        return f"{quote(c.columns[0])} IS NULL"
    return f"coalesce(NOT ({c.expression}), false)"


def _row_part(layout: Layout, k: int, table: str, cons: Sequence[Constraint]) -> str:
    exprs = [_row_exprs(c) for c in cons]
    source = layout.source(table, [col for c in cons for col in c.columns])
    return (f"SELECT {k} AS k, _artifact, _row, NULL::INTEGER AS x, [{', '.join(exprs)}] AS f, "
            f"NULL::DOUBLE AS v, NULL::VARCHAR[] AS g, NULL::INTEGER[] AS r "
            f"FROM {source} WHERE {' OR '.join(exprs)}")


def _unique_part(layout: Layout, group: Sequence[tuple[int, Constraint]]) -> str:
    keys = " UNION ALL ".join(
        f"SELECT {k} AS u, _artifact, _row, {_key('', c.columns)} AS key "
        f"FROM {layout.source(c.table, c.columns)} WHERE {_present('', c.columns)}"
        for k, c in group
    )
    return ("SELECT u AS k, _artifact, NULL::INTEGER AS _row, NULL::INTEGER AS x, "
            "NULL::BOOLEAN[] AS f, NULL::DOUBLE AS v, NULL::VARCHAR[] AS g, list(_row) AS r "
            f"FROM ({keys}) GROUP BY u, _artifact, key HAVING count(*) > 1")


def _foreign_part(layout: Layout, group: Sequence[tuple[int, Constraint]]) -> str:
    children = " UNION ALL ".join(
        f"SELECT {k} AS u, _artifact, _row, {_key('', c.columns)} AS key "
        f"FROM {layout.source(c.table, c.columns)} WHERE {_present('', c.columns)}"
        for k, c in group
    )
    parents = " UNION ALL ".join(
        f"SELECT {k} AS u, _artifact, {_key('', c.ref_columns)} AS key "
        f"FROM {layout.source(c.ref_table or '', c.ref_columns)}"
        for k, c in group
    )
    return (f"SELECT ch.u AS k, ch._artifact, ch._row, {_NULLS} FROM ({children}) AS ch "
            f"ANTI JOIN ({parents}) AS pa "
            "ON pa.u = ch.u AND pa._artifact = ch._artifact AND pa.key = ch.key")


@dataclass(frozen=True)
class CheckPlan:
    """The compiled check query of one schema (and its bounds)."""

    checks: tuple[Check, ...]
    parts: tuple[tuple[str, tuple[int, ...]], ...]  # (SQL, the ks it answers)

    @property
    def sql(self) -> str | None:
        if not self.parts:
            return None
        return " UNION ALL ".join(p for p, _ in self.parts)

    @classmethod
    def compile(cls, layout: Layout, bounds: Bounds) -> CheckPlan:
        schema = layout.schema
        checks: list[Check] = []
        parts: list[tuple[str, tuple[int, ...]]] = []
        types = {t.name: {c.name: c.type for c in t.columns} for t in schema.tables}

        def sig(table: str, cols: Sequence[str]) -> tuple[str, ...]:
            return tuple(types[table][c] for c in cols)

        for t in schema.tables:
            cons = tuple(c for c in t.constraints if c.kind in ("not_null", "check"))
            if cons:
                checks.append(Check("row", t.name, cons))
                parts.append((_row_part(layout, len(checks) - 1, t.name, cons),
                              (len(checks) - 1,)))
        uniques: dict[tuple[str, ...], list[tuple[int, Constraint]]] = {}
        for t in schema.tables:
            for c in t.constraints:
                if c.kind in ("primary_key", "unique"):
                    checks.append(Check("unique", t.name, (c,)))
                    uniques.setdefault(sig(t.name, c.columns), []).append((len(checks) - 1, c))
        parts += [(_unique_part(layout, g), tuple(k for k, _ in g)) for g in uniques.values()]
        foreign: dict[tuple[str, ...], list[tuple[int, Constraint]]] = {}
        for t in schema.tables:
            for c in t.constraints:
                if c.kind == "foreign_key" and c.ref_table is not None:
                    checks.append(Check("foreign_key", t.name, (c,)))
                    # DuckDB requires a foreign key's types to be the parent key's types
                    foreign.setdefault(sig(t.name, c.columns), []).append((len(checks) - 1, c))
        parts += [(_foreign_part(layout, g), tuple(k for k, _ in g)) for g in foreign.values()]
        for b in bounds.aggregates:
            checks.append(Check("aggregate", b.table, bound=b))
            source = layout.source(b.table, [b.column, *b.group_by])
            parts.append((aggregate_sql(len(checks) - 1, b, source), (len(checks) - 1,)))
        return cls(checks=tuple(checks), parts=tuple(parts))

    # -- running ---------------------------------------------------------------------------

    def run(
        self,
        con: duckdb.DuckDBPyConnection,
        query: Callable[[str], duckdb.DuckDBPyConnection] | None = None,
    ) -> list[Hit]:
        """Every violation in the staged cohort, ordered by artifact, check, row. `query`
        runs the one combined statement (a warm database passes its prepared-statement
        runner); if that statement fails, the checks run part by part on `con`."""
        sql = self.sql
        if sql is None:
            return []
        try:
            rows: list[Row] = (query or con.execute)(sql).fetchall()
        except duckdb.Error:
            rows = self._run_parts(con)
        keyed: list[tuple[tuple[int, int, int, int], Hit]] = []
        for row in rows:  # ordered here, not in SQL: per artifact, by check, row, constraint
            for i, h in enumerate(self._hits(row)):
                keyed.append(((h.artifact, row[0], -1 if h.row is None else h.row, i), h))
        keyed.sort(key=lambda kh: kh[0])
        return [h for _, h in keyed]

    def _run_parts(self, con: duckdb.DuckDBPyConnection) -> list[Row]:
        rows: list[Row] = []
        for sql, ks in self.parts:
            try:
                rows += con.execute(sql).fetchall()
            except duckdb.Error:
                check = self.checks[ks[0]]
                if check.kind != "row":
                    raise
                rows += _row_by_row(con, ks[0], check)
        return rows

    def _hits(self, row: Row) -> Iterator[Hit]:
        k, a, r, x, flags, value, group, rows = row
        check = self.checks[k]
        if check.kind == "row":
            assert r is not None and flags is not None
            for c, on in zip(check.constraints, flags, strict=True):
                if on:
                    yield (_not_null(a, r, c) if c.kind == "not_null"
                           else _check(a, r, c, group[0] if x == -1 and group else None))
        elif check.kind == "unique":
            assert rows is not None
            first, *again = sorted(rows)
            for dup in again:
                yield _unique(a, dup, check.constraints[0], first)
        elif check.kind == "foreign_key":
            assert r is not None
            yield _foreign(a, r, check.constraints[0])
        else:
            assert check.bound is not None
            yield aggregate_hit(check.bound, a, r, value, group or [], sorted(rows or []))


def _row_by_row(con: duckdb.DuckDBPyConnection, k: int, check: Check) -> list[Row]:
    """Evaluate a row-level check whose predicate errors one row at a time; a row whose
    CHECK cannot be evaluated violates it (x = -1 and g = [the error] mark that)."""
    out: list[Row] = []
    table = quote(check.table)
    keys = con.execute(f"SELECT _artifact, _row FROM {table} ORDER BY 1, 2").fetchall()
    for a, r in keys:
        flags: list[bool] = []
        error: str | None = None
        for c in check.constraints:
            try:
                got = con.execute(f"SELECT {_row_exprs(c)} FROM {table} "
                                  "WHERE _artifact = ? AND _row = ?", [a, r]).fetchall()
                flags.append(bool(got and got[0][0]))
            except duckdb.Error as exc:
                flags.append(True)
                error = first_message_line(exc)
        if any(flags):
            out.append((k, int(a), int(r), None if error is None else -1, flags, None,
                        None if error is None else [error], None))
    return out


def _not_null(a: int, r: int, c: Constraint) -> Hit:
    col = c.columns[0]
    return Hit(code="ri.not_null", artifact=a, table=c.table, row=r, columns=(col,),
               observed="NULL", expected="a value", evidence=(f"{c.table}.{col} NOT NULL",),
               message=f"{col} is missing but required", fix_hint=f"give {col} a value")


def _check(a: int, r: int, c: Constraint, error: str | None) -> Hit:
    message = (f"violates {c.text}" if error is None
               else f"cannot be evaluated against {c.text}: {error}")
    return Hit(code="ri.check", artifact=a, table=c.table, row=r, columns=c.columns,
               expected=c.expression, evidence=(c.text,), message=message,
               fix_hint=f"change {', '.join(c.columns)} so that {c.expression} holds")


def _unique(a: int, r: int, c: Constraint, first: int | None) -> Hit:
    what = "primary key" if c.kind == "primary_key" else "unique key"
    cols = ", ".join(c.columns)
    return Hit(code="ri.pk_duplicate", artifact=a, table=c.table, row=r, columns=c.columns,
               expected=f"a {what} ({cols}) not used by {c.table}[{first}]",
               evidence=(c.text,), message=f"repeats the {what} ({cols}) of {c.table}[{first}]",
               fix_hint=f"give this row a {what} no other {c.table} row has")


def _foreign(a: int, r: int, c: Constraint) -> Hit:
    ref = c.ref_columns[0] if len(c.ref_columns) == 1 else f"({', '.join(c.ref_columns)})"
    expected = f"{c.ref_table}.{ref}"
    return Hit(code="ri.fk_orphan", artifact=a, table=c.table, row=r, columns=c.columns,
               expected=expected, evidence=(c.text,),
               message=f"({', '.join(c.columns)}) refers to no row of {expected}",
               fix_hint=f"use a value that exists in {expected}, or add that row")


"""Read a pack's DDL spine with DuckDB itself, never with regexes.

`parse_spine` splits `spine.sql` into statements with DuckDB's parser, runs each one in a
scratch in-memory database (external access disabled) and reads the result back from the
catalog: `duckdb_tables()`, `duckdb_columns()` and `duckdb_constraints()`. The outcome is
a frozen `Schema` describing tables, typed columns and the constraints RI_GATE checks.

Only `CREATE TABLE` statements are allowed in a spine; anything else (views, types,
macros, inserts, settings) is a `PackError` naming the file and line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb

from harness.errors import InfrastructureError, PackError
from harness.pack import redact_excerpts

__all__ = [
    "RESERVED_COLUMNS",
    "Column",
    "Constraint",
    "Schema",
    "Table",
    "connect",
    "parse_spine",
    "quote",
]

RESERVED_COLUMNS = ("_artifact", "_row")
"""Columns every staging table carries; a spine may not declare them."""

ConstraintKind = Literal["primary_key", "unique", "not_null", "foreign_key", "check"]

_KINDS: dict[str, ConstraintKind] = {
    "PRIMARY KEY": "primary_key",
    "UNIQUE": "unique",
    "NOT NULL": "not_null",
    "FOREIGN KEY": "foreign_key",
    "CHECK": "check",
}
_INTEGER_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
     "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}
)
_FLOAT_TYPES = frozenset({"FLOAT", "DOUBLE"})
_LINE_RE = re.compile(r"LINE (\d+):")


def quote(identifier: str) -> str:
    """Quote an identifier (taken from the pack's DDL) for use in generated SQL."""
    return '"' + identifier.replace('"', '""') + '"'


def connect(memory_mb: int = 256, spill: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB with file and network access disabled and locked.

    One thread and `memory_mb` of memory. Past that DuckDB spills to `spill` (at most as
    much again) or, without one, fails the query: it never writes anywhere else (its own
    default is `./.tmp` of the working folder). The caller owns `spill` and removes it."""
    config: dict[str, str | bool | int | float | list[str]] = {
        "enable_external_access": False, "lock_configuration": True, "threads": 1,
        "memory_limit": f"{memory_mb}MB", "temp_directory": str(spill) if spill else "",
        "max_temp_directory_size": f"{memory_mb if spill else 0}MB"}
    try:
        return duckdb.connect(":memory:", config=config)
    except duckdb.Error as exc:  # the engine itself failed: fail closed, not a bad artifact
        raise InfrastructureError(f"cannot open an in-memory DuckDB: {exc}") from exc


@dataclass(frozen=True)
class Column:
    """A spine column: its name and DuckDB type as the catalog renders it."""

    name: str
    type: str

    @property
    def numeric_kind(self) -> Literal["exact", "float", "other"]:
        """`exact` for integer/decimal types (casts must not round), `float`, or `other`."""
        if self.type in _INTEGER_TYPES or self.type.startswith("DECIMAL"):
            return "exact"
        if self.type in _FLOAT_TYPES:
            return "float"
        return "other"


@dataclass(frozen=True)
class Constraint:
    """One constraint as `duckdb_constraints()` reports it."""

    table: str
    kind: ConstraintKind
    columns: tuple[str, ...]
    text: str  # e.g. "FOREIGN KEY (room_id) REFERENCES rooms(room_id)"
    expression: str | None = None  # CHECK only: the predicate text from the DDL
    ref_table: str | None = None  # FOREIGN KEY only
    ref_columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    """A spine table: ordered columns and its constraints (in catalog order)."""

    name: str
    columns: tuple[Column, ...]
    constraints: tuple[Constraint, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def primary_key(self) -> tuple[str, ...]:
        for c in self.constraints:
            if c.kind == "primary_key":
                return c.columns
        return ()


@dataclass(frozen=True)
class Schema:
    """The pack's relational spine, in DDL order."""

    tables: tuple[Table, ...]
    source: str  # the spine file, for error messages and evidence

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)


def error_line(exc: Exception, offset: int = 0) -> int | None:
    """The 1-based file line of a DuckDB error that carries `LINE n:`, shifted by `offset`."""
    m = _LINE_RE.search(str(exc))
    return int(m.group(1)) + offset if m else None


def first_message_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def parse_message(con: duckdb.DuckDBPyConnection, exc: Exception, text: str) -> str:
    """A syntax error's first line without the file's words (SQL keywords are kept)."""
    keywords = frozenset(str(r[0]).lower() for r in
                         con.execute("SELECT keyword_name FROM duckdb_keywords()").fetchall())
    return redact_excerpts(first_message_line(exc), text, keywords)


def _statement_lines(text: str, queries: list[str]) -> list[int]:
    """0-based line offsets where each parsed statement starts in `text` (best effort)."""
    lines: list[int] = []
    cursor = 0
    for q in queries:
        probe = q.strip().rstrip(";").strip()[:40]
        pos = text.find(probe, cursor) if probe else -1
        if pos < 0:
            pos = cursor
        lines.append(text.count("\n", 0, pos))
        cursor = pos + max(len(probe), 1)
    return lines


# scalar functions whose result is as large as an argument says: one call can allocate
# gigabytes outside DuckDB's memory limit, and DuckDB cannot interrupt it midway
GENERATORS = frozenset(
    {"range", "generate_series", "repeat", "lpad", "rpad", "list_resize", "array_resize"}
)


def sql_nodes(sql: str, con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]] | None:
    """Every node of DuckDB's parse tree of a SELECT (`json_serialize_sql`); None when
    DuckDB cannot serialise it."""
    row = con.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchone()
    tree = json.loads(row[0]) if row and isinstance(row[0], str) else {"error": True}
    if tree.get("error"):
        return None
    out: list[dict[str, Any]] = []
    todo: list[Any] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            out.append(node)
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    out.sort(key=lambda n: n.get("query_location", -1) if isinstance(
        n.get("query_location"), int) else -1)
    return out


def generator_call(con: duckdb.DuckDBPyConnection, sql: str) -> str | None:
    """The name of a value generator (`GENERATORS`) the SELECT calls, if any."""
    for node in sql_nodes(sql, con) or []:
        if node.get("class") == "FUNCTION" and node.get("function_name") in GENERATORS:
            return str(node["function_name"])
    return None


def _plan_words(con: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    """The words of the statement's physical plan (EXPLAIN runs nothing)."""
    text = " ".join(str(r[1]) for r in con.execute("EXPLAIN " + sql).fetchall())
    return re.sub(r"[^A-Za-z ]+", " ", text).split()


def _run_statements(con: duckdb.DuckDBPyConnection, path: Path, text: str) -> None:
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise PackError(f"spine DDL does not parse: {parse_message(con, exc, text)}", file=path,
                        line=error_line(exc), hint="fix the SQL syntax at that line") from exc
    if not statements:
        raise PackError("spine DDL declares no tables", file=path,
                        hint="add CREATE TABLE statements")
    starts = _statement_lines(text, [s.query for s in statements])
    seen: set[str] = set()  # CHECK expressions of the statements run so far
    for stmt, start in zip(statements, starts, strict=True):
        if stmt.type != duckdb.StatementType.CREATE:
            raise PackError(f"spine DDL may only contain CREATE TABLE, found {stmt.type.name}",
                            file=path, line=start + 1, hint="move other SQL out of the spine")
        try:
            if _plan_words(con, stmt.query) != ["Create", "Table"]:  # not CREATE TABLE ... AS
                raise PackError("spine DDL may only declare tables: CREATE TABLE ... AS runs a "
                                "query", file=path, line=start + 1,
                                hint="declare the table's columns instead")
            con.execute(stmt.query)
            checks = {str(r[0]) for r in con.execute(
                "SELECT expression FROM duckdb_constraints() WHERE constraint_type = 'CHECK'"
            ).fetchall()}
            for expr in sorted(checks - seen):
                name = generator_call(con, f"SELECT {expr}")
                if name is not None:
                    raise PackError(f"a CHECK constraint calls {name}(), which builds a value as "
                                    "large as its argument says (unbounded by the database's "
                                    "memory limit)", file=path, line=start + 1,
                                    hint="check the column's own value")
            seen |= checks
        except duckdb.Error as exc:
            line = error_line(exc, start) or start + 1
            raise PackError(f"spine DDL is invalid: {first_message_line(exc)}", file=path,
                            line=line, hint="fix the CREATE TABLE statement") from exc
    n_tables = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE NOT internal AND NOT temporary"
    ).fetchone()
    if n_tables is None or n_tables[0] != len(statements):
        raise PackError("spine DDL may only contain CREATE TABLE statements (one table each)",
                        file=path, hint="remove views, types, sequences and macros")


def _read_tables(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[Table, ...]:
    names = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT internal ORDER BY table_oid"
    ).fetchall()]
    tables: list[Table] = []
    for name in names:
        cols = tuple(Column(n, t) for n, t in con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() "
            "WHERE table_name = ? AND NOT internal ORDER BY column_index", [name]
        ).fetchall())
        if name.startswith("_"):
            raise PackError(f"table name {name!r} starts with '_', which RI_GATE reserves",
                            file=path, hint="rename the table")
        clash = [c.name for c in cols if c.name.lower() in RESERVED_COLUMNS]
        if clash:
            raise PackError(f"table {name!r} declares reserved column(s) {clash}", file=path,
                            hint=f"{RESERVED_COLUMNS} are added by RI_GATE; rename the column")
        rows = con.execute(
            "SELECT constraint_type, constraint_column_names, constraint_text, expression, "
            "referenced_table, referenced_column_names FROM duckdb_constraints() "
            "WHERE table_name = ? ORDER BY constraint_index", [name]
        ).fetchall()
        constraints = tuple(
            Constraint(table=name, kind=_KINDS[ctype], columns=tuple(ccols), text=ctext,
                       expression=expr, ref_table=rtable, ref_columns=tuple(rcols or ()))
            for ctype, ccols, ctext, expr, rtable, rcols in rows
            if ctype in _KINDS
        )
        tables.append(Table(name=name, columns=cols, constraints=constraints))
    return tuple(tables)


_PARSED: dict[tuple[str, str], Schema] = {}  # (path as given, its text) -> its Schema
_MAX_PARSED = 8


def parse_spine(path: Path) -> Schema:
    """Parse `spine.sql` with DuckDB into a `Schema`. Raises `PackError` naming the file.

    A spine parses once a process per path and text (RI_GATE, PROSE_GATE's claims and the
    offline proposer each read it: ~30 ms of DuckDB apiece); the file is read every call,
    so an edited spine is parsed (and judged) again. Errors are never remembered."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PackError("spine file does not exist", file=path) from exc
    except UnicodeDecodeError as exc:
        raise PackError("spine file is not UTF-8 text", file=path) from exc
    key = (str(path), text)
    hit = _PARSED.get(key)
    if hit is not None:
        return hit
    con = connect()
    try:
        _run_statements(con, path, text)
        schema = Schema(tables=_read_tables(con, path), source=str(path))
    finally:
        con.close()
    if len(_PARSED) >= _MAX_PARSED:
        _PARSED.clear()
    _PARSED[key] = schema
    return schema

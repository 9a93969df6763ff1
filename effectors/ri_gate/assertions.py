"""Pack assertions: `assertions/*.sql`, one SELECT each, returning the violating rows.

The convention (dbt tests): a check is a SELECT that returns the failing rows; zero rows
is a pass. RI_GATE runs each assertion once over the staging tables of a whole cohort.

Staging tables have the spine's names and columns plus two more:

* `_artifact` (INTEGER) identifies the artifact within the cohort;
* `_row` (INTEGER) is the row's 0-based index in that artifact's table.

So an assertion must return `_artifact`, and every join must match `_artifact` on both
sides (`... JOIN equipment e ON e._artifact = r._artifact AND ...`), or artifacts of one
cohort would see each other's rows. The pool table `_pool(class, individual, name)` (see
`pool_tables`) holds the ontology's class members, so "the value is a member of class C"
is a join on it; it has no `_artifact` column, being the same for every artifact.

A header of `-- key: value` comment lines at the top of the file gives the metadata:

    -- code: ri.room_power_budget       required; dotted lowercase (digits after each part's
                                        first letter), the critique code
    -- severity: error                  required; error (blocks commit) | warn | info
    -- message: room {room_id} draws {total_kw} kW   required; {name} / {name:spec} are
                                        filled from the violating row's result columns
    -- table: rooms                     optional; `_row` (then required in the result)
                                        points at a row of this table
    -- columns: room_id, floor          optional; columns of that row the finding is about
                                        (named in the location; rejected if severity error)
    -- limit: 50                        optional; max rows reported per artifact (default
                                        and ceiling 1000)

Other comment lines are free text. An optional result column `_reject` (a string or a
list of strings like `equipment[3].rated_power_kw`, i.e. `table[row].column`) names more
cells to reject when the severity is error, e.g. the cells an aggregate summed up.

An assertion reads only the spine's tables and `_pool`: a table function (`range()`,
`read_csv()`, `glob()`, `duckdb_settings()`, `query()` ...) is refused, and so is a call of
a function that builds a value as large as its argument says (`range`, `generate_series`,
`repeat`, `lpad`/`rpad`, `list_resize`/`array_resize`): DuckDB allocates such a value
outside its memory limit and cannot interrupt it midway (see `database`).

Every problem (header, parse, unknown table or column, missing `_artifact`/`_row`,
a template field that is not a result column) is a `PackError` naming the file and,
when known, the line.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

import duckdb

from effectors.ri_gate.ddl import (
    GENERATORS,
    Schema,
    error_line,
    first_message_line,
    parse_message,
    quote,
    sql_nodes,
)
from effectors.ri_gate.pool_tables import POOL_TABLE
from harness.errors import PackError
from harness.models import CRITIQUE_CODE_PATTERN

__all__ = [
    "MAX_LIMIT",
    "Assertion",
    "fill_message",
    "load_assertions",
    "parse_assertion",
    "view_sql",
]

MAX_LIMIT = 1000
_HEADER_RE = re.compile(r"^--\s*([a-z_]+)\s*:\s*(.*?)\s*$")
_CODE_RE = re.compile(CRITIQUE_CODE_PATTERN)  # digits allowed after each part's first letter
_KEYS = frozenset({"code", "severity", "message", "table", "columns", "limit"})
_SEVERITIES = ("error", "warn", "info")

AssertionSeverity = Literal["error", "warn", "info"]


@dataclass(frozen=True)
class Assertion:
    """A parsed, validated pack assertion."""

    path: Path
    sql: str  # the file's text, header included
    code: str
    severity: AssertionSeverity
    message: str
    table: str | None = None
    columns: tuple[str, ...] = ()
    limit: int = MAX_LIMIT
    result_columns: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.path.name


def view_sql(view: str, sql: str) -> str:
    """DDL wrapping an assertion in a view (one line added before the file's first line)."""
    return f"CREATE TEMP VIEW {quote(view)} AS\n{sql}"


def _template_fields(template: str) -> list[tuple[str, str | None, str | None, str | None]]:
    return list(string.Formatter().parse(template))


def fill_message(template: str, values: dict[str, object], cap: int = 200) -> str:
    """Fill `{name}`/`{name:spec}` fields from `values`; no attribute or index access."""
    out: list[str] = []
    for literal, field, spec, _conv in _template_fields(template):
        out.append(literal)
        if field is None:
            continue
        value = values.get(field)
        try:
            text = format(value, spec or "")
        except (ValueError, TypeError):
            text = str(value)
        out.append(text if len(text) <= cap else text[:cap] + "…")
    return "".join(out)


def _parse_header(path: Path, text: str) -> dict[str, tuple[str, int]]:
    header: dict[str, tuple[str, int]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("--"):
            break
        m = _HEADER_RE.match(stripped)
        if m is None or m.group(1) not in _KEYS:
            continue
        key, value = m.group(1), m.group(2)
        if key in header:
            raise PackError(f"header `{key}` given twice", file=path, line=lineno)
        header[key] = (value, lineno)
    for key in ("code", "severity", "message"):
        if key not in header:
            raise PackError(f"assertion header lacks `-- {key}:`", file=path, line=1,
                            hint="start the file with -- code:, -- severity:, -- message:")
    return header


def _check_header(path: Path, header: dict[str, tuple[str, int]], schema: Schema) -> None:
    code, line = header["code"]
    if not _CODE_RE.match(code):
        raise PackError(f"code {code!r} is not dotted lowercase (e.g. ri.room_power_budget)",
                        file=path, line=line,
                        hint="dotted parts of a-z, 0-9 and _, each starting with a letter or _ "
                        "(ri.pd1_outside_oncology)")
    sev, line = header["severity"]
    if sev not in _SEVERITIES:
        raise PackError(f"severity {sev!r} is not one of {_SEVERITIES}", file=path, line=line)
    if "limit" in header:
        lim, line = header["limit"]
        if not lim.isdigit() or not 1 <= int(lim) <= MAX_LIMIT:
            raise PackError(f"limit {lim!r} is not an integer in 1..{MAX_LIMIT}",
                            file=path, line=line)
    if "table" in header:
        table, line = header["table"]
        if table not in schema.names:
            raise PackError(f"`-- table: {table}` names no table of the spine", file=path,
                            line=line, hint=f"tables: {', '.join(schema.names)}")
        if "columns" in header:
            cols, line = header["columns"]
            known = schema.table(table).column_names
            bad = [c for c in _split(cols) if c not in known]
            if bad:
                raise PackError(f"`-- columns:` names {bad}, not columns of {table}",
                                file=path, line=line)
    elif "columns" in header:
        raise PackError("`-- columns:` needs a `-- table:` line", file=path,
                        line=header["columns"][1])


def _split(value: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in value.split(",") if p.strip())


def _refuse_functions(path: Path, text: str, probe: duckdb.DuckDBPyConnection) -> None:
    """Refuse table functions and value generators, reading DuckDB's own parse tree."""
    nodes = sql_nodes(text, probe)
    if nodes is None:
        raise PackError("assertion cannot be read as one SELECT", file=path,
                        hint="return the violating rows with one plain SELECT")
    for node in nodes:
        if node.get("type") == "TABLE_FUNCTION":
            fn = node.get("function") or {}
            name, loc = fn.get("function_name", "?"), node.get("query_location")
            why = (f"it reads the table function {name}(): assertions read only the "
                   "spine's tables and `_pool`")
        elif node.get("class") == "FUNCTION" and node.get("function_name") in GENERATORS:
            name, loc = node["function_name"], node.get("query_location")
            why = (f"it calls {name}(), which builds a value as large as its argument says "
                   "(unbounded by the database's memory limit)")
        else:
            continue
        line = text.count("\n", 0, loc) + 1 if isinstance(loc, int) and loc < len(text) else None
        raise PackError(f"assertion is invalid: {why}", file=path, line=line,
                        hint="compute the check from the staged tables' rows only")


def _result_columns(path: Path, text: str, probe: duckdb.DuckDBPyConnection) -> tuple[str, ...]:
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise PackError(f"assertion does not parse: {parse_message(probe, exc, text)}",
                        file=path, line=error_line(exc)) from exc
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise PackError("an assertion must be exactly one SELECT statement", file=path,
                        hint="return the violating rows; no other statements")
    _refuse_functions(path, text, probe)
    try:
        probe.execute(view_sql("_probe", text))
        desc = probe.execute('SELECT * FROM "_probe" LIMIT 0').description
        probe.execute('DROP VIEW "_probe"')
    except duckdb.Error as exc:
        message = first_message_line(exc)
        hint = ("assertions may read only the spine's tables and the pool table `_pool`"
                if POOL_TABLE not in message else
                "this assertion reads `_pool`: build the gate with the ontology's pools")
        raise PackError(f"assertion is invalid: {message}", file=path,
                        line=error_line(exc, -1), hint=hint) from exc
    return tuple(str(d[0]) for d in desc or [])


def parse_assertion(path: Path, schema: Schema, probe: duckdb.DuckDBPyConnection) -> Assertion:
    """Parse and validate one assertion file against empty staging tables in `probe`."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PackError("assertion is not UTF-8 text", file=path) from exc
    header = _parse_header(path, text)
    _check_header(path, header, schema)
    cols = _result_columns(path, text, probe)
    table = header["table"][0] if "table" in header else None
    required = ["_artifact"] + (["_row"] if table else [])
    missing = [c for c in required if c not in cols]
    if missing:
        raise PackError(f"assertion result lacks column(s) {missing}", file=path,
                        hint="select _artifact (and _row with -- table:) from the staging table")
    message, mline = header["message"]
    try:
        fields = [f for _, f, _, _ in _template_fields(message) if f is not None]
    except ValueError as exc:
        raise PackError(f"message template is malformed: {exc}", file=path, line=mline) from exc
    bad = [f for f in fields if f not in cols]
    if bad:
        raise PackError(f"message template names {bad}, which the SELECT does not return",
                        file=path, line=mline, hint=f"result columns: {', '.join(cols)}")
    return Assertion(
        path=path, sql=text, code=header["code"][0],
        severity=cast(AssertionSeverity, header["severity"][0]), message=message,
        table=table, columns=_split(header["columns"][0]) if "columns" in header else (),
        limit=int(header["limit"][0]) if "limit" in header else MAX_LIMIT,
        result_columns=cols,
    )


def load_assertions(
    paths: list[Path], schema: Schema, probe: duckdb.DuckDBPyConnection
) -> tuple[Assertion, ...]:
    """Parse every assertion file; the first problem raises `PackError`."""
    found = tuple(parse_assertion(p, schema, probe) for p in paths)
    codes = [a.code for a in found]
    for a in found:
        if codes.count(a.code) > 1:
            raise PackError(f"code {a.code!r} is used by more than one assertion", file=a.path)
    return found

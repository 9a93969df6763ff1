"""Reading a sample corpus before any pack binds it (`membrane pack new --from-sample`).

A sample is untrusted input in the corpus format (JSONL, one artifact a line). Unlike
`harness.corpus.read_corpus`, no pack says which tables and columns exist: this module
reads every line strictly, refuses the sample with `file:line` when any line is bad, and
profiles each table's columns so a pack can be written from them:

* a column whose values are all numbers is a `data` column (DOUBLE; BIGINT when every
  value is an integer that fits 64 bits);
* the key is a column that is non-null and unique in every artifact, an id-like name
  (`id`, `..._id`, `...Id`, `key`, `code`) first, then the first such column in order;
* a column named like another table's key, whose values are always among that table's key
  values in the same artifact, is a foreign key (kind `id`, `REFERENCES` in the spine);
* a string column of short one-line values with at most `MAX_POOL` distinct values, some
  of them repeated, is an `object` column (a pool in the ontology); a column of long,
  multi-line or never-repeated values (names, notes) is `text`.

A column that mixes numbers and strings (or holds booleans), a table or column name a pack
cannot bind, a sample with no table, and a file past `MAX_SAMPLE_BYTES` are errors that
name the file and the first line concerned.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness.corpus import MAX_LINE_BYTES, load_json, parse_artifact
from harness.errors import CorpusError
from harness.models import Artifact, Cell

__all__ = [
    "MAX_POOL",
    "MAX_SAMPLE_ARTIFACTS",
    "MAX_SAMPLE_BYTES",
    "ColumnProfile",
    "Sample",
    "TableProfile",
    "read_sample",
]

MAX_SAMPLE_BYTES = 32 * 1024 * 1024  # a sample is for profiling, not a whole corpus
MAX_SAMPLE_ARTIFACTS = 5_000
MAX_POOL = 500  # distinct values of an object column (each an individual HermiT reasons on)
MAX_POOL_VALUE_CHARS = 120
MAX_NAME_CHARS = 64
_SHOWN = 5  # bad lines quoted in one error
_FEW = 3  # a string column with more values than this, none repeated, is text (names, notes)
_BAD_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_ID_LIKE = re.compile(r"(^id$|_id$|[a-z]Id$|^key$|^code$|_key$|_code$)", re.I)

Kind = Literal["id", "object", "data", "text"]


@dataclass
class ColumnProfile:
    name: str
    first_line: int  # where the column first appears
    non_null: int = 0
    rows: int = 0
    strings: int = 0
    numbers: int = 0
    whole: bool = True  # every number is an integer
    first_string: int | None = None  # line of the first string / number / boolean cell
    first_number: int | None = None
    first_bool: int | None = None
    longest: int = 0
    multiline: bool = False
    distinct: dict[str, int] = field(default_factory=dict)  # value -> count (capped)
    too_many: bool = False  # more than MAX_POOL distinct strings
    unique: bool = True  # no value twice in one artifact's table
    minimum: float | None = None
    kind: Kind = "text"
    references: str | None = None  # a foreign key: the table whose key it names

    @property
    def numeric(self) -> bool:
        return self.numbers > 0 and self.strings == 0

    @property
    def complete(self) -> bool:
        return self.non_null == self.rows


@dataclass
class TableProfile:
    name: str
    first_line: int
    columns: dict[str, ColumnProfile] = field(default_factory=dict)
    rows: int = 0
    key: str | None = None


@dataclass
class Sample:
    path: Path
    artifacts: list[Artifact]
    lines: list[int]
    tables: dict[str, TableProfile]


def _bad_name(name: str) -> str | None:
    """Why a table or column name cannot be bound, or None."""
    if not name.strip():
        return "is empty"
    if len(name) > MAX_NAME_CHARS:
        return f"is longer than {MAX_NAME_CHARS} characters"
    if name != name.strip():
        return "starts or ends with a space"
    if any(unicodedata.category(ch)[0] == "C" for ch in name):
        return "holds a control character"
    if any(ch in name for ch in ".[]{}"):
        return "holds one of . [ ] { } (critiques name cells as table[row].column)"
    if name.startswith("_"):
        return "starts with '_' (reserved for membrane's own columns: _artifact, _row)"
    return None


def _check_names(artifact: Artifact, path: Path, line: int) -> None:
    for table, rows in artifact.tables.items():
        why = _bad_name(table)
        if why:
            raise CorpusError(
                f"table name {table!r} {why}",
                file=path,
                line=line,
                hint="rename the table in the sample",
            )
        for i, row in enumerate(rows):
            for column, value in row.items():
                why = _bad_name(column)
                if why:
                    raise CorpusError(
                        f"column name {column!r} of table {table!r} {why}",
                        file=path,
                        line=line,
                        hint="rename the column in the sample",
                    )
                if isinstance(value, float) and not math.isfinite(value):
                    raise CorpusError(
                        f"cell {table}[{i}].{column} is a number too large for a float ({value})",
                        file=path,
                        line=line,
                        hint="write it as a string",
                    )
                if isinstance(value, str) and _BAD_TEXT.search(value):
                    raise CorpusError(
                        f"cell {table}[{i}].{column} holds a control character or a lone "
                        "surrogate, which no ontology or spine can hold",
                        file=path,
                        line=line,
                        hint="remove it from the sample (tabs and line breaks are fine)",
                    )


def _check_size(path: Path) -> None:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise CorpusError(
            f"cannot read the sample: {exc.strerror}",
            file=path,
            hint="pass a .jsonl file of artifacts",
        ) from exc
    if not path.is_file():
        raise CorpusError(
            "the sample is not a file", file=path, hint="pass a .jsonl file of artifacts"
        )
    if size > MAX_SAMPLE_BYTES:
        raise CorpusError(
            f"the sample is {size:,} bytes (max {MAX_SAMPLE_BYTES:,})",
            file=path,
            hint="a sample of a few hundred good artifacts is enough: `head -n 200` of it",
        )


def _refuse(errors: list[CorpusError]) -> CorpusError:
    first = errors[0]
    more = "".join(f"\n  {e.render().splitlines()[0]}" for e in errors[1:_SHOWN])
    if len(errors) > _SHOWN:
        more += f"\n  ... and {len(errors) - _SHOWN} more"
    return CorpusError(
        f"{len(errors)} bad line(s) in the sample; the first: {first.message}{more}",
        file=first.file,
        line=first.line,
        hint=(first.hint + "; " if first.hint else "")
        + "a pack is written from a sample only when every line is good",
    )


def _line(raw: bytes, path: Path, lineno: int, seen: dict[str, int]) -> Artifact:
    if len(raw) > MAX_LINE_BYTES:
        raise CorpusError(
            f"line is {len(raw):,} bytes (max {MAX_LINE_BYTES:,})", file=path, line=lineno
        )
    artifact = parse_artifact(load_json(raw, path, lineno), path, lineno)
    _check_names(artifact, path, lineno)
    first = seen.get(artifact.id.lower())
    if first is not None:
        raise CorpusError(
            f"artifact id {artifact.id!r} again (first on line {first};"
            " ids are compared without case)",
            file=path,
            line=lineno,
            hint="ids must be unique within a sample",
        )
    seen[artifact.id.lower()] = lineno
    return artifact


def _read(path: Path) -> tuple[list[Artifact], list[int]]:
    _check_size(path)
    artifacts: list[Artifact] = []
    lines: list[int] = []
    errors: list[CorpusError] = []
    seen: dict[str, int] = {}
    total = 0
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            total += len(raw)
            if total > MAX_SAMPLE_BYTES:  # it grew while read
                raise CorpusError(
                    f"the sample is over {MAX_SAMPLE_BYTES:,} bytes",
                    file=path,
                    line=lineno,
                    hint="use a smaller sample",
                )
            if not raw.strip():
                continue
            if len(artifacts) >= MAX_SAMPLE_ARTIFACTS:
                raise CorpusError(
                    f"more than {MAX_SAMPLE_ARTIFACTS:,} artifacts",
                    file=path,
                    line=lineno,
                    hint="a sample of a few hundred good artifacts is enough",
                )
            try:
                artifacts.append(_line(raw, path, lineno, seen))
                lines.append(lineno)
            except CorpusError as err:
                errors.append(err)
    if errors:
        raise _refuse(errors)
    if not artifacts:
        raise CorpusError(
            "the sample holds no artifact",
            file=path,
            hint='one JSON object a line: {"id": ..., "tables": {...}}',
        )
    return artifacts, lines


def _observe(col: ColumnProfile, value: Cell, line: int) -> None:
    col.rows += 1
    if value is None:
        return
    col.non_null += 1
    if isinstance(value, bool):
        col.first_bool = col.first_bool or line
    elif isinstance(value, int | float):
        col.numbers += 1
        col.first_number = col.first_number or line
        col.whole = col.whole and isinstance(value, int) and -(2**63) <= value < 2**63
        col.minimum = float(value) if col.minimum is None else min(col.minimum, float(value))
    else:
        col.strings += 1
        col.first_string = col.first_string or line
        col.longest = max(col.longest, len(value))
        col.multiline = col.multiline or "\n" in value or "\r" in value
        if value in col.distinct:
            col.distinct[value] += 1
        elif len(col.distinct) < MAX_POOL:
            col.distinct[value] = 1
        else:
            col.too_many = True


def _profile(artifacts: list[Artifact], lines: list[int]) -> dict[str, TableProfile]:
    tables: dict[str, TableProfile] = {}
    for artifact, line in zip(artifacts, lines, strict=True):
        for name, rows in artifact.tables.items():
            t = tables.setdefault(name, TableProfile(name, line))
            t.rows += len(rows)
            names = list(dict.fromkeys(c for row in rows for c in row))
            for c in names:
                t.columns.setdefault(c, ColumnProfile(c, line))
            for c, col in t.columns.items():
                seen: set[Cell] = set()
                for row in rows:
                    value = row.get(c)
                    _observe(col, value, line)
                    if value is not None:
                        marker: Cell = ("s:" + value) if isinstance(value, str) else value
                        col.unique = col.unique and marker not in seen
                        seen.add(marker)
    return tables


def _mixed(path: Path, table: str, col: ColumnProfile) -> CorpusError | None:
    if col.first_bool is not None:
        return CorpusError(
            f"column {table}.{col.name} holds true/false: a pack binds strings and numbers",
            file=path,
            line=col.first_bool,
            hint='write the flag as a string ("yes"/"no") or a number (1/0)',
        )
    if col.strings and col.numbers:
        line = max(col.first_string or 0, col.first_number or 0)
        return CorpusError(
            f"column {table}.{col.name} mixes numbers and strings (strings from line "
            f"{col.first_string}, numbers from line {col.first_number})",
            file=path,
            line=line,
            hint="give the column one type: quote its numbers, or write its strings as numbers",
        )
    return None


def _choose_key(t: TableProfile) -> str | None:
    fits = [
        c
        for c in t.columns.values()
        if c.complete
        and c.unique
        and c.rows
        and not c.multiline
        and (c.strings == 0 or c.numbers == 0)
        and (c.numbers == 0 or c.whole)
    ]
    named = [c for c in fits if _ID_LIKE.search(c.name)]
    best = named or fits
    return best[0].name if best else None


def _is_fk(artifacts: list[Artifact], child: str, column: str, parent: str, key: str) -> bool:
    found = False
    for a in artifacts:
        keys = {r.get(key) for r in a.tables.get(parent, [])}
        for r in a.tables.get(child, []):
            v = r.get(column)
            if v is None:
                continue
            if v not in keys:
                return False
            found = True
    return found


def _no_case_twins(path: Path, tables: dict[str, TableProfile]) -> None:
    """Two tables, or two columns of a table, whose names differ only in case are one name
    to the spine's database (DuckDB matches identifiers without case)."""
    groups: list[tuple[str, list[tuple[str, int]]]] = [
        ("table", [(t.name, t.first_line) for t in tables.values()])
    ]
    groups += [
        (f"column of {t.name!r}", [(c.name, c.first_line) for c in t.columns.values()])
        for t in tables.values()
    ]
    for what, names in groups:
        seen: dict[str, str] = {}
        for name, line in names:
            other = seen.setdefault(name.casefold(), name)
            if other != name:
                raise CorpusError(
                    f"{what} {name!r} differs only in case from {other!r}: the spine's "
                    "database would take them for one",
                    file=path,
                    line=line,
                    hint="rename one of them in the sample",
                )


def read_sample(path: Path) -> Sample:
    """The sample's artifacts and the profile of its tables; a `CorpusError` (file:line)
    for the first problem, with up to five bad lines quoted when there are several."""
    path = Path(path)
    artifacts, lines = _read(path)
    tables = _profile(artifacts, lines)
    _no_case_twins(path, tables)
    if not any(t.rows for t in tables.values()):
        raise CorpusError(
            "the sample has no table with a row",
            file=path,
            line=lines[0],
            hint='each artifact needs "tables": {"NAME": [{"column": value}, ...]}',
        )
    for t in tables.values():
        if not t.rows or not t.columns:
            raise CorpusError(
                f"table {t.name!r} has no row with a cell in the whole sample",
                file=path,
                line=t.first_line,
                hint="drop the table from the sample or give it rows",
            )
        for col in t.columns.values():
            err = _mixed(path, t.name, col)
            if err is not None:
                raise err
        t.key = _choose_key(t)
        if t.key is None:
            raise CorpusError(
                f"table {t.name!r} has no column that is non-null and unique in every artifact "
                "(a key)",
                file=path,
                line=t.first_line,
                hint='add an id column (e.g. "id") with a distinct value in each row',
            )
    _kinds(artifacts, tables)
    return Sample(path, artifacts, lines, tables)


def _kinds(artifacts: list[Artifact], tables: dict[str, TableProfile]) -> None:
    keys = {t.key: t.name for t in tables.values() if t.key is not None}
    for t in tables.values():
        for col in t.columns.values():
            parent = keys.get(col.name)
            if col.name == t.key:
                col.kind = "id"
            elif (
                parent is not None
                and parent != t.name
                and _is_fk(artifacts, t.name, col.name, parent, col.name)
            ):
                col.kind, col.references = "id", parent
            elif col.numeric:
                col.kind = "data"
            elif (
                col.strings
                and not col.too_many
                and not col.multiline
                and col.longest <= MAX_POOL_VALUE_CHARS
                and (len(col.distinct) < col.strings or col.strings <= _FEW)
            ):
                col.kind = "object"
            else:
                col.kind = "text"

"""`RiGate`: the relational membrane, judging a whole cohort in one transient DuckDB.

`from_pack` reads the spine with DuckDB and validates every assertion against empty
staging tables, so all setup problems are `PackError`s before any artifact runs.
`judge` opens one in-memory database (file and network access disabled), loads the
cohort into unconstrained staging tables (Arrow; see `staging`), runs one query per
constraint and per assertion over all candidates, and closes the database. Verdicts
do not depend on the cohort: an artifact judged alone gets the same verdict.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import duckdb

from effectors.ri_gate.assertions import Assertion, fill_message, load_assertions, view_sql
from effectors.ri_gate.checks import constraint_hits
from effectors.ri_gate.ddl import Schema, connect, first_message_line, parse_spine, quote
from effectors.ri_gate.staging import Hit, create_empty, load_cohort, safe_text
from harness.errors import PackError
from harness.models import Artifact, Cell, CellRef, Critique, Location, Severity, Verdict
from harness.pack import Pack

__all__ = ["RiGate"]

_CAP = 200  # characters of a cell value quoted in a critique
_CELL_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\[(\d+)\]\.([A-Za-z_][A-Za-z0-9_]*)$")




@dataclass(frozen=True)
class RiGate:
    """Relational integrity over the pack's DDL spine and assertions (DuckDB)."""

    pack: Pack
    schema: Schema
    assertions: tuple[Assertion, ...]
    name: str = "ri_gate"

    @classmethod
    def from_pack(cls, pack: Pack) -> RiGate:
        """Parse the spine and every assertion; any problem raises `PackError`."""
        schema = parse_spine(pack.spine_path)
        for table, binding in pack.tables.items():
            if table not in schema.names:
                raise PackError(f"pack.toml binds table {table!r}, which the spine lacks",
                                file=pack.spine_path, hint="add it to spine.sql or unbind it")
            missing = [c for c in binding.columns if c not in schema.table(table).column_names]
            if missing:
                raise PackError(f"pack.toml binds {table}.{missing}, not in the spine",
                                file=pack.spine_path, hint="keep pack.toml and spine.sql in step")
        probe = connect()
        try:
            create_empty(probe, schema)
            assertions = load_assertions(pack.assertion_files(), schema, probe)
        finally:
            probe.close()
        return cls(pack=pack, schema=schema, assertions=assertions)

    # -- judging ---------------------------------------------------------------------------

    def judge(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        """One verdict per candidate, in order; the cohort shares one database."""
        if not candidates:
            return []
        hits, assertion_failed = self._run(candidates)
        for name in assertion_failed:  # rare: re-run that assertion per artifact, in isolation
            hits.extend(self._isolated(candidates, name))
        per: list[list[Hit]] = [[] for _ in candidates]
        for h in hits:
            per[h.artifact].append(h)
        return [self._verdict(a, hs) for a, hs in zip(candidates, per, strict=True)]

    def _run(self, candidates: Sequence[Artifact]) -> tuple[list[Hit], list[str]]:
        con = connect()
        try:
            type_hits, _ = load_cohort(con, self.schema, candidates)
            mistyped = {(h.artifact, h.table, h.row, h.columns) for h in type_hits}
            hits = list(type_hits)
            hits += [h for h in constraint_hits(con, self.schema)
                     if not (h.code == "ri.not_null"
                             and (h.artifact, h.table, h.row, h.columns) in mistyped)]
            failed: list[str] = []
            for i, a in enumerate(self.assertions):
                try:
                    hits += self._assertion_hits(con, i, a, candidates)
                except duckdb.Error:
                    failed.append(a.name)
            return hits, failed
        finally:
            con.close()

    def _isolated(self, candidates: Sequence[Artifact], name: str) -> list[Hit]:
        index, assertion = next((i, a) for i, a in enumerate(self.assertions) if a.name == name)
        out: list[Hit] = []
        for a_idx, art in enumerate(candidates):
            con = connect()
            try:
                load_cohort(con, self.schema, [art])
                found = self._assertion_hits(con, index, assertion, [art])
                out += [replace(h, artifact=a_idx) for h in found]
            except duckdb.Error as exc:
                out.append(Hit(code="ri.assertion_error", artifact=a_idx, table=None, row=None,
                               evidence=(assertion.name, assertion.sql),
                               message=f"assertion {assertion.name} ({assertion.code}) could "
                                       f"not be evaluated: {first_message_line(exc)}"))
            finally:
                con.close()
        return out

    def _assertion_hits(
        self, con: duckdb.DuckDBPyConnection, index: int, a: Assertion,
        candidates: Sequence[Artifact],
    ) -> list[Hit]:
        view = f"_assertion_{index}"
        con.execute(view_sql(view, a.sql))
        cur = con.execute(f"SELECT * FROM {quote(view)} ORDER BY ALL")
        names = [str(d[0]) for d in cur.description or []]
        counts: dict[int, int] = {}
        hits: list[Hit] = []
        for raw in cur.fetchall():
            values = dict(zip(names, raw, strict=True))
            art = values.get("_artifact")
            if not isinstance(art, int) or not 0 <= art < len(candidates):
                continue  # a row that names no artifact of this cohort cannot be attributed
            counts[art] = counts.get(art, 0) + 1
            if counts[art] > a.limit:
                continue
            hits.append(self._assertion_hit(a, art, values, candidates[art]))
        hits.sort(key=lambda h: (h.artifact, -1 if h.row is None else h.row))
        return hits

    def _assertion_hit(
        self, a: Assertion, art: int, values: dict[str, object], artifact: Artifact
    ) -> Hit:
        row = values.get("_row")
        n_rows = len(artifact.tables.get(a.table, [])) if a.table else 0
        row_ok = isinstance(row, int) and 0 <= row < n_rows
        shown = {k: v for k, v in values.items() if not k.startswith("_")}
        extra = values.get("_reject")
        refs = [extra] if isinstance(extra, str) else list(extra) if isinstance(extra, list) else []
        return Hit(
            code=a.code, severity=a.severity, artifact=art,
            table=a.table, row=row if row_ok and isinstance(row, int) else None,
            columns=a.columns, reject=a.severity == "error",
            observed=safe_text(", ".join(f"{k}={safe_text(v)}" for k, v in shown.items())) or None,
            evidence=(a.name, a.sql), message=fill_message(a.message, values, _CAP),
            extra_cells=tuple(str(r) for r in refs if r is not None),
        )

    # -- verdicts --------------------------------------------------------------------------

    def _key(self, table: str, row: dict[str, Cell]) -> str:
        if table in self.pack.tables:
            try:
                return safe_text(self.pack.row_key(table, dict[str, object](row)), 120)
            except ValueError:  # a key cell too large to render; fall through
                key_cols: Sequence[str] = self.pack.tables[table].key
        else:
            key_cols = self.schema.table(table).primary_key()
        return safe_text("/".join(safe_text(row.get(k), 120) for k in key_cols), 120)

    def _cell(self, artifact: Artifact, ref: str) -> CellRef | None:
        m = _CELL_RE.match(ref)
        if m is None or m.group(1) not in self.schema.names:
            return None
        table, row, column = m.group(1), int(m.group(2)), m.group(3)
        rows = artifact.tables.get(table, [])
        if row >= len(rows) or column not in rows[row]:
            return None
        return CellRef(table=table, row=row, column=column)

    def _critique(self, artifact: Artifact, h: Hit) -> tuple[Critique, list[CellRef]]:
        row = None
        if h.table is not None and h.row is not None:
            row = artifact.tables.get(h.table, [])[h.row]
        observed = h.observed
        if observed is None and row is not None and h.columns:
            observed = safe_text("/".join(safe_text(row.get(c)) for c in h.columns))
        where = ""
        if h.table is not None and h.row is not None and row is not None:
            where = f"{h.table}[{h.row}] ({self._key(h.table, row)}): "
        loc = Location(
            table=h.table, row=h.row if row is not None else None,
            key=self._key(h.table, row) if h.table is not None and row is not None else None,
            column=h.columns[0] if len(h.columns) == 1 else None,
        )
        severity: Severity = "warn" if h.severity == "warn" else (
            "info" if h.severity == "info" else "error")
        crit = Critique(code=h.code, severity=severity, gate=self.name, location=loc,
                        observed=observed, expected=h.expected, evidence=h.evidence,
                        fix_hint=h.fix_hint, message=safe_text(where + h.message, 1000))
        cells: list[CellRef] = []
        if severity == "error" and h.reject:
            if row is not None and h.table is not None and h.row is not None:
                cells += [CellRef(table=h.table, row=h.row, column=c)
                          for c in h.columns if c in row]  # a missing cell has no ref
            cells += [c for c in (self._cell(artifact, r) for r in h.extra_cells) if c]
        return crit, cells

    def _verdict(self, artifact: Artifact, hits: list[Hit]) -> Verdict:
        critiques: list[Critique] = []
        rejected: dict[CellRef, None] = {}
        for h in hits:
            crit, cells = self._critique(artifact, h)
            critiques.append(crit)
            rejected.update(dict.fromkeys(cells))
        rows = sum(len(artifact.tables.get(t, [])) for t in self.schema.names)
        return Verdict(
            gate=self.name, artifact_id=artifact.id, critiques=tuple(critiques),
            rejected=tuple(rejected),
            metrics={
                "rows": float(rows),
                "ri_violations": float(sum(c.severity == "error" for c in critiques)),
                "ri_warnings": float(sum(c.severity == "warn" for c in critiques)),
            },
        )

"""`RiGate`: the relational membrane, judging a whole cohort in one warm DuckDB.

`from_pack` reads the spine with DuckDB, checks `[bounds]`, builds the gate's database
(stage, spine views, pool table) and validates every assertion and the compiled check
query against it, so all setup problems are `PackError`s before any artifact runs.

`judge` loads the cohort into the warm database's stage (one Arrow insert), runs one
check query for every constraint and aggregate bound, one query per assertion, and
deletes the cohort's rows again. Findings are attributed to artifacts by `_artifact`.
Verdicts do not depend on the cohort: an artifact judged alone, or in a fresh transient
database of its own (`judge_transient`, the slow reference path), gets the same verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import duckdb

from effectors.ri_gate.assertions import Assertion, fill_message, load_assertions
from effectors.ri_gate.bounds import (
    Bounds,
    aggregate_hit,
    empty_table_hits,
    load_bounds,
    row_count_hits,
)
from effectors.ri_gate.checks import CheckPlan
from effectors.ri_gate.database import Database, QueryTimeout
from effectors.ri_gate.ddl import Schema, first_message_line, parse_spine
from effectors.ri_gate.staging import Hit, Layout, safe_text, stage
from effectors.ri_gate.verdicts import verdict
from harness.errors import PackError
from harness.models import Artifact, Verdict
from harness.pack import Pack
from harness.pools import Pools

__all__ = ["RiGate"]

_CAP = 200  # characters of a cell value quoted in a critique


def _check_bindings(pack: Pack, schema: Schema) -> None:
    for table, binding in pack.tables.items():
        if table not in schema.names:
            raise PackError(f"pack.toml binds table {table!r}, which the spine lacks",
                            file=pack.spine_path, hint="add it to spine.sql or unbind it")
        missing = [c for c in binding.columns if c not in schema.table(table).column_names]
        if missing:
            raise PackError(f"pack.toml binds {table}.{missing}, not in the spine",
                            file=pack.spine_path, hint="keep pack.toml and spine.sql in step")


@dataclass(frozen=True)
class RiGate:
    """Relational integrity over the pack's DDL spine, bounds and assertions (DuckDB)."""

    pack: Pack
    schema: Schema
    assertions: tuple[Assertion, ...]
    bounds: Bounds = field(default_factory=Bounds)
    pools: Pools | None = field(default=None, repr=False, compare=False)
    name: str = "ri_gate"
    _db: list[Database] = field(default_factory=list, repr=False, compare=False)  # 0 or 1

    @classmethod
    def from_pack(cls, pack: Pack, pools: Pools | None = None) -> RiGate:
        """Parse the spine, bounds and every assertion; any problem raises `PackError`.

        `pools` (the ontology's classes and members) fill the `_pool` table; without them
        there is no `_pool` and an assertion reading it is a setup error."""
        schema = parse_spine(pack.spine_path)
        _check_bindings(pack, schema)
        bounds = load_bounds(pack, schema)
        gate = cls(pack=pack, schema=schema, assertions=(), bounds=bounds, pools=pools)
        db = gate._database()
        try:
            assertions = load_assertions(pack.assertion_files(), schema, db.con)
            db.add_assertions(assertions)
            try:
                gate.plan.run(db.con)  # the compiled checks bind against the empty stage
            except duckdb.Error as exc:
                raise PackError(f"the spine's checks do not run: {first_message_line(exc)}",
                                file=pack.spine_path) from exc
        except BaseException:
            db.close()
            raise
        gate = replace(gate, assertions=assertions)
        gate._db.append(db)
        return gate

    @cached_property
    def layout(self) -> Layout:
        return Layout(self.schema)

    @cached_property
    def plan(self) -> CheckPlan:
        return CheckPlan.compile(self.layout, self.bounds)

    def close(self) -> None:
        """Close the warm database (also done when the gate is garbage-collected)."""
        while self._db:
            self._db.pop().close()

    def _database(self) -> Database:
        policy = self.pack.config.policy
        return Database(self.layout, self.pools, memory_mb=policy.sql_memory_mb,
                        timeout_s=policy.assertion_timeout_s)

    def _new_db(self) -> Database:
        db = self._database()
        try:
            db.add_assertions(self.assertions)
        except BaseException:
            db.close()
            raise
        return db

    def _warm(self) -> Database:
        if not self._db:
            self._db.append(self._new_db())
        return self._db[0]

    # -- judging ---------------------------------------------------------------------------

    def judge(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        """One verdict per candidate, in order; the cohort shares the warm database."""
        if not candidates:
            return []
        db = self._warm()
        with db.lock:
            try:
                hits, rows = self._hits(db, candidates)
            except BaseException:  # whatever state it is in, that database is not reused
                if self._db and self._db[0] is db:
                    self._db.clear()
                db.close()
                raise
        return self._verdicts(candidates, hits, rows)

    def judge_transient(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        """The reference path: each candidate in a fresh transient database of its own.
        Slow (a database per artifact); `judge` must agree with it."""
        out: list[Verdict] = []
        for art in candidates:
            db = self._new_db()
            try:
                hits, rows = self._hits(db, [art])
            finally:
                db.close()
            out += self._verdicts([art], hits, rows)
        return out

    def _verdicts(
        self, candidates: Sequence[Artifact], hits: list[Hit], rows: list[int]
    ) -> list[Verdict]:
        per: list[list[Hit]] = [[] for _ in candidates]
        for h in hits:
            per[h.artifact].append(h)
        return [verdict(self, a, hs, n) for a, hs, n in zip(candidates, per, rows, strict=True)]

    def _hits(
        self, db: Database, candidates: Sequence[Artifact]
    ) -> tuple[list[Hit], list[int]]:
        """Every finding about the cohort (by artifact) and each artifact's row count."""
        staged = stage(self.layout, candidates)
        counts = {t.name: staged.counts[i] for i, t in enumerate(self.schema.tables)}
        failed: list[int] = []
        runaway: set[int] = set()  # assertions that ran past their time limit alone
        try:
            hits = db.load(staged, candidates)
            mistyped = {(h.artifact, h.table, h.row, h.columns) for h in hits}
            hits += [h for h in self.plan.run(db.con, db.query)
                     if not (h.code == "ri.not_null"
                             and (h.artifact, h.table, h.row, h.columns) in mistyped)]
            hits += row_count_hits(self.bounds, counts, candidates)
            hits += [aggregate_hit(b, a, None, 0.0, [], [])
                     for a, b in empty_table_hits(self.bounds, counts, len(candidates))]
            for i, a in enumerate(self.assertions):
                try:
                    hits += self._assertion_hits(db, i, a, candidates)
                except QueryTimeout:
                    failed.append(i)
                    if len(candidates) == 1:  # alone it would only time out again
                        runaway.add(i)
                except duckdb.Error:
                    failed.append(i)
        finally:
            db.clear()
        if failed:  # rare: re-run those assertions per artifact, in isolation
            hits += self._isolated(db, candidates, failed, runaway)
        hits.sort(key=lambda h: h.artifact)  # stable: each artifact's order is kept
        return hits, [sum(per) for per in zip(*staged.counts, strict=True)]

    def _isolated(
        self, db: Database, candidates: Sequence[Artifact], failed: list[int],
        runaway: set[int],
    ) -> list[Hit]:
        """Re-run the `failed` assertions for each artifact alone. An assertion that runs
        past its time limit alone (`runaway`) is not run again: it would only time out
        again (a batch waits for it once per cohort and once alone, not per artifact)."""
        out: list[Hit] = []
        for a_idx, art in enumerate(candidates):
            try:
                db.load(stage(self.layout, [art]), [art])
                for i in failed:
                    assertion = self.assertions[i]
                    if i in runaway:
                        out.append(_assertion_error(a_idx, assertion, self._timeout_text()))
                        continue
                    try:
                        found = self._assertion_hits(db, i, assertion, [art])
                        out += [replace(h, artifact=a_idx) for h in found]
                    except QueryTimeout:
                        runaway.add(i)
                        out.append(_assertion_error(a_idx, assertion, self._timeout_text()))
                    except duckdb.Error as exc:
                        out.append(_assertion_error(a_idx, assertion, first_message_line(exc)))
            finally:
                db.clear()
        return out

    def _timeout_text(self) -> str:
        limit = self.pack.config.policy.assertion_timeout_s
        return (f"it ran past its time limit of {limit:g} s and was stopped (raise "
                "[policy] assertion_timeout_s in pack.toml if the query is meant to be slow)")

    def _assertion_hits(
        self, db: Database, index: int, a: Assertion, candidates: Sequence[Artifact],
    ) -> list[Hit]:
        names, rows = db.assertion_rows(index)
        counts: dict[int, int] = {}
        hits: list[Hit] = []
        for raw in rows:
            values = dict(zip(names, raw, strict=True))
            art = values.get("_artifact")
            if not isinstance(art, int) or not 0 <= art < len(candidates):
                continue  # a row that names no artifact of this cohort cannot be attributed
            counts[art] = counts.get(art, 0) + 1
            if counts[art] > a.limit:
                continue
            hits.append(_assertion_hit(a, art, values, candidates[art]))
        hits.sort(key=lambda h: (h.artifact, -1 if h.row is None else h.row))
        return hits


def _assertion_error(art: int, a: Assertion, why: str) -> Hit:
    return Hit(code="ri.assertion_error", artifact=art, table=None, row=None,
               evidence=(a.name, a.sql),
               message=f"assertion {a.name} ({a.code}) could not be evaluated: {why}")


def _assertion_hit(a: Assertion, art: int, values: dict[str, object], artifact: Artifact) -> Hit:
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

"""The gate's DuckDB: the stage, the spine views, the pool table and the assertion views.

A `Database` is built once per gate and kept warm: opening an in-memory DuckDB and
creating its catalog costs far more than checking a cohort, so `judge` reuses it. Only
the rows of `_stage` change between cohorts, and they are deleted when a cohort is done
(also when it fails), so nothing of one cohort is visible to the next. The catalog never
changes after setup: assertions are read-only SELECT views and cells are never SQL text.
File and network access are disabled and the configuration is locked (`ddl.connect`).

A pack's assertions are untrusted SQL, so the database is bounded: one thread,
`[policy] sql_memory_mb` of memory, spilling past it only into a private temporary folder
(removed at close, never `./.tmp`), and `assertion_rows` interrupts a query that runs past
`[policy] assertion_timeout_s` (`QueryTimeout`).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb

from effectors.ri_gate.assertions import Assertion, view_sql
from effectors.ri_gate.ddl import connect, quote
from effectors.ri_gate.pool_tables import create_pool_table
from effectors.ri_gate.staging import Hit, Layout, Staged, type_hits
from harness.errors import InfrastructureError
from harness.models import Artifact
from harness.pools import Pools

__all__ = ["Database", "QueryTimeout"]

_ARROW = "_cohort_arrow"


class QueryTimeout(Exception):
    """A query ran past its time limit and was interrupted."""


class Database:
    """One in-memory DuckDB laid out for a schema; `load`, query, `clear`, repeat."""

    def __init__(self, layout: Layout, pools: Pools | None, *, memory_mb: int = 1024,
                 timeout_s: float | None = None) -> None:
        self.layout = layout
        self.lock = threading.Lock()
        self.timeout_s = timeout_s
        # the connection lives in a holder the finalizer empties (at close, garbage
        # collection or interpreter exit), so no DuckDB object outlives the interpreter;
        # then the finalizer removes the spill folder
        try:
            self._spill = Path(tempfile.mkdtemp(prefix="membrane-duckdb-"))
        except OSError as exc:  # no writable temporary folder: fail closed, saying so
            raise InfrastructureError(
                f"cannot create a temporary folder for DuckDB's spill files: {exc} (set TMPDIR "
                "to a writable folder)"
            ) from exc
        self._holder: list[duckdb.DuckDBPyConnection] = []
        self._close = weakref.finalize(self, _shutdown, self._holder, self._spill)
        self._holder.append(connect(memory_mb, self._spill / "spill"))
        self._prepared: dict[str, str] = {}  # SQL -> the name it is PREPAREd under
        try:
            self.con.execute(layout.create_sql())
            for t_idx in range(len(layout.schema.tables)):
                self.con.execute(layout.view_sql(t_idx))
            if pools is not None:
                create_pool_table(self.con, pools)
        except BaseException:
            self.close()
            raise

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        if not self._holder:
            raise InfrastructureError("the gate's database is closed")
        return self._holder[0]

    def add_assertions(self, assertions: Sequence[Assertion]) -> None:
        for i, a in enumerate(assertions):
            self.con.execute(view_sql(self.assertion_view(i), a.sql))

    @staticmethod
    def assertion_view(index: int) -> str:
        return f"_assertion_{index}"

    def load(self, staged: Staged, candidates: Sequence[Artifact]) -> list[Hit]:
        """Insert a staged cohort; return its `ri.type` findings (Python's and DuckDB's)."""
        self.con.register(_ARROW, staged.arrow)
        try:
            found = type_hits(self.con, self.layout, staged, _ARROW, candidates)
            self.con.execute(self.layout.insert_sql(_ARROW))
        finally:
            self.con.unregister(_ARROW)
        order = {t.name: (i, t.column_names) for i, t in enumerate(self.layout.schema.tables)}

        def key(h: Hit) -> tuple[int, int, int, int]:
            t_idx, names = order[h.table or ""]
            return (h.artifact, t_idx, h.row or 0, names.index(h.columns[0]))

        return sorted(staged.hits + found, key=key)

    def query(self, sql: str) -> duckdb.DuckDBPyConnection:
        """Run a fixed query of this database (no parameters) through a prepared statement.

        DuckDB plans a statement when it is PREPAREd and reuses the plan on EXECUTE; the
        catalog never changes after setup, so the plan stays valid. For a lone artifact
        planning is most of the cost (measured: the check query 7.2 ms planned each time,
        1.8 ms as EXECUTE)."""
        name = self._prepared.get(sql)
        if name is None:
            name = f"_q{len(self._prepared)}"
            self.con.execute(f"PREPARE {name} AS {sql}")
            self._prepared[sql] = name
        return self.con.execute(f"EXECUTE {name}")

    def assertion_rows(self, index: int) -> tuple[list[str], list[tuple[object, ...]]]:
        """The rows of assertion `index`; `QueryTimeout` past `timeout_s`."""
        with self.deadline(self.timeout_s):
            cur = self.query(f"SELECT * FROM {quote(self.assertion_view(index))} ORDER BY ALL")
            return [str(d[0]) for d in cur.description or []], cur.fetchall()

    @contextmanager
    def deadline(self, seconds: float | None) -> Iterator[None]:
        """Interrupt the connection's query if the block runs past `seconds`; then the
        block's `duckdb.InterruptException` becomes `QueryTimeout`. The interrupt is sent
        only while the block runs (a timer firing after it does nothing)."""
        if seconds is None:
            yield
            return
        con, guard, state = self.con, threading.Lock(), {"armed": True, "fired": False}

        def fire() -> None:
            with guard:
                if state["armed"]:
                    state["fired"] = True
                    con.interrupt()

        timer = threading.Timer(seconds, fire)
        timer.daemon = True
        timer.start()
        try:
            yield
        except duckdb.InterruptException as exc:
            if state["fired"]:
                raise QueryTimeout(f"ran past its time limit of {seconds:g} s") from exc
            raise
        finally:
            with guard:
                state["armed"] = False
            timer.cancel()

    def clear(self) -> None:
        self.con.execute("DELETE FROM _stage").fetchall()

    def close(self) -> None:
        self._close()


def _shutdown(holder: list[duckdb.DuckDBPyConnection], spill: Path) -> None:
    while holder:
        holder.pop().close()
    shutil.rmtree(spill, ignore_errors=True)

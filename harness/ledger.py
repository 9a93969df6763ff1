"""The commit ledger (SQLite, WAL, synchronous=FULL): the single commit point.

One transaction inserts a commit row; `current/` and `corpus.jsonl` are derived from the
ledger. A held artifact (approval required) gets a `held` row instead and its objects live
in `.membrane/held/`, which recovery keeps. The ledger also remembers the pack the last
batch ran with, so `membrane report` needs no `--pack`. Runs are registered when they start and anchored (trace length + last hash) when
they end, so `trace verify` also catches a truncated or recomputed chain.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, NoReturn

from harness.storage import (
    busy_timeout_s,
    connect_read_only,
    from_os_error,
    from_sqlite_error,
    is_storage_errno,
)

__all__ = ["AnchorEntry", "CommitRow", "FinishRow", "HeldRow", "Ledger", "RunRow"]

# one anchor-log row from the ledger's current state, per finished run (a run's content: its
# commit's, else its held row's): what a ledger older than the log backfills, in run order
_COMMIT_HASH = "(SELECT c.content_hash FROM commits c WHERE c.run_id = r.run_id)"
_HELD_HASH = "(SELECT h.content_hash FROM held h WHERE h.run_id = r.run_id)"
_ANCHOR_OF = (
    "SELECT r.run_id, r.trace_len, r.trace_head, r.status,"
    f" COALESCE({_COMMIT_HASH}, {_HELD_HASH}) FROM runs r"
)
_LOG_ANCHOR = (
    "INSERT INTO anchor_log (run_id, trace_len, trace_head, status, content_hash) "
    + _ANCHOR_OF
    + " WHERE r.run_id = ? AND r.trace_len IS NOT NULL AND r.trace_head IS NOT NULL"
)

_ANCHOR_LOG_DDL = """
CREATE TABLE IF NOT EXISTS anchor_log (     -- every anchor a run was given, in that order;
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,  -- append-only: the workspace checkpoint
    run_id       TEXT NOT NULL,                 -- (harness.checkpoint) is a hash chain
    trace_len    INTEGER NOT NULL,              -- over it
    trace_head   TEXT NOT NULL,
    status       TEXT NOT NULL,
    content_hash TEXT                           -- what the run published (or holds), if any
)
"""

_PRUNED_DDL = """
CREATE TABLE IF NOT EXISTS pruned (         -- what `membrane gc` removed: a tombstone per
    kind         TEXT NOT NULL,             -- file ('trace' | 'archive'); the anchor of a
    name         TEXT NOT NULL,             -- pruned trace stays in runs and anchor_log, so
    trace_len    INTEGER,                   -- verification reports "pruned, anchor kept"
    trace_head   TEXT,                      -- (name: the run id, or the archived content
    pruned_at    TEXT NOT NULL,             -- hash)
    PRIMARY KEY (kind, name)
)
"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT PRIMARY KEY,
    artifact_id TEXT NOT NULL,
    batch_id    TEXT NOT NULL,
    input_hash  TEXT NOT NULL,
    status      TEXT NOT NULL,          -- running | COMMITTED | EXHAUSTED | FAILED | HELD | INTERRUPTED | REJECTED | REVERT
    started_at  TEXT NOT NULL,
    trace_len   INTEGER,
    trace_head  TEXT,
    outcome     TEXT                    -- Outcome JSON
);
CREATE INDEX IF NOT EXISTS runs_by_artifact ON runs (artifact_id, input_hash);
CREATE TABLE IF NOT EXISTS commits (
    artifact_id  TEXT NOT NULL,
    version      INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    metrics_hash TEXT NOT NULL,
    run_id       TEXT NOT NULL UNIQUE REFERENCES runs (run_id),
    trace_seq    INTEGER NOT NULL,
    trace_hash   TEXT NOT NULL,
    committed_at TEXT NOT NULL,
    PRIMARY KEY (artifact_id, version)
);
CREATE TABLE IF NOT EXISTS held (
    artifact_id  TEXT NOT NULL,
    run_id       TEXT NOT NULL UNIQUE REFERENCES runs (run_id),
    content_hash TEXT NOT NULL,
    metrics_hash TEXT NOT NULL,
    trace_seq    INTEGER NOT NULL,
    trace_hash   TEXT NOT NULL,
    held_at      TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending',  -- pending | approved | rejected
    why          TEXT NOT NULL DEFAULT '',         -- policy, overlay or spot-check
    reviewed_at  TEXT,
    note         TEXT
);
CREATE TABLE IF NOT EXISTS outcomes (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,   -- the outcome log's order
    run_id  TEXT,                                -- the run a record is about (none: relax)
    kind    TEXT NOT NULL DEFAULT 'run',         -- run | override | relax
    record  TEXT NOT NULL                        -- harness.learning.outcomes record JSON
);
CREATE UNIQUE INDEX IF NOT EXISTS outcomes_one_per_run ON outcomes (run_id) WHERE kind = 'run';
CREATE TABLE IF NOT EXISTS trace_tail (     -- review records the ledger committed; appended
    run_id   TEXT NOT NULL,                   -- to the run's trace right after (recovery
    seq      INTEGER NOT NULL,                -- appends any a kill left out), then removed
    payload  TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS run_figures (  -- what `membrane report` reads of each run that
    run_id   TEXT PRIMARY KEY,                -- finished (harness.trace.figures), written with
    figures  TEXT NOT NULL                    -- its anchor; a run without one (older, or
);                                            -- settled by recovery) is read from its files
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


_SCHEMA_VERSION = 3


@dataclass(frozen=True)
class CommitRow:
    artifact_id: str
    version: int
    content_hash: str
    metrics_hash: str
    run_id: str
    trace_seq: int
    trace_hash: str
    committed_at: str


@dataclass(frozen=True)
class HeldRow:
    artifact_id: str
    run_id: str
    content_hash: str
    metrics_hash: str
    trace_seq: int
    trace_hash: str
    held_at: str
    status: str
    why: str = ""
    reviewed_at: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class AnchorEntry:
    seq: int
    run_id: str
    trace_len: int
    trace_head: str
    status: str
    content_hash: str | None


class FinishRow(NamedTuple):
    """A finished run's anchor, as `finish_runs` writes it."""

    run_id: str
    status: str
    trace_len: int
    trace_head: str
    outcome: str | None  # Outcome JSON
    record: str | None  # its outcome record for the learning log
    figures: str | None = None  # what the report reads of it (harness.trace.figures)


@dataclass(frozen=True)
class RunRow:
    run_id: str
    artifact_id: str
    batch_id: str
    input_hash: str
    status: str
    started_at: str
    trace_len: int | None
    trace_head: str | None
    outcome: str | None


class Ledger:
    def __init__(self, path: Path) -> None:
        self._path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if is_storage_errno(exc):
                raise from_os_error(exc, path.parent) from exc
            raise
        self._db = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout_s())
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
            self._db.executescript(_SCHEMA)
            self._db.execute(_ANCHOR_LOG_DDL)
            self._db.execute(_PRUNED_DDL)
        except sqlite3.Error as exc:
            self._db.close()
            self._raise(exc)

    @classmethod
    def reader(cls, path: Path) -> Ledger:
        """A read-only view for readers (trace inspection, `membrane serve`): a WAL reader
        that never takes the writer's lock, creates nothing and migrates nothing; any
        write through it fails. The ledger must exist. On a read-only medium (where SQLite
        cannot create the WAL's shared-memory file) a ledger with no pending WAL is opened
        as immutable. A damaged header is a StorageError naming the file."""
        self = cls.__new__(cls)
        self._path = path
        self._db = connect_read_only(path)
        return self

    def _raise(self, exc: sqlite3.Error) -> NoReturn:
        """Raise what an SQLite error on this ledger means for the user (a StorageError
        naming the file), or the error itself when it means a bug."""
        err = from_sqlite_error(exc, self._path)
        if err is None:
            raise exc
        raise err from exc

    def _migrate(self) -> None:
        """Bring a ledger an older membrane wrote up to this schema, in one transaction.
        v1 (before review): `held` lacked why/reviewed_at/note and `outcomes` allowed only
        one record per run (no overrides or relax records)."""
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        if version >= _SCHEMA_VERSION:
            return
        tables = {
            r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        with self._txn():
            if "held" in tables:
                cols = {r[1] for r in self._db.execute("PRAGMA table_info(held)")}
                for col, decl in (
                    ("why", "TEXT NOT NULL DEFAULT ''"),
                    ("reviewed_at", "TEXT"),
                    ("note", "TEXT"),
                ):
                    if col not in cols:
                        self._db.execute(f"ALTER TABLE held ADD COLUMN {col} {decl}")
            if "outcomes" in tables:
                cols = {r[1] for r in self._db.execute("PRAGMA table_info(outcomes)")}
                if "kind" not in cols:
                    self._db.execute("ALTER TABLE outcomes RENAME TO outcomes_v1")
                    self._db.execute(
                        "CREATE TABLE outcomes (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                        " run_id TEXT, kind TEXT NOT NULL DEFAULT 'run', record TEXT NOT NULL)"
                    )
                    self._db.execute(
                        "INSERT INTO outcomes (seq, run_id, kind, record)"
                        " SELECT seq, run_id, 'run', record FROM outcomes_v1"
                    )
                    self._db.execute("DROP TABLE outcomes_v1")
            if "runs" in tables and "anchor_log" not in tables:  # v2: no anchor log yet
                self._db.execute(_ANCHOR_LOG_DDL)
                anchor_of = _ANCHOR_OF
                for table, sub in (("commits", _COMMIT_HASH), ("held", _HELD_HASH)):
                    if table not in tables:  # an older ledger that never had one: no hash
                        anchor_of = anchor_of.replace(sub, "NULL")
                self._db.execute(
                    "INSERT INTO anchor_log (run_id, trace_len, trace_head, status, content_hash) "
                    + anchor_of
                    + " WHERE r.trace_len IS NOT NULL AND r.trace_head IS NOT NULL"
                    " AND r.status != 'running' ORDER BY r.rowid"
                )
            self._db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    # -- runs ---------------------------------------------------------------------------
    def start_run(
        self, run_id: str, artifact_id: str, batch_id: str, input_hash: str, started_at: str
    ) -> None:
        self._db.execute(
            "INSERT INTO runs (run_id, artifact_id, batch_id, input_hash, status, started_at)"
            " VALUES (?, ?, ?, ?, 'running', ?)",
            (run_id, artifact_id, batch_id, input_hash, started_at),
        )

    def start_runs(self, rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        """(run_id, artifact_id, batch_id, input_hash, started_at) for many runs, one transaction."""
        with self._txn():
            self._start_rows(rows)

    def _start_rows(self, rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        self._db.executemany(
            "INSERT INTO runs (run_id, artifact_id, batch_id, input_hash, status, started_at)"
            " VALUES (?, ?, ?, ?, 'running', ?)",
            rows,
        )

    def finish_run(
        self, run_id: str, status: str, trace_len: int, trace_head: str, outcome_json: str | None
    ) -> None:
        self.finish_runs([FinishRow(run_id, status, trace_len, trace_head, outcome_json, None)])

    def finish_runs(self, rows: Sequence[FinishRow]) -> None:
        """Anchor many finished runs in one transaction: a run's anchor, its outcome record
        and its figures are one commit, so a kill never leaves one without the others."""
        if not rows:
            return
        with self._txn():
            self._finish_rows(rows)

    def _finish_rows(self, rows: Sequence[FinishRow]) -> None:
        rows = [FinishRow(*r) for r in rows]  # a plain tuple of the first six fields too
        self._db.executemany(
            "UPDATE runs SET status = ?, trace_len = ?, trace_head = ?, outcome = ? WHERE run_id = ?",
            [(r.status, r.trace_len, r.trace_head, r.outcome, r.run_id) for r in rows],
        )
        self._db.executemany(
            "INSERT OR IGNORE INTO outcomes (run_id, kind, record) VALUES (?, 'run', ?)",
            [(r.run_id, r.record) for r in rows if r.record is not None],
        )
        self._db.executemany(
            "INSERT OR REPLACE INTO run_figures (run_id, figures) VALUES (?, ?)",
            [(r.run_id, r.figures) for r in rows if r.figures is not None],
        )
        self._db.executemany(_LOG_ANCHOR, [(rid,) for rid, *_rest in rows])

    def apply_cohort(
        self,
        starts: Sequence[tuple[str, str, str, str, str]],
        commits: Sequence[tuple[str, str, str, str, int, str, str]],
        holds: Sequence[tuple[str, str, str, str, int, str, str, str]],
        finishes: Sequence[FinishRow],
    ) -> list[CommitRow]:
        """A cohort a worker judged (`harness.pool`), in one transaction: its runs
        registered, committed or held, and anchored. Its objects and traces were synced
        before it; until it commits, none of the cohort is in the ledger (a kill, or a
        worker's death, re-judges the whole cohort). The commit rows, in order."""
        with self._txn():
            self._start_rows(starts)
            rows = self._commit_rows(commits)
            for h in holds:
                self._hold_row(*h)
            self._finish_rows(finishes)
        return rows

    def anchor_log(self) -> list[AnchorEntry]:
        """Every anchor the runs were given, in log order. A ledger older than the log (read
        without migrating it) gives the entries its migration will write."""
        has_log = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'anchor_log'"
        ).fetchone()
        if has_log:
            rows = self._db.execute("SELECT * FROM anchor_log ORDER BY seq").fetchall()
        else:
            rows = [
                (n, *r)
                for n, r in enumerate(
                    self._db.execute(
                        _ANCHOR_OF + " WHERE r.trace_len IS NOT NULL AND r.trace_head IS NOT NULL"
                        " AND r.status != 'running' ORDER BY r.rowid"
                    ),
                    start=1,
                )
            ]
        return [
            AnchorEntry(int(q), str(r), int(n), str(h), str(st), c) for q, r, n, h, st, c in rows
        ]

    def outcome_records(self, after: int = 0) -> list[tuple[int, str]]:
        """(seq, record JSON) of the outcome log after `after`, in log order."""
        return [
            (int(seq), str(rec))
            for seq, rec in self._db.execute(
                "SELECT seq, record FROM outcomes WHERE seq > ? ORDER BY seq", (after,)
            )
        ]

    @contextmanager
    def _txn(self) -> Iterator[None]:
        """One write transaction; an SQLite error in it (locked past the busy timeout, disk
        full, read-only) rolls back and becomes a StorageError naming the ledger."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                if self._db.in_transaction:  # SQLite may have rolled back already (disk full)
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._raise(exc)

    def runs(self, status: str | None = None) -> list[RunRow]:
        sql = (
            "SELECT * FROM runs"
            + (" WHERE status = ?" if status else "")
            + " ORDER BY started_at, run_id"
        )
        return [RunRow(*r) for r in self._db.execute(sql, (status,) if status else ())]

    def run_figures(self) -> dict[str, str]:
        """run id -> what the report reads of it (harness.trace.figures), for the runs that
        recorded it. A ledger older than the table (read without migrating it) has none."""
        try:
            return dict(self._db.execute("SELECT run_id, figures FROM run_figures"))
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return {}
            self._raise(exc)

    def run(self, run_id: str) -> RunRow | None:
        r = self._db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return RunRow(*r) if r else None

    def run_ids(self) -> set[str]:
        return {r for (r,) in self._db.execute("SELECT run_id FROM runs")}

    def latest_versions(self, artifact_ids: Sequence[str]) -> dict[str, int]:
        """artifact id -> its newest committed version (0: never committed)."""
        out = dict.fromkeys(artifact_ids, 0)
        for i in range(0, len(artifact_ids), 500):
            chunk = artifact_ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for a, v in self._db.execute(
                f"SELECT artifact_id, MAX(version) FROM commits WHERE artifact_id IN ({marks})"
                " GROUP BY artifact_id",
                chunk,
            ):
                out[a] = int(v)
        return out

    def count_runs(self, artifact_id: str) -> int:
        return int(
            self._db.execute(
                "SELECT COUNT(*) FROM runs WHERE artifact_id = ?", (artifact_id,)
            ).fetchone()[0]
        )

    def finished_inputs(self) -> set[tuple[str, str]]:
        """(artifact_id, input_hash) pairs that a finished run settled (not FAILED/INTERRUPTED)."""
        return set(self.settled_inputs())

    def artifact_ids(self) -> set[str]:
        """Every artifact id the workspace has run."""
        return {a for (a,) in self._db.execute("SELECT DISTINCT artifact_id FROM runs")}

    def settled_inputs(self) -> dict[tuple[str, str], str]:
        """(artifact_id, input_hash) -> the state of the newest run that settled it
        (COMMITTED, EXHAUSTED, HELD or REJECTED): what `batch --strict` reports for an
        artifact a rerun skips."""
        rows = self._db.execute(
            "SELECT artifact_id, input_hash, status FROM runs"
            " WHERE status IN ('COMMITTED', 'EXHAUSTED', 'HELD', 'REJECTED')"
            " ORDER BY started_at, rowid"
        )
        return {(a, h): st for a, h, st in rows}

    def settled_count(self) -> int:
        """How many (artifact, input) pairs a run settled: a rerun skips at most this many."""
        row = self._db.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT artifact_id, input_hash FROM runs"
            " WHERE status IN ('COMMITTED', 'EXHAUSTED', 'HELD', 'REJECTED'))"
        ).fetchone()
        return int(row[0])

    # -- commits ------------------------------------------------------------------------
    def commit(
        self,
        artifact_id: str,
        content_hash: str,
        metrics_hash: str,
        run_id: str,
        trace_seq: int,
        trace_hash: str,
        committed_at: str,
    ) -> CommitRow:
        """The single commit point. Idempotent for a run: committing it twice returns the first row."""
        return self.commit_many(
            [(artifact_id, content_hash, metrics_hash, run_id, trace_seq, trace_hash, committed_at)]
        )[0]

    def commit_many(
        self, rows: Sequence[tuple[str, str, str, str, int, str, str]]
    ) -> list[CommitRow]:
        """Group commit: many runs' commit points in one transaction, each as `commit`
        makes it ((artifact_id, content_hash, metrics_hash, run_id, trace_seq, trace_hash,
        committed_at); idempotent per run). One fsync of the ledger for the lot."""
        if not rows:
            return []
        with self._txn():
            return self._commit_rows(rows)

    def _commit_rows(
        self, rows: Sequence[tuple[str, str, str, str, int, str, str]]
    ) -> list[CommitRow]:
        out: list[CommitRow] = []
        for artifact_id, chash, mhash, run_id, seq, thash, at in rows:
            existing = self._db.execute(
                "SELECT * FROM commits WHERE run_id = ?", (run_id,)
            ).fetchone()
            if existing:
                out.append(CommitRow(*existing))
                continue
            (latest,) = self._db.execute(
                "SELECT COALESCE(MAX(version), 0) FROM commits WHERE artifact_id = ?",
                (artifact_id,),
            ).fetchone()
            row = CommitRow(artifact_id, int(latest) + 1, chash, mhash, run_id, seq, thash, at)
            self._insert_commit(row)
            out.append(row)
        return out

    # -- held (approval required) ------------------------------------------------------
    def hold(
        self,
        artifact_id: str,
        content_hash: str,
        metrics_hash: str,
        run_id: str,
        trace_seq: int,
        trace_hash: str,
        held_at: str,
        why: str = "",
    ) -> HeldRow:
        """Record a held artifact. Idempotent for a run: holding it twice returns the first."""
        with self._txn():
            self._hold_row(
                artifact_id, content_hash, metrics_hash, run_id, trace_seq, trace_hash, held_at, why
            )
        existing = self.held_of_run(run_id)
        assert existing is not None
        return existing

    def _hold_row(
        self,
        artifact_id: str,
        content_hash: str,
        metrics_hash: str,
        run_id: str,
        trace_seq: int,
        trace_hash: str,
        held_at: str,
        why: str,
    ) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO held (artifact_id, run_id, content_hash, metrics_hash,"
            " trace_seq, trace_hash, held_at, status, why)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
            (artifact_id, run_id, content_hash, metrics_hash, trace_seq, trace_hash, held_at, why),
        )

    def held_of_run(self, run_id: str) -> HeldRow | None:
        r = self._db.execute("SELECT * FROM held WHERE run_id = ?", (run_id,)).fetchone()
        return HeldRow(*r) if r else None

    def held(self, status: str | None = None) -> list[HeldRow]:
        sql = "SELECT * FROM held" + (" WHERE status = ?" if status else "") + " ORDER BY held_at"
        return [HeldRow(*r) for r in self._db.execute(sql, (status,) if status else ())]

    # -- a person's review (approve | reject | revert) ------------------------------------
    def review_held(
        self,
        run_id: str,
        action: str,
        at: str,
        note: str,
        tail: tuple[int, str, str],
        record: str,
        commit: CommitRow | None = None,
    ) -> None:
        """Approve (with `commit`, the new version) or reject a pending held run, in one
        transaction: the held row's status, the run's status and new trace anchor (`tail`:
        seq, hash and payload of the review record, appended to the trace after), the
        commit row when approved, and the override record in the outcome log. Raises
        LookupError when the run is not HELD and pending, ValueError when the artifact
        gained a version meanwhile."""
        seq, head, payload = tail
        with self._txn():
            row = self._db.execute(
                "SELECT h.artifact_id, r.trace_len FROM held h JOIN runs r USING (run_id)"
                " WHERE h.run_id = ? AND h.status = 'pending' AND r.status = 'HELD'",
                (run_id,),
            ).fetchone()
            if row is None or row[1] != seq:
                raise LookupError(run_id)
            if commit is not None:
                self._insert_next_version(commit)
            self._db.execute(
                "UPDATE held SET status = ?, reviewed_at = ?, note = ? WHERE run_id = ?",
                (action, at, note, run_id),
            )
            self._db.execute(
                "UPDATE runs SET status = ?, trace_len = ?, trace_head = ? WHERE run_id = ?",
                ("COMMITTED" if action == "approved" else "REJECTED", seq + 1, head, run_id),
            )
            self._insert_review(run_id, record, run_id, seq, payload)
            self._db.execute(_LOG_ANCHOR, (run_id,))

    def _insert_next_version(self, commit: CommitRow) -> None:
        """The commit row, if it is still the artifact's next version (else ValueError)."""
        (latest,) = self._db.execute(
            "SELECT COALESCE(MAX(version), 0) FROM commits WHERE artifact_id = ?",
            (commit.artifact_id,),
        ).fetchone()
        if commit.version != latest + 1:
            raise ValueError(f"{commit.artifact_id} is at version {latest} now")
        self._insert_commit(commit)

    def _insert_review(
        self, record_run: str, record: str | None, tail_run: str, seq: int, payload: str
    ) -> None:
        """A review act's override record (if any) and its trace record-to-be."""
        if record is not None:
            self._db.execute(
                "INSERT INTO outcomes (run_id, kind, record) VALUES (?, 'override', ?)",
                (record_run, record),
            )
        self._db.execute(
            "INSERT INTO trace_tail (run_id, seq, payload) VALUES (?, ?, ?)",
            (tail_run, seq, payload),
        )

    def revert(
        self,
        run: RunRow,
        tail: tuple[int, str, str],
        commit: CommitRow,
        record: str | None,
        undone: str,
    ) -> None:
        """A person's revert, in one transaction: a run row for the act (its trace is the
        one review record `tail`), the commit row that makes the older content the newest
        version, and the override record of the run `undone` (whose version it undid)."""
        seq, head, payload = tail
        with self._txn():
            self._db.execute(
                "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.run_id,
                    run.artifact_id,
                    run.batch_id,
                    run.input_hash,
                    run.status,
                    run.started_at,
                    seq + 1,
                    head,
                    run.outcome,
                ),
            )
            self._insert_next_version(commit)
            self._insert_review(undone, record, run.run_id, seq, payload)
            self._db.execute(_LOG_ANCHOR, (run.run_id,))

    def append_outcome(self, kind: str, record: str, run_id: str | None = None) -> None:
        """One record into the outcome log (a relax, say), its own transaction."""
        with self._txn():
            self._db.execute(
                "INSERT INTO outcomes (run_id, kind, record) VALUES (?, ?, ?)",
                (run_id, kind, record),
            )

    def trace_tails(self) -> list[tuple[str, int, str]]:
        """(run_id, seq, payload) of review records not yet known to be in their trace."""
        return [
            (str(r), int(n), str(p))
            for r, n, p in self._db.execute(
                "SELECT run_id, seq, payload FROM trace_tail ORDER BY run_id, seq"
            )
        ]

    def drop_trace_tail(self, run_id: str, seq: int) -> None:
        with self._txn():
            self._db.execute("DELETE FROM trace_tail WHERE run_id = ? AND seq = ?", (run_id, seq))

    def run_outcome_record(self, run_id: str) -> str | None:
        """The run's own outcome record (kind 'run'), as JSON."""
        r = self._db.execute(
            "SELECT record FROM outcomes WHERE run_id = ? AND kind = 'run'", (run_id,)
        ).fetchone()
        return str(r[0]) if r else None

    def commit_version(self, artifact_id: str, version: int) -> CommitRow | None:
        r = self._db.execute(
            "SELECT * FROM commits WHERE artifact_id = ? AND version = ?", (artifact_id, version)
        ).fetchone()
        return CommitRow(*r) if r else None

    def _insert_commit(self, row: CommitRow) -> None:
        self._db.execute(
            "INSERT INTO commits VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.artifact_id,
                row.version,
                row.content_hash,
                row.metrics_hash,
                row.run_id,
                row.trace_seq,
                row.trace_hash,
                row.committed_at,
            ),
        )

    # -- what the workspace remembers ----------------------------------------------------
    def remember_pack(self, path: str) -> None:
        """The pack the last batch or refine ran with (`membrane report` falls back to it)."""
        with self._txn():
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('pack', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (path,),
            )

    def last_pack(self) -> str | None:
        r = self._db.execute("SELECT value FROM meta WHERE key = 'pack'").fetchone()
        return str(r[0]) if r else None

    def latest_commits(self) -> list[CommitRow]:
        rows = self._db.execute(
            "SELECT c.* FROM commits c JOIN (SELECT artifact_id, MAX(version) v FROM commits"
            " GROUP BY artifact_id) l ON c.artifact_id = l.artifact_id AND c.version = l.v"
            " ORDER BY c.artifact_id"
        )
        return [CommitRow(*r) for r in rows]

    def all_commits(self) -> list[CommitRow]:
        return [
            CommitRow(*r)
            for r in self._db.execute("SELECT * FROM commits ORDER BY artifact_id, version")
        ]

    # -- retention (`membrane gc`) -------------------------------------------------------
    def record_pruned(
        self,
        traces: Sequence[tuple[str, int | None, str | None]],
        archived: Sequence[str],
        at: str,
    ) -> None:
        """Tombstones, in one transaction, for the files `membrane gc` is about to remove:
        traces by (run id, anchor length, anchor head), archived versions by content hash.
        Written before any file goes, so a kill in between leaves a tombstone over a file
        that is still there (harmless: the next gc removes it)."""
        with self._txn():
            self._db.executemany(
                "INSERT OR IGNORE INTO pruned (kind, name, trace_len, trace_head, pruned_at)"
                " VALUES ('trace', ?, ?, ?, ?)",
                [(run_id, n, head, at) for run_id, n, head in traces],
            )
            self._db.executemany(
                "INSERT OR IGNORE INTO pruned (kind, name, pruned_at) VALUES ('archive', ?, ?)",
                [(h, at) for h in archived],
            )

    def pruned(self, kind: str) -> dict[str, str]:
        """name -> when `membrane gc` pruned it, for `kind` 'trace' or 'archive' ({} for a
        ledger no gc has touched, including one an older membrane wrote)."""
        try:
            rows = self._db.execute("SELECT name, pruned_at FROM pruned WHERE kind = ?", (kind,))
            return {str(n): str(t) for n, t in rows}
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return {}
            raise

    def commit_of_run(self, run_id: str) -> CommitRow | None:
        r = self._db.execute("SELECT * FROM commits WHERE run_id = ?", (run_id,)).fetchone()
        return CommitRow(*r) if r else None

    def latest_commit(self, artifact_id: str) -> CommitRow | None:
        r = self._db.execute(
            "SELECT * FROM commits WHERE artifact_id = ? ORDER BY version DESC LIMIT 1",
            (artifact_id,),
        ).fetchone()
        return CommitRow(*r) if r else None

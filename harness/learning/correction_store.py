"""The corrections ledger: SQLite in the workspace (`.membrane/learning/corrections.sqlite`).

It keeps **distilled lessons only, never a note's text**:

* `captures`: one row per note taken in (who, when, which session and artifact, the detected
  category, the secret families scrubbed, the sha256 of the scrubbed text for idempotent
  imports) — no text;
* `records`: distilled lessons, deduplicated by meaning (a paraphrase of a record's lesson,
  same kind and scope, is one more occurrence of it, not a new record);
* `occurrences`: (record, capture) with the capture's day, session and reviewer: the
  recurrence gate reads them, so it survives restarts;
* `backlog`: scrubbed captures the model could not distill yet (breaker open, budget spent):
  at most `max_entries` (the oldest evicted), each for `ttl_days`; a drained row is deleted;
* `preferences`: what the router wrote for proposers (the workspace preferences);
* `feedback`: proposed pack changes (`infra_gap`) and everything only a person may decide
  (`policy`), never applied by the harness.

Record status: `candidate` (below the recurrence gate) -> `promoted` (passed, waiting for a
route slot) -> `active` (a preference in proposer context) | `queued` (a pack change in the
feedback queue) | `person` (policy: a person decides). The watcher moves `active` to
`reopened` (the lesson recurred after it was written) or `verified` (quiet 7 days), and
`queued` to `inconclusive` (quiet 14 days).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

import orjson

from harness.learning.distill import Envelope, NoteScope, Violation
from harness.learning.lessons import Advice
from harness.learning.similar import Similarity
from harness.learning.sqlite_tx import Transactional

__all__ = [
    "BacklogEntry",
    "Capture",
    "CorrectionStore",
    "FeedbackItem",
    "Record",
    "parse_at",
]

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS captures (
    id         TEXT PRIMARY KEY,
    at         TEXT NOT NULL,
    day        TEXT NOT NULL,
    session    TEXT NOT NULL,
    reviewer   TEXT NOT NULL,
    artifact   TEXT,
    topic      TEXT,
    source     TEXT NOT NULL,          -- cli | review | import | http
    category   TEXT NOT NULL,          -- correction | preference | frustration | other
    policy     INTEGER NOT NULL,
    injection  INTEGER NOT NULL,
    shapes     INTEGER NOT NULL,       -- a primary reviewer's: counts toward promotion
    scrubbed   TEXT NOT NULL,          -- JSON list of secret families redacted
    text_sha256 TEXT NOT NULL,         -- of the scrubbed text (idempotent import)
    status     TEXT NOT NULL,          -- distilled | backlog | skipped | expired | evicted
    method     TEXT,                   -- model | fallback
    echo_refused INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS records (
    id          TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    lesson      TEXT NOT NULL,
    scope       TEXT NOT NULL,
    scope_key   TEXT NOT NULL,
    violation   TEXT,
    advice      TEXT,
    confidence  REAL NOT NULL,         -- the distiller's, advisory: never admits a record
    status      TEXT NOT NULL,
    violations  INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    promoted_at TEXT,
    routed_at   TEXT,
    last_seen_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_by_kind ON records (kind, scope_key);
CREATE TABLE IF NOT EXISTS occurrences (
    record_id  TEXT NOT NULL REFERENCES records (id),
    capture_id TEXT NOT NULL REFERENCES captures (id),
    at         TEXT NOT NULL,
    day        TEXT NOT NULL,
    session    TEXT NOT NULL,
    reviewer   TEXT NOT NULL,
    shapes     INTEGER NOT NULL,
    PRIMARY KEY (record_id, capture_id)
);
CREATE TABLE IF NOT EXISTS backlog (
    capture_id TEXT PRIMARY KEY REFERENCES captures (id),
    text       TEXT NOT NULL,          -- scrubbed; deleted once distilled
    queued_at  TEXT NOT NULL,
    expires_at TEXT,
    attempts   INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS preferences (
    record_id  TEXT PRIMARY KEY REFERENCES records (id),
    lesson     TEXT NOT NULL,
    scope      TEXT NOT NULL,
    advice     TEXT,
    violation  TEXT,
    written_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS feedback (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    record_id  TEXT NOT NULL UNIQUE REFERENCES records (id),
    kind       TEXT NOT NULL,          -- infra_gap | policy
    proposal   TEXT NOT NULL,
    status     TEXT NOT NULL,          -- open | closed
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS violations (
    record_id TEXT NOT NULL REFERENCES records (id),
    run_id    TEXT NOT NULL,
    attempt   INTEGER NOT NULL,
    at        TEXT NOT NULL,
    PRIMARY KEY (record_id, run_id, attempt)
);
"""

RecordStatus = Literal[
    "candidate", "promoted", "active", "queued", "person", "reopened", "verified", "inconclusive"
]


def parse_at(at: str) -> datetime:
    """An ISO 8601 timestamp with a UTC offset (naive ones are refused)."""
    dt = datetime.fromisoformat(at.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        raise ValueError(f"{at!r} has no UTC offset")
    return dt


@dataclass(frozen=True)
class Capture:
    id: str
    at: str
    session: str
    reviewer: str
    artifact: str | None
    topic: str | None
    source: str
    category: str
    policy: bool
    injection: bool
    shapes: bool
    scrubbed: tuple[str, ...]
    text_sha256: str
    day: str  # the calendar day in the reviewer's own offset (`at` itself is UTC)

    @staticmethod
    def make_id(
        text_sha256: str, at: str, session: str, reviewer: str, artifact: str | None
    ) -> str:
        raw = "\x1f".join((text_sha256, at, session, reviewer, artifact or ""))
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Record:
    id: str
    kind: str
    lesson: str
    scope: NoteScope
    violation: Violation | None
    advice: Advice | None
    confidence: float
    status: str
    violations: int
    support: int
    days: int
    sessions: int
    created_at: str
    updated_at: str
    promoted_at: str | None
    routed_at: str | None
    last_seen_at: str

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "lesson": self.lesson,
            "scope": self.scope.model_dump(exclude_none=True),
            "status": self.status,
            "support": self.support,
            "days": self.days,
            "sessions": self.sessions,
            "violations": self.violations,
            "confidence_advisory": self.confidence,
            "advice": self.advice.model_dump(mode="json", exclude_defaults=True)
            if self.advice
            else None,
            "violation_pattern": self.violation.model_dump(exclude_defaults=True)
            if self.violation
            else None,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "promoted_at": self.promoted_at,
            "routed_at": self.routed_at,
            "last_seen_at": self.last_seen_at,
        }


@dataclass(frozen=True)
class BacklogEntry:
    capture: Capture
    text: str
    queued_at: str
    attempts: int


@dataclass(frozen=True)
class FeedbackItem:
    id: int
    record_id: str
    kind: str
    proposal: str
    status: str
    created_at: str


def _dumps(x: Any) -> str:
    return orjson.dumps(x, option=orjson.OPT_SORT_KEYS).decode()


class CorrectionStore(Transactional):
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        # a rollback journal (not WAL) and secure_delete: a backlog row's scrubbed text,
        # deleted once distilled, leaves no copy in a WAL file or in free pages
        self._db.execute("PRAGMA journal_mode=DELETE")
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._depth = 0

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CorrectionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- captures ----------------------------------------------------------------------
    def has_capture(self, capture_id: str) -> bool:
        q = "SELECT 1 FROM captures WHERE id = ?"
        return self._db.execute(q, (capture_id,)).fetchone() is not None

    def add_capture(
        self,
        c: Capture,
        status: str,
        now: str,
        method: str | None = None,
        echo_refused: bool = False,
    ) -> None:
        self._db.execute(
            "INSERT INTO captures (id, at, day, session, reviewer, artifact, topic, source, "
            "category, policy, injection, shapes, scrubbed, text_sha256, status, method, "
            "echo_refused, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                c.id,
                c.at,
                c.day,
                c.session,
                c.reviewer,
                c.artifact,
                c.topic,
                c.source,
                c.category,
                int(c.policy),
                int(c.injection),
                int(c.shapes),
                _dumps(list(c.scrubbed)),
                c.text_sha256,
                status,
                method,
                int(echo_refused),
                now,
            ),
        )

    def set_capture_status(
        self, capture_id: str, status: str, method: str | None = None, echo_refused: bool = False
    ) -> None:
        self._db.execute(
            "UPDATE captures SET status = ?, method = COALESCE(?, method), "
            "echo_refused = MAX(echo_refused, ?) WHERE id = ?",
            (status, method, int(echo_refused), capture_id),
        )

    def _capture(self, row: sqlite3.Row) -> Capture:
        return Capture(
            id=row["id"],
            at=row["at"],
            session=row["session"],
            reviewer=row["reviewer"],
            artifact=row["artifact"],
            topic=row["topic"],
            source=row["source"],
            category=row["category"],
            policy=bool(row["policy"]),
            injection=bool(row["injection"]),
            shapes=bool(row["shapes"]),
            scrubbed=tuple(orjson.loads(row["scrubbed"])),
            text_sha256=row["text_sha256"],
            day=row["day"],
        )

    def captures(self, record_id: str | None = None) -> list[dict[str, Any]]:
        """Capture metadata (never text), oldest first; of one record when given."""
        if record_id is None:
            rows = self._db.execute("SELECT * FROM captures ORDER BY at, id").fetchall()
        else:
            rows = self._db.execute(
                "SELECT c.* FROM captures c JOIN occurrences o ON o.capture_id = c.id "
                "WHERE o.record_id = ? ORDER BY c.at, c.id",
                (record_id,),
            ).fetchall()
        keep = (
            "id",
            "at",
            "day",
            "session",
            "reviewer",
            "artifact",
            "topic",
            "source",
            "category",
            "policy",
            "injection",
            "shapes",
            "status",
            "method",
        )
        out = []
        for r in rows:
            d = {k: r[k] for k in keep}
            for k in ("policy", "injection", "shapes"):
                d[k] = bool(d[k])
            d["scrubbed"] = orjson.loads(r["scrubbed"])
            out.append(d)
        return out

    # -- records -------------------------------------------------------------------------
    def record_envelope(
        self, env: Envelope, capture: Capture, similarity: Similarity, now: str
    ) -> tuple[str, bool]:
        """The record this envelope is an occurrence of: an existing one of the same kind and
        scope whose lesson means the same (by `similarity`), else a new one. (id, created)."""
        scope_key = env.scope.key()
        rows = self._db.execute(
            "SELECT id, lesson, status FROM records WHERE kind = ? AND scope_key = ? "
            "ORDER BY created_at, id",
            (env.kind, scope_key),
        ).fetchall()
        i, score = similarity.best(env.lesson, [r["lesson"] for r in rows])
        if i >= 0 and score >= similarity.threshold:
            rid = str(rows[i]["id"])
            created = False
            self._db.execute(
                "UPDATE records SET updated_at = ?, last_seen_at = MAX(last_seen_at, ?), "
                "confidence = MAX(confidence, ?) WHERE id = ?",
                (now, capture.at, env.confidence, rid),
            )
        else:
            rid = hashlib.sha256(f"{env.kind}\x1f{scope_key}\x1f{env.lesson}".encode()).hexdigest()[
                :12
            ]
            created = (
                self._db.execute("SELECT 1 FROM records WHERE id = ?", (rid,)).fetchone() is None
            )
            if created:
                self._db.execute(
                    "INSERT INTO records (id, kind, lesson, scope, scope_key, violation, advice, "
                    "confidence, status, created_at, updated_at, last_seen_at) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        rid,
                        env.kind,
                        env.lesson,
                        env.scope.model_dump_json(),
                        scope_key,
                        env.violation.model_dump_json() if env.violation else None,
                        env.advice.model_dump_json() if env.advice else None,
                        env.confidence,
                        "candidate",
                        now,
                        now,
                        capture.at,
                    ),
                )
        self._db.execute(
            "INSERT OR IGNORE INTO occurrences (record_id, capture_id, at, day, session, "
            "reviewer, shapes) VALUES (?,?,?,?,?,?,?)",
            (
                rid,
                capture.id,
                capture.at,
                capture.day,
                capture.session,
                capture.reviewer,
                int(capture.shapes),
            ),
        )
        return rid, created

    def _record(self, row: sqlite3.Row) -> Record:
        counts = self._db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT day), COUNT(DISTINCT session) FROM occurrences "
            "WHERE record_id = ? AND shapes = 1",
            (row["id"],),
        ).fetchone()
        return Record(
            id=row["id"],
            kind=row["kind"],
            lesson=row["lesson"],
            scope=NoteScope.model_validate_json(row["scope"]),
            violation=Violation.model_validate_json(row["violation"]) if row["violation"] else None,
            advice=Advice.model_validate_json(row["advice"]) if row["advice"] else None,
            confidence=row["confidence"],
            status=row["status"],
            violations=row["violations"],
            support=counts[0],
            days=counts[1],
            sessions=counts[2],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            promoted_at=row["promoted_at"],
            routed_at=row["routed_at"],
            last_seen_at=row["last_seen_at"],
        )

    def record(self, record_id: str) -> Record | None:
        row = self._db.execute("SELECT * FROM records WHERE id = ?", (record_id,)).fetchone()
        return self._record(row) if row else None

    def records(
        self,
        *,
        kind: Sequence[str] | None = None,
        status: Sequence[str] | None = None,
        before: str | None = None,
        since: str | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        """Records, newest (last seen) first; keyset by `before` (exclusive) and `since`."""
        where: list[str] = ["1 = 1"]
        args: list[str] = []
        if kind:
            where.append(f"kind IN ({','.join('?' * len(kind))})")
            args.extend(kind)
        if status:
            where.append(f"status IN ({','.join('?' * len(status))})")
            args.extend(status)
        if before:
            where.append("last_seen_at < ?")
            args.append(before)
        if since:
            where.append("last_seen_at >= ?")
            args.append(since)
        q = f"SELECT * FROM records WHERE {' AND '.join(where)} ORDER BY last_seen_at DESC, id"
        if limit is not None:
            q += " LIMIT ?"
            args.append(str(limit))
        return [self._record(r) for r in self._db.execute(q, args).fetchall()]

    def set_status(
        self,
        record_id: str,
        status: RecordStatus,
        now: str,
        *,
        promoted: bool = False,
        routed: bool = False,
    ) -> None:
        self._db.execute(
            "UPDATE records SET status = ?, updated_at = ?, "
            "promoted_at = CASE WHEN ? THEN ? ELSE promoted_at END, "
            "routed_at = CASE WHEN ? THEN ? ELSE routed_at END WHERE id = ?",
            (status, now, int(promoted), now, int(routed), now, record_id),
        )

    def seen_since(self, record_id: str, at: str) -> bool:
        """An occurrence of the record after `at` (by a primary reviewer)."""
        q = "SELECT 1 FROM occurrences WHERE record_id = ? AND at > ? AND shapes = 1"
        return self._db.execute(q, (record_id, at)).fetchone() is not None

    # -- routes the router may take (and nothing else) -------------------------------
    def write_preference(self, rec: Record, now: str) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO preferences (record_id, lesson, scope, advice, violation, "
            "written_at) VALUES (?,?,?,?,?,?)",
            (
                rec.id,
                rec.lesson,
                rec.scope.model_dump_json(),
                rec.advice.model_dump_json() if rec.advice else None,
                rec.violation.model_dump_json() if rec.violation else None,
                now,
            ),
        )

    def open_feedback(self, rec: Record, proposal: str, now: str) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO feedback (record_id, kind, proposal, status, created_at) "
            "VALUES (?,?,?,?,?)",
            (rec.id, rec.kind, proposal, "open", now),
        )

    def preferences(self) -> list[dict[str, Any]]:
        """The workspace preferences, most violated then most supported first."""
        rows = self._db.execute(
            "SELECT p.*, r.violations, r.status FROM preferences p JOIN records r "
            "ON r.id = p.record_id ORDER BY r.violations DESC, p.written_at, p.record_id"
        ).fetchall()
        out = []
        for r in rows:
            rec = self.record(r["record_id"])
            out.append(
                {
                    "id": r["record_id"],
                    "lesson": r["lesson"],
                    "scope": orjson.loads(r["scope"]),
                    "advice": orjson.loads(r["advice"]) if r["advice"] else None,
                    "violation_pattern": orjson.loads(r["violation"]) if r["violation"] else None,
                    "written_at": r["written_at"],
                    "status": r["status"],
                    "violations": r["violations"],
                    "support": rec.support if rec else 0,
                }
            )
        out.sort(key=lambda p: (-p["violations"], -p["support"], p["written_at"], p["id"]))
        return out

    def feedback(self, status: str | None = None) -> list[FeedbackItem]:
        q, args = "SELECT * FROM feedback", list[str]()
        if status:
            q += " WHERE status = ?"
            args.append(status)
        return [
            FeedbackItem(
                r["id"], r["record_id"], r["kind"], r["proposal"], r["status"], r["created_at"]
            )
            for r in self._db.execute(q + " ORDER BY id", args)
        ]

    def feedback_item(self, item_id: int) -> FeedbackItem | None:
        r = self._db.execute("SELECT * FROM feedback WHERE id = ?", (item_id,)).fetchone()
        return (
            FeedbackItem(
                r["id"], r["record_id"], r["kind"], r["proposal"], r["status"], r["created_at"]
            )
            if r
            else None
        )

    def add_violation(self, record_id: str, run_id: str, attempt: int, at: str) -> bool:
        cur = self._db.execute(
            "INSERT OR IGNORE INTO violations (record_id, run_id, attempt, at) VALUES (?,?,?,?)",
            (record_id, run_id, attempt, at),
        )
        if cur.rowcount:
            self._db.execute(
                "UPDATE records SET violations = violations + 1 WHERE id = ?", (record_id,)
            )
        return bool(cur.rowcount)

    # -- the backlog ---------------------------------------------------------------------
    def backlog_put(
        self, capture_id: str, text: str, now: str, *, max_entries: int, ttl_days: int
    ) -> list[str]:
        """Queue a scrubbed capture; the ids evicted to stay within `max_entries`."""
        expires = (parse_at(now) + timedelta(days=ttl_days)).isoformat() if ttl_days else None
        self._db.execute(
            "INSERT OR REPLACE INTO backlog (capture_id, text, queued_at, expires_at, attempts) "
            "VALUES (?,?,?,?,0)",
            (capture_id, text, now, expires),
        )
        n = self._db.execute("SELECT COUNT(*) FROM backlog").fetchone()[0]
        evicted: list[str] = []
        if n > max_entries:
            rows = self._db.execute(
                "SELECT capture_id FROM backlog ORDER BY queued_at, capture_id LIMIT ?",
                (n - max_entries,),
            ).fetchall()
            evicted = [r[0] for r in rows]
            for cid in evicted:
                self.backlog_drop(cid, "evicted")
        return evicted

    def backlog_expire(self, now: str) -> list[str]:
        rows = self._db.execute(
            "SELECT capture_id FROM backlog WHERE expires_at IS NOT NULL AND expires_at <= ?",
            (parse_at(now).isoformat(),),
        ).fetchall()
        for r in rows:
            self.backlog_drop(r[0], "expired")
        return [r[0] for r in rows]

    def backlog_drop(self, capture_id: str, status: str) -> None:
        self._db.execute("DELETE FROM backlog WHERE capture_id = ?", (capture_id,))
        self.set_capture_status(capture_id, status)

    def backlog(self, limit: int | None = None) -> list[BacklogEntry]:
        q = (
            "SELECT b.text, b.queued_at, b.attempts, c.* FROM backlog b JOIN captures c "
            "ON c.id = b.capture_id ORDER BY b.queued_at, b.capture_id"
        )
        rows = self._db.execute(
            q + (" LIMIT ?" if limit else ""), (limit,) if limit else ()
        ).fetchall()
        return [
            BacklogEntry(self._capture(r), r["text"], r["queued_at"], r["attempts"]) for r in rows
        ]

    def backlog_attempted(self, capture_id: str) -> None:
        self._db.execute(
            "UPDATE backlog SET attempts = attempts + 1 WHERE capture_id = ?", (capture_id,)
        )

    def counts(self) -> dict[str, Any]:
        def group(q: str) -> dict[str, int]:
            return {str(k): int(n) for k, n in self._db.execute(q).fetchall()}

        return {
            "captures": group("SELECT category, COUNT(*) FROM captures GROUP BY category"),
            "records": group("SELECT status, COUNT(*) FROM records GROUP BY status"),
            "kinds": group("SELECT kind, COUNT(*) FROM records GROUP BY kind"),
            "backlog": self._db.execute("SELECT COUNT(*) FROM backlog").fetchone()[0],
            "preferences": self._db.execute("SELECT COUNT(*) FROM preferences").fetchone()[0],
            "feedback_open": self._db.execute(
                "SELECT COUNT(*) FROM feedback WHERE status = 'open'"
            ).fetchone()[0],
        }

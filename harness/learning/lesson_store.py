"""The lesson store: SQLite in the workspace (`.membrane/learning/lessons.sqlite`).

* **Dedup**: a lesson's row is keyed by `LessonProposal.key()` (the normalised lesson);
  proposing it again reinforces it (its support grows, its evidence is merged), never a
  second row.
* **Budget**: at most `budget` live lessons per scope; a new lesson over it is `failed`
  (the gate said yes, the store could not write), never silently dropped or evicted.
* **Confidence** is the mean of a Beta posterior: the prior is Beta(2 · score, 2 · (1 − score))
  (a lesson starts at its reviewer's score, worth two observations), a positive signal of magnitude m
  adds m · feedback_weight to α, a negative one to β, a neutral one nothing. Per-lesson
  constraints apply when a signal is: `locked` (the posterior never changes), `floor` and
  `ceiling` (the confidence reported and ranked by is clamped to them), `feedback_weight`.
* `value_alias` / `value_axiom` lessons are stored `pending`: they change the pack's
  ontology and wait for a person (`membrane learn accept|decline`); only `proposer_context`
  lessons are `active` (injected) at once.

Every signal is kept (`signals` table) with the run it came from, so a lesson's history can
be read back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from harness.learning.lessons import (
    Advice,
    LearningStrategy,
    LessonProposal,
    Scope,
    Signal,
)
from harness.learning.sqlite_tx import Transactional
from harness.storage import connect_read_only

__all__ = ["DEFAULT_BUDGET", "Lesson", "LessonStore", "StoreResult"]

DEFAULT_BUDGET = 20  # live lessons per scope

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lessons (
    key             TEXT PRIMARY KEY,
    target          TEXT NOT NULL,
    scope           TEXT NOT NULL,      -- Scope JSON
    scope_key       TEXT NOT NULL,
    text            TEXT NOT NULL,
    advice          TEXT,               -- Advice JSON
    payload         TEXT NOT NULL,      -- JSON
    status          TEXT NOT NULL,      -- active | pending | accepted | declined | retired
    score           REAL NOT NULL,
    support         INTEGER NOT NULL,
    alpha           REAL NOT NULL,
    beta            REAL NOT NULL,
    locked          INTEGER NOT NULL DEFAULT 0,
    floor           REAL NOT NULL DEFAULT 0.0,
    ceiling         REAL NOT NULL DEFAULT 1.0,
    feedback_weight REAL NOT NULL DEFAULT 1.0,
    ignored_streak  INTEGER NOT NULL DEFAULT 0,
    evidence        TEXT NOT NULL,      -- JSON list of run ids
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS lessons_by_scope ON lessons (scope_key, status);
CREATE TABLE IF NOT EXISTS signals (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    key       TEXT NOT NULL REFERENCES lessons (key),
    kind      TEXT NOT NULL,
    polarity  TEXT NOT NULL,
    magnitude REAL NOT NULL,
    applied   REAL NOT NULL,            -- magnitude x weight actually added (0 when locked)
    run_id    TEXT,
    at        TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS one_signal_per_run ON signals (key, kind, run_id)
    WHERE run_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS watch (          -- committed with the lesson in context: positive
    key          TEXT NOT NULL,             -- once the undo window passes without an undo
    run_id       TEXT NOT NULL,
    committed_at TEXT NOT NULL,
    PRIMARY KEY (key, run_id)
);
"""

_LIVE = ("active", "pending")
_MAX_EVIDENCE = 50


@dataclass(frozen=True)
class Lesson:
    key: str
    target: str
    scope: Scope
    text: str
    advice: Advice | None
    payload: dict[str, str]
    status: str
    score: float
    support: int
    alpha: float
    beta: float
    locked: bool
    floor: float
    ceiling: float
    feedback_weight: float
    ignored_streak: int
    evidence: tuple[str, ...]
    created_at: str
    updated_at: str

    @property
    def confidence(self) -> float:
        mean = self.alpha / (self.alpha + self.beta)
        return round(min(self.ceiling, max(self.floor, mean)), 6)

    @classmethod
    def _of(cls, row: sqlite3.Row) -> Lesson:
        return cls(
            key=row["key"],
            target=row["target"],
            scope=Scope.model_validate_json(row["scope"]),
            text=row["text"],
            advice=Advice.model_validate_json(row["advice"]) if row["advice"] else None,
            payload=orjson.loads(row["payload"]),
            status=row["status"],
            score=row["score"],
            support=row["support"],
            alpha=row["alpha"],
            beta=row["beta"],
            locked=bool(row["locked"]),
            floor=row["floor"],
            ceiling=row["ceiling"],
            feedback_weight=row["feedback_weight"],
            ignored_streak=row["ignored_streak"],
            evidence=tuple(orjson.loads(row["evidence"])),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


@dataclass(frozen=True)
class StoreResult:
    status: Literal["applied", "failed"]
    key: str
    reinforced: bool = False
    reason: str = ""


class LessonStore(Transactional):
    def __init__(self, path: Path, budget: int = DEFAULT_BUDGET) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.budget = budget
        self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._depth = 0

    @classmethod
    def reader(cls, path: Path, budget: int = DEFAULT_BUDGET) -> LessonStore:
        """A read-only view (`membrane learn lessons` on a read-only workspace): creates
        and migrates nothing; any write through it fails."""
        self = cls.__new__(cls)
        self.budget = budget
        self._db = connect_read_only(path)
        self._db.row_factory = sqlite3.Row
        self._depth = 0
        return self

    def close(self) -> None:
        self._db.close()

    # -- writes a pass makes -----------------------------------------------------------
    def apply(self, p: LessonProposal, at: str) -> StoreResult:
        """Add (or reinforce) or retire a lesson the gate approved."""
        key = p.key()
        with self.transaction():
            row = self._db.execute("SELECT * FROM lessons WHERE key = ?", (key,)).fetchone()
            if p.operation == "retire":
                if row is None or row["status"] not in _LIVE:
                    return StoreResult("failed", key, reason="no live lesson to retire")
                self._db.execute(
                    "UPDATE lessons SET status = 'retired', updated_at = ? WHERE key = ?",
                    (at, key),
                )
                return StoreResult("applied", key)
            if row is not None and row["status"] in (*_LIVE, "accepted"):
                evidence = list(dict.fromkeys([*orjson.loads(row["evidence"]), *p.evidence]))
                self._db.execute(
                    "UPDATE lessons SET support = support + 1, evidence = ?, text = ?,"
                    " advice = ?, updated_at = ? WHERE key = ?",
                    (
                        orjson.dumps(evidence[-_MAX_EVIDENCE:]).decode(),
                        p.text,  # the newest wording (its counts) of the same lesson
                        p.advice.model_dump_json() if p.advice else row["advice"],
                        at,
                        key,
                    ),
                )
                return StoreResult("applied", key, reinforced=True)
            if row is not None:  # declined or retired: a person or a pass said no
                return StoreResult("failed", key, reason=f"the lesson was {row['status']}")
            (live,) = self._db.execute(
                "SELECT COUNT(*) FROM lessons WHERE scope_key = ? AND status IN (?, ?)",
                (p.scope.key(), *_LIVE),
            ).fetchone()
            if live >= self.budget:
                return StoreResult(
                    "failed",
                    key,
                    reason=f"the lesson budget of {self.budget} for scope {p.scope.key()} is full",
                )
            status = "active" if p.target == "proposer_context" else "pending"
            self._db.execute(
                "INSERT INTO lessons (key, target, scope, scope_key, text, advice, payload,"
                " status, score, support, alpha, beta, evidence, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)",
                (
                    key,
                    p.target,
                    p.scope.model_dump_json(),
                    p.scope.key(),
                    p.text,
                    p.advice.model_dump_json() if p.advice else None,
                    orjson.dumps(p.payload, option=orjson.OPT_SORT_KEYS).decode(),
                    status,
                    p.score,
                    max(0.01, 2.0 * p.score),
                    max(0.01, 2.0 * (1.0 - p.score)),
                    orjson.dumps(list(p.evidence)[-_MAX_EVIDENCE:]).decode(),
                    at,
                    at,
                ),
            )
            return StoreResult("applied", key)

    # -- signals ------------------------------------------------------------------------
    def signal(self, key: str, s: Signal, run_id: str | None, at: str) -> float | None:
        """Apply one signal (once per lesson, kind and run); the new confidence, or None
        when the lesson is unknown or this run already gave this kind of signal."""
        with self.transaction():
            row = self._db.execute("SELECT * FROM lessons WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            applied = 0.0 if row["locked"] else s.magnitude * row["feedback_weight"]
            try:
                self._db.execute(
                    "INSERT INTO signals (key, kind, polarity, magnitude, applied, run_id, at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key, s.kind, s.polarity, s.magnitude, applied, run_id, at),
                )
            except sqlite3.IntegrityError:
                return None  # this run already said so
            column = {"positive": "alpha", "negative": "beta"}.get(s.polarity)
            if column and applied:
                self._db.execute(
                    f"UPDATE lessons SET {column} = {column} + ?, updated_at = ? WHERE key = ?",
                    (applied, at, key),
                )
            lesson = self.get(key)
            return lesson.confidence if lesson else None

    def ignored(self, key: str, strategy: LearningStrategy, run_id: str, at: str) -> Signal | None:
        """The lesson was in context and the critique it addresses came back: one more in
        the streak; the strategy says what that streak means (the streak restarts after a
        negative)."""
        with self.transaction():
            row = self._db.execute(
                "SELECT ignored_streak FROM lessons WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            streak = row["ignored_streak"] + 1
            s = strategy.ignored(streak)
            self.signal(key, s, run_id, at)
            self._db.execute(
                "UPDATE lessons SET ignored_streak = ? WHERE key = ?",
                (0 if s.polarity == "negative" else streak, key),
            )
            return s

    def heeded(self, key: str) -> None:
        """In context and the critique it addresses did not come back: the streak ends."""
        self._db.execute("UPDATE lessons SET ignored_streak = 0 WHERE key = ?", (key,))

    def constrain(
        self,
        key: str,
        *,
        locked: bool | None = None,
        floor: float | None = None,
        ceiling: float | None = None,
        feedback_weight: float | None = None,
    ) -> Lesson:
        lesson = self.get(key)
        if lesson is None:
            raise KeyError(key)
        lo = lesson.floor if floor is None else floor
        hi = lesson.ceiling if ceiling is None else ceiling
        weight = lesson.feedback_weight if feedback_weight is None else feedback_weight
        if not (0.0 <= lo <= hi <= 1.0):
            raise ValueError(f"need 0 <= floor <= ceiling <= 1, got {lo}, {hi}")
        if not (0.0 <= weight <= 100.0):
            raise ValueError(f"feedback_weight {weight} is outside [0, 100]")
        self._db.execute(
            "UPDATE lessons SET locked = ?, floor = ?, ceiling = ?, feedback_weight = ?"
            " WHERE key = ?",
            (int(lesson.locked if locked is None else locked), lo, hi, weight, key),
        )
        out = self.get(key)
        assert out is not None
        return out

    def rekey(self, key: str, new: str) -> None:
        """Give a lesson another key (tests and imports; signals follow it)."""
        with self.transaction():
            self._db.execute("UPDATE lessons SET key = ? WHERE key = ?", (new, key))
            self._db.execute("UPDATE signals SET key = ? WHERE key = ?", (new, key))
            self._db.execute("UPDATE watch SET key = ? WHERE key = ?", (new, key))

    def set_status(self, key: str, status: str, at: str) -> None:
        self._db.execute(
            "UPDATE lessons SET status = ?, updated_at = ? WHERE key = ?", (status, at, key)
        )

    # -- the implicit-timeout watch ----------------------------------------------------
    def watch(self, key: str, run_id: str, committed_at: str) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO watch (key, run_id, committed_at) VALUES (?, ?, ?)",
            (key, run_id, committed_at),
        )

    def due(self, before: str) -> list[tuple[str, str]]:
        """(key, run_id) watched since before `before` (ISO time)."""
        return [
            (str(k), str(r))
            for k, r in self._db.execute(
                "SELECT key, run_id FROM watch WHERE committed_at <= ? ORDER BY committed_at",
                (before,),
            )
        ]

    def unwatch(self, run_id: str, key: str | None = None) -> None:
        if key is None:
            self._db.execute("DELETE FROM watch WHERE run_id = ?", (run_id,))
        else:
            self._db.execute("DELETE FROM watch WHERE run_id = ? AND key = ?", (run_id, key))

    # -- reads --------------------------------------------------------------------------
    def get(self, key: str) -> Lesson | None:
        row = self._db.execute("SELECT * FROM lessons WHERE key = ?", (key,)).fetchone()
        return Lesson._of(row) if row else None

    def find(self, prefix: str) -> Lesson | None:
        """A lesson by its key or a unique prefix of it (as `learn lessons` shows it)."""
        rows = self._db.execute(
            "SELECT * FROM lessons WHERE key LIKE ? || '%' LIMIT 2", (prefix,)
        ).fetchall()
        return Lesson._of(rows[0]) if len(rows) == 1 else None

    def lessons(self, status: Sequence[str] | None = None) -> list[Lesson]:
        rows = self._db.execute("SELECT * FROM lessons ORDER BY created_at, key").fetchall()
        out = [Lesson._of(r) for r in rows]
        return [x for x in out if status is None or x.status in status]

    def signals(self, key: str) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self._db.execute("SELECT * FROM signals WHERE key = ? ORDER BY id", (key,))
        ]

    def active(self, pack: str, proposer: str) -> list[Lesson]:
        """Live proposer-context lessons for this pack and proposer, most confident first."""
        out = [
            x
            for x in self.lessons(status=("active",))
            if x.target == "proposer_context"
            and x.scope.pack == pack
            and x.scope.proposer in (None, proposer)
        ]
        return sorted(out, key=lambda x: (-x.confidence, -x.support, x.key))

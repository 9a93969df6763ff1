"""What the server reads from the ledger, read-only (`Ledger.reader`: a WAL reader, never the
batch's writer lock). Each request opens its own connection; SQLite readers see one
consistent snapshot per statement, and a batch committing meanwhile is not seen half-way.

The runs list pages by keyset over the ledger's insertion order (rowid, newest first): a
page costs the same at the 100,000th run as at the first, and a run inserted meanwhile
never shifts a page. The cursor is opaque to clients (base64 of the rowid)."""

from __future__ import annotations

import base64
import binascii
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson

from harness.ledger import Ledger
from harness.workspace import Workspace

__all__ = ["RunFilter", "RunItem", "RunPage", "decode_cursor", "encode_cursor", "open_ledger"]

STATES = (
    "running",
    "COMMITTED",
    "EXHAUSTED",
    "FAILED",
    "HELD",
    "INTERRUPTED",
    "REJECTED",
    "REVERT",
)


class NoLedger(LookupError):
    """The workspace has no ledger (nothing ran here yet)."""


class BadCursor(ValueError):
    """A cursor this server did not hand out."""


@contextmanager
def open_ledger(ws: Workspace) -> Iterator[Ledger]:
    if not ws.ledger_path.is_file():
        raise NoLedger(str(ws.root))
    ledger = Ledger.reader(ws.ledger_path)
    try:
        yield ledger
    finally:
        ledger.close()


def _db(ledger: Ledger) -> sqlite3.Connection:
    db: sqlite3.Connection = ledger._db  # the reader's own connection (read-only)
    return db


def encode_cursor(rowid: int) -> str:
    return base64.urlsafe_b64encode(f"r{rowid}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise BadCursor(cursor) from exc
    if not raw.startswith("r") or not raw[1:].isdigit() or len(raw) > 20:
        raise BadCursor(cursor)
    return int(raw[1:])


@dataclass(frozen=True)
class RunFilter:
    state: str | None = None
    batch: str | None = None
    pack: str | None = None
    proposer: str | None = None

    def query(self) -> dict[str, str]:
        return {k: v for k, v in vars(self).items() if v}


@dataclass(frozen=True)
class RunItem:
    run_id: str
    artifact_id: str
    batch_id: str
    state: str
    started_at: str
    attempts: int | None
    codes: dict[str, int]
    proposer: str | None
    pack: str | None
    # one entry per attempt: the error codes it drew (None: not known), and whether it passed
    sparkline: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class RunPage:
    items: list[RunItem]
    next_cursor: str | None


_SELECT = (
    "SELECT r.rowid, r.run_id, r.artifact_id, r.batch_id, r.status, r.started_at, r.outcome,"
    " o.record FROM runs r LEFT JOIN outcomes o ON o.run_id = r.run_id AND o.kind = 'run'"
)


def _sparkline(attempts: int, state: str, record: dict[str, Any]) -> list[dict[str, Any]]:
    failed = {int(f["attempt"]): len(f.get("codes", ())) for f in record.get("failed", ())}
    passed_last = state in ("COMMITTED", "HELD", "REJECTED")
    return [
        {
            "attempt": n,
            "passed": passed_last and n == attempts,
            "codes": failed.get(n),
        }
        for n in range(1, attempts + 1)
    ]


def _item(row: tuple[Any, ...]) -> RunItem:
    _rowid, run_id, artifact_id, batch_id, status, started_at, outcome, record = row
    out: dict[str, Any] = orjson.loads(outcome) if outcome else {}
    rec: dict[str, Any] = orjson.loads(record) if record else {}
    attempts = out.get("attempts")
    return RunItem(
        run_id=run_id,
        artifact_id=artifact_id,
        batch_id=batch_id,
        state=status,
        started_at=started_at,
        attempts=attempts,
        codes=dict(out.get("critique_codes") or {}),
        proposer=out.get("proposer") or rec.get("proposer"),
        pack=rec.get("pack"),
        sparkline=_sparkline(int(attempts), status, rec) if attempts else [],
    )


def runs_page(ledger: Ledger, flt: RunFilter, cursor: str | None, limit: int) -> RunPage:
    """One page of runs, newest first, filtered; `cursor` from the previous page."""
    where: list[str] = []
    params: list[str | int] = []
    if cursor:
        where.append("r.rowid < ?")
        params.append(decode_cursor(cursor))
    if flt.state:
        where.append("r.status = ?")
        params.append(flt.state)
    if flt.batch:
        where.append("r.batch_id = ?")
        params.append(flt.batch)
    if flt.pack:
        where.append("json_extract(o.record, '$.pack') = ?")
        params.append(flt.pack)
    if flt.proposer:
        where.append("json_extract(r.outcome, '$.proposer') = ?")
        params.append(flt.proposer)
    sql = (
        _SELECT
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY r.rowid DESC LIMIT ?"
    )
    rows = _db(ledger).execute(sql, (*params, limit + 1)).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    return RunPage([_item(r) for r in rows], encode_cursor(rows[-1][0]) if more else None)


def run_item(ledger: Ledger, run_id: str) -> RunItem | None:
    row = _db(ledger).execute(_SELECT + " WHERE r.run_id = ?", (run_id,)).fetchone()
    return _item(row) if row else None


def state_counts(ledger: Ledger) -> dict[str, int]:
    return {
        str(s): int(n)
        for s, n in _db(ledger).execute("SELECT status, COUNT(*) FROM runs GROUP BY status")
    }


def batches(ledger: Ledger, limit: int = 50) -> list[str]:
    """The newest batches (by their first run), for the filter form."""
    rows = _db(ledger).execute(
        "SELECT batch_id FROM runs GROUP BY batch_id ORDER BY MAX(rowid) DESC LIMIT ?", (limit,)
    )
    return [str(b) for (b,) in rows]


def attempts_histogram(ledger: Ledger) -> dict[int, int]:
    """Finished runs by their number of attempts."""
    rows = _db(ledger).execute(
        "SELECT json_extract(outcome, '$.attempts') a, COUNT(*) FROM runs"
        " WHERE outcome IS NOT NULL AND status != 'REVERT' GROUP BY a ORDER BY a"
    )
    return {int(a): int(n) for a, n in rows if a is not None}


def file_stamp(ws: Workspace) -> tuple[int, ...]:
    """Changes whenever the ledger commits (its WAL grows or is checkpointed into the file):
    a cheap key for views that cost a scan of every run (counts per state, batches)."""
    out: list[int] = []
    for path in (ws.ledger_path, ws.ledger_path.with_name(ws.ledger_path.name + "-wal")):
        try:
            st = path.stat()
            out += [st.st_mtime_ns, st.st_size, st.st_ino]
        except FileNotFoundError:
            out += [0, 0, 0]
    return tuple(out)


class Summary:
    """Runs per state and the newest batches (a scan of every run: ~0.15 s at 100,000),
    recomputed when the ledger changed, at most every `every_s` while a batch writes."""

    def __init__(self, every_s: float = 2.0) -> None:
        self._every_s = every_s
        self._key: tuple[int, ...] | None = None
        self._at = 0.0
        self._value: tuple[dict[str, int], list[str]] = ({}, [])

    def get(self, ws: Workspace, ledger: Ledger) -> tuple[dict[str, int], list[str]]:
        key = file_stamp(ws)
        now = time.monotonic()
        if self._key is None or (key != self._key and now - self._at >= self._every_s):
            self._value = (state_counts(ledger), batches(ledger))
            self._key, self._at = key, now
        return self._value


def fingerprint(ledger: Ledger) -> tuple[int, ...]:
    """Changes whenever a run, commit, held row or outcome record is added or settled."""
    db = _db(ledger)
    row = db.execute(
        "SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM runs WHERE status = 'running'),"
        " (SELECT COUNT(*) FROM commits), (SELECT COALESCE(MAX(seq), 0) FROM outcomes),"
        " (SELECT COUNT(*) FROM held WHERE status = 'pending')"
    ).fetchone()
    return tuple(int(x) for x in row)


def outcome_log(ledger: Ledger) -> list[tuple[int, str]]:
    return ledger.outcome_records()

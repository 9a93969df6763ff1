"""When the workspace's storage refuses (issue 17, item 9): a read-only folder, a full disk,
a ledger locked by another process past the busy timeout, a damaged ledger. Each becomes one
`StorageError` naming the file and saying what to do (exit code 2), never a traceback.

Also the sweep of temp files (`.<name>.tmp-<PID>`) a killed or failed writer left behind:
recovery removes those whose process is no longer alive.
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from harness.errors import ConfigError, StorageError

__all__ = [
    "BUSY_TIMEOUT_ENV",
    "READ_ONLY_COMMANDS",
    "busy_timeout_s",
    "connect_read_only",
    "from_os_error",
    "from_sqlite_error",
    "is_disk_full",
    "is_storage_errno",
    "sweep_temp_files",
    "writable",
]

BUSY_TIMEOUT_ENV = "MEMBRANE_BUSY_TIMEOUT_S"
_DEFAULT_BUSY_TIMEOUT_S = 30.0
READ_ONLY_COMMANDS = (
    "trace verify|list|show|why|checkpoint, report, review list|show, learn status|report|lessons"
)
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
_READ_ONLY = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
_TEMP = re.compile(r"\A\..+\.tmp-(\d{1,10})\Z")


def busy_timeout_s() -> float:
    """How long a ledger waits for another process's lock ($MEMBRANE_BUSY_TIMEOUT_S, 30 s)."""
    raw = os.environ.get(BUSY_TIMEOUT_ENV)
    if raw is None or raw == "":
        return _DEFAULT_BUSY_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86_400:
        raise ConfigError(
            f"${BUSY_TIMEOUT_ENV} is {raw!r}",
            hint="seconds to wait for a locked ledger, from 0 to 86400 (default 30)",
        )
    return value


def is_storage_errno(exc: OSError) -> bool:
    return exc.errno in _FULL or exc.errno in _READ_ONLY


def is_disk_full(exc: OSError) -> bool:
    return exc.errno in _FULL


def _full(file: Path | str | None) -> StorageError:
    return StorageError(
        "no space left on the device (or the quota is used up)",
        file=file,
        hint="free space and rerun the same command: nothing partial was committed, and "
        "the rerun resumes where this one stopped",
    )


def _read_only(file: Path | str | None) -> StorageError:
    return StorageError(
        "cannot write here: the workspace is read-only (or not yours to write)",
        file=file,
        hint="this command writes the workspace: make it writable, or use a command that "
        f"only reads ({READ_ONLY_COMMANDS})",
    )


def from_os_error(exc: OSError, where: Path | str | None = None) -> StorageError:
    """The StorageError for an OSError `is_storage_errno` accepts."""
    file = exc.filename if exc.filename is not None else where
    return _full(file) if exc.errno in _FULL else _read_only(file)


def from_sqlite_error(exc: sqlite3.Error, path: Path) -> StorageError | None:
    """The StorageError an SQLite error on the database at `path` means, or None (a bug)."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return StorageError(
            f"the database is locked by another process past the busy timeout "
            f"({busy_timeout_s():g} s)",
            file=path,
            hint="wait for the other process (another membrane, a sqlite3 shell, a backup) to "
            f"let go, or raise ${BUSY_TIMEOUT_ENV}, then rerun: what was committed stays "
            "committed and the rerun resumes",
        )
    if "full" in text:
        return _full(path)
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return _read_only(path)
    if "not a database" in text or "malformed" in text or "encrypted" in text:
        return StorageError(
            "is not a readable SQLite database (its header or a page is damaged)",
            file=path,
            hint="restore it from a backup; membrane neither reads past nor writes over a "
            "damaged ledger",
        )
    if "disk i/o" in text:
        return StorageError(
            "the disk failed while SQLite read or wrote it",
            file=path,
            hint="check the device (dmesg, free space) and rerun",
        )
    return None


def _probe(db: sqlite3.Connection) -> sqlite3.Connection:
    """Read the schema once, so a damaged header or an unopenable file fails here."""
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        db.close()
        raise
    return db


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to an existing SQLite database (a WAL reader: never takes a
    writer's lock, creates nothing). On a read-only medium, where SQLite cannot create the
    WAL's shared-memory file, a database with no pending WAL is opened as immutable. An
    error is a StorageError naming the file (or the SQLite error, if it means a bug)."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        try:
            return _probe(
                sqlite3.connect(uri, uri=True, isolation_level=None, timeout=busy_timeout_s())
            )
        except sqlite3.OperationalError as exc:
            wal = path.with_name(path.name + "-wal")
            pending = wal.exists() and wal.stat().st_size > 0
            if "unable to open" not in str(exc) or writable(path.parent) or pending:
                raise
            return _probe(sqlite3.connect(f"{uri}&immutable=1", uri=True, isolation_level=None))
    except sqlite3.Error as exc:
        err = from_sqlite_error(exc, path)
        if err is None:
            raise
        raise err from exc


def writable(folder: Path) -> bool:
    """Whether this process may create files in `folder` (False on a read-only mount)."""
    return os.access(folder, os.W_OK | os.X_OK)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or not a pid we can probe: keep its file
    return True


def sweep_temp_files(folders: Iterable[Path]) -> int:
    """Remove the temp files (`.<name>.tmp-<PID>`) in `folders` whose writer is dead.
    Returns how many were removed."""
    removed = 0
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            m = _TEMP.match(path.name)
            if m is None or _alive(int(m.group(1))) or not path.is_file():
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            removed += 1
    return removed

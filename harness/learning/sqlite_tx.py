"""One SQLite transaction discipline for the learning stores: all or nothing, and nesting
(an inner `transaction()` joins the outer one; the outermost commits or rolls back)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Transactional"]


class Transactional:
    """A mixin for a store that holds its connection in `_db` (opened with
    `isolation_level=None`, so BEGIN/COMMIT are ours) and its nesting depth in `_depth`."""

    _db: sqlite3.Connection
    _depth: int

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All or nothing (nests: the outermost commits)."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._db.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        finally:
            self._depth = 0
        self._db.execute("COMMIT")

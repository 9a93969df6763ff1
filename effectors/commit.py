"""COMMIT and HOLD: the only effector that writes artifacts during a run (DESIGN.md §4).

`commit` writes the artifact and its metrics to `current/` (content-addressed) and makes
the ledger transaction that is the commit point, then renders the artifact's chapter
(`current/chapters/<id>.md`, a derived view recovery re-renders); `hold` stores an artifact that passed every
gate but needs a person under `.membrane/held/` with a `held` ledger row, so recovery keeps
it and nothing reaches `current/` until it is approved. The store, the view and recovery
are the kernel's (`harness.store`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from harness.chapters import ChapterRenderer, write_chapter
from harness.errors import PackError
from harness.ledger import CommitRow, HeldRow, Ledger
from harness.models import Artifact
from harness.ports import Pending
from harness.store import write_objects
from harness.workspace import SyncGroup, Workspace

__all__ = ["Committer"]

_log = logging.getLogger(__name__)


class Committer:
    name = "commit"

    def __init__(
        self, ws: Workspace, ledger: Ledger, chapters: ChapterRenderer | None = None
    ) -> None:
        self.ws = ws
        self.ledger = ledger
        self.chapters = chapters

    def commit(
        self,
        run_id: str,
        artifact: Artifact,
        metrics: Mapping[str, Any],
        trace_seq: int,
        trace_hash: str,
        at: str,
    ) -> CommitRow:
        digest, mdigest = write_objects(self.ws.current, artifact, metrics)
        row = self.ledger.commit(artifact.id, digest, mdigest, run_id, trace_seq, trace_hash, at)
        if self.chapters is not None:  # the derived human register; recovery re-renders it
            try:
                write_chapter(self.ws, self.chapters, artifact, row, metrics.get("attempts", "?"))
            except (PackError, OSError) as exc:  # after the commit point: the commit stands
                _log.warning("chapter of %s not written: %s", artifact.id, exc)
        return row

    def commit_many(self, items: Sequence[Pending]) -> list[CommitRow]:
        """Group commit (issue 16): every run's objects written, one sync of them all, one
        ledger transaction (the commit point of every run in it), then the chapters (a
        derived view, never fsynced; recovery re-renders them). A crash before the transaction leaves only
        unreferenced objects, which recovery sweeps; after it, every run is committed."""
        if not items:
            return []
        group = SyncGroup()
        rows_in = []
        for p in items:
            digest, mdigest = write_objects(self.ws.current, p.artifact, p.metrics, group)
            rows_in.append(
                (p.artifact.id, digest, mdigest, p.run_id, p.trace_seq, p.trace_hash, p.at)
            )
        group.sync()
        rows = self.ledger.commit_many(rows_in)
        if self.chapters is not None:
            for p, row in zip(items, rows, strict=True):
                try:
                    attempts = p.metrics.get("attempts", "?")
                    write_chapter(self.ws, self.chapters, p.artifact, row, attempts)
                except (PackError, OSError) as exc:  # after the commit point: it stands
                    _log.warning("chapter of %s not written: %s", p.artifact.id, exc)
        return rows

    def hold(
        self,
        run_id: str,
        artifact: Artifact,
        metrics: Mapping[str, Any],
        trace_seq: int,
        trace_hash: str,
        at: str,
        why: str = "",
    ) -> HeldRow:
        digest, mdigest = write_objects(self.ws.held, artifact, metrics)
        return self.ledger.hold(
            artifact.id, digest, mdigest, run_id, trace_seq, trace_hash, at, why
        )

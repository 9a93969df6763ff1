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
from collections.abc import Mapping
from typing import Any

from harness.chapters import ChapterRenderer, write_chapter
from harness.errors import PackError
from harness.ledger import CommitRow, HeldRow, Ledger
from harness.models import Artifact
from harness.store import write_objects
from harness.workspace import Workspace

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

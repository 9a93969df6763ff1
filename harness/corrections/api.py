"""The library calls behind `membrane correct|corrections|preferences|feedback` and the HTTP
endpoints (one function each; the CLI and the server render what they return)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.corrections.pipeline import (
    CorrectionsDisabled,
    default_session,
    open_pipeline,
    store_path,
    utc_now,
)
from harness.corrections.wiring import session_context as _session_context
from harness.errors import ConfigError
from harness.learning.correction_store import CorrectionStore
from harness.learning.scrub import scrub
from harness.ledger import Ledger
from harness.workspace import Config, Workspace

__all__ = [
    "CorrectionNotFound",
    "analyze",
    "correct",
    "feedback_list",
    "feedback_show",
    "import_file",
    "list_corrections",
    "preferences",
    "review_note",
    "session_context",
    "show_correction",
]


class CorrectionNotFound(ConfigError):
    """No correction record / feedback item with that id."""


def _known_artifact(ws: Workspace, artifact: str) -> bool:
    if not ws.ledger_path.exists():
        return False
    ledger = Ledger(ws.ledger_path)
    try:
        if ledger.latest_commit(artifact) is not None:
            return True
        return any(h.artifact_id == artifact for h in ledger.held())
    finally:
        ledger.close()


def correct(
    root: Path,
    artifact: str,
    text: str,
    *,
    reviewer: str,
    session: str | None = None,
    clock: Callable[[], str] = utc_now,
) -> dict[str, Any]:
    """`membrane correct ARTIFACT "text"`: a note on a committed or HELD artifact."""
    ws = Workspace(root)
    with open_pipeline(root, clock=clock) as p:
        try:
            item = p.validate(
                {
                    "text": text,
                    "at": clock(),
                    "session": session or default_session(),
                    "reviewer": reviewer,
                    "artifact": artifact,
                }
            )
        except (ValidationError, ValueError) as exc:
            raise ConfigError(f"the correction is not valid: {_first(exc)}") from exc
        if not _known_artifact(ws, artifact):
            raise ConfigError(
                f"no committed or held artifact {artifact!r} in this workspace",
                hint="`membrane trace list` and `membrane review list` show what there is",
            )
        return p.capture(item, "cli").as_dict()


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        return f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}"
    return str(exc)


def import_file(root: Path, path: Path, reviewer: str | None = None) -> dict[str, Any]:
    with open_pipeline(root) as p:
        return p.import_file(path, reviewer)


def analyze(root: Path, clock: Callable[[], str] = utc_now) -> dict[str, Any]:
    with open_pipeline(root, clock=clock) as p:
        return p.analyze()


def _store(root: Path) -> CorrectionStore:
    ws = Workspace(root)
    if not ws.config().learning.corrections.enabled:
        raise CorrectionsDisabled(
            "corrections are off in this workspace",
            file=ws.config_path,
            hint="set [learning.corrections] enabled = true in membrane.toml",
        )
    return CorrectionStore(store_path(ws))


def list_corrections(
    root: Path,
    *,
    limit: int = 100,
    before: str | None = None,
    since: str | None = None,
    kind: str | None = None,
    status: str | None = None,
) -> dict[str, Any]:
    """Distilled records (never note text), newest first; keyset by `before`."""
    with _store(root) as store:
        rows = store.records(
            kind=(kind,) if kind else None,
            status=(status,) if status else None,
            before=before,
            since=since,
            limit=limit + 1,
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "items": [r.public() for r in rows],
            "nextBefore": rows[-1].last_seen_at if more and rows else None,
            "counts": store.counts(),
        }


def show_correction(root: Path, record_id: str) -> dict[str, Any]:
    with _store(root) as store:
        rec = store.record(record_id)
        if rec is None:
            raise CorrectionNotFound(
                f"no correction record {record_id!r}", hint="`membrane corrections list` shows them"
            )
        return {**rec.public(), "captures": store.captures(record_id)}


def preferences(root: Path) -> list[dict[str, Any]]:
    with _store(root) as store:
        return store.preferences()


def session_context(root: Path, pack: str | None = None) -> dict[str, Any]:
    ws = Workspace(root)
    budget = ws.config().learning.corrections.context_bytes
    with _store(root) as store:
        return _session_context(store, pack, budget)


def feedback_list(root: Path, status: str | None = None) -> list[dict[str, Any]]:
    with _store(root) as store:
        return [vars(f) for f in store.feedback(status)]


def feedback_show(root: Path, item_id: int) -> dict[str, Any]:
    with _store(root) as store:
        item = store.feedback_item(item_id)
        if item is None:
            raise CorrectionNotFound(
                f"no feedback item {item_id}", hint="`membrane feedback list` shows them"
            )
        rec = store.record(item.record_id)
        return {**vars(item), "record": rec.public() if rec else None}


def review_note(ws: Workspace, config: Config, artifact: str, note: str, by: str, at: str) -> str:
    """What a review's `--note` becomes in the trace, the ledger and the log: with
    corrections on, the note is captured (scrubbed, distilled) and only a reference to the
    capture is kept; off, the note scrubbed of secrets."""
    if not note:
        return note
    if not config.learning.corrections.enabled:
        return scrub(note).text
    with open_pipeline(ws.root, config=config, clock=lambda: at) as p:
        item = p.validate(
            {
                "text": note,
                "at": at,
                "session": default_session(),
                "reviewer": by,
                "artifact": artifact,
            }
        )
        result = p.capture(item, "review")
    return f"[correction capture {result.capture_id}: {result.category}]"

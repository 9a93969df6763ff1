"""The review acts and the slow, cached views, shared by the API and the pages.

Approve and reject go through exactly the CLI's library calls (`harness.api.review_approve`
/ `review_reject`: the workspace lock, recovery, the commit protocol, the trace record and
the outcome-log override), so a server act is the same act as `membrane review approve`."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from harness import api
from harness.errors import ConfigError, MembraneError
from harness.review import ReviewError
from harness.serve import reader, views
from harness.serve.errors import ApiError
from harness.workspace import Workspace

__all__ = ["approve", "learning", "reject", "report"]


def _held(ws: Workspace, run_id: str) -> None:
    views.check_id(run_id, "run")
    with reader.open_ledger(ws) as ledger:
        if ledger.held_of_run(run_id) is None:
            raise ApiError(404, "review.not_held", f"run {run_id!r} was never held for review")


def _act(fn: Any, *args: Any) -> dict[str, Any]:
    try:
        result: dict[str, Any] = fn(*args)
        return result
    except ReviewError as exc:
        raise ApiError(409, "review.refused", str(exc)) from exc
    except ConfigError as exc:  # another process writes the workspace (a batch)
        raise ApiError(409, "workspace.busy", str(exc)) from exc


def approve(ws: Workspace, run_id: str, note: str) -> dict[str, Any]:
    _held(ws, run_id)
    return _act(api.review_approve, ws.root, run_id, note)


def reject(ws: Workspace, run_id: str, reason: str) -> dict[str, Any]:
    _held(ws, run_id)
    if not reason.strip():
        raise ApiError(400, "request.invalid", "a rejection needs a reason")
    return _act(api.review_reject, ws.root, run_id, reason)


def _cached(request: Request, ws: Workspace, name: str) -> dict[str, Any]:
    cache: views.Cached = getattr(request.app.state, name)
    with reader.open_ledger(ws) as ledger:
        key = reader.fingerprint(ledger)
    try:
        return cache.get(ws, key)
    except ApiError:
        raise
    except MembraneError as exc:
        raise ApiError(409, "report.failed", str(exc)) from exc


def report(request: Request, ws: Workspace) -> dict[str, Any]:
    """The report (every gate audits both corpora: seconds), recomputed when the ledger changes."""
    return _cached(request, ws, "report_cache")


def learning(request: Request, ws: Workspace) -> dict[str, Any]:
    return _cached(request, ws, "learning_cache")

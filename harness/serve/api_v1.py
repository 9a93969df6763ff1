"""The JSON API, `/api/v1` (OpenAPI at `/api/v1/openapi.json`, docs at `/api/v1/docs`)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Query, Request
from pydantic import BaseModel, Field

from harness.serve import acts, reader, views
from harness.serve.deps import ServeSettings, SettingsDep, WorkspaceDep, require_review
from harness.serve.errors import ApiError
from harness.workspace import Workspace

__all__ = ["ERRORS", "router"]

State = Literal[
    "running", "COMMITTED", "EXHAUSTED", "FAILED", "HELD", "INTERRUPTED", "REJECTED", "REVERT"
]


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


ERRORS: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorBody} for s in (400, 401, 403, 404, 409)
}


class AttemptMark(BaseModel):
    attempt: int
    passed: bool
    codes: int | None


class Run(BaseModel):
    run_id: str
    artifact_id: str
    batch_id: str
    state: str
    started_at: str
    attempts: int | None
    codes: dict[str, int]
    proposer: str | None
    pack: str | None
    sparkline: list[AttemptMark]


class RunsPage(BaseModel):
    items: list[Run]
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null: last page"
    )
    filter: dict[str, str]


class Note(BaseModel):
    note: str = Field(default="", max_length=2000)


class Reason(BaseModel):
    reason: str = Field(min_length=1, max_length=2000)


router = APIRouter(responses=ERRORS)


def _page(
    ws: Workspace,
    s: ServeSettings,
    state: str | None,
    batch: str | None,
    pack: str | None,
    proposer: str | None,
    cursor: str | None,
    limit: int | None,
) -> tuple[reader.RunPage, reader.RunFilter]:
    flt = reader.RunFilter(state, batch, pack, proposer)
    with reader.open_ledger(ws) as ledger:
        try:
            return reader.runs_page(ledger, flt, cursor, limit or s.page_size), flt
        except reader.BadCursor as exc:
            raise ApiError(400, "cursor.invalid", "not a cursor this server handed out") from exc


@router.get("/runs", response_model=RunsPage, summary="runs, newest first (keyset pages)")
def runs(
    ws: WorkspaceDep,
    s: SettingsDep,
    state: State | None = None,
    batch: Annotated[str | None, Query(max_length=200)] = None,
    pack: Annotated[str | None, Query(max_length=200)] = None,
    proposer: Annotated[str | None, Query(max_length=200)] = None,
    cursor: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> dict[str, Any]:
    page, flt = _page(ws, s, state, batch, pack, proposer, cursor, limit)
    return {
        "items": [dataclasses.asdict(i) for i in page.items],
        "next_cursor": page.next_cursor,
        "filter": flt.query(),
    }


@router.get("/runs/{run_id}", summary="one run and its timeline of cycles")
def run_detail(run_id: str, ws: WorkspaceDep) -> dict[str, Any]:
    with reader.open_ledger(ws) as ledger:
        return views.timeline(ws, ledger, run_id)


@router.get("/runs/{run_id}/trace", summary="the run's trace records as written")
def run_trace(run_id: str, ws: WorkspaceDep) -> dict[str, Any]:
    with reader.open_ledger(ws) as ledger:
        views.known_run(ledger, run_id)
    events, partial = views.read_events(ws, run_id)
    return {"run_id": run_id, "records": events, "partial": partial}


@router.get("/runs/{run_id}/verify", summary="`trace verify` for one run")
def run_verify(run_id: str, ws: WorkspaceDep) -> dict[str, Any]:
    with reader.open_ledger(ws) as ledger:
        views.known_run(ledger, run_id)
    return views.verify(ws, run_id)


@router.get("/verify", summary="`trace verify` for every run")
def verify_all(ws: WorkspaceDep) -> dict[str, Any]:
    with reader.open_ledger(ws):
        pass
    return views.verify(ws, None)


@router.get("/artifacts/{artifact_id}", summary="the newest committed version of an artifact")
def artifact(artifact_id: str, ws: WorkspaceDep) -> dict[str, Any]:
    with reader.open_ledger(ws) as ledger:
        return views.committed_artifact(ws, ledger, artifact_id)


@router.get(
    "/artifacts/{artifact_id}/cells/{table}/{row}/{column}",
    summary="provenance of a committed cell (`trace why`)",
)
def why(artifact_id: str, table: str, row: str, column: str, ws: WorkspaceDep) -> dict[str, Any]:
    with reader.open_ledger(ws):
        pass
    return views.provenance(ws, artifact_id, table, row, column)


@router.get("/report", summary="baseline vs refined, attempts, cost (`membrane report`)")
def report(request: Request, ws: WorkspaceDep) -> dict[str, Any]:
    return acts.report(request, ws)


@router.get("/review", summary="HELD runs waiting for a person, oldest first")
def review_queue(ws: WorkspaceDep, s: SettingsDep) -> dict[str, Any]:
    with reader.open_ledger(ws) as ledger:
        return {"items": views.review_queue(ledger), "review_enabled": s.allow_review}


@router.get("/review/{run_id}", summary="a held run: artifact, verdicts, diff (`review show`)")
def review_show(run_id: str, ws: WorkspaceDep) -> dict[str, Any]:
    with reader.open_ledger(ws) as ledger:
        return views.review_item(ws, ledger, run_id)


@router.post(
    "/review/{run_id}/approve",
    dependencies=[Depends(require_review)],
    summary="publish a held artifact (`review approve`); needs --allow-review and the token",
)
def approve(
    run_id: str, ws: WorkspaceDep, body: Annotated[Note | None, Body()] = None
) -> dict[str, Any]:
    return acts.approve(ws, run_id, body.note if body else "")


@router.post(
    "/review/{run_id}/reject",
    dependencies=[Depends(require_review)],
    summary="settle a held run as REJECTED (`review reject`); needs --allow-review and the token",
)
def reject(run_id: str, body: Reason, ws: WorkspaceDep) -> dict[str, Any]:
    return acts.reject(ws, run_id, body.reason)


@router.get("/learning", summary="reliability (and over time), patterns, overlays, lessons")
def learning(request: Request, ws: WorkspaceDep) -> dict[str, Any]:
    return acts.learning(request, ws)

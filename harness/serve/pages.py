"""The dashboard: server-rendered pages (Jinja2), readable with JavaScript off. htmx (when
on) swaps the runs table in place and appends the next page; Chart.js draws each chart
from the table printed beside it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from harness.serve import acts, reader, views
from harness.serve.deps import ServeSettings, SettingsDep, WorkspaceDep
from harness.serve.errors import ApiError
from harness.serve.security import COOKIE

__all__ = ["error_page", "router"]

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")
templates.env.filters["tojson_compact"] = lambda v: json.dumps(v, separators=(",", ":"))
router = APIRouter(include_in_schema=False)
_FORM_LIMIT = 16_384


def _render(request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    s: ServeSettings = request.app.state.settings
    ctx |= {"review_enabled": s.allow_review, "workspace": str(s.workspace)}
    return templates.TemplateResponse(request, name, ctx, status_code=status)


def error_page(request: Request, err: ApiError) -> Response:
    return _render(request, "error.html", status=err.status, error=err)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, token: Annotated[str | None, Query(max_length=200)] = None) -> Response:
    """`/?token=...` (the start URL) keeps the token in a cookie and drops it from the URL."""
    response = RedirectResponse("/runs", status_code=303)
    s: ServeSettings = request.app.state.settings
    if token is not None:
        if not s.guard.valid(token):
            raise ApiError(401, "auth.token_invalid", "the token is not this server's")
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
    return response


@router.get("/api", response_class=HTMLResponse)
def api_page(request: Request) -> Response:
    """The API's endpoints, from its own OpenAPI schema (no CDN, no JavaScript)."""
    spec = request.app.openapi()
    ops = [
        {
            "method": m.upper(),
            "path": path,
            "summary": op.get("summary", ""),
            "params": [p["name"] for p in op.get("parameters", []) if p.get("in") == "query"],
        }
        for path, methods in spec.get("paths", {}).items()
        for m, op in methods.items()
    ]
    return _render(request, "api.html", ops=ops, version=spec.get("info", {}).get("version"))


@router.get("/favicon.ico")
def favicon() -> Response:
    return Response(status_code=204)


@router.get("/runs", response_class=HTMLResponse)
def runs(
    request: Request,
    ws: WorkspaceDep,
    s: SettingsDep,
    state: Annotated[str | None, Query(max_length=40)] = None,
    batch: Annotated[str | None, Query(max_length=200)] = None,
    pack: Annotated[str | None, Query(max_length=200)] = None,
    proposer: Annotated[str | None, Query(max_length=200)] = None,
    cursor: Annotated[str | None, Query(max_length=40)] = None,
) -> Response:
    if state and state not in reader.STATES:
        raise ApiError(400, "request.invalid", f"state must be one of {', '.join(reader.STATES)}")
    flt = reader.RunFilter(state or None, batch or None, pack or None, proposer or None)
    with reader.open_ledger(ws) as ledger:
        try:
            page = reader.runs_page(ledger, flt, cursor, s.page_size)
        except reader.BadCursor as exc:
            raise ApiError(400, "cursor.invalid", "not a cursor this server handed out") from exc
        summary: reader.Summary = request.app.state.summary
        counts, batch_ids = summary.get(ws, ledger) if not cursor else ({}, [])
    more = (
        f"/runs?{urlencode({**flt.query(), 'cursor': page.next_cursor})}"
        if page.next_cursor
        else None
    )
    ctx: dict[str, Any] = {
        "page": page,
        "filter": flt,
        "more": more,
        "counts": counts,
        "batches": batch_ids,
        "states": reader.STATES,
    }
    # htmx asks for the rows alone: the next page (appended) or a new filter (swapped in)
    target = request.headers.get("hx-target") if request.headers.get("hx-request") else None
    if target in ("more-row", "runs-table"):
        name = "_rows.html" if target == "more-row" else "_runs_table.html"
        return _render(request, name, **ctx)
    return _render(request, "runs.html", **ctx)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run(request: Request, run_id: str, ws: WorkspaceDep) -> Response:
    with reader.open_ledger(ws) as ledger:
        data = views.timeline(ws, ledger, run_id)
        commit = ledger.commit_of_run(run_id)
        held = ledger.held_of_run(run_id)
    return _render(
        request,
        "run.html",
        t=data,
        commit=dataclasses.asdict(commit) if commit else None,
        held=dataclasses.asdict(held) if held else None,
    )


@router.get("/artifacts/{artifact_id}", response_class=HTMLResponse)
def artifact(request: Request, artifact_id: str, ws: WorkspaceDep) -> Response:
    with reader.open_ledger(ws) as ledger:
        data = views.committed_artifact(ws, ledger, artifact_id)
    return _render(request, "artifact.html", a=data["artifact"], commit=data["commit"])


@router.get("/artifacts/{artifact_id}/cells/{table}/{row}/{column}", response_class=HTMLResponse)
def cell(
    request: Request,
    ws: WorkspaceDep,
    artifact_id: str,
    table: str,
    row: str,
    column: str,
) -> Response:
    with reader.open_ledger(ws):
        pass
    p = views.provenance(ws, artifact_id, table, row, column)
    return _render(request, "cell.html", p=p, table=table, row=row, column=column)


@router.get("/report", response_class=HTMLResponse)
def report(request: Request, ws: WorkspaceDep) -> Response:
    data = acts.report(request, ws)
    return _render(request, "report.html", r=data)


@router.get("/learning", response_class=HTMLResponse)
def learning(request: Request, ws: WorkspaceDep) -> Response:
    data = acts.learning(request, ws)
    return _render(request, "learning.html", L=data)


@router.get("/review", response_class=HTMLResponse)
def review(
    request: Request,
    ws: WorkspaceDep,
    s: SettingsDep,
    done: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    with reader.open_ledger(ws) as ledger:
        items = views.review_queue(ledger)
    return _render(request, "review.html", items=items, csrf=s.guard.csrf_for(request), done=done)


@router.get("/review/{run_id}", response_class=HTMLResponse)
def review_one(
    request: Request,
    ws: WorkspaceDep,
    s: SettingsDep,
    run_id: str,
) -> Response:
    with reader.open_ledger(ws) as ledger:
        item = views.review_item(ws, ledger, run_id)
    return _render(request, "review_item.html", h=item, csrf=s.guard.csrf_for(request))


async def _form(request: Request) -> dict[str, str]:
    body = await request.body()
    if len(body) > _FORM_LIMIT:
        raise ApiError(400, "request.invalid", "the form is too large")
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=10)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, "request.invalid", "not a form") from exc
    return {k: v[0] for k, v in fields.items()}


@router.post("/review/{run_id}/{action}")
async def review_act(
    request: Request,
    ws: WorkspaceDep,
    s: SettingsDep,
    run_id: str,
    action: str,
) -> Response:
    if action not in ("approve", "reject"):
        raise ApiError(404, "not_found", f"no review act {action!r}")
    form = await _form(request)
    s.guard.check_form(request, form.get("csrf"))
    if action == "approve":
        await run_in_threadpool(acts.approve, ws, run_id, form.get("note", "")[:2000])
    else:
        await run_in_threadpool(acts.reject, ws, run_id, form.get("reason", "")[:2000])
    done = "approved" if action == "approve" else "rejected"
    return RedirectResponse(f"/review?{urlencode({'done': f'{run_id} {done}'})}", status_code=303)

"""The application: the JSON API under /api/v1, the server-rendered pages, the vendored
static files, and any router another module offers (`harness/serve/corrections.py`:
mounted under /api/v1 when it exists)."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.requests import Request

from harness import __version__
from harness.serve import api_v1, pages, reader, views
from harness.serve.deps import ServeSettings
from harness.serve.errors import ApiError

__all__ = ["OPTIONAL_ROUTERS", "create_app"]

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
API = "/api/v1"
# modules that may offer a `router` (a FastAPI APIRouter) to mount under /api/v1
OPTIONAL_ROUTERS = ("harness.serve.corrections",)

_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def create_app(settings: ServeSettings) -> FastAPI:
    app = FastAPI(
        title="membrane",
        version=__version__,
        description="Runs, traces, provenance, the review queue and learning of one workspace.",
        openapi_url=f"{API}/openapi.json",
        docs_url=None,  # Swagger UI loads from a CDN: the server-rendered /api page instead
        redoc_url=None,
        redirect_slashes=False,  # `/api/v1/runs/` is a JSON 404, never an empty 307
    )
    app.state.settings = settings
    app.state.report_cache = views.Cached(views.report)
    app.state.learning_cache = views.Cached(views.learning)
    app.state.summary = reader.Summary()
    app.include_router(api_v1.router, prefix=API)
    for name in OPTIONAL_ROUTERS:
        _mount_optional(app, name)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _handlers(app)
    _openapi_without_422(app)

    @app.middleware("http")
    async def headers(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        for k, v in _HEADERS.items():
            response.headers.setdefault(k, v)
        if request.url.path.startswith(API) or request.url.path.startswith("/review"):
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    return app


def _openapi_without_422(app: FastAPI) -> None:
    """A request that does not validate is answered 400 `request.invalid` (an ErrorBody),
    not FastAPI's 422: the schema says so."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = build()
        bad = {
            "description": "Bad Request",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        }
        for ops in schema.get("paths", {}).values():
            for op in ops.values():
                responses = op.get("responses", {})
                if responses.pop("422", None) is not None:
                    responses.setdefault("400", bad)
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _mount_optional(app: FastAPI, name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return  # not there (yet): nothing to mount
        raise
    router = getattr(module, "router", None)
    if router is None:
        log.warning("%s has no `router`; not mounted", name)
        return
    app.include_router(router, prefix=API)


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith(API) or request.url.path.startswith("/static")


def _answer(request: Request, err: ApiError) -> Response:
    if _wants_json(request):
        return JSONResponse(err.body(), status_code=err.status)
    return pages.error_page(request, err)


def _handlers(app: FastAPI) -> None:
    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return _answer(request, exc)

    async def no_ledger(request: Request, exc: Exception) -> Response:
        return _answer(
            request,
            ApiError(404, "workspace.empty", "nothing has run in this workspace yet (no ledger)"),
        )

    async def invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _answer(
            request, ApiError(400, "request.invalid", f"{where}: {first.get('msg', 'invalid')}")
        )

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "request.invalid")
        return _answer(request, ApiError(exc.status_code, code, str(exc.detail)))

    async def crash(request: Request, exc: Exception) -> Response:
        log.exception("internal error on %s", request.url.path)
        return _answer(request, ApiError(500, "internal", "internal error (see the server log)"))

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(reader.NoLedger, no_ledger)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, crash)

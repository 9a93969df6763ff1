"""The application's frame, without a workspace: optional routers (the corrections router's
contract), security headers, the vendored static files, the token URL."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from fastapi import APIRouter, Depends

from harness.serve import app as app_module
from harness.serve.deps import SettingsDep, require_review
from tests.serve.conftest import TOKEN, serving


def test_an_optional_router_is_mounted_under_the_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module offering `router` (an APIRouter) is mounted under /api/v1; its routes get the
    server's settings and guards through `harness.serve.deps`."""
    module = types.ModuleType("membrane_test_router")
    router = APIRouter()

    @router.get("/ping")
    def ping(s: SettingsDep) -> dict[str, str]:
        return {"workspace": str(s.workspace)}

    @router.post("/ping", dependencies=[Depends(require_review)])
    def poke() -> dict[str, bool]:
        return {"poked": True}

    module.router = router  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "membrane_test_router", module)
    monkeypatch.setattr(
        app_module, "OPTIONAL_ROUTERS", ("membrane_test_router", "membrane_not_there")
    )
    with serving(tmp_path, allow_review=True) as s, s.client() as c:
        assert c.get("/api/v1/ping").json() == {"workspace": str(tmp_path)}
        assert c.post("/api/v1/ping").json()["error"]["code"] == "auth.token_required"
        ok = c.post("/api/v1/ping", headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.json() == {"poked": True}
        assert "/api/v1/ping" in c.get("/api/v1/openapi.json").json()["paths"]
    with serving(tmp_path) as s, s.client() as c:  # read-only: the guard says so
        assert c.post("/api/v1/ping").json()["error"]["code"] == "review.disabled"


def test_headers_static_files_and_the_token_url(tmp_path: Path) -> None:
    with serving(tmp_path, allow_review=True) as s, s.client() as c:
        r = c.get("/static/htmx.min.js")
        assert r.status_code == 200 and "javascript" in r.headers["content-type"]
        assert c.get("/static/chart.umd.min.js").status_code == 200
        assert c.get("/static/../deps.py").status_code == 404
        assert c.get("/favicon.ico").status_code == 204
        api = c.get("/api")  # the endpoints, from the schema, without a CDN
        assert api.status_code == 200 and "/api/v1/runs/{run_id}" in api.text
        page = c.get("/runs")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        assert page.headers["referrer-policy"] == "no-referrer"
        assert c.get("/?token=wrong").status_code == 401
        r = c.get(f"/?token={TOKEN}")
        assert r.status_code == 303 and r.headers["location"] == "/runs"
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
    with serving(tmp_path) as s, s.client() as c:  # read-only: no token is valid
        assert c.get(f"/?token={TOKEN}").status_code == 401

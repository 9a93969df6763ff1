"""What a route needs from the server it is mounted in, as FastAPI dependencies. A router
mounted from elsewhere (e.g. `harness/serve/corrections.py`) uses the same ones:

    from fastapi import APIRouter, Depends
    from harness.serve.deps import SettingsDep, WorkspaceDep, require_review

    router = APIRouter()

    @router.get("/corrections")
    def corrections(s: SettingsDep) -> dict: ...   # s.workspace; or ws: WorkspaceDep

    @router.post("/corrections/{key}/note", dependencies=[Depends(require_review)])
    def note(...): ...     # --allow-review and `Authorization: Bearer TOKEN`, else 403/401
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from fastapi import Depends
from starlette.requests import Request

from harness.serve.security import Guard
from harness.workspace import Workspace

__all__ = [
    "ServeSettings",
    "SettingsDep",
    "WorkspaceDep",
    "require_review",
    "settings",
    "workspace",
]


@dataclass(frozen=True)
class ServeSettings:
    """The server's settings: the workspace it reads, whether write acts are enabled and
    the token they need (printed at start)."""

    workspace: Path
    allow_review: bool = False
    token: str | None = None
    page_size: int = 50
    guard: Guard = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "guard", Guard(self.allow_review, self.token))


def settings(request: Request) -> ServeSettings:
    s: ServeSettings = request.app.state.settings
    return s


def workspace(request: Request) -> Workspace:
    return Workspace(settings(request).workspace)


def require_review(request: Request) -> None:
    """A write endpoint's guard: review enabled and the bearer token (ApiError otherwise)."""
    settings(request).guard.check_bearer(request)


WorkspaceDep = Annotated[Workspace, Depends(workspace)]
SettingsDep = Annotated[ServeSettings, Depends(settings)]

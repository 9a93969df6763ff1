"""Corrections and preferences over HTTP, mounted by `membrane serve` under /api/v1.

    GET  /preferences/session-context   the preferences a session carries (byte-bounded,
                                         priority-ordered); 503 when the feature is off
    GET  /corrections                    distilled records: ?limit (100), keyset ?before=ISO
                                         (answer's `nextBefore`), ?since, ?kind, ?status
    GET  /corrections/{id}               one record and its captures' metadata
    POST /corrections/analyze            one tick (`routed.overflow`, `routed.rateLimited`)
    POST /corrections                    capture a note {"text", "artifact"?, "session"?}

The POSTs are write acts: `--allow-review` and the bearer token. Nothing here ever answers
with a note's text: records hold distilled lessons only.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from harness.corrections import api as capi
from harness.corrections.pipeline import CorrectionsDisabled
from harness.errors import ConfigError
from harness.serve.deps import SettingsDep, require_review
from harness.serve.errors import ApiError

__all__ = ["router"]

router = APIRouter(tags=["corrections"])

_ISO = r"^\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:\d{2})$"


def _off(exc: CorrectionsDisabled) -> ApiError:
    return ApiError(
        503,
        "corrections.disabled",
        "corrections are off in this workspace ([learning.corrections] enabled)",
    )


@router.get("/preferences/session-context")
def session_context(
    s: SettingsDep,
    pack: Annotated[str | None, Query(max_length=120, pattern=r"^[\w.-]+$")] = None,
) -> dict[str, Any]:
    try:
        return capi.session_context(s.workspace, pack)
    except CorrectionsDisabled as exc:
        raise _off(exc) from exc


@router.get("/corrections")
def corrections(
    s: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before: Annotated[str | None, Query(pattern=_ISO, max_length=40)] = None,
    since: Annotated[str | None, Query(pattern=_ISO, max_length=40)] = None,
    kind: Literal["preference", "infra_gap", "policy"] | None = None,
    status: Annotated[str | None, Query(pattern=r"^[a-z]{1,20}$")] = None,
) -> dict[str, Any]:
    try:
        return capi.list_corrections(
            s.workspace, limit=limit, before=before, since=since, kind=kind, status=status
        )
    except CorrectionsDisabled as exc:
        raise _off(exc) from exc


@router.post("/corrections/analyze", dependencies=[Depends(require_review)])
def analyze(s: SettingsDep) -> dict[str, Any]:
    try:
        return capi.analyze(s.workspace)
    except CorrectionsDisabled as exc:
        raise _off(exc) from exc


@router.get("/corrections/{record_id}")
def correction(
    s: SettingsDep, record_id: Annotated[str, Path(pattern=r"^[0-9a-f]{12}$")]
) -> dict[str, Any]:
    try:
        return capi.show_correction(s.workspace, record_id)
    except CorrectionsDisabled as exc:
        raise _off(exc) from exc
    except capi.CorrectionNotFound as exc:
        raise ApiError(404, "correction.not_found", exc.message) from exc


class NoteIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=100_000)
    artifact: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
    session: str | None = Field(default=None, max_length=200, pattern=r"^[\w.:@/+-]+$")
    reviewer: str | None = Field(default=None, max_length=120)


@router.post("/corrections", dependencies=[Depends(require_review)])
def capture(s: SettingsDep, note: NoteIn) -> dict[str, Any]:
    try:
        return capi.correct(
            s.workspace,
            note.artifact,
            note.text,
            reviewer=note.reviewer or "http",
            session=note.session or "http",
        )
    except CorrectionsDisabled as exc:
        raise _off(exc) from exc
    except ConfigError as exc:
        raise ApiError(400, "correction.invalid", exc.message) from exc

"""Errors the server answers with: JSON `{"error": {"code", "message"}}` under /api/v1 (an
HTML page elsewhere), the code stable API like the critique codes.

    run.not_found, artifact.not_found, artifact.not_committed, cell.not_found,
    cell.table_not_found, cell.row_not_found, cell.column_not_found, review.not_held,
    review.disabled, review.refused, auth.token_required, auth.token_invalid, auth.csrf,
    request.invalid, cursor.invalid, workspace.empty, trace.unaccounted, commit.missing,
    report.no_pack, report.failed, not_found, method_not_allowed, internal
"""

from __future__ import annotations

__all__ = ["ApiError"]


class ApiError(Exception):
    """An answer other than 200: the HTTP status, a stable code and a message for people."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, dict[str, str]]:
        return {"error": {"code": self.code, "message": self.message}}

"""Write acts (approve / reject a HELD run) need three things: the server started with
`--allow-review`, the token it printed at start, and, for a browser form, a CSRF token.

* The token travels as `Authorization: Bearer TOKEN` (scripts) or in an HttpOnly,
  SameSite=Strict cookie set when a person opens the start URL `/?token=TOKEN` (like
  Jupyter's). It is compared in constant time.
* A form post (cookie auth) must carry `csrf`, an HMAC of the token a page embeds only
  for a browser that already holds the cookie, and an `Origin` header, when present, must
  be this server's own. A bearer request needs no CSRF token: a browser cannot send that
  header cross-site (the server answers no CORS preflight).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from starlette.requests import Request

from harness.serve.errors import ApiError

__all__ = ["COOKIE", "Guard", "new_token"]

COOKIE = "membrane_token"


def new_token() -> str:
    return secrets.token_urlsafe(24)


class Guard:
    def __init__(self, allow_review: bool, token: str | None) -> None:
        self.allow_review = allow_review
        self._token = token if allow_review else None

    def valid(self, presented: str | None) -> bool:
        return bool(self._token and presented) and hmac.compare_digest(
            str(presented).encode(), str(self._token).encode()
        )

    def csrf_for(self, request: Request) -> str | None:
        """The CSRF token to embed in a form, only for a browser holding the token cookie."""
        if not self._token or not self.valid(request.cookies.get(COOKIE)):
            return None
        return hmac.new(self._token.encode(), b"membrane-csrf", hashlib.sha256).hexdigest()

    def _enabled(self) -> str:
        if not self.allow_review or not self._token:
            raise ApiError(
                403,
                "review.disabled",
                "this server is read-only; start it with `membrane serve --allow-review`",
            )
        return self._token

    def check_bearer(self, request: Request) -> None:
        self._enabled()
        auth = request.headers.get("authorization", "")
        scheme, _, presented = auth.partition(" ")
        if scheme.lower() != "bearer" or not presented:
            raise ApiError(
                401,
                "auth.token_required",
                "send the token printed at start as `Authorization: Bearer TOKEN`",
            )
        if not self.valid(presented.strip()):
            raise ApiError(401, "auth.token_invalid", "the token is not this server's")

    def check_form(self, request: Request, csrf: str | None) -> None:
        self._enabled()
        cookie = request.cookies.get(COOKIE)
        if not cookie:
            raise ApiError(
                401,
                "auth.token_required",
                "open the URL with ?token=... that `membrane serve` printed at start",
            )
        if not self.valid(cookie):
            raise ApiError(401, "auth.token_invalid", "the token is not this server's")
        expected = self.csrf_for(request)
        origin = request.headers.get("origin")
        host = request.headers.get("host", "")
        if origin is not None and origin.split("://", 1)[-1] != host:
            raise ApiError(403, "auth.csrf", "a form from another site")
        if not csrf or not expected or not hmac.compare_digest(csrf.encode(), expected.encode()):
            raise ApiError(
                403, "auth.csrf", "the form's CSRF token is missing or wrong; reload the page"
            )

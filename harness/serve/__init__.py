"""`membrane serve`: the HTTP API and the dashboard (application layer).

`create_app(ServeSettings(workspace, allow_review=..., token=...))` builds the FastAPI
application; `harness.cli_serve` runs it on uvicorn. Modules: `deps` (settings and the
dependencies routes use), `reader` (the ledger, read-only), `views` (what pages and
endpoints show, from the library's calls), `acts` (review acts, cached views), `api_v1`,
`pages`, `security` (token and CSRF), `errors` (stable error codes)."""

from harness.serve.app import create_app
from harness.serve.deps import ServeSettings

__all__ = ["ServeSettings", "create_app"]

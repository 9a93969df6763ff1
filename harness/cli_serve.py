"""The `membrane serve` command line (kept apart from cli.py: only the handler imports the
server stack, FastAPI and uvicorn, and only when `serve` runs)."""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import sys
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.output import EXIT_OK, emit_json
from harness.workspace import Workspace

__all__ = ["add_serve_parser", "run_serve"]

EXAMPLE = "membrane serve --allow-review"


def add_serve_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    help_ = (
        "an HTTP API (/api/v1) and a dashboard of the workspace's runs, traces, provenance, "
        "report, review queue and learning; read-only unless --allow-review"
    )
    p: argparse.ArgumentParser = sub.add_parser(
        "serve",
        parents=[common],
        help=help_,
        description=help_,
        epilog=f"example:\n  {EXAMPLE}\n  membrane serve --host 0.0.0.0 --port 8080",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="ADDR",
        help="address to bind (default 127.0.0.1; anything but loopback prints a warning)",
    )
    p.add_argument("--port", type=int, default=8765, metavar="N", help="port (default 8765)")
    p.add_argument(
        "--allow-review",
        action="store_true",
        help="enable approve/reject of HELD runs; they need the token printed at start",
    )
    return p


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_serve(args: argparse.Namespace, root: Path) -> int:
    ws = Workspace(root)
    if not ws.ledger_path.is_file():
        raise ConfigError(
            "nothing has run in this workspace yet (no ledger)",
            file=root,
            hint="run `membrane batch` (e.g. `make demo`) first, or pass --workspace",
        )
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port {args.port} is not a port (1-65535)")
    import uvicorn  # the server stack: only for `serve`

    from harness.serve import ServeSettings, create_app
    from harness.serve.security import new_token

    token = new_token() if args.allow_review else None
    app = create_app(ServeSettings(root, allow_review=args.allow_review, token=token))
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{args.port}/" + (f"?token={token}" if token else "")
    if not _loopback(args.host):
        sys.stderr.write(
            f"membrane serve: warning: binding {args.host}, reachable from other machines; "
            "the dashboard shows the workspace's data to anyone who can connect\n"
        )
    if args.json:
        emit_json({"url": url, "workspace": str(root), "allow_review": args.allow_review})
    else:
        mode = "review enabled: the token is in the URL" if token else "read-only"
        sys.stdout.write(f"membrane serve: {url}  ({mode}; Ctrl-C stops)\n")
    sys.stdout.flush()
    server = uvicorn.Server(
        uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    )
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn shut down, then passes Ctrl-C on
        server.run()
    sys.stderr.write("membrane serve: stopped\n")
    return EXIT_OK

"""A demo workspace built once by the real loop, and `membrane serve`'s application on a real
loopback port (uvicorn in a thread), read-only or with review enabled."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from harness.serve import ServeSettings, create_app
from tests.serve import demo

TOKEN = "test-token-0123456789abcdef"


@dataclass
class Served:
    url: str
    workspace: Path
    settings: ServeSettings

    def client(self, **kw: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=120, follow_redirects=False, **kw)


@contextmanager
def serving(
    workspace: Path, *, allow_review: bool = False, page_size: int = 50
) -> Iterator[Served]:
    """The app on 127.0.0.1, an ephemeral port, until the block ends."""
    settings = ServeSettings(
        workspace,
        allow_review=allow_review,
        token=TOKEN if allow_review else None,
        page_size=page_size,
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), log_level="warning", access_log=False, lifespan="off")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield Served(f"http://127.0.0.1:{port}", workspace, settings)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@pytest.fixture(scope="session")
def demo_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("serve-demo")
    demo.build(base)
    return base


def copy_workspace(demo_base: Path, dest: Path) -> Path:
    """A private copy of the demo workspace (for tests that approve or reject)."""
    shutil.copytree(demo_base / "ws", dest, symlinks=True)
    return dest


@pytest.fixture(scope="session")
def readonly(demo_base: Path) -> Iterator[Served]:
    """A read-only server on the shared demo workspace (nothing may change it)."""
    with serving(demo_base / "ws") as s:
        yield s


@pytest.fixture(scope="module")
def reviewing(demo_base: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server with review enabled, on this module's own copy of the demo workspace (pages
    of 20 runs, so the 43 runs take three)."""
    ws = copy_workspace(demo_base, tmp_path_factory.mktemp("review") / "ws")
    with serving(ws, allow_review=True, page_size=20) as s:
        yield s

"""A model endpoint that trickles its reply (one byte at a time) cannot hold a call past its
timeout (issue 17, item 2): the timeout bounds the whole call, not each socket read."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from effectors.proposers.openai_client import ChatClient
from harness.errors import InfrastructureError
from harness.workspace import LlmConfig


class _Trickle(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        try:
            for _ in range(100_000):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def trickle() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_a_trickling_reply_times_out_on_the_whole_call(trickle: str) -> None:
    cfg = LlmConfig(base_url=trickle, model="m", timeout_s=1.0, retries=0, backoff_s=0)
    client = ChatClient(cfg, sleep=lambda s: None)
    t0 = time.monotonic()
    with pytest.raises(InfrastructureError, match="timed out"):
        client.complete({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert time.monotonic() - t0 < 5.0
    client.close()

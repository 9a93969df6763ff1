"""The OpenAI-compatible client's HTTP layer (httpx): keep-alive connections are reused
across calls, and the proxy environment variables are honoured (NO_PROXY included)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from effectors.proposers.openai_client import ChatClient
from harness.workspace import LlmConfig
from tests.proposers.server import ScriptedServer, completion


def _body(i: int) -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "user", "content": f"call {i}"}]}


def test_calls_reuse_one_connection() -> None:
    with ScriptedServer(lambda body: completion("ok")) as srv:
        client = ChatClient(LlmConfig(base_url=srv.base_url, model="m", cache=False))
        try:
            for i in range(5):
                assert client.complete(_body(i)).status == 200
        finally:
            client.close()
    assert len(srv.peers) == 5
    assert len(set(srv.peers)) == 1, "each call opened a new connection"


class _Proxy:
    """A forward proxy on loopback that answers every request itself and records the
    request line (an absolute URL when a client sends through a proxy)."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                owner.targets.append(self.path)
                data = json.dumps(completion("via proxy").body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"


@pytest.fixture
def proxy() -> Iterator[_Proxy]:
    p = _Proxy()
    p.thread.start()
    yield p
    p.server.shutdown()
    p.server.server_close()


def test_http_proxy_is_honoured_and_no_proxy_bypasses_it(
    proxy: _Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedServer(lambda body: completion("direct")) as srv:
        for var in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        client = ChatClient(LlmConfig(base_url=srv.base_url, model="m", cache=False))
        try:
            reply = client.complete(_body(1))
        finally:
            client.close()
        assert reply.data["choices"][0]["message"]["content"] == "via proxy"
        assert proxy.targets == [f"{srv.base_url}/chat/completions"] and srv.requests == []

        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        client = ChatClient(LlmConfig(base_url=srv.base_url, model="m", cache=False))
        try:
            reply = client.complete(_body(2))
        finally:
            client.close()
        assert reply.data["choices"][0]["message"]["content"] == "direct"
        assert len(proxy.targets) == 1 and len(srv.requests) == 1

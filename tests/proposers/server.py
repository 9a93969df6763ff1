"""A real OpenAI-compatible chat-completions server on loopback, answering from a script.

Only the model is fake: the proposer talks HTTP to it exactly as it would to vLLM or
Ollama. A `Responder` maps each request body to a `Reply`; `requests` records the bodies.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] | bytes = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (timeouts)


Responder = Callable[[dict[str, Any]], Reply]


def completion(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
) -> Reply:
    """A 200 chat completion with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return Reply(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def tool_call(
    name: str, arguments: dict[str, Any] | str, call_id: str = "call_1"
) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def script(replies: Iterable[Reply]) -> Responder:
    """Answer with `replies` in order; the last one repeats."""
    items = list(replies)
    lock = threading.Lock()
    index = [0]

    def respond(body: dict[str, Any]) -> Reply:
        with lock:
            i = min(index[0], len(items) - 1)
            index[0] += 1
        return items[i]

    return respond


class ScriptedServer:
    """`with ScriptedServer(responder) as srv:` ... `srv.base_url` ... `srv.requests`."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.peers: list[tuple[str, int]] = []  # the client address of each request
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real model servers do

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                if self.path != "/v1/chat/completions":
                    self._send(Reply(status=404, body={"error": {"message": "not found"}}))
                    return
                body = json.loads(raw)
                with owner._lock:
                    owner.peers.append(self.client_address[:2])
                    owner.requests.append(body)
                    owner.headers.append(dict(self.headers))
                reply = owner.responder(body)
                if reply.delay:
                    time.sleep(reply.delay)
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ScriptedServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

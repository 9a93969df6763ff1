"""The parent's side of the hermes worker: one long-lived process, JSON lines with deadlines.

`WorkerProcess` spawns `hermes_worker.py` under the hermes environment's interpreter in
isolated mode (`-I`: neither the script's folder nor `PYTHON*` variables reach its
`sys.path`, so membrane's `effectors/proposers/tools.py` cannot shadow hermes' `tools`
package; `-B`: no bytecode written; `-X utf8`), with a minimal environment and the sandbox as
working folder, its stderr appended to a log file. Every read and write has a deadline: a
worker that stops answering is killed, never waited on forever.

    worker = WorkerProcess(python, script, env=..., cwd=..., log=...)
    worker.start(deadline)                       # waits for {"type": "ready"}
    result = worker.converse(request, on_tool_call, deadline)
    worker.close()
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

__all__ = ["WorkerError", "WorkerProcess", "WorkerTimeout"]

Json = dict[str, Any]
ToolHandler = Callable[[str, Json], str]
_MAX_LINE: Final = 32 * 1024 * 1024  # a worker line longer than this is a broken worker
_CHUNK: Final = 65536


class WorkerError(Exception):
    """The worker died, broke the protocol or reported an error of its own."""


class WorkerTimeout(WorkerError):
    """The worker did not answer before the deadline (it has been killed)."""


class WorkerProcess:
    """One hermes worker process and the pipe to it."""

    def __init__(
        self,
        python: Path,
        script: Path,
        *,
        env: Mapping[str, str],
        cwd: Path,
        log: Path,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.python = python
        self.script = script
        self.env = dict(env)
        self.cwd = cwd
        self.log = log
        self.clock = clock
        self.proc: subprocess.Popen[bytes] | None = None
        self.hello: Json = {}
        self._buffer = b""
        self._finalizer: weakref.finalize[Any, WorkerProcess] | None = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, deadline: float) -> Json:
        """Spawn the worker and wait for its `ready` message (returned)."""
        self.close()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [str(self.python), "-I", "-B", "-X", "utf8", str(self.script)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,  # a Ctrl-C in the terminal is membrane's to handle
            )
        self._buffer = b""
        self._finalizer = weakref.finalize(self, _kill, self.proc)
        hello = self._receive(deadline)
        if hello.get("type") != "ready":
            self.kill()
            raise WorkerError(f"the worker did not start: {hello.get('message', hello)}")
        self.hello = hello
        return hello

    def converse(self, request: Json, on_tool_call: ToolHandler, deadline: float) -> Json:
        """Send one request; answer its tool calls with `on_tool_call(name, arguments)`
        until the worker sends the `result` (returned) or an `error` (raised)."""
        self._send(request, deadline)
        while True:
            message = self._receive(deadline)
            kind = message.get("type")
            if kind == "tool_call":
                name, args = message.get("name"), message.get("arguments")
                content = on_tool_call(
                    str(name), args if isinstance(args, dict) else {"value": args}
                )
                self._send(
                    {"type": "tool_result", "id": message.get("id"), "content": content}, deadline
                )
            elif kind == "result":
                return message
            elif kind == "error":
                raise WorkerError(f"the hermes worker failed: {message.get('message')}")
            else:
                self.kill()
                raise WorkerError(f"unexpected message from the worker: {str(message)[:200]}")

    def close(self, grace_s: float = 5.0) -> None:
        """Ask the worker to stop; kill it if it does not within `grace_s`."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.write(b'{"type":"shutdown"}\n')
                proc.stdin.close()
                proc.wait(grace_s)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            _kill(proc)
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None

    # -- the pipe ----------------------------------------------------------------------
    def _send(self, message: Json, deadline: float) -> None:
        proc = self._live()
        assert proc.stdin is not None
        data = memoryview((json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8"))
        fd = proc.stdin.fileno()
        os.set_blocking(fd, False)
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_WRITE)
            while data:
                if not sel.select(self._left(deadline, "to take a message")):
                    continue
                try:
                    written = os.write(fd, data[:_CHUNK])
                except BlockingIOError:
                    continue
                except BrokenPipeError as exc:
                    raise self._died() from exc
                data = data[written:]

    def _receive(self, deadline: float) -> Json:
        proc = self._live()
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                if len(self._buffer) > _MAX_LINE:
                    self.kill()
                    raise WorkerError(f"a worker message is over {_MAX_LINE} bytes")
                if not sel.select(self._left(deadline, "to answer")):
                    continue
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    raise self._died()
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            message = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self.kill()
            raise WorkerError(f"the worker broke the protocol: {line[:200]!r}") from exc
        if not isinstance(message, dict):
            self.kill()
            raise WorkerError(f"the worker broke the protocol: {line[:200]!r}")
        return message

    def _left(self, deadline: float, what: str) -> float:
        left = deadline - self.clock()
        if left <= 0:
            self.kill()
            raise WorkerTimeout(f"the hermes worker took too long {what}; it was stopped")
        return min(left, 1.0)

    def _live(self) -> subprocess.Popen[bytes]:
        if self.proc is None:
            raise WorkerError("the hermes worker is not running")
        return self.proc

    def _died(self) -> WorkerError:
        proc = self.proc
        code = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(5)
        self.kill()
        return WorkerError(f"the hermes worker exited (code {code}); see {self.log}")


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill our worker (only it: by its own process id) and reap it."""
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()

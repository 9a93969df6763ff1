"""`membrane serve` as a person runs it: each `--help` example of the command started as a
process (on a free port), answering on loopback, stopped with Ctrl-C (exit 0).
tests/test_cli_examples.py leaves these examples to this file: they block until stopped."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from harness.cli import _parser, main
from harness.cli_serve import EXAMPLE

pytestmark = pytest.mark.java


def serve_examples() -> list[str]:
    """The examples `membrane serve --help` prints."""
    sub = next(a for a in _parser()._actions if a.dest == "command")
    epilog = sub.choices["serve"].epilog or ""  # type: ignore[attr-defined]
    return [
        line.strip() for line in epilog.splitlines() if line.strip().startswith("membrane serve")
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("example", serve_examples())
def test_every_serve_example_serves_and_stops(example: str, demo_base: Path) -> None:
    port = _free_port()
    argv = [*shlex.split(example)[1:], "--workspace", str(demo_base / "ws"), "--port", str(port)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("membrane serve: http://"), line + (
            proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
        )
        url = line.split()[2]
        assert ("?token=" in url) == ("--allow-review" in example)
        with httpx.Client(timeout=30) as c:
            for _ in range(200):
                try:
                    r = c.get(f"http://127.0.0.1:{port}/api/v1/runs", params={"limit": 1})
                    break
                except httpx.ConnectError:
                    time.sleep(0.05)
            assert r.status_code == 200 and r.json()["items"]
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    if "--host 0.0.0.0" in example:
        assert "warning: binding 0.0.0.0" in err


def test_serve_refuses_an_empty_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--workspace", str(tmp_path)]) == 2
    assert "nothing has run" in capsys.readouterr().err


def test_the_example_is_in_the_help() -> None:
    assert EXAMPLE in serve_examples()

"""Child processes of the crash matrix: `membrane` commands, each in its own process.

The runner imports the heavy modules once (harness, the gates' libraries; never the JVM,
no open database) and forks a child per command: the child is a real process running
`harness.cli.main`, killed with a real SIGKILL, and what it leaves on disk is what any
killed `membrane` leaves. Forking saves the ~2 s of imports each fresh interpreter pays.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from tests.reliability.points import Point, install, install_counters

__all__ = ["Child", "preload", "start"]

KILLED = -signal.SIGKILL
ROOT = Path(__file__).resolve().parents[2]


def preload() -> None:
    """Import what a batch imports (not the JVM: JPype starts it in the child)."""
    import duckdb  # noqa: F401

    import effectors.commit
    import effectors.proposers.offline
    import effectors.prose_gate
    import effectors.registry
    import effectors.ri_gate
    import effectors.value_gate  # noqa: F401
    import harness.api
    import harness.cli
    import harness.commands
    import harness.learning.report
    import harness.learning.store
    import harness.review
    import harness.store  # noqa: F401
    import ontology  # noqa: F401

    try:
        import jpype

        assert not jpype.isJVMStarted(), "the runner must not start the JVM before forking"
    except ImportError:  # pragma: no cover - jpype is a dependency
        pass


SPAWN = False  # True: a fresh interpreter per child (a pytest process may hold a JVM)


@dataclass
class Child:
    pid: int
    out: Path
    t0: float
    popen: subprocess.Popen[bytes] | None = None

    def poll(self) -> int | None:
        if self.popen is not None:
            return self.popen.poll()
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        return None if pid == 0 else os.waitstatus_to_exitcode(status)

    def wait(self, timeout: float = 900.0) -> int:
        end = time.monotonic() + timeout
        while True:
            code = self.poll()
            if code is not None:
                return code
            if time.monotonic() > end:
                self.kill()
                if self.popen is not None:
                    return self.popen.wait()
                return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            time.sleep(0.02)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):  # already reaped
            os.kill(self.pid, signal.SIGKILL)

    def text(self) -> str:
        try:
            return self.out.read_text(errors="replace")
        except OSError:
            return ""

    def stats(self) -> dict[str, int]:
        """RSS (KiB) and open fds the child wrote as it ended (`stats=True`)."""
        try:
            return dict(json.loads(self.out.with_suffix(".stats").read_text()))
        except (OSError, ValueError):
            return {}


def _child(
    argv: list[str], point: Point | None, counts: list[str] | None, out: Path, stats: bool
) -> None:
    code = 70
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.environ["MEMBRANE_ALLOW_MODEL_REQUESTS"] = "0"
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        # forked from a runner that is a multiprocessing pool's (daemonic) worker: this
        # child is a process of its own, which `batch --workers` may give children
        multiprocessing.current_process()._config["daemon"] = False  # type: ignore[attr-defined]
        tally: dict[str, int] = {}
        if point is not None or counts:
            # the points are the parent's (the commit point): `batch --workers` workers are
            # spawned, so they do not inherit the patches a fork would copy into them
            os.environ["MEMBRANE_WORKER_START"] = "spawn"
        if point is not None:
            install(point)
        if counts:
            install_counters(counts, tally)
        from harness.cli import main

        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        sys.stdout.flush()
        sys.stderr.flush()
        if counts:
            out.with_suffix(".counts").write_text(json.dumps(tally))
        if stats:
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            fds = len(os.listdir("/proc/self/fd")) - 1  # less the listing's own
            out.with_suffix(".stats").write_text(json.dumps({"rss_kib": rss, "fds": fds}))
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        code = 70
    finally:
        os._exit(code)


def start(
    argv: list[str],
    out: Path,
    *,
    point: Point | None = None,
    counts: list[str] | None = None,
    stats: bool = False,
) -> Child:
    """Fork a child running `membrane ARGV` (stdout and stderr to `out`)."""
    if SPAWN:
        spec = {
            "argv": argv,
            "point": point.to_json() if point else None,
            "counts": counts,
            "out": str(out),
            "stats": stats,
        }
        cmd = [sys.executable, "-m", "tests.reliability.proc", json.dumps(spec)]
        popen = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL)
        return Child(popen.pid, out, time.monotonic(), popen)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        _child(argv, point, counts, out, stats)
    return Child(pid, out, time.monotonic())


def run(argv: list[str], out: Path, **kw: object) -> tuple[int, Child]:
    child = start(argv, out, **kw)  # type: ignore[arg-type]
    return child.wait(), child


if __name__ == "__main__":  # SPAWN mode: `python -m tests.reliability.proc SPEC`
    _spec = json.loads(sys.argv[1])
    _point = Point(**_spec["point"]) if _spec["point"] else None
    _child(_spec["argv"], _point, _spec["counts"], Path(_spec["out"]), _spec["stats"])

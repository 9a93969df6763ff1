"""Child processes that die with their parent (issue 16).

A worker process (`--workers`, PROSE_GATE's `prose_workers`) outlives nothing: when the
process that started it dies (a kill, a crash), the kernel kills the worker too (Linux
`PR_SET_PDEATHSIG`) instead of leaving it behind holding memory (a `--workers` worker holds
a JVM). Elsewhere the pool's own shutdown has to do.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies; a parent already gone
    by the time this runs ends it at once. Call it first thing in a worker."""
    known = multiprocessing.parent_process()
    parent = known.pid if known is not None and known.pid is not None else os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent:
        os._exit(1)

"""Processes that run one batch (issue 16): child processes that die with their parent, and
the garbage collector tuned for a process that runs one batch and exits (`batch_gc`).

A worker process (`--workers`, PROSE_GATE's `prose_workers`) outlives nothing: when the
process that started it dies (a kill, a crash), the kernel kills the worker too (Linux
`PR_SET_PDEATHSIG`) instead of leaving it behind holding memory (a `--workers` worker holds
a JVM). Elsewhere the pool's own shutdown has to do.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal

__all__ = ["BATCH_GC_THRESHOLD", "batch_gc", "die_with_parent"]

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


# the cyclic collector's thresholds in a process that runs one batch (`batch_gc`)
BATCH_GC_THRESHOLD = (20_000, 20, 20)


def batch_gc() -> None:
    """Tune the cyclic garbage collector for a process that runs one batch and exits: the
    `membrane batch` command's own process and each `--workers` worker, never a library
    caller's (nor a test's) process.

    A batch allocates millions of short-lived objects (records, critiques, verdicts) and
    keeps few cycles. With Python's thresholds (700, 10, 10) the collector ran ~980 times
    in a 2,000-artifact batch, 0.9 s of its ~22 s, 0.5 s of that in 11 passes over every
    object loaded. Here it collects the youngest generation every 20,000 allocations, and
    what is loaded by now (the modules; in a worker also its pack, pools and gates) is
    frozen out of every pass (`gc.freeze`; a forked worker also leaves those pages shared
    with its parent): 0.25-0.34 s. Cyclic garbage waits longer to be freed; none of it
    holds a file or a lock (the batch closes those explicitly)."""
    gc.freeze()
    gc.set_threshold(*BATCH_GC_THRESHOLD)

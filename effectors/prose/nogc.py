"""The cyclic garbage collector paused while a cohort is judged.

Judging prose allocates many short-lived tuples, lists and dicts (anchors, hits, row masks)
and makes almost no cyclic garbage (about one cycle per artifact on the benchmark). Each
allocation counts towards a collection that scans the young objects, and every so often all
of the process's long-lived objects (the pools, the artifacts, the verdicts): ~10% of the
gate's CPU time on `python -m bench prose_gate`, for nothing. Reference counting frees the
garbage as usual; the collector runs as usual after the cohort."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["no_cyclic_gc"]


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic collector for the block (left as it was found, also on error)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

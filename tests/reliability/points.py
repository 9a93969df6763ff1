"""Deterministic kill points: a child process dies by SIGKILL at the Nth call of a named
function, before it runs, after it returns, or half-way through writing (a torn record).

A point is `Point(target, when, nth)`; `target` names a module attribute
("os.fsync", "harness.ledger:Ledger.commit"). The child patches that attribute before it
runs the command, so the real code runs up to the point and the process really dies there
(the kernel's SIGKILL, not an exception): whatever is on disk then is what a power cut or
an OOM kill would leave. `count` mode patches the same targets to count their calls (the
matrix spreads N over what an uninterrupted run reaches).
"""

from __future__ import annotations

import importlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BATCH_TARGETS",
    "LEARN_TARGETS",
    "POOL_POINTS",
    "RECOVERY_TARGETS",
    "REVIEW_TARGETS",
    "Point",
]


@dataclass(frozen=True)
class Point:
    target: str  # "module:Attr.attr" or "os.fsync"
    when: str  # "before", "after" or "torn" (half the bytes written, then the kill)
    nth: int  # the Nth call in the process dies (1-based)

    @property
    def name(self) -> str:
        return f"{self.target}@{self.when}#{self.nth}"

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "when": self.when, "nth": self.nth}


# The commit protocol of a batch, step by step (DESIGN.md §4): a cohort's inputs (one
# group), runs registered, trace records, a cycle's commits as one group (objects written,
# one sync, one ledger transaction: inside it and after it), the traces' commit records,
# the chapters, the runs' ends (their traces synced as one group, then anchored), the
# corpus view.
BATCH_TARGETS: list[tuple[str, str]] = [
    ("os.fsync", "before"),  # a file written, not yet fsynced (any of them)
    ("os.replace", "before"),  # fsynced, not yet renamed into place
    ("os.replace", "after"),  # renamed, the folder not yet fsynced
    ("harness.ledger:Ledger.start_runs", "after"),  # runs registered, no trace yet
    ("harness.trace.chain:TraceWriter.append", "torn"),  # half a trace record
    ("harness.trace.chain:TraceWriter.append", "after"),  # a whole record, nothing after
    ("effectors.commit:write_objects", "before"),  # gates passed, nothing written
    ("effectors.commit:write_objects", "after"),  # one run's objects written, not synced
    ("harness.workspace:SyncGroup.write", "after"),  # some of a group's files written
    ("harness.workspace:SyncGroup.sync", "before"),  # a group written whole, not synced
    ("harness.workspace:SyncGroup.sync", "after"),  # synced, no ledger transaction
    ("harness.ledger:Ledger._insert_commit", "after"),  # inside the group's transaction
    ("harness.ledger:Ledger.commit_many", "after"),  # committed, no commit records in traces
    ("effectors.commit:write_chapter", "before"),  # committed, no chapter
    ("harness.ledger:Ledger.finish_runs", "before"),  # the runs' ends not yet anchored
    ("harness.ledger:Ledger.finish_runs", "after"),  # anchored, the next step not taken
    ("harness.driver:rebuild_view", "before"),  # the corpus view not yet rebuilt
]

# `batch --workers 2` (harness.pool): the parent, the single commit point, killed while it
# writes a judged cohort (its files, their one sync, its one ledger transaction). Fixed
# call numbers: the uninterrupted reference runs in one process. Killing a worker is
# tests/harness/test_pool.py's.
POOL_POINTS: list[tuple[str, str, int]] = [
    ("harness.workspace:SyncGroup.write", "after", 5),  # part of a cohort's files
    ("harness.workspace:SyncGroup.write", "after", 40),
    ("harness.workspace:SyncGroup.sync", "before", 2),  # the second cohort written, not synced
    ("harness.ledger:Ledger.apply_cohort", "before", 1),  # synced, no ledger transaction
    ("harness.ledger:Ledger.apply_cohort", "after", 2),  # committed, no view yet
]

# Recovery itself, killed (a rerun after a kill recovers first; it is killed again here).
RECOVERY_TARGETS: list[tuple[str, str]] = [
    ("harness.store:sweep_temp_files", "after"),
    ("harness.store:_trim_partial_line", "after"),
    ("harness.store:_complete_trace", "after"),
    ("harness.store:_settle_runs", "after"),
    ("harness.store:_sweep", "before"),
    ("harness.store:rebuild_view", "before"),
    ("harness.store:sync_chapters", "before"),
    ("harness.ledger:Ledger.finish_run", "after"),
]

# The learning cycle after a batch.
LEARN_TARGETS: list[tuple[str, str]] = [
    ("harness.learning.report:learning_cycle", "before"),
    ("harness.learning.store:atomic_write", "torn"),
    ("harness.learning.store:atomic_write", "after"),
    ("harness.learning.report:atomic_write", "before"),
]

# `membrane review approve` (the same steps as tests/test_kill_review.py, here on a real
# batch's held runs through the CLI).
REVIEW_TARGETS: list[tuple[str, str]] = [
    ("harness.review:write_objects", "after"),
    ("harness.review:append_line", "before"),
    ("harness.review:append_line", "torn"),
    ("harness.ledger:Ledger.drop_trace_tail", "before"),
    ("harness.review:rebuild_view", "before"),
    ("harness.learning.report:learning_cycle", "before"),
    ("harness.learning.store:atomic_write", "torn"),
    ("harness.learning.store:atomic_write", "after"),
]


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _resolve(target: str) -> tuple[Any, str]:
    if ":" not in target:  # "os.fsync"
        mod, _, attr = target.rpartition(".")
        return importlib.import_module(mod), attr
    mod, path = target.split(":")
    owner: Any = importlib.import_module(mod)
    *parents, attr = path.split(".")
    for p in parents:
        owner = getattr(owner, p)
    return owner, attr


def _torn(real: Callable[..., Any], target: str) -> Callable[..., Any]:
    """Half of what the call would write, fsynced, then the kill."""
    if target.endswith("TraceWriter.append"):

        def torn_append(self: Any, factory: Any, **fields: Any) -> Any:
            from harness.trace.chain import seal

            event = factory(
                seq=self.seq, run_id=self.run_id, at=self._clock(), prev=self.head, **fields
            )
            line, _digest = seal(event)
            self._fh.write(line[: len(line) // 2])
            os.fsync(self._fh.fileno())
            _die()

        return torn_append

    def torn_write(path: Any, data: bytes) -> None:  # append_line / atomic_write shape
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab" if target.endswith("append_line") else "wb") as fh:
            fh.write(data[: len(data) // 2])
            fh.flush()
            os.fsync(fh.fileno())
        _die()

    return torn_write


def install(point: Point) -> None:
    """Patch the point's target in this process: its Nth call dies."""
    owner, attr = _resolve(point.target)
    real = getattr(owner, attr)
    calls = [0]
    torn = _torn(real, point.target) if point.when == "torn" else None

    def wrapper(*a: Any, **k: Any) -> Any:
        calls[0] += 1
        hit = calls[0] == point.nth
        if hit and torn is not None:
            return torn(*a, **k)
        if hit and point.when == "before":
            _die()
        out = real(*a, **k)
        if hit and point.when == "after":
            _die()
        return out

    setattr(owner, attr, wrapper)


def install_counters(targets: list[str], counts: dict[str, int]) -> None:
    """Patch each target to count its calls into `counts` (an uninterrupted run's reach)."""
    for target in dict.fromkeys(targets):
        owner, attr = _resolve(target)
        real = getattr(owner, attr)
        counts[target] = 0

        def wrapper(*a: Any, _t: str = target, _r: Any = real, **k: Any) -> Any:
            counts[_t] += 1
            return _r(*a, **k)

        setattr(owner, attr, wrapper)

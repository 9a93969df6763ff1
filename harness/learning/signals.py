"""Feedback signals about lessons, from what happened to the runs that had them in context.

* `observe` (after each batch): for each proposal with lessons in context, a lesson whose
  addressed codes came back on that attempt was **ignored** (neutral twice, negative at the
  third in a row); otherwise it was **heeded** (the streak ends). A run that committed starts
  the lesson's **implicit** watch.
* `settle` (after each batch): a watch older than the undo window with no undo is a
  **positive** implicit signal.
* `on_review` (a person's `review approve|reject`): **explicit** positive or negative for the
  lessons in that run's context; a note with an undo keyword is an **undo** instead.
* `on_revert` (`membrane revert`): **undo** for the lessons in the reverted run's context.

The strategy interprets; the store keeps the numbers (`harness.learning.lesson_store`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from harness.learning.lesson_store import LessonStore
from harness.learning.lessons import Advice, LearningStrategy
from harness.learning.miner import BatchSummary, Observation
from harness.trace.chain import read_trace
from harness.workspace import Workspace

__all__ = ["lessons_of_run", "observe", "on_revert", "on_review", "settle"]


def lessons_of_run(ws: Workspace, run_id: str) -> set[str]:
    """The keys of every lesson that was in the proposer's context during a run."""
    path = ws.trace_path(run_id)
    if not path.exists():
        return set()
    keys: set[str] = set()
    try:
        for _n, ev in read_trace(path):
            if ev.get("kind") == "proposal":
                keys.update(ev.get("lessons", ()))
    except Exception:
        return keys
    return keys


def _came_back(advice: Advice | None, obs: Observation) -> bool:
    """Did the proposer still draw a critique this advice addresses (on its column, when
    it is about one)?"""
    if advice is None or not advice.codes:
        return False
    if advice.column is None or advice.kind == "redraft_prose":
        return bool(set(advice.codes) & obs.codes_after)
    return any(code in advice.codes and col == advice.column for code, col in obs.found)


def observe(
    summary: BatchSummary, store: LessonStore, strategy: LearningStrategy, at: str
) -> dict[str, int]:
    """Per run and lesson in its context: ignored when the critique it addresses came back
    on any attempt that had it, else heeded (one verdict per run, so a streak counts runs);
    a committed run starts the lesson's implicit watch."""
    counts = {"ignored": 0, "heeded": 0, "watched": 0}
    per_run: dict[tuple[str, str], bool] = {}  # (run, lesson) -> came back
    committed: set[str] = set()
    for obs in summary.observations():
        if obs.committed:
            committed.add(obs.run_id)
        for key in obs.lessons:
            lesson = store.get(key)
            if lesson is None:
                continue
            back = _came_back(lesson.advice, obs)
            per_run[(obs.run_id, key)] = per_run.get((obs.run_id, key), False) or back
    with store.transaction():
        for (run_id, key), back in sorted(per_run.items()):
            if back:
                store.ignored(key, strategy, run_id, at)
                counts["ignored"] += 1
            else:
                store.heeded(key)
                counts["heeded"] += 1
            if run_id in committed:
                store.watch(key, run_id, at)
                counts["watched"] += 1
    return counts


def settle(store: LessonStore, strategy: LearningStrategy, now: datetime, window_sec: float) -> int:
    """Positive implicit signals for watches the undo window has passed; how many."""
    cutoff = (now - timedelta(seconds=window_sec)).isoformat(timespec="microseconds")
    n = 0
    at = now.isoformat(timespec="microseconds")
    with store.transaction():
        for key, run_id in store.due(cutoff):
            if store.signal(key, strategy.implicit(), run_id, at) is not None:
                n += 1
            store.unwatch(run_id, key)
    return n


def on_review(
    ws: Workspace,
    store: LessonStore,
    strategy: LearningStrategy,
    run_id: str,
    approved: bool,
    note: str,
    at: str,
) -> int:
    """A person approved or rejected a held run: explicit signals (an undo keyword in the
    note makes it an undo); an approved run starts the implicit watch."""
    undo = strategy.is_undo(note)
    signal = strategy.undo() if undo else strategy.explicit(approved)
    n = 0
    with store.transaction():
        for key in sorted(lessons_of_run(ws, run_id)):
            if store.signal(key, signal, run_id, at) is not None:
                n += 1
            if approved and not undo:
                store.watch(key, run_id, at)
    return n


def on_revert(
    ws: Workspace, store: LessonStore, strategy: LearningStrategy, run_id: str, at: str
) -> int:
    """A person reverted the version `run_id` committed: undo for its lessons."""
    n = 0
    with store.transaction():
        store.unwatch(run_id)
        for key in sorted(lessons_of_run(ws, run_id)):
            if store.signal(key, strategy.undo(), run_id, at) is not None:
                n += 1
    return n

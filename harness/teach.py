"""Lessons in the application: the store a workspace keeps, the lessons a batch's proposer
gets, the gated pass after each batch, and the signals a person's review acts send.

    store = open_store(ws, config)            # .membrane/learning/lessons.sqlite
    engines.lessons = hints(store, pack, proposer_id, config.learning.lesson_context_bytes)
    ... the batch ...
    after_batch(ws, ledger, pack, proposer_id, result.runs, store, ...)   # signals, then the pass
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from harness.driver import RunSummary
from harness.learning import signals
from harness.learning.learn_pass import LearnPassError, ScoreGate, review_and_learn
from harness.learning.lesson_store import LessonStore
from harness.learning.lessons import LearningStrategy, load_settings, make_strategy
from harness.learning.miner import TraceMiner, summarise
from harness.ledger import Ledger
from harness.models import LessonHint
from harness.pack import Pack
from harness.workspace import Config, Workspace

__all__ = ["after_batch", "hints", "open_store", "revert_signal", "review_signal", "strategy"]


def open_store(ws: Workspace, config: Config) -> LessonStore:
    return LessonStore(
        ws.state / "learning" / "lessons.sqlite", budget=config.learning.lesson_budget
    )


def strategy() -> LearningStrategy:
    """The configured strategy (LEARNING_* environment; a bad value is a ConfigError)."""
    return make_strategy(load_settings())


def hints(
    store: LessonStore, pack: Pack, proposer: str, budget_bytes: int
) -> tuple[LessonHint, ...]:
    """The active lessons for this pack and proposer, most confident first, while their text
    fits in `budget_bytes`."""
    out: list[LessonHint] = []
    used = 0
    for x in store.active(pack.name, proposer):
        size = len(x.text.encode())
        if used + size > budget_bytes:
            continue
        used += size
        out.append(
            LessonHint(
                key=x.key,
                text=x.text,
                confidence=x.confidence,
                advice=x.advice.model_dump(mode="json") if x.advice else None,
            )
        )
    return tuple(out)


def _window(pack: Pack) -> float:
    per_pack = pack.config.policy.undo_window_sec
    return per_pack if per_pack is not None else load_settings().undo_window_sec


def after_batch(
    ws: Workspace,
    ledger: Ledger,
    pack: Pack,
    proposer: str,
    runs: Sequence[RunSummary],
    store: LessonStore,
    at: str,
    now: datetime,
) -> dict[str, Any]:
    """Signals from the batch's runs, then the gated pass (trace miner, score gate, store).
    A pass that fails closed is reported (`error`), never half-written."""
    rows = []
    for r in runs:
        commit = ledger.commit_of_run(r.run_id)
        rows.append((r.run_id, r.state, commit.content_hash if commit else None))
    summary = summarise(ws, pack, proposer, rows)
    how = strategy()
    observed = signals.observe(summary, store, how, at)
    settled = signals.settle(store, how, now, _window(pack))
    out: dict[str, Any] = {"signals": {**observed, "implicit": settled}}
    try:
        result = review_and_learn(summary, TraceMiner(), ScoreGate(), store, at)
    except LearnPassError as exc:
        return {**out, "error": str(exc), "applied": [], "rejected": [], "failed": []}
    return {
        **out,
        "reviewer": result.reviewer,
        "proposals": result.proposals,
        "applied": result.applied,
        "rejected": result.rejected,
        "failed": result.failed,
    }


def review_signal(
    ws: Workspace, config: Config, run_id: str, approved: bool, note: str, at: str
) -> int:
    store = open_store(ws, config)
    try:
        return signals.on_review(ws, store, strategy(), run_id, approved, note, at)
    finally:
        store.close()


def revert_signal(ws: Workspace, config: Config, run_id: str, at: str) -> int:
    store = open_store(ws, config)
    try:
        return signals.on_revert(ws, store, strategy(), run_id, at)
    finally:
        store.close()

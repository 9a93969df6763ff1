"""Lessons in the application: the store a workspace keeps, the lessons a batch's proposer
gets, the gated pass after each batch, and the signals a person's review acts send.

    store = open_store(ws, config)            # .membrane/learning/lessons.sqlite
    engines.lessons = hints(store, pack, proposer_id, config.learning.lesson_context_bytes)
    ... the batch ...
    after_batch(ws, ledger, pack, proposer_id, result.runs, store, ...)   # signals, then the pass
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from effectors.lesson_check import OntologyCheck
from harness.driver import RunSummary
from harness.errors import ConfigError
from harness.learning import signals
from harness.learning.learn_pass import (
    LearnPassError,
    LessonReviewer,
    ScoreGate,
    review_and_learn,
)
from harness.learning.lesson_store import Lesson, LessonStore
from harness.learning.lessons import (
    LearningStrategy,
    LessonProposal,
    load_settings,
    make_strategy,
)
from harness.learning.miner import TraceMiner, summarise
from harness.ledger import Ledger
from harness.models import Artifact, LessonHint
from harness.pack import Pack
from harness.workspace import Config, Workspace, atomic_write

__all__ = [
    "accept",
    "after_batch",
    "decline",
    "hints",
    "ontology_check",
    "open_store",
    "revert_signal",
    "review_signal",
    "reviewer_for",
    "strategy",
]


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


def reviewer_for(ws: Workspace, config: Config, replay: bool = False) -> LessonReviewer:
    """`[learning] reviewer`: the trace miner, or the `[llm]` model."""
    if config.learning.reviewer == "trace-miner":
        return TraceMiner()
    from effectors.lesson_reviewer import LlmReviewer
    from effectors.proposers.openai_client import ChatClient, TranscriptStore

    llm = config.llm.with_env(os.environ)
    if not llm.model:
        raise ConfigError(
            "[learning] reviewer = \"llm\" needs a model",
            file=ws.config_path,
            hint="set [llm] model (or MEMBRANE_LLM_MODEL)",
        )
    client = ChatClient(
        llm,
        transcripts=TranscriptStore(ws.transcripts),
        replay=replay,
        api_key=os.environ.get(llm.api_key_env) if llm.api_key_env else None,
        allow_remote=os.environ.get("MEMBRANE_ALLOW_MODEL_REQUESTS", "1") != "0",
    )
    return LlmReviewer(client, llm.model, response_format=llm.response_format != "none")


def after_batch(
    ws: Workspace,
    ledger: Ledger,
    pack: Pack,
    proposer: str,
    runs: Sequence[RunSummary],
    store: LessonStore,
    at: str,
    now: datetime,
    reviewer: LessonReviewer | None = None,
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
        gate = ScoreGate(reasoner=ontology_check(ws, pack))
        result = review_and_learn(summary, reviewer or TraceMiner(), gate, store, at)
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


def _committed(ws: Workspace) -> Iterator[Artifact]:
    """The committed artifacts, one line of corpus.jsonl at a time (not the whole corpus
    in memory: issue 22)."""
    path = ws.current / "corpus.jsonl"
    if not path.exists():
        return
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                yield Artifact.model_validate_json(line)


def ontology_check(ws: Workspace, pack: Pack) -> OntologyCheck:
    """The reasoner gate for ontology-changing lessons: the pack with the change must
    classify and every committed artifact must still pass the value gate."""
    from effectors.value_gate import ValueGate

    return OntologyCheck(pack, ws.cache, lambda: _committed(ws), ValueGate.from_pack)


def _pending(store: LessonStore, key: str) -> Lesson:
    lesson = store.find(key)
    if lesson is None:
        raise ConfigError(
            f"no lesson with key {key!r} (or the prefix is not unique)",
            hint="see `membrane learn pending`",
        )
    if lesson.status != "pending":
        raise ConfigError(f"lesson {lesson.key[:10]} is {lesson.status}, not pending")
    return lesson


def accept(
    ws: Workspace, config: Config, pack: Pack, key: str, note: str, at: str
) -> dict[str, Any]:
    """A person accepts a pending ontology lesson: checked again against the pack and the
    corpus as they are now, recorded, and written out as the edit to make to the pack
    (`.membrane/learning/accepted/<key>.json`): membrane never edits a pack by itself."""
    store = open_store(ws, config)
    try:
        lesson = _pending(store, key)
        proposal = LessonProposal(
            target=lesson.target,
            scope=lesson.scope,
            text=lesson.text,
            score=1.0,
            payload=lesson.payload,
        )
        decision = ontology_check(ws, pack)(proposal)
        if not decision.approved:
            raise ConfigError(
                f"lesson {lesson.key[:10]} no longer passes the reasoner check: {decision.reason}",
                hint="decline it: `membrane learn decline KEY --reason TEXT`",
            )
        if lesson.target == "value_alias":
            edit = (
                f"add to {pack.root / 'pack.toml'} under [ontology.aliases]:\n"
                f"{json.dumps(lesson.payload['alias'])} = {json.dumps(lesson.payload['individual'])}"
            )
        else:
            edit = (
                f"add these triples to the ontology ({pack.ontology_path}) or a file it imports:\n"
                + lesson.payload["axiom"].strip()
            )
        record = {
            "key": lesson.key,
            "target": lesson.target,
            "payload": lesson.payload,
            "text": lesson.text,
            "check": decision.reason,
            "note": note,
            "accepted_at": at,
            "edit": edit,
        }
        path = ws.state / "learning" / "accepted" / f"{lesson.key}.json"
        atomic_write(path, json.dumps(record, indent=2, sort_keys=True).encode())
        store.set_status(lesson.key, "accepted", at)
        return {**record, "file": str(path)}
    finally:
        store.close()


def decline(ws: Workspace, config: Config, key: str, reason: str, at: str) -> dict[str, Any]:
    if not reason.strip():
        raise ConfigError("declining a lesson needs a reason", hint="pass --reason TEXT")
    store = open_store(ws, config)
    try:
        lesson = _pending(store, key)
        store.set_status(lesson.key, "declined", at)
        return {"key": lesson.key, "status": "declined", "reason": reason}
    finally:
        store.close()


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

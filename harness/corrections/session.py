"""What corrections add to a batch and a review (called by `harness.api`)."""

from __future__ import annotations

from collections.abc import Callable

from harness.corrections.api import review_note
from harness.corrections.pipeline import open_pipeline, store_path
from harness.corrections.violation import ViolationWatch
from harness.corrections.wiring import preference_hints
from harness.learning.correction_store import CorrectionStore
from harness.models import LessonHint
from harness.ports import Proposer
from harness.workspace import Config, Workspace

__all__ = ["batch_hints", "review_note", "watched"]


def batch_hints(
    ws: Workspace, config: Config, pack: str, clock: Callable[[], str], replay: bool = False
) -> tuple[LessonHint, ...]:
    """With corrections on: one analysis tick (drain, promote, route, watch), then the
    workspace preferences for this pack as proposer context. Off: nothing."""
    s = config.learning.corrections
    if not s.enabled:
        return ()
    with open_pipeline(ws.root, config=config, clock=clock, replay=replay) as p:
        p.analyze()
    with CorrectionStore(store_path(ws)) as store:
        return preference_hints(store, pack, s.context_bytes)


def watched(
    proposer: Proposer, ws: Workspace, config: Config, clock: Callable[[], str]
) -> Proposer:
    """The proposer, wrapped by the self-violation signal when that sub-flag is on."""
    s = config.learning.corrections
    if not (s.enabled and s.self_violation):
        return proposer
    watch = ViolationWatch(proposer, store_path(ws), clock)
    watch.load()
    return watch

"""The learning layer (DESIGN.md §8): outcomes -> patterns -> reliability -> overlays.

Pure kernel code: learned state is a function of the outcome log (`rebuild`), changed one
record at a time (`fold`), tighten-only. Wiring the log into the ledger, `membrane learn`
and the overlays into the agenda's facts are the next steps (issue 12)."""

from harness.learning.outcomes import FailedAttempt, OutcomeRecord
from harness.learning.state import (
    LearnedOverlay,
    LearningState,
    Pattern,
    fold,
    overlay_for,
    pattern_confidence,
    rebuild,
    reliability,
)

__all__ = [
    "FailedAttempt",
    "LearnedOverlay",
    "LearningState",
    "OutcomeRecord",
    "Pattern",
    "fold",
    "overlay_for",
    "pattern_confidence",
    "rebuild",
    "reliability",
]

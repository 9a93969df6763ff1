"""Learned state as a pure function of the outcome log (DESIGN.md §8): failure patterns,
reliability per proposer (and per proposer × pack), and tighten-only overlays.

The numbers are the spec (issue 12), each pinned by a test at its boundary:

* **pattern** `proposer::code`: confidence 0.55 at the first occurrence, +0.05 for each
  further one, capped at 0.95. Only failed attempts of the proposer count (attempt 1 is the
  input, not the proposer's work), each code once per attempt.
* **reliability** = 0.6 · success rate + 0.2 · (1 − min(average retries, 3) / 3)
  + 0.2 · average quality. The success rate is over settled runs (success or failure; a
  run still HELD is partial and does not count yet). Worked check: 0.8, 1.5, 0.8 → 0.74.
* **overlay** per proposer: risk multiplier 1.4 when reliability < 0.7, 0.9 when > 0.9,
  else 1.0; max retries 1 when reliability < 0.7, else 2; approval required when
  reliability < 0.75 or any of its patterns has ≥ 3 occurrences.
* **tighten-only**: a proposer has no overlay until its numbers speak (`MIN_RUNS` settled
  runs, or a pattern seen 3 times); the first overlay is taken as computed (a reliable
  proposer may start at risk 0.9), and every later update may only make it stricter (a
  higher risk multiplier, fewer retries, approval on); relaxing is a person's act, not a
  computation. `MIN_RUNS` keeps one unlucky first run from locking a proposer down.

`fold(state, record)` applies one record; `rebuild(records)` folds them all from empty, so
incremental updates and a rebuild give the same state (a property test checks it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.learning.outcomes import OutcomeRecord

__all__ = [
    "MIN_RUNS",
    "LearnedOverlay",
    "LearningState",
    "Pattern",
    "Stats",
    "fold",
    "overlay_for",
    "pattern_confidence",
    "rebuild",
    "reliability",
]

FIRST_CONFIDENCE, STEP, CAP = 0.55, 0.05, 0.95
MIN_RUNS = 5  # settled runs before reliability shapes an overlay
PATTERN_OCCURRENCES_FOR_APPROVAL = 3


def pattern_confidence(occurrences: int) -> float:
    """0.55 at the first occurrence, +0.05 for each further one, capped at 0.95."""
    if occurrences < 1:
        return 0.0
    return round(min(CAP, FIRST_CONFIDENCE + STEP * (occurrences - 1)), 10)


def reliability(success_rate: float, avg_retries: float, quality: float) -> float:
    """0.6 · success rate + 0.2 · (1 − min(avg retries, 3)/3) + 0.2 · quality."""
    return round(0.6 * success_rate + 0.2 * (1 - min(avg_retries, 3.0) / 3) + 0.2 * quality, 10)


@dataclass(frozen=True)
class Pattern:
    proposer: str
    code: str
    occurrences: int
    last_seen: str
    fix_hint: str | None

    @property
    def key(self) -> str:
        return f"{self.proposer}::{self.code}"

    @property
    def confidence(self) -> float:
        return pattern_confidence(self.occurrences)


@dataclass(frozen=True)
class Stats:
    """Running sums for one proposer (or proposer × pack)."""

    runs: int = 0  # every record
    settled: int = 0  # success or failure
    successes: int = 0
    retries: int = 0
    quality: float = 0.0

    def add(self, r: OutcomeRecord) -> Stats:
        settled = r.result != "partial"
        return Stats(
            runs=self.runs + 1,
            settled=self.settled + settled,
            successes=self.successes + (r.result == "success"),
            retries=self.retries + r.retries,
            quality=round(self.quality + r.quality, 10),
        )

    @property
    def reliability(self) -> float | None:
        """None until there is a settled run."""
        if not self.settled:
            return None
        return reliability(
            self.successes / self.settled, self.retries / self.runs, self.quality / self.runs
        )


@dataclass(frozen=True)
class LearnedOverlay:
    risk_multiplier: float = 1.0
    max_retries: int = 2
    require_approval: bool = False
    reason: str = ""
    updated_at: str = ""

    def tightened(self, other: LearnedOverlay) -> LearnedOverlay:
        """The stricter of the two, field by field (never looser than either)."""
        risk = max(self.risk_multiplier, other.risk_multiplier)
        retries = min(self.max_retries, other.max_retries)
        approval = self.require_approval or other.require_approval
        if (risk, retries, approval) == (
            self.risk_multiplier,
            self.max_retries,
            self.require_approval,
        ):
            return self  # nothing tightened: keep the reason and time it was set
        return LearnedOverlay(risk, retries, approval, other.reason, other.updated_at)


def overlay_for(
    rel: float | None, patterns: Iterable[Pattern], at: str, settled: int = MIN_RUNS
) -> LearnedOverlay | None:
    """The overlay these numbers call for (before tightening against the previous one);
    None while they do not speak yet (fewer than `MIN_RUNS` settled runs and no pattern
    seen 3 times)."""
    speaks = rel is not None and settled >= MIN_RUNS
    reasons: list[str] = []
    risk, retries, approval = 1.0, 2, False
    if speaks and rel is not None:
        if rel < 0.7:
            risk, retries = 1.4, 1
            reasons.append(f"reliability {rel:.2f} < 0.70")
        elif rel > 0.9:
            risk = 0.9
        if rel < 0.75:
            approval = True
            if rel >= 0.7:
                reasons.append(f"reliability {rel:.2f} < 0.75")
    repeated = sorted(p.code for p in patterns if p.occurrences >= PATTERN_OCCURRENCES_FOR_APPROVAL)
    if not speaks and not repeated:
        return None
    if repeated:
        approval = True
        reasons.append(f"repeated failure pattern(s): {', '.join(repeated)}")
    return LearnedOverlay(risk, retries, approval, "; ".join(reasons), at)


@dataclass(frozen=True)
class LearningState:
    patterns: dict[str, Pattern] = field(default_factory=dict)  # "proposer::code"
    by_proposer: dict[str, Stats] = field(default_factory=dict)
    by_proposer_pack: dict[str, Stats] = field(default_factory=dict)  # "proposer::pack"
    overlays: dict[str, LearnedOverlay] = field(default_factory=dict)  # by proposer
    records: int = 0


def _apply(
    patterns: dict[str, Pattern],
    repeated: dict[str, list[Pattern]],
    by_proposer: dict[str, Stats],
    by_proposer_pack: dict[str, Stats],
    overlays: dict[str, LearnedOverlay],
    r: OutcomeRecord,
) -> None:
    """One record into the given maps, in place: the single definition `fold` and
    `rebuild` share. `repeated` (derived: each proposer's patterns seen 3+ times) saves
    scanning every pattern per record."""
    for attempt in r.failed:
        for code in dict.fromkeys(attempt.codes):  # each code once per attempt
            key = f"{r.proposer}::{code}"
            old = patterns.get(key)
            hint = attempt.fix_hints.get(code) or (old.fix_hint if old else None)
            new = patterns[key] = Pattern(
                r.proposer, code, (old.occurrences if old else 0) + 1, r.finished_at, hint
            )
            if new.occurrences == PATTERN_OCCURRENCES_FOR_APPROVAL:
                repeated.setdefault(r.proposer, []).append(new)
    stats = by_proposer[r.proposer] = by_proposer.get(r.proposer, Stats()).add(r)
    pack_key = f"{r.proposer}::{r.pack}"
    by_proposer_pack[pack_key] = by_proposer_pack.get(pack_key, Stats()).add(r)
    wanted = overlay_for(
        stats.reliability, repeated.get(r.proposer, ()), r.finished_at, stats.settled
    )
    if wanted is not None:
        old_overlay = overlays.get(r.proposer)  # the first is taken as is; then only tighter
        overlays[r.proposer] = old_overlay.tightened(wanted) if old_overlay else wanted


def fold(state: LearningState, r: OutcomeRecord) -> LearningState:
    """The state after one more outcome record (pure: `state` is not changed)."""
    patterns, by_p, by_pp, overlays = (
        dict(state.patterns),
        dict(state.by_proposer),
        dict(state.by_proposer_pack),
        dict(state.overlays),
    )
    repeated: dict[str, list[Pattern]] = {}
    for p in state.patterns.values():
        if p.occurrences >= PATTERN_OCCURRENCES_FOR_APPROVAL:
            repeated.setdefault(p.proposer, []).append(p)
    _apply(patterns, repeated, by_p, by_pp, overlays, r)
    return LearningState(patterns, by_p, by_pp, overlays, state.records + 1)


def rebuild(records: Iterable[OutcomeRecord]) -> LearningState:
    """The state from scratch: every record applied, in log order (in place, once)."""
    patterns: dict[str, Pattern] = {}
    by_p: dict[str, Stats] = {}
    by_pp: dict[str, Stats] = {}
    overlays: dict[str, LearnedOverlay] = {}
    repeated: dict[str, list[Pattern]] = {}
    n = 0
    for r in records:
        _apply(patterns, repeated, by_p, by_pp, overlays, r)
        n += 1
    return LearningState(patterns, by_p, by_pp, overlays, n)

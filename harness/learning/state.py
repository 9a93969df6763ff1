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
* **relax** (`RelaxRecord`, a person's act): the proposer's overlay is dropped and its
  overlay numbers start a new epoch (reliability since the relax, pattern occurrences
  since the relax); the cumulative numbers stay for the record. Without the epoch the next
  cycle would tighten it straight back from the very history the person just judged.
* **overrides** (`OverrideRecord`: approved, rejected, reverted): a person's verdict on a
  run changes its result in the sums (partial → success or failure; success → failure).

`fold(state, record)` applies one record; `rebuild(records)` folds them all from empty, so
incremental updates and a rebuild give the same state (a property test checks it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from harness.learning.outcomes import OutcomeRecord, OverrideRecord, RelaxRecord

__all__ = [
    "MIN_RUNS",
    "LearnedOverlay",
    "LearningState",
    "Pattern",
    "Relaxation",
    "Stats",
    "fold",
    "fold_all",
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
    since_relax: int = 0  # occurrences since the proposer's last relax (the approval rule)

    @property
    def key(self) -> str:
        return f"{self.proposer}::{self.code}"

    @property
    def confidence(self) -> float:
        return pattern_confidence(self.occurrences)


@dataclass(frozen=True)
class Stats:
    """Running sums for one proposer (or proposer × pack)."""

    runs: int = 0  # every run record
    settled: int = 0  # success or failure
    successes: int = 0
    retries: int = 0
    quality: float = 0.0
    last_at: str = ""  # the newest outcome (staleness)

    def add(self, r: OutcomeRecord) -> Stats:
        settled = r.result != "partial"
        return Stats(
            runs=self.runs + 1,
            settled=self.settled + settled,
            successes=self.successes + (r.result == "success"),
            retries=self.retries + r.retries,
            quality=round(self.quality + r.quality, 10),
            last_at=max(self.last_at, r.finished_at),
        )

    def override(self, o: OverrideRecord) -> Stats:
        """A person changed a run's result: partial → success/failure settles it; a revert
        takes a success back. Sums never go below zero (a hand-made log cannot make them)."""
        settled = self.settled + (o.previous == "partial")
        successes = self.successes + (o.result == "success") - (o.previous == "success")
        return replace(
            self,
            settled=settled,
            successes=max(0, min(successes, settled)),
            last_at=max(self.last_at, o.at),
        )

    @property
    def reliability(self) -> float | None:
        """None until there is a settled run."""
        if not self.settled or not self.runs:
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
            reasons.append(f"reliability {rel:.2f} > 0.90")
        if rel < 0.75:
            approval = True
            if rel >= 0.7:
                reasons.append(f"reliability {rel:.2f} < 0.75")
    repeated = sorted(p.code for p in patterns if p.since_relax >= PATTERN_OCCURRENCES_FOR_APPROVAL)
    if not speaks and not repeated:
        return None
    if repeated:
        approval = True
        reasons.append(f"repeated failure pattern(s): {', '.join(repeated)}")
    return LearnedOverlay(risk, retries, approval, "; ".join(reasons), at)


@dataclass(frozen=True)
class Relaxation:
    at: str
    reason: str


@dataclass(frozen=True)
class LearningState:
    patterns: dict[str, Pattern] = field(default_factory=dict)  # "proposer::code"
    by_proposer: dict[str, Stats] = field(default_factory=dict)  # every outcome
    by_proposer_pack: dict[str, Stats] = field(default_factory=dict)  # "proposer::pack"
    epoch: dict[str, Stats] = field(default_factory=dict)  # by proposer, since its last relax
    overlays: dict[str, LearnedOverlay] = field(default_factory=dict)  # by proposer
    relaxed: dict[str, Relaxation] = field(default_factory=dict)  # the last relax, by proposer
    records: int = 0


@dataclass
class _Maps:
    """The mutable working form of a state: `_apply` changes it in place."""

    patterns: dict[str, Pattern]
    by_proposer: dict[str, Stats]
    by_proposer_pack: dict[str, Stats]
    epoch: dict[str, Stats]
    overlays: dict[str, LearnedOverlay]
    relaxed: dict[str, Relaxation]
    repeated: dict[str, dict[str, Pattern]]  # derived: patterns seen 3+ times since relax

    @classmethod
    def of(cls, s: LearningState) -> _Maps:
        repeated: dict[str, dict[str, Pattern]] = {}
        for p in s.patterns.values():
            if p.since_relax >= PATTERN_OCCURRENCES_FOR_APPROVAL:
                repeated.setdefault(p.proposer, {})[p.code] = p
        return cls(
            dict(s.patterns),
            dict(s.by_proposer),
            dict(s.by_proposer_pack),
            dict(s.epoch),
            dict(s.overlays),
            dict(s.relaxed),
            repeated,
        )

    def state(self, records: int) -> LearningState:
        return LearningState(
            self.patterns,
            self.by_proposer,
            self.by_proposer_pack,
            self.epoch,
            self.overlays,
            self.relaxed,
            records,
        )

    def _reconsider(self, proposer: str, at: str) -> None:
        stats = self.epoch.get(proposer, Stats())
        wanted = overlay_for(
            stats.reliability, self.repeated.get(proposer, {}).values(), at, stats.settled
        )
        if wanted is not None:
            old = self.overlays.get(proposer)  # the first is taken as is; then only tighter
            self.overlays[proposer] = old.tightened(wanted) if old else wanted

    def run(self, r: OutcomeRecord) -> None:
        for attempt in r.failed:
            for code in dict.fromkeys(attempt.codes):  # each code once per attempt
                key = f"{r.proposer}::{code}"
                old = self.patterns.get(key)
                hint = attempt.fix_hints.get(code) or (old.fix_hint if old else None)
                new = self.patterns[key] = Pattern(
                    r.proposer,
                    code,
                    (old.occurrences if old else 0) + 1,
                    r.finished_at,
                    hint,
                    (old.since_relax if old else 0) + 1,
                )
                if new.since_relax >= PATTERN_OCCURRENCES_FOR_APPROVAL:
                    self.repeated.setdefault(r.proposer, {})[code] = new
        self.by_proposer[r.proposer] = self.by_proposer.get(r.proposer, Stats()).add(r)
        pack_key = f"{r.proposer}::{r.pack}"
        self.by_proposer_pack[pack_key] = self.by_proposer_pack.get(pack_key, Stats()).add(r)
        self.epoch[r.proposer] = self.epoch.get(r.proposer, Stats()).add(r)
        self._reconsider(r.proposer, r.finished_at)

    def override(self, o: OverrideRecord) -> None:
        if o.proposer not in self.by_proposer:
            return  # a run the log never saw: nothing to correct
        self.by_proposer[o.proposer] = self.by_proposer[o.proposer].override(o)
        pack_key = f"{o.proposer}::{o.pack}"
        if pack_key in self.by_proposer_pack:
            self.by_proposer_pack[pack_key] = self.by_proposer_pack[pack_key].override(o)
        relaxed = self.relaxed.get(o.proposer)
        if o.proposer in self.epoch and (relaxed is None or o.run_finished_at > relaxed.at):
            self.epoch[o.proposer] = self.epoch[o.proposer].override(o)
        self._reconsider(o.proposer, o.at)

    def relax(self, x: RelaxRecord) -> None:
        self.overlays.pop(x.proposer, None)
        self.epoch[x.proposer] = Stats()
        self.relaxed[x.proposer] = Relaxation(x.at, x.reason)
        self.repeated.pop(x.proposer, None)
        for key, p in self.patterns.items():
            if p.proposer == x.proposer and p.since_relax:
                self.patterns[key] = replace(p, since_relax=0)

    def apply(self, r: OutcomeRecord | OverrideRecord | RelaxRecord) -> None:
        """One record, in place: the single definition `fold` and `rebuild` share."""
        if isinstance(r, OutcomeRecord):
            self.run(r)
        elif isinstance(r, OverrideRecord):
            self.override(r)
        else:
            self.relax(r)


LogRecord = OutcomeRecord | OverrideRecord | RelaxRecord


def fold(state: LearningState, r: LogRecord) -> LearningState:
    """The state after one more outcome-log record (pure: `state` is not changed)."""
    maps = _Maps.of(state)
    maps.apply(r)
    return maps.state(state.records + 1)


def fold_all(state: LearningState, records: Iterable[LogRecord]) -> LearningState:
    """`fold` over many records, copying the state once (not once per record)."""
    maps = _Maps.of(state)
    n = state.records
    for r in records:
        maps.apply(r)
        n += 1
    return maps.state(n)


def rebuild(records: Iterable[LogRecord]) -> LearningState:
    """The state from scratch: every record applied, in log order (in place, once)."""
    return fold_all(LearningState(), records)

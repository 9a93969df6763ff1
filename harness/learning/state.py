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
incremental updates and a rebuild give the same state (a property test checks it). Both
go through `_Maps`, the mutable working form: running sums and patterns are changed in
place and frozen once at the end, and the arithmetic is the frozen form's, step for step
(the quality sum rounded to 10 places at every add), so the state is the same whichever
way, and however often, the log was cut.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.learning.outcomes import (
    FailedAttempt,
    FailedView,
    LogView,
    OutcomeRecord,
    OverrideRecord,
    OverrideView,
    RelaxRecord,
    RelaxView,
    RunView,
)

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

# a record as a model or as a view read from the log (`read_records`): the same fields
LogRecord = OutcomeRecord | OverrideRecord | RelaxRecord | LogView
_Run = OutcomeRecord | RunView
_Override = OverrideRecord | OverrideView
_Relax = RelaxRecord | RelaxView

FIRST_CONFIDENCE, STEP, CAP = 0.55, 0.05, 0.95
MIN_RUNS = 5  # settled runs before reliability shapes an overlay
PATTERN_OCCURRENCES_FOR_APPROVAL = 3
UNRELIABLE, RELIABLE, APPROVAL_BELOW = 0.7, 0.9, 0.75  # reliability thresholds
STRICTEST_RISK, FEWEST_RETRIES = 1.4, 1  # an overlay can get no stricter than these


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

    def add(self, r: _Run) -> Stats:
        sums = _Sums(self)
        sums.add(r)
        return sums.frozen()

    def override(self, o: _Override) -> Stats:
        """A person changed a run's result: partial → success/failure settles it; a revert
        takes a success back. Sums never go below zero (a hand-made log cannot make them)."""
        sums = _Sums(self)
        sums.override(o)
        return sums.frozen()

    @property
    def reliability(self) -> float | None:
        """None until there is a settled run."""
        return _Sums(self).reliability()


# The quality sums are rounded to 10 places at every add, `round(sum + q, 10)`. While the
# sum and q are each the double nearest to a whole number of 1e-10 units, that is the
# double nearest to their exact decimal sum: one float addition of two such doubles lands
# within 2^-35 of it while it is below 2^17, well inside half a unit (5e-11), and `round`
# rounds to the nearest whole unit. So a sum is kept in whole units (an int, added to with
# no rounding) and read as `units / 1e10`, the same double; a quality that is not a whole
# number of units, or a sum that would reach 2^17, turns that sum to the float arithmetic
# for good. A test checks the two against each other.
_UNITS_BELOW = 2**17 * 10**10


def _units(q: float) -> int:
    """`q` in whole 1e-10 units when it is the double nearest to such a number (a float,
    not -0.0, below 2^17); else -1."""
    if type(q) is float and 0.0 <= q < 131072.0:
        units = round(q * 1e10)
        if units / 1e10 == q and (units or math.copysign(1.0, q) > 0):
            return units
    return -1


class _Sums:
    """`Stats`, mutable: the one definition of how a run and an override change the sums."""

    __slots__ = ("_quality", "_units", "last_at", "retries", "runs", "settled", "successes")

    def __init__(self, s: Stats | None = None) -> None:
        if s is None:
            self.runs = self.settled = self.successes = self.retries = self._units = 0
            self._quality, self.last_at = 0.0, ""
        else:
            self.runs, self.settled, self.successes = s.runs, s.settled, s.successes
            self.retries, self._quality, self.last_at = s.retries, s.quality, s.last_at
            self._units = _units(s.quality)

    @property
    def quality(self) -> float:
        return self._units / 1e10 if self._units >= 0 else self._quality

    def add(self, r: _Run) -> None:
        _add_run((self,), r.result, r.retries, r.quality, r.finished_at)

    def override(self, o: _Override) -> None:
        settled = self.settled + (o.previous == "partial")
        successes = self.successes + (o.result == "success") - (o.previous == "success")
        self.settled = settled
        self.successes = max(0, min(successes, settled))
        self.last_at = max(self.last_at, o.at)

    def reliability(self) -> float | None:
        if not self.settled or not self.runs:
            return None
        return reliability(
            self.successes / self.settled, self.retries / self.runs, self.quality / self.runs
        )

    def frozen(self) -> Stats:
        return Stats(
            self.runs, self.settled, self.successes, self.retries, self.quality, self.last_at
        )


def _add_run(sums: tuple[_Sums, ...], result: str, retries: int, quality: float, at: str) -> None:
    """One run added to each of these sums (one call for all: this runs per record)."""
    settled = result != "partial"
    success = result == "success"
    units = _units(quality)
    for s in sums:
        s.runs += 1
        s.settled += settled
        s.successes += success
        s.retries += retries
        if units >= 0 and s._units >= 0 and s._units + units < _UNITS_BELOW:
            s._units += units
        else:
            s._quality = round(s.quality + quality, 10)
            s._units = -1
        if at > s.last_at:  # noqa: PLR1730 (max() is a call)
            s.last_at = at


class _Pattern:
    """`Pattern`, mutable (the working form inside a fold)."""

    __slots__ = ("code", "fix_hint", "last_seen", "occurrences", "proposer", "since_relax")

    def __init__(self, p: Pattern) -> None:
        self.proposer, self.code, self.occurrences = p.proposer, p.code, p.occurrences
        self.last_seen, self.fix_hint, self.since_relax = p.last_seen, p.fix_hint, p.since_relax

    def frozen(self) -> Pattern:
        return Pattern(
            self.proposer,
            self.code,
            self.occurrences,
            self.last_seen,
            self.fix_hint,
            self.since_relax,
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
        if not self._tightened_by(other.risk_multiplier, other.max_retries, other.require_approval):
            return self  # nothing tightened: keep the reason and time it was set
        risk = max(self.risk_multiplier, other.risk_multiplier)
        retries = min(self.max_retries, other.max_retries)
        approval = self.require_approval or other.require_approval
        return LearnedOverlay(risk, retries, approval, other.reason, other.updated_at)

    def _tightened_by(self, risk: float, retries: int, approval: bool) -> bool:
        """Whether an overlay of these numbers would make this one stricter."""
        return (
            risk > self.risk_multiplier
            or retries < self.max_retries
            or (approval and not self.require_approval)
        )

    @property
    def _strictest(self) -> bool:
        """No computed overlay can tighten it further."""
        return (
            self.risk_multiplier >= STRICTEST_RISK
            and self.max_retries <= FEWEST_RETRIES
            and self.require_approval
        )


def _numbers(rel: float | None, speaks: bool, repeated: bool) -> tuple[float, int, bool]:
    """(risk multiplier, max retries, approval) these numbers call for."""
    risk, retries, approval = 1.0, 2, False
    if speaks and rel is not None:
        if rel < UNRELIABLE:
            risk, retries = STRICTEST_RISK, FEWEST_RETRIES
        elif rel > RELIABLE:
            risk = 0.9
        if rel < APPROVAL_BELOW:
            approval = True
    return risk, retries, approval or repeated


# the reliability bands in which the numbers an overlay calls for are the same: a value
# inside each band and the band's upper edge, from the most reliable band down
_BANDS = (
    (RELIABLE + 0.05, math.inf),
    ((APPROVAL_BELOW + RELIABLE) / 2, RELIABLE),
    ((UNRELIABLE + APPROVAL_BELOW) / 2, APPROVAL_BELOW),
    (UNRELIABLE - 0.2, UNRELIABLE),
)


def _floor(overlay: LearnedOverlay, repeated: bool) -> float:
    """The reliability above which numbers that speak cannot tighten `overlay` (with these
    repeated codes): the upper edge of the most reliable band that would tighten it. The
    numbers only get stricter as reliability falls, so every band below tightens it too;
    -inf: none does; inf: every one does."""
    for inside, edge in _BANDS:
        if overlay._tightened_by(*_numbers(inside, True, repeated)):
            return edge
    return -math.inf


def _overlay(
    rel: float | None, settled: int, repeated: list[str], at: str
) -> LearnedOverlay | None:
    """`overlay_for` with the repeated codes already picked out and sorted."""
    speaks = rel is not None and settled >= MIN_RUNS
    if not speaks and not repeated:
        return None
    risk, retries, approval = _numbers(rel, speaks, bool(repeated))
    reasons: list[str] = []
    if speaks and rel is not None:
        if rel < UNRELIABLE:
            reasons.append(f"reliability {rel:.2f} < 0.70")
        elif rel > RELIABLE:
            reasons.append(f"reliability {rel:.2f} > 0.90")
        if UNRELIABLE <= rel < APPROVAL_BELOW:
            reasons.append(f"reliability {rel:.2f} < 0.75")
    if repeated:
        reasons.append(f"repeated failure pattern(s): {', '.join(repeated)}")
    return LearnedOverlay(risk, retries, approval, "; ".join(reasons), at)


def overlay_for(
    rel: float | None, patterns: Iterable[Pattern], at: str, settled: int = MIN_RUNS
) -> LearnedOverlay | None:
    """The overlay these numbers call for (before tightening against the previous one);
    None while they do not speak yet (fewer than `MIN_RUNS` settled runs and no pattern
    seen 3 times)."""
    repeated = sorted(p.code for p in patterns if p.since_relax >= PATTERN_OCCURRENCES_FOR_APPROVAL)
    return _overlay(rel, settled, repeated, at)


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


class _Maps:
    """The mutable working form of a state: `run`, `override` and `relax` change it in
    place, `state` freezes it.

    A proposer never relaxed has the same sums in `epoch` as in `by_proposer` (every run
    and every override goes to both), so the two share one `_Sums` until its first relax
    gives it an epoch of its own."""

    def __init__(self, s: LearningState) -> None:
        self.patterns = {k: _Pattern(p) for k, p in s.patterns.items()}
        self.by_proposer = {k: _Sums(v) for k, v in s.by_proposer.items()}
        self.by_proposer_pack = {k: _Sums(v) for k, v in s.by_proposer_pack.items()}
        self.epoch: dict[str, _Sums] = {}
        for k, v in s.epoch.items():
            shared = self.by_proposer.get(k)
            if shared is None or k in s.relaxed or repr(s.by_proposer[k]) != repr(v):
                shared = _Sums(v)  # (repr: the same to the byte, not just ==)
            self.epoch[k] = shared
        self.overlays = dict(s.overlays)
        self.relaxed = dict(s.relaxed)
        # derived: by (proposer, pack), the sums one of its runs adds to
        self.targets: dict[tuple[str, str], tuple[_Sums, ...]] = {}
        # derived: by proposer, its epoch sums and the reliability above which its overlay
        # cannot tighten (`_floor`) while its repeated codes stay as they are
        self.quiet: dict[str, tuple[_Sums, float]] = {}
        # derived: proposers whose overlay no computation can tighten (until a relax)
        self.strictest = {k for k, o in s.overlays.items() if o._strictest}
        # derived: by proposer, the codes seen 3+ times since its last relax
        self.repeated: dict[str, set[str]] = {}
        for p in s.patterns.values():
            if p.since_relax >= PATTERN_OCCURRENCES_FOR_APPROVAL:
                self.repeated.setdefault(p.proposer, set()).add(p.code)

    def state(self, records: int) -> LearningState:
        return LearningState(
            {k: p.frozen() for k, p in self.patterns.items()},
            {k: v.frozen() for k, v in self.by_proposer.items()},
            {k: v.frozen() for k, v in self.by_proposer_pack.items()},
            {k: v.frozen() for k, v in self.epoch.items()},
            self.overlays,
            self.relaxed,
            records,
        )

    def _reconsider(self, proposer: str, at: str) -> None:
        """The proposer's overlay after its numbers changed (not called while it is as
        strict as an overlay gets: `old.tightened(wanted)` would be `old`)."""
        old = self.overlays.get(proposer)  # the first is taken as is; then only tighter
        stats = self.epoch.get(proposer)
        rel = stats.reliability() if stats is not None else None
        settled = stats.settled if stats is not None else 0
        repeated = self.repeated.get(proposer)
        speaks = rel is not None and settled >= MIN_RUNS
        # (else `old.tightened(wanted)` would be `old`)
        if old is None or old._tightened_by(*_numbers(rel, speaks, bool(repeated))):
            wanted = _overlay(rel, settled, sorted(repeated or ()), at)
            if wanted is not None:
                old = self.overlays[proposer] = old.tightened(wanted) if old else wanted
                if old._strictest:
                    self.strictest.add(proposer)
        if old is not None and speaks and stats is not None:
            self.quiet[proposer] = (stats, _floor(old, bool(repeated)))

    def _targets(self, proposer: str, pack: str) -> tuple[_Sums, ...]:
        """The sums a run of this proposer on this pack adds to, made on first use (a
        relax gives the proposer a new epoch: `relax` forgets them all)."""
        sums = self.by_proposer.get(proposer)
        epoch = self.epoch.get(proposer)
        if sums is None:
            sums = self.by_proposer[proposer] = _Sums()
            if epoch is None and proposer not in self.relaxed:  # all its numbers: shared
                epoch = self.epoch[proposer] = sums
        if epoch is None:
            epoch = self.epoch[proposer] = _Sums()
        pack_key = f"{proposer}::{pack}"
        by_pack = self.by_proposer_pack.get(pack_key)
        if by_pack is None:
            by_pack = self.by_proposer_pack[pack_key] = _Sums()
        targets = (sums, by_pack) if epoch is sums else (sums, by_pack, epoch)
        self.targets[proposer, pack] = targets
        return targets

    def run(self, r: _Run) -> None:
        proposer, at = r.proposer, r.finished_at
        if r.failed:
            self._failed(proposer, at, r.failed)
        targets = self.targets.get((proposer, r.pack)) or self._targets(proposer, r.pack)
        _add_run(targets, r.result, r.retries, r.quality, at)
        if proposer in self.strictest:
            return
        quiet = self.quiet.get(proposer)
        if quiet is not None:  # `_reconsider` would change nothing while above the floor
            e, floor = quiet
            u = e._units
            q = u / 1e10 if u >= 0 else e._quality
            if reliability(e.successes / e.settled, e.retries / e.runs, q / e.runs) > floor:
                return
        self._reconsider(proposer, at)

    def _failed(
        self, proposer: str, at: str, failed: tuple[FailedAttempt, ...] | tuple[FailedView, ...]
    ) -> None:
        """A run's failed attempts counted into the proposer's patterns."""
        for attempt in failed:
            hints = attempt.fix_hints
            codes = attempt.codes
            for code in dict.fromkeys(codes) if len(codes) > 1 else codes:  # once per attempt
                key = f"{proposer}::{code}"
                p = self.patterns.get(key)
                if p is None:
                    p = self.patterns[key] = _Pattern(Pattern(proposer, code, 0, at, None))
                p.occurrences += 1
                p.since_relax += 1
                p.last_seen = at
                hint = hints.get(code)
                if hint:
                    p.fix_hint = hint
                if p.since_relax >= PATTERN_OCCURRENCES_FOR_APPROVAL:
                    repeated = self.repeated.setdefault(proposer, set())
                    if code not in repeated:
                        repeated.add(code)
                        self.quiet.pop(proposer, None)  # its floor may move

    def override(self, o: _Override) -> None:
        sums = self.by_proposer.get(o.proposer)
        if sums is None:
            return  # a run the log never saw: nothing to correct
        sums.override(o)
        pack = self.by_proposer_pack.get(f"{o.proposer}::{o.pack}")
        if pack is not None:
            pack.override(o)
        epoch = self.epoch.get(o.proposer)
        relaxed = self.relaxed.get(o.proposer)
        if (
            epoch is not None
            and epoch is not sums  # shared: changed above
            and (relaxed is None or o.run_finished_at > relaxed.at)
        ):
            epoch.override(o)
        if o.proposer not in self.strictest:
            self._reconsider(o.proposer, o.at)

    def relax(self, x: _Relax) -> None:
        self.overlays.pop(x.proposer, None)
        self.strictest.discard(x.proposer)
        self.epoch[x.proposer] = _Sums()
        self.relaxed[x.proposer] = Relaxation(x.at, x.reason)
        self.targets.clear()  # its runs now add to the new epoch
        self.quiet.pop(x.proposer, None)
        self.repeated.pop(x.proposer, None)
        for p in self.patterns.values():
            if p.proposer == x.proposer:
                p.since_relax = 0


def fold(state: LearningState, r: LogRecord) -> LearningState:
    """The state after one more outcome-log record (pure: `state` is not changed)."""
    return fold_all(state, (r,))


def fold_all(state: LearningState, records: Iterable[LogRecord]) -> LearningState:
    """`fold` over many records, copying the state once (not once per record): each
    record applied in place, in log order (the single definition `fold` and `rebuild`
    share)."""
    maps = _Maps(state)
    run, override, relax = maps.run, maps.override, maps.relax
    n = state.records
    for r in records:
        if isinstance(r, (RunView, OutcomeRecord)):
            run(r)
        elif isinstance(r, (OverrideView, OverrideRecord)):
            override(r)
        else:
            relax(r)
        n += 1
    return maps.state(n)


def rebuild(records: Iterable[LogRecord]) -> LearningState:
    """The state from scratch: every record applied, in log order (in place, once)."""
    return fold_all(LearningState(), records)

"""A run and the engines it runs on: the state the loop keeps per run, the policy of the
batch, and the facts the agenda decides on (DESIGN.md §2). `harness.loop` steps them."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import ValidationError

from harness.agenda import Agenda
from harness.fsm import RunMachine
from harness.learning.outcomes import FailedAttempt, OutcomeRecord
from harness.ledger import Ledger
from harness.models import (
    Artifact,
    Cell,
    CritiqueReport,
    LessonHint,
    RunState,
    StepOutcome,
    Verdict,
)
from harness.models import Effector as E
from harness.ports import Committer, Critic, Gate, Proposer
from harness.scratch import Scratch
from harness.trace import TraceWriter
from harness.trace.events import RunStarted
from harness.trace.figures import Published
from harness.workspace import SyncGroup

__all__ = ["Engines", "Overlay", "Run", "fresh_facts", "spot_checked"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Overlay:
    """Policy learned from outcomes for the batch's proposer; it only tightens (DESIGN.md
    §8): a smaller attempt budget, approval required, a risk multiplier that scales the
    pack's spot-check rate. Asserted as facts (`retries_left`, `require_approval`), so the
    rules decide what it means; `RunStarted` records it and a HOLD says which shaped it."""

    max_attempts: int | None = None
    require_approval: bool = False
    risk_multiplier: float = 1.0
    proposer: str = ""
    reason: str = ""

    def describe(self) -> dict[str, str | int | float | bool | None]:
        return {
            "proposer": self.proposer,
            "max_attempts": self.max_attempts,
            "require_approval": self.require_approval,
            "risk_multiplier": self.risk_multiplier,
            "reason": self.reason,
        }


def spot_checked(run_id: str, rate: float) -> bool:
    """Whether a run is sampled for a person's spot-check at `rate` (0..1): a stable
    function of the run id (sha256), so a replayed run is sampled the same way."""
    if rate <= 0:
        return False
    draw = int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big") / 2**64
    return draw < rate


@dataclass
class Engines:
    """Everything a cohort step needs: the agenda, the effectors behind their ports, the
    ledger and the policy. Built once per batch by `harness.api` from the registry."""

    agenda: Agenda
    gates: Mapping[E, Gate]
    proposer: Proposer
    critic: Critic
    committer: Committer
    ledger: Ledger
    clock: Callable[[], str]
    max_attempts: int
    has_prose: bool
    require_approval: bool
    overlay: Overlay | None = None  # learned for this proposer (None: none yet)
    spot_check: float = 0.0  # the pack's spot-check rate; the overlay's risk scales it
    scratch: Scratch | None = None  # where each proposer attempt's candidate is kept
    lessons: tuple[LessonHint, ...] = ()  # active lessons for this pack and proposer, ranked
    proposer_id: str = ""  # `offline`, `openai:<model>`: whose outcomes these are
    max_tokens_per_run: int | None = None  # model tokens (prompt + completion)
    max_tokens_per_batch: int | None = None
    batch_tokens: int = 0  # spent so far by every run of this batch
    endpoint_down: str | None = None  # what the unavailable endpoint said (a fact)
    # makes the files a cycle wrote durable before the ledger names them (a worker of
    # `--workers` writes none: its parent does, `harness.pool`)
    durable: Callable[[], SyncGroup] = SyncGroup

    @property
    def attempt_budget(self) -> int:
        cap = self.overlay.max_attempts if self.overlay else None
        return self.max_attempts if cap is None else min(self.max_attempts, cap)

    @property
    def spot_check_rate(self) -> float:
        """The share of passing runs held for a person: the pack's rate × the risk."""
        risk = self.overlay.risk_multiplier if self.overlay else 1.0
        return min(1.0, max(0.0, self.spot_check * risk))

    def lessons_for(self, artifact: Artifact) -> tuple[LessonHint, ...]:
        """The lessons that bear on this artifact: those about a table it has (or about
        none in particular), in rank order."""
        out = []
        for h in self.lessons:
            column = (h.advice or {}).get("column")
            if column is None or str(column).partition(".")[0] in artifact.tables:
                out.append(h)
        return tuple(out)

    def approval_reasons(self, spot_checked: bool) -> list[str]:
        """Why a passing run of this batch needs a person (empty: it does not)."""
        why = []
        if self.require_approval:
            why.append("policy: the pack requires approval ([policy] require_approval)")
        if self.overlay is not None and self.overlay.require_approval:
            why.append(f"overlay for {self.overlay.proposer}: {self.overlay.reason}")
        if spot_checked:
            why.append(f"spot-check: sampled at {self.spot_check_rate:.0%}")
        return why

    def batch_facts(self) -> dict[str, str | int]:
        """The facts every run of the batch shares."""
        spent = self.max_tokens_per_batch is not None and (
            self.batch_tokens >= self.max_tokens_per_batch
        )
        return {
            "has_prose": int(self.has_prose),
            "require_approval": int(
                self.require_approval or bool(self.overlay and self.overlay.require_approval)
            ),
            "batch_budget_spent": int(spent),
            "endpoint_down": int(self.endpoint_down is not None),
        }


def fresh_facts(eng: Engines) -> dict[str, str | int]:
    """The facts of a run that has not started: the driver asks the agenda with them
    whether to start more runs at all."""
    return {
        "state": RunState.PROPOSE.value,
        "outcome": StepOutcome.NONE.value,
        "attempt": 0,
        "retries_left": eng.attempt_budget,
        "last_gate": "none",
        "top_code": "none",
        "top_code_count": 0,
        "run_budget_spent": 0,
        **eng.batch_facts(),
    }


@dataclass
class Run:
    run_id: str
    input: Artifact
    input_hash: str
    trace: TraceWriter
    machine: RunMachine = field(default_factory=RunMachine)
    candidate: Artifact | None = None
    attempt: int = 0
    cycles: int = 0
    outcome: StepOutcome = StepOutcome.NONE
    verdicts: list[Verdict] = field(default_factory=list)  # this attempt's verdicts
    report: CritiqueReport | None = None
    codes: Counter[str] = field(default_factory=Counter)  # critiques raised, all attempts
    repeats: Counter[str] = field(default_factory=Counter)  # attempts raising each code
    last_gate: str = "none"
    content_hash: str | None = None
    published: Published | None = None  # what it committed or held, for the report
    error: str | None = None
    tokens: int = 0
    # what the learning layer is told when the run ends (`learning_record`)
    started_at: str = ""
    pack: tuple[str, str] = ("", "")  # name, version
    proposed: dict[str, Cell] = field(default_factory=dict)  # cell -> the proposer's value
    prose_touched: bool = False  # the proposer rewrote the prose at some attempt
    failed: list[FailedAttempt] = field(default_factory=list)
    tools: set[str] = field(default_factory=set)
    spot_check: bool = False  # sampled for a person's spot-check (decided at start)

    @property
    def state(self) -> RunState:
        return self.machine.state

    def quality(self) -> float:
        """The share of the cells the proposer proposed that the final candidate still holds
        (in canonical form) and the last gates did not reject; 1.0 when it proposed none."""
        if not self.proposed:
            return 1.0
        final = (
            self.candidate.cell_values()
            if self.candidate is not None
            else {}
        )
        rejected = {str(r) for v in self.verdicts for r in v.rejected}
        kept = sum(
            1
            for cell, value in self.proposed.items()
            if cell in final and final[cell] == value and cell not in rejected
        )
        return kept / len(self.proposed)

    def learning_record(self, eng: Engines, finished_at: str) -> OutcomeRecord | None:
        """The outcome record of this finished run, or None (logged) when it does not
        validate: nothing is learned from a record that is not well formed."""
        result = {RunState.COMMITTED: "success", RunState.HELD: "partial"}.get(
            self.state, "failure"
        )
        top = self.repeats.most_common(1)
        try:
            return OutcomeRecord(
                run_id=self.run_id,
                artifact_id=self.input.id,
                pack=self.pack[0] or "unknown",
                pack_version=self.pack[1],
                proposer=eng.proposer_id or eng.proposer.name,
                result=result,
                attempts=max(1, self.attempt),
                retries=max(1, self.attempt) - 1,
                quality=round(self.quality(), 6),
                dominant_failure=top[0][0] if top else None,
                failed=tuple(self.failed),
                tools=tuple(sorted(self.tools)),
                started_at=self.started_at,
                finished_at=finished_at,
            )
        except ValidationError as exc:
            _log.warning("run %s: outcome record refused, nothing learned: %s", self.run_id, exc)
            return None

    def facts(self, eng: Engines) -> dict[str, str | int]:
        top_code, top_count = self.repeats.most_common(1)[0] if self.repeats else ("none", 0)
        spent = eng.max_tokens_per_run is not None and self.tokens >= eng.max_tokens_per_run
        return {
            "state": self.state.value,
            "outcome": self.outcome.value,
            "attempt": self.attempt,
            "retries_left": max(0, eng.attempt_budget - self.attempt),
            "last_gate": self.last_gate,
            "top_code": top_code,
            "top_code_count": top_count,
            "run_budget_spent": int(spent),
            **eng.batch_facts(),
            **({"require_approval": 1} if self.spot_check else {}),
        }

    def start(self, eng: Engines, batch_id: str, pack: str, pack_version: str) -> None:
        """Write the first trace record; the caller registers the run in the ledger
        (`start_runs`, one transaction per cohort)."""
        self.started_at, self.pack = eng.clock(), (pack, pack_version)
        self.spot_check = spot_checked(self.run_id, eng.spot_check_rate)
        self.trace.append(
            RunStarted,
            artifact_id=self.input.id,
            batch_id=batch_id,
            pack=pack,
            pack_version=pack_version,
            proposer=eng.proposer.name,
            agenda=eng.agenda.name,
            input_hash=self.input_hash,
            max_attempts=eng.attempt_budget,
            overlay=eng.overlay.describe() if eng.overlay else None,
            spot_check=self.spot_check,
        )

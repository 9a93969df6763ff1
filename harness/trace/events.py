"""Trace events: frozen pydantic models with a `kind` discriminator, read back through one
TypeAdapter. Every event carries `seq`, the previous event's hash and its own."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, with_config
from typing_extensions import TypedDict

from harness.models import Artifact, CanonicalCell, Critique, Outcome

__all__ = [
    "EVENT_ADAPTER",
    "BudgetEvent",
    "CellChange",
    "CommitEvent",
    "CritiqueEvent",
    "DecisionEvent",
    "ErrorEvent",
    "Event",
    "OutcomeEvent",
    "ProposalEvent",
    "ReviewEvent",
    "RunStarted",
    "UsageEvent",
    "VerdictEvent",
    "cell_changes",
]


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=0)
    run_id: str
    at: str  # ISO-8601 time from the injected clock
    prev: str  # previous event's hash ("" for the first)
    hash: str = ""


class RunStarted(_Event):
    kind: Literal["run_started"] = "run_started"
    artifact_id: str
    batch_id: str
    pack: str
    pack_version: str
    proposer: str
    agenda: str
    input_hash: str
    max_attempts: int
    overlay: dict[str, str | int | float | bool | None] | None = None  # learned, if any
    spot_check: bool = False  # sampled for a person's spot-check


class DecisionEvent(_Event):
    kind: Literal["decision"] = "decision"
    cycle: int
    facts: dict[str, str | int]
    rule: str
    trigger: str | None
    effector: str | None
    state_before: str
    state_after: str


@with_config(ConfigDict(extra="forbid"))
class CellChange(TypedDict):
    """One changed cell of a proposal. A plain dict, not a model: a ProposalEvent carries one
    per changed cell (every cell, for the seed), and the event validates them all in one
    call instead of building a pydantic object per cell (issue 22). Its JSON is the same:
    {"cell": ..., "value": ...}."""

    cell: str  # str(CellRef)
    value: Any


def cell_changes(
    previous: Artifact | None, new: Artifact
) -> tuple[tuple[CellChange, ...], tuple[str, ...]]:
    """The cells of `new` that differ (`!=`) from `previous` or are new to it, in
    `new.cells()` order (every cell when there is no previous), and the cells `previous`
    had that `new` lacks: a ProposalEvent's `changes` and `removed`."""
    cells = new.cell_values()
    if previous is None:
        every: list[CellChange] = [{"cell": k, "value": v} for k, v in cells.items()]
        return tuple(every), ()
    old = previous.cell_values()
    missing = object()
    changed: list[CellChange] = [
        {"cell": k, "value": v}
        for k, v in cells.items()
        if (o := old.get(k, missing)) is missing or o != v
    ]
    return tuple(changed), tuple(k for k in old if k not in cells)


class ProposalEvent(_Event):
    kind: Literal["proposal"] = "proposal"
    attempt: int
    proposer: str
    content_hash: str
    changes: tuple[
        CellChange, ...
    ]  # cells that differ from the previous candidate (all, for the seed)
    removed: tuple[str, ...] = ()
    prose_changed: bool
    notes: tuple[str, ...] = ()
    tool_calls: tuple[str, ...] = ()
    tokens_prompt: int = 0
    tokens_completion: int = 0
    lessons: tuple[str, ...] = ()  # keys of the lessons in the proposer's context


class UsageEvent(_Event):
    """One model call made for a proposal (LLM proposers only): its tokens and wall time."""

    kind: Literal["usage"] = "usage"
    attempt: int
    proposer: str
    tokens_prompt: int
    tokens_completion: int
    seconds: float  # wall time of the call; 0 when answered from the transcripts
    cached: bool  # answered from .membrane/transcripts/ (no network)
    request: str  # sha256 of the canonical request: the transcript's key
    estimated: bool = False  # the server's counts were missing or impossible: estimated


class BudgetEvent(_Event):
    """A token budget ran out (`scope` run: this run ends EXHAUSTED at its next critique;
    batch: runs that still need the proposer end FAILED, to be resumed by a later batch)."""

    kind: Literal["budget"] = "budget"
    scope: Literal["run", "batch"]
    used: int
    limit: int


class VerdictEvent(_Event):
    kind: Literal["verdict"] = "verdict"
    attempt: int
    gate: str
    passed: bool
    crashed: bool
    critiques: tuple[Critique, ...]
    metrics: dict[str, float]
    rejected: tuple[str, ...]  # str(CellRef) of cells not admitted
    batch_size: int  # how many runs this gate call judged together
    # VALUE_GATE: raw -> canonical for each resolved cell whose spelling changed; the
    # candidate every later gate judges (and COMMIT writes) holds the canonical values
    canonical: tuple[CanonicalCell, ...] = ()


class CritiqueEvent(_Event):
    kind: Literal["critique"] = "critique"
    attempt: int
    gate: str
    codes: tuple[str, ...]
    locked: int  # cells in the spine


class CommitEvent(_Event):
    kind: Literal["commit"] = "commit"
    artifact_id: str
    version: int
    content_hash: str
    metrics_hash: str
    held: bool = False
    why: str = ""  # held: what asked for a person (policy, overlay, spot-check)


class ErrorEvent(_Event):
    kind: Literal["error"] = "error"
    effector: str | None
    message: str


class ReviewEvent(_Event):
    """A person's act on a finished run (`membrane review approve|reject`, `membrane
    revert`), appended to that run's trace and re-anchored in the same ledger transaction."""

    kind: Literal["review"] = "review"
    action: Literal["approved", "rejected", "reverted"]
    artifact_id: str
    by: str
    note: str = ""
    version: int | None = None  # the version it published (approve) or undid (revert)
    content_hash: str | None = None


class OutcomeEvent(_Event):
    kind: Literal["outcome"] = "outcome"
    outcome: Outcome


Event = Annotated[
    RunStarted
    | DecisionEvent
    | ProposalEvent
    | VerdictEvent
    | CritiqueEvent
    | CommitEvent
    | ErrorEvent
    | OutcomeEvent
    | UsageEvent
    | BudgetEvent
    | ReviewEvent,
    Field(discriminator="kind"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)

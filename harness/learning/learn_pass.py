"""The gated learning pass, `review_and_learn` (DESIGN.md §8): three injected ports, no
daemon thread.

1. The **reviewer** proposes lesson writes from a batch summary (raw mappings: a reviewer
   may be an LLM, so each is validated here, at the boundary; a malformed one — a score of
   1.5, an unknown target — is refused before any gate or write).
2. The **gate** approves or rejects each valid proposal, with a reason.
3. The **store** applies the approved ones (with its own dedup and budget).

Outcomes, never confused: `applied` (written, or reinforced), `rejected` (the gate said no,
or the proposal was malformed: with the reason), `failed` (the gate said yes, the store could
not write, e.g. over the lesson budget). An empty summary or zero proposals is a valid no-op.
A reviewer error or a gate *error* (not a "no") fails the whole pass closed: every decision
is made before the first write, so nothing is written. The writes are one store transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from harness.learning.lesson_store import StoreResult
from harness.learning.lessons import LessonProposal

__all__ = [
    "APPROVE_AT",
    "GateDecision",
    "LearnPassError",
    "LessonGate",
    "LessonReviewer",
    "LessonWriter",
    "PassResult",
    "ScoreGate",
    "review_and_learn",
]

APPROVE_AT = 0.7  # inclusive: 0.70 is approved, 0.69 is not


class LearnPassError(Exception):
    """The pass failed closed (a reviewer or gate error): nothing was written."""


@dataclass(frozen=True)
class GateDecision:
    approved: bool
    reason: str


class LessonReviewer(Protocol):
    name: str

    def propose(self, summary: Any) -> Sequence[Mapping[str, Any] | LessonProposal]: ...


class LessonGate(Protocol):
    def decide(self, proposal: LessonProposal) -> GateDecision: ...


class LessonWriter(Protocol):
    def transaction(self) -> Any: ...

    def apply(self, proposal: LessonProposal, at: str) -> StoreResult: ...


class ScoreGate:
    """Approve iff score ≥ `threshold` (inclusive). Proposals that change the ontology
    (`value_alias`, `value_axiom`) must also pass `reasoner` (the pack ontology plus the
    change stays consistent and every committed artifact still passes the value gate);
    without one they are rejected."""

    def __init__(
        self,
        threshold: float = APPROVE_AT,
        reasoner: Callable[[LessonProposal], GateDecision] | None = None,
    ) -> None:
        self.threshold = threshold
        self.reasoner = reasoner

    def decide(self, proposal: LessonProposal) -> GateDecision:
        if proposal.score < self.threshold:
            return GateDecision(False, f"score {proposal.score} < {self.threshold}")
        if proposal.target in ("value_alias", "value_axiom"):
            if self.reasoner is None:
                return GateDecision(False, "no reasoner check for an ontology change")
            return self.reasoner(proposal)
        return GateDecision(True, f"score {proposal.score} >= {self.threshold}")


@dataclass
class PassResult:
    reviewer: str
    proposals: int = 0
    applied: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)


def _validate(raw: Mapping[str, Any] | LessonProposal) -> LessonProposal:
    if isinstance(raw, LessonProposal):
        return raw
    if not isinstance(raw, Mapping):
        raise TypeError(f"a proposal is a mapping, not {type(raw).__name__}")
    return LessonProposal.model_validate(dict(raw))


def review_and_learn(
    summary: Any,
    reviewer: LessonReviewer,
    gate: LessonGate,
    store: LessonWriter,
    at: str,
) -> PassResult:
    """One gated learning pass over a batch summary (see the module docstring)."""
    result = PassResult(reviewer=reviewer.name)
    try:
        raw = list(reviewer.propose(summary) or [])
    except Exception as exc:
        raise LearnPassError(f"reviewer {reviewer.name} failed: {exc}") from exc
    result.proposals = len(raw)
    approved: list[LessonProposal] = []
    for i, item in enumerate(raw):
        try:
            proposal = _validate(item)
        except (ValidationError, TypeError) as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) else None
            where = ".".join(str(p) for p in first["loc"]) if first else ""
            msg = first["msg"] if first else str(exc)
            result.rejected.append({"index": i, "reason": f"invalid: {where} {msg}".strip()})
            continue
        try:
            decision = gate.decide(proposal)
        except Exception as exc:
            raise LearnPassError(f"the lesson gate failed on proposal {i}: {exc}") from exc
        entry = {"index": i, "key": proposal.key(), "text": proposal.text}
        if decision.approved:
            approved.append(proposal)
        else:
            result.rejected.append({**entry, "reason": decision.reason})
    with store.transaction():
        for proposal in approved:
            entry = {"key": proposal.key(), "text": proposal.text}
            out = store.apply(proposal, at)
            if out.status == "applied":
                result.applied.append({**entry, "reinforced": out.reinforced})
            else:
                result.failed.append({**entry, "reason": out.reason})
    return result

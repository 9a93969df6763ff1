"""What a rule is, and the facts the harness asserts for it to compare.

A rule is data: a name (a reason), conditions on facts, and its decision: the trigger to
fire (None = stay) and the effector to run (None = none). Conditions are equalities, or
`(op, value)` with op in `==, !=, <, <=, >, >=`. The durable-rules DSL cannot do
arithmetic between fields, so the harness asserts derived facts (`retries_left`, the
budget flags) and rules only compare.

`FACTS` is the schema of every fact the harness asserts each cycle; a rule naming any
other fact is a setup error. `REACHABLE` says which `outcome` values can meet which
`state`: the agenda's coverage check walks exactly that space (plus the boundary values of
every number a rule compares) and reports every gap and overlap at once when an agenda is
built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.models import Effector, RunState, StepOutcome, Trigger

__all__ = ["FACTS", "REACHABLE", "Condition", "FactSpec", "RuleSpec", "rule"]

Condition = str | int | tuple[str, str | int]


@dataclass(frozen=True)
class RuleSpec:
    name: str
    when: dict[str, Condition]
    trigger: Trigger | None
    effector: Effector | None
    doc: str = field(default="", compare=False)


def rule(
    name: str, trigger: Trigger | None, effector: Effector | None, doc: str, **when: Condition
) -> RuleSpec:
    return RuleSpec(name=name, when=when, trigger=trigger, effector=effector, doc=doc)


@dataclass(frozen=True)
class FactSpec:
    kind: Literal["enum", "flag", "count", "text"]
    doc: str
    values: tuple[str, ...] = ()  # enum: every value


_GATES = ("none", "harness", "value_gate", "ri_gate", "prose_gate")

FACTS: dict[str, FactSpec] = {
    "state": FactSpec(
        "enum", "the run's FSM state", tuple(s.value for s in RunState if not s.terminal)
    ),
    "outcome": FactSpec("enum", "what the last effector did", tuple(o.value for o in StepOutcome)),
    "attempt": FactSpec("count", "attempts made so far (the input artifact is attempt 1)"),
    "retries_left": FactSpec("count", "attempts the attempt budget still allows"),
    "has_prose": FactSpec("flag", "the pack has a prose gate"),
    "require_approval": FactSpec("flag", "policy or a learned overlay asks for a human"),
    "last_gate": FactSpec("enum", "the gate of the last verdict ('harness': refused)", _GATES),
    "top_code": FactSpec("text", "the critique code seen in the most attempts ('none')"),
    "top_code_count": FactSpec("count", "in how many attempts `top_code` was raised"),
    "run_budget_spent": FactSpec("flag", "the run's model-token budget is spent"),
    "batch_budget_spent": FactSpec("flag", "the batch's model-token budget is spent"),
    "endpoint_down": FactSpec("flag", "a model endpoint is unavailable (breaker open)"),
}

_S, _O = RunState, StepOutcome
REACHABLE: dict[RunState, tuple[StepOutcome, ...]] = {
    _S.PROPOSE: (_O.NONE, _O.PROPOSED, _O.REJECTED, _O.CRASHED),
    _S.VALUE_GATE: (_O.PASSED, _O.FAILED, _O.CRASHED),
    _S.RI_GATE: (_O.PASSED, _O.FAILED, _O.CRASHED),
    _S.PROSE_GATE: (_O.PASSED, _O.FAILED, _O.CRASHED),
    _S.CRITIQUE: (_O.CRITIQUED, _O.CRASHED),
    _S.COMMIT: (_O.COMMITTED, _O.HELD, _O.CRASHED),
}

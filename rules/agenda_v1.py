"""agenda_v1: the rules that choose each cycle's one decision.

Rules are data. Each rule names a reason, the facts it matches, and its decision: the
trigger to fire (None = stay) and the effector to run (None = none). Conditions are
equalities, or `(op, value)` with op in `==, !=, <, <=, >, >=`. Rules must not overlap
and must cover every reachable fact combination; `tests/harness/test_agenda.py` walks the
whole fact space to prove it.

Facts: `state` (RunState), `outcome` of the last effector (`none`, `proposed`, `rejected`,
`passed`, `failed`, `critiqued`, `committed`, `held`, `crashed`), `attempt`,
`retries_left` (attempts the budget still allows), `has_prose` (0/1: the pack has a prose
gate), `require_approval` (0/1: policy or an overlay asks for a human).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.models import Effector as E
from harness.models import RunState as S
from harness.models import Trigger as T

__all__ = ["NAME", "RULES", "Condition", "RuleSpec"]

NAME = "agenda_v1"

Condition = str | int | tuple[str, str | int]


@dataclass(frozen=True)
class RuleSpec:
    name: str
    when: dict[str, Condition]
    trigger: T | None
    effector: E | None
    doc: str = field(default="", compare=False)


def _r(name: str, trigger: T | None, effector: E | None, **when: Condition) -> RuleSpec:
    return RuleSpec(name=name, when=when, trigger=trigger, effector=effector)


RULES: tuple[RuleSpec, ...] = (
    _r("seed_first_attempt", None, E.SEED, state=S.PROPOSE, outcome="none"),
    _r("proposal_ready", T.PROPOSED, E.VALUE_GATE, state=S.PROPOSE, outcome="proposed"),
    _r("proposal_broke_lock", T.PROPOSAL_REJECTED, E.CRITIQUE, state=S.PROPOSE, outcome="rejected"),
    _r("values_admitted", T.VALUES_PASSED, E.RI_GATE, state=S.VALUE_GATE, outcome="passed"),
    _r("values_rejected", T.VALUES_FAILED, E.CRITIQUE, state=S.VALUE_GATE, outcome="failed"),
    _r(
        "relations_hold",
        T.RELATIONS_PASSED,
        E.PROSE_GATE,
        state=S.RI_GATE,
        outcome="passed",
        has_prose=1,
    ),
    _r(
        "table_only_pack_skips_prose",
        T.PROSE_SKIPPED,
        E.COMMIT,
        state=S.RI_GATE,
        outcome="passed",
        has_prose=0,
        require_approval=0,
    ),
    _r(
        "table_only_pack_needs_approval",
        T.PROSE_SKIPPED,
        E.HOLD,
        state=S.RI_GATE,
        outcome="passed",
        has_prose=0,
        require_approval=1,
    ),
    _r("relations_broken", T.RELATIONS_FAILED, E.CRITIQUE, state=S.RI_GATE, outcome="failed"),
    _r(
        "prose_matches_tables",
        T.PROSE_PASSED,
        E.COMMIT,
        state=S.PROSE_GATE,
        outcome="passed",
        require_approval=0,
    ),
    _r(
        "approval_required",
        T.PROSE_PASSED,
        E.HOLD,
        state=S.PROSE_GATE,
        outcome="passed",
        require_approval=1,
    ),
    _r("prose_mismatch", T.PROSE_FAILED, E.CRITIQUE, state=S.PROSE_GATE, outcome="failed"),
    _r(
        "retry_with_critique",
        T.CRITIQUED,
        E.PROPOSER,
        state=S.CRITIQUE,
        outcome="critiqued",
        retries_left=(">", 0),
    ),
    _r("budget_spent", T.BUDGET_SPENT, None, state=S.CRITIQUE, outcome="critiqued", retries_left=0),
    _r("publish_commit", T.PUBLISHED, None, state=S.COMMIT, outcome="committed"),
    _r("hold_for_human", T.HELD, None, state=S.COMMIT, outcome="held"),
    _r("fail_closed_on_crash", T.CRASHED, None, outcome="crashed"),
)

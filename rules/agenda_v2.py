"""agenda_v2: agenda_v1, plus: give up early when one critique code keeps coming back.

A proposer that has been told the same thing in three attempts is unlikely to fix it on the
fourth; the run ends EXHAUSTED and its budget goes to others. Select it with
`[policy] rules = "agenda_v2"` in pack.toml.
"""

from __future__ import annotations

from dataclasses import replace

from harness.models import RunState as S
from harness.models import Trigger as T
from rules import agenda_v1
from rules.spec import RuleSpec, rule

__all__ = ["NAME", "REPEATS", "RULES"]

NAME = "agenda_v2"
REPEATS = 3  # attempts raising the same code before the run gives up


def _retry_unless_stuck(r: RuleSpec) -> RuleSpec:
    if r.name != "retry_with_critique":
        return r
    return replace(r, when={**r.when, "top_code_count": ("<", REPEATS)})


RULES: tuple[RuleSpec, ...] = (
    *(_retry_unless_stuck(r) for r in agenda_v1.RULES),
    rule(
        "same_code_keeps_failing",
        T.BUDGET_SPENT,
        None,
        f"one critique code was raised in {REPEATS} attempts: give up early",
        state=S.CRITIQUE,
        outcome="critiqued",
        retries_left=(">", 0),
        run_budget_spent=0,
        endpoint_down=0,
        batch_budget_spent=0,
        top_code_count=(">=", REPEATS),
    ),
)

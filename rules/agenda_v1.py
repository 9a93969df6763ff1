"""agenda_v1: the default rules that choose each cycle's one decision.

Every policy of the loop is here, not in Python: which gate runs next, when to retry,
when the attempt budget or a token budget is spent, when a human must approve, and when
an unavailable endpoint stops the batch. Rules must not overlap and must cover every
reachable fact combination; the agenda checks that when it is built (`rules.spec`).
"""

from __future__ import annotations

from harness.models import Effector as E
from harness.models import RunState as S
from harness.models import Trigger as T
from rules.spec import Condition, RuleSpec, rule

__all__ = ["NAME", "RULES"]

NAME = "agenda_v1"

# a retry needs all of these (each failing one has its own rule below)
_CAN_RETRY: dict[str, Condition] = {
    "retries_left": (">", 0),
    "run_budget_spent": 0,
    "endpoint_down": 0,
    "batch_budget_spent": 0,
}

RULES: tuple[RuleSpec, ...] = (
    rule(
        "seed_first_attempt",
        None,
        E.SEED,
        "the input artifact is the first proposal",
        state=S.PROPOSE,
        outcome="none",
        endpoint_down=0,
    ),
    rule(
        "endpoint_down_starts_nothing",
        T.HALTED,
        None,
        "a model endpoint is unavailable: start no run (a rerun resumes)",
        state=S.PROPOSE,
        outcome="none",
        endpoint_down=1,
    ),
    rule(
        "proposal_ready",
        T.PROPOSED,
        E.VALUE_GATE,
        "values are judged first",
        state=S.PROPOSE,
        outcome="proposed",
    ),
    rule(
        "proposal_broke_lock",
        T.PROPOSAL_REJECTED,
        E.CRITIQUE,
        "the harness refused the proposal (a locked cell changed, invalid output)",
        state=S.PROPOSE,
        outcome="rejected",
    ),
    rule(
        "values_admitted",
        T.VALUES_PASSED,
        E.RI_GATE,
        "relations are judged on admitted values",
        state=S.VALUE_GATE,
        outcome="passed",
    ),
    rule(
        "values_rejected",
        T.VALUES_FAILED,
        E.CRITIQUE,
        "a value failed: critique and retry",
        state=S.VALUE_GATE,
        outcome="failed",
    ),
    rule(
        "relations_hold",
        T.RELATIONS_PASSED,
        E.PROSE_GATE,
        "prose is judged last",
        state=S.RI_GATE,
        outcome="passed",
        has_prose=1,
    ),
    rule(
        "table_only_pack_skips_prose",
        T.PROSE_SKIPPED,
        E.COMMIT,
        "a pack without prose commits after the relations hold",
        state=S.RI_GATE,
        outcome="passed",
        has_prose=0,
        require_approval=0,
    ),
    rule(
        "table_only_pack_needs_approval",
        T.PROSE_SKIPPED,
        E.HOLD,
        "a pack without prose, approval required: hold for a human",
        state=S.RI_GATE,
        outcome="passed",
        has_prose=0,
        require_approval=1,
    ),
    rule(
        "relations_broken",
        T.RELATIONS_FAILED,
        E.CRITIQUE,
        "a relation failed: critique and retry",
        state=S.RI_GATE,
        outcome="failed",
    ),
    rule(
        "prose_matches_tables",
        T.PROSE_PASSED,
        E.COMMIT,
        "every gate passed: publish",
        state=S.PROSE_GATE,
        outcome="passed",
        require_approval=0,
    ),
    rule(
        "approval_required",
        T.PROSE_PASSED,
        E.HOLD,
        "every gate passed: hold for a human",
        state=S.PROSE_GATE,
        outcome="passed",
        require_approval=1,
    ),
    rule(
        "prose_mismatch",
        T.PROSE_FAILED,
        E.CRITIQUE,
        "the prose failed: critique and retry",
        state=S.PROSE_GATE,
        outcome="failed",
    ),
    rule(
        "retry_with_critique",
        T.CRITIQUED,
        E.PROPOSER,
        "budget left: the proposer tries again with the critique and the spine",
        state=S.CRITIQUE,
        outcome="critiqued",
        **_CAN_RETRY,
    ),
    rule(
        "budget_spent",
        T.BUDGET_SPENT,
        None,
        "the attempt budget is spent",
        state=S.CRITIQUE,
        outcome="critiqued",
        retries_left=0,
        run_budget_spent=0,
    ),
    rule(
        "run_token_budget_spent",
        T.BUDGET_SPENT,
        None,
        "the run's token budget is spent",
        state=S.CRITIQUE,
        outcome="critiqued",
        run_budget_spent=1,
    ),
    rule(
        "endpoint_down_stops_retries",
        T.HALTED,
        None,
        "a model endpoint is unavailable: the run stops unfinished (a rerun resumes it)",
        state=S.CRITIQUE,
        outcome="critiqued",
        retries_left=(">", 0),
        run_budget_spent=0,
        endpoint_down=1,
    ),
    rule(
        "batch_token_budget_spent",
        T.HALTED,
        None,
        "the batch's token budget is spent: the run stops unfinished (a rerun resumes it)",
        state=S.CRITIQUE,
        outcome="critiqued",
        retries_left=(">", 0),
        run_budget_spent=0,
        endpoint_down=0,
        batch_budget_spent=1,
    ),
    rule(
        "publish_commit",
        T.PUBLISHED,
        None,
        "the commit is in the ledger",
        state=S.COMMIT,
        outcome="committed",
    ),
    rule(
        "hold_for_human",
        T.HELD,
        None,
        "held for approval, outside current/",
        state=S.COMMIT,
        outcome="held",
    ),
    rule(
        "fail_closed_on_crash",
        T.CRASHED,
        None,
        "an effector crashed or infrastructure failed: nothing is committed",
        outcome="crashed",
    ),
)

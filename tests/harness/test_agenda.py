"""The agenda's rules cover every reachable fact combination with exactly one decision,
and every decision is legal in the FSM."""

from __future__ import annotations

import itertools

import pytest

from harness.agenda import Agenda
from harness.errors import AgendaError
from harness.fsm import RunMachine
from harness.models import Effector, RunState, Trigger
from rules import agenda_v1
from rules.agenda_v1 import RuleSpec

REACHABLE = {
    RunState.PROPOSE: ["none", "proposed", "rejected", "crashed"],
    RunState.VALUE_GATE: ["passed", "failed", "crashed"],
    RunState.RI_GATE: ["passed", "failed", "crashed"],
    RunState.PROSE_GATE: ["passed", "failed", "crashed"],
    RunState.CRITIQUE: ["critiqued", "crashed"],
    RunState.COMMIT: ["committed", "held", "crashed"],
}
ALL_OUTCOMES = sorted({o for os_ in REACHABLE.values() for o in os_})


def _facts(
    state: RunState, outcome: str, retries: int, prose: int, approval: int
) -> dict[str, str | int]:
    return {
        "state": state.value,
        "outcome": outcome,
        "attempt": 4 - retries,
        "retries_left": retries,
        "has_prose": prose,
        "require_approval": approval,
    }


def test_every_reachable_fact_gets_exactly_one_legal_decision() -> None:
    agenda = Agenda(memo=False)
    seen_rules = set()
    for state, outcomes in REACHABLE.items():
        for outcome, retries, prose, approval in itertools.product(
            outcomes, [0, 1, 3], [0, 1], [0, 1]
        ):
            d = agenda.decide("table-test", _facts(state, outcome, retries, prose, approval))
            seen_rules.add(d.rule)
            if d.trigger is not None:
                assert d.trigger in RunMachine.legal(state), (state, outcome, d)
            else:
                assert state == RunState.PROPOSE and d.effector == Effector.SEED
            # the effector fits where the trigger lands
            dest = RunMachine(state)
            if d.trigger:
                dest.fire(d.trigger)
            if dest.state.terminal:
                assert d.effector is None
            else:
                assert d.effector is not None
    assert seen_rules == {r.name for r in agenda_v1.RULES}, "a rule is never reachable"
    agenda.forget("table-test")


@pytest.mark.parametrize("state", [s for s in RunState if s.terminal])
def test_terminal_states_get_no_decision(state: RunState) -> None:
    with pytest.raises(AgendaError, match="no rule"):
        Agenda().decide("t", _facts(state, "none", 1, 1, 0))


def test_unreachable_combinations_are_gaps() -> None:
    agenda = Agenda()
    for state, outcomes in REACHABLE.items():
        for outcome in set(ALL_OUTCOMES) - set(outcomes):
            with pytest.raises(AgendaError):
                agenda.decide("gaps", _facts(state, outcome, 1, 1, 0))


def test_budget_decides_retry_or_exhaustion() -> None:
    agenda = Agenda()
    retry = agenda.decide("b", _facts(RunState.CRITIQUE, "critiqued", 1, 1, 0))
    spent = agenda.decide("b", _facts(RunState.CRITIQUE, "critiqued", 0, 1, 0))
    assert (retry.trigger, retry.effector) == (Trigger.CRITIQUED, Effector.PROPOSER)
    assert (spent.trigger, spent.effector) == (Trigger.BUDGET_SPENT, None)


def test_table_only_pack_skips_prose_and_approval_holds() -> None:
    agenda = Agenda()
    d = agenda.decide("p", _facts(RunState.RI_GATE, "passed", 1, 0, 0))
    assert (d.trigger, d.effector) == (Trigger.PROSE_SKIPPED, Effector.COMMIT)
    d = agenda.decide("p", _facts(RunState.PROSE_GATE, "passed", 1, 1, 1))
    assert (d.rule, d.effector) == ("approval_required", Effector.HOLD)


def test_overlapping_user_rule_is_an_agenda_error() -> None:
    extra = RuleSpec(
        "escalate_everything_in_critique", {"state": "CRITIQUE"}, Trigger.BUDGET_SPENT, None
    )
    agenda = Agenda(rules=(*agenda_v1.RULES, extra), name="agenda_test_overlap")
    with pytest.raises(AgendaError, match="2 rules decide"):
        agenda.decide("o", _facts(RunState.CRITIQUE, "critiqued", 2, 1, 0))


def test_a_user_rule_can_replace_one_without_touching_the_loop() -> None:
    # e.g. give up early when the budget is nearly spent: replace the retry rule by two
    rules = tuple(
        r for r in agenda_v1.RULES if r.name not in {"retry_with_critique", "budget_spent"}
    )
    rules += (
        RuleSpec(
            "retry_while_two_left",
            {"state": "CRITIQUE", "outcome": "critiqued", "retries_left": (">=", 2)},
            Trigger.CRITIQUED,
            Effector.PROPOSER,
        ),
        RuleSpec(
            "give_up_early",
            {"state": "CRITIQUE", "outcome": "critiqued", "retries_left": ("<", 2)},
            Trigger.BUDGET_SPENT,
            None,
        ),
    )
    agenda = Agenda(rules=rules, name="agenda_test_custom")
    assert (
        agenda.decide("c", _facts(RunState.CRITIQUE, "critiqued", 1, 1, 0)).rule == "give_up_early"
    )
    assert (
        agenda.decide("c", _facts(RunState.CRITIQUE, "critiqued", 2, 1, 0)).rule
        == "retry_while_two_left"
    )


def test_ruleset_is_defined_once_per_process_and_memo_agrees_with_engine() -> None:
    a, b = Agenda(), Agenda(memo=False)
    assert a.name == b.name  # durable would raise on a second definition of the same name
    for state, outcomes in REACHABLE.items():
        for outcome in outcomes:
            f = _facts(state, outcome, 1, 1, 0)
            assert a.decide("m", f) == b.decide("m", f) == a.decide("m", f)

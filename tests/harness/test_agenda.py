"""The agenda: every shipped ruleset decides every reachable fact combination exactly once
with a legal move (checked when an agenda is built, and here through durable-rules itself),
policy (budgets, halts, approval) is decided by named rules, and a broken ruleset is
refused at build time with every problem listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agenda import Agenda
from harness.errors import AgendaError, RulesError
from harness.fsm import RunMachine
from harness.models import Effector, RunState, Trigger
from rules import RULESETS, agenda_v1, agenda_v2
from rules.coverage import check_rules, fact_space, matches
from rules.spec import FACTS, RuleSpec

DEFAULTS: dict[str, str | int] = {
    "attempt": 1,
    "retries_left": 2,
    "has_prose": 1,
    "require_approval": 0,
    "last_gate": "value_gate",
    "top_code": "value.disjoint",
    "top_code_count": 1,
    "run_budget_spent": 0,
    "batch_budget_spent": 0,
    "endpoint_down": 0,
}


def facts(state: RunState, outcome: str, **over: str | int) -> dict[str, str | int]:
    return {"state": state.value, "outcome": outcome, **DEFAULTS, **over}


@pytest.mark.parametrize("name", sorted(RULESETS))
def test_every_shipped_ruleset_passes_the_build_check(name: str) -> None:
    assert check_rules(RULESETS[name]) == []
    assert Agenda.named(name).rules == RULESETS[name]


@pytest.mark.parametrize("name", sorted(RULESETS))
def test_durable_agrees_with_the_check_on_the_whole_fact_space(name: str) -> None:
    """The RETE engine, consulted without the memo, fires exactly the rule the pure-Python
    check found for every point; every decision is legal and its effector fits."""
    rules = RULESETS[name]
    agenda = Agenda.named(name)
    engine = Agenda(rules, name, memo=False)
    seen = set()
    for point in fact_space(rules):
        full = {**DEFAULTS, **point}
        expected = [r for r in rules if matches(r, full)]
        assert len(expected) == 1, full
        d = engine.decide("space", full)
        assert d.rule == expected[0].name
        assert agenda.decide("space", full) == d  # the memo agrees
        seen.add(d.rule)
        state = RunState(full["state"])
        dest = RunMachine(state)
        if d.trigger is not None:
            assert d.trigger in RunMachine.legal(state), (full, d)
            dest.fire(d.trigger)
        assert (d.effector is None) == dest.state.terminal, (full, d)
        dest.release()
    assert seen == {r.name for r in rules}, "a rule is never reachable"
    engine.forget("space")


@pytest.mark.parametrize("state", [s for s in RunState if s.terminal])
def test_terminal_states_get_no_decision(state: RunState) -> None:
    with pytest.raises(AgendaError, match="no rule"):
        Agenda().decide("t", facts(state, "none"))


def test_retry_or_the_attempt_budget() -> None:
    agenda = Agenda()
    retry = agenda.decide("b", facts(RunState.CRITIQUE, "critiqued", retries_left=1))
    spent = agenda.decide("b", facts(RunState.CRITIQUE, "critiqued", retries_left=0))
    assert (retry.rule, retry.trigger, retry.effector) == (
        "retry_with_critique",
        Trigger.CRITIQUED,
        Effector.PROPOSER,
    )
    assert (spent.rule, spent.trigger, spent.effector) == (
        "budget_spent",
        Trigger.BUDGET_SPENT,
        None,
    )


@pytest.mark.parametrize(
    ("over", "rule", "trigger"),
    [
        ({"run_budget_spent": 1}, "run_token_budget_spent", Trigger.BUDGET_SPENT),
        (
            {"run_budget_spent": 1, "retries_left": 0},
            "run_token_budget_spent",
            Trigger.BUDGET_SPENT,
        ),
        ({"endpoint_down": 1}, "endpoint_down_stops_retries", Trigger.HALTED),
        (
            {"endpoint_down": 1, "batch_budget_spent": 1},
            "endpoint_down_stops_retries",
            Trigger.HALTED,
        ),
        ({"batch_budget_spent": 1}, "batch_token_budget_spent", Trigger.HALTED),
        ({"batch_budget_spent": 1, "retries_left": 0}, "budget_spent", Trigger.BUDGET_SPENT),
    ],
)
def test_budgets_and_halts_are_rules(over: dict[str, int], rule: str, trigger: Trigger) -> None:
    d = Agenda().decide("p", facts(RunState.CRITIQUE, "critiqued", **over))
    assert (d.rule, d.trigger, d.effector) == (rule, trigger, None)


def test_an_endpoint_down_starts_no_new_run() -> None:
    agenda = Agenda()
    go = agenda.decide("n", facts(RunState.PROPOSE, "none", attempt=0))
    stop = agenda.decide("n", facts(RunState.PROPOSE, "none", attempt=0, endpoint_down=1))
    assert (go.rule, go.effector) == ("seed_first_attempt", Effector.SEED)
    assert (stop.rule, stop.trigger) == ("endpoint_down_starts_nothing", Trigger.HALTED)


def test_table_only_pack_skips_prose_and_approval_holds() -> None:
    agenda = Agenda()
    d = agenda.decide("p", facts(RunState.RI_GATE, "passed", has_prose=0))
    assert (d.trigger, d.effector) == (Trigger.PROSE_SKIPPED, Effector.COMMIT)
    d = agenda.decide("p", facts(RunState.PROSE_GATE, "passed", require_approval=1))
    assert (d.rule, d.effector) == ("approval_required", Effector.HOLD)


def test_agenda_v2_gives_up_on_a_code_that_keeps_coming_back() -> None:
    v1, v2 = Agenda(), Agenda.named(agenda_v2.NAME)
    stuck = facts(RunState.CRITIQUE, "critiqued", top_code_count=agenda_v2.REPEATS)
    assert v1.decide("s", stuck).rule == "retry_with_critique"
    d = v2.decide("s", stuck)
    assert (d.rule, d.trigger) == ("same_code_keeps_failing", Trigger.BUDGET_SPENT)
    fresh = facts(RunState.CRITIQUE, "critiqued", top_code_count=agenda_v2.REPEATS - 1)
    assert v2.decide("s", fresh).rule == "retry_with_critique"


def test_a_broken_ruleset_is_refused_at_build_with_every_problem() -> None:
    drop = {"budget_spent", "publish_commit"}
    rules = (
        *(r for r in agenda_v1.RULES if r.name not in drop),
        RuleSpec("escalate_everything", {"state": "CRITIQUE"}, Trigger.BUDGET_SPENT, None),
        RuleSpec(
            "wrong_move", {"state": "COMMIT", "outcome": "committed"}, Trigger.PROSE_PASSED, None
        ),
        RuleSpec("typo", {"state": "CRITIQUE", "retries": 1}, Trigger.BUDGET_SPENT, None),
    )
    with pytest.raises(RulesError) as info:
        Agenda(rules, "agenda_broken")
    assert any("'retries', a fact the harness never asserts" in p for p in info.value.problems)
    rules = rules[:-1]  # without the unknown fact: the walk finds the rest, all at once
    with pytest.raises(RulesError) as info:
        Agenda(rules, "agenda_broken")
    problems = info.value.problems
    assert any("'wrong_move' fires 'prose_passed', illegal in state COMMIT" in p for p in problems)
    assert any(p.startswith("2 rules decide") and "escalate_everything" in p for p in problems)


def test_the_runtime_still_refuses_an_unchecked_overlap() -> None:
    extra = RuleSpec("escalate_everything", {"state": "CRITIQUE"}, Trigger.BUDGET_SPENT, None)
    agenda = Agenda((*agenda_v1.RULES, extra), "agenda_test_overlap", check=False)
    with pytest.raises(AgendaError, match="2 rules decide"):
        agenda.decide("o", facts(RunState.CRITIQUE, "critiqued"))


def test_a_user_rule_can_replace_one_without_touching_the_loop() -> None:
    # give up early when the budget is nearly spent: replace the retry rule by two
    keep = tuple(
        r for r in agenda_v1.RULES if r.name not in {"retry_with_critique", "budget_spent"}
    )
    can_retry = {"run_budget_spent": 0, "endpoint_down": 0, "batch_budget_spent": 0}
    rules = (
        *keep,
        RuleSpec(
            "retry_while_two_left",
            {"state": "CRITIQUE", "outcome": "critiqued", "retries_left": (">=", 2), **can_retry},
            Trigger.CRITIQUED,
            Effector.PROPOSER,
        ),
        RuleSpec(
            "give_up_early",
            {
                "state": "CRITIQUE",
                "outcome": "critiqued",
                "retries_left": ("<", 2),
                "run_budget_spent": 0,
            },
            Trigger.BUDGET_SPENT,
            None,
        ),
    )
    # the v1 halt rules still need retries_left > 0: they overlap give_up_early at 1
    with pytest.raises(RulesError, match="2 rules decide"):
        Agenda(rules, "agenda_test_custom_overlap")
    rules = (
        *tuple(
            r
            for r in rules
            if r.name not in {"endpoint_down_stops_retries", "batch_token_budget_spent"}
        ),
        RuleSpec(
            "halt_when_told",
            {
                "state": "CRITIQUE",
                "outcome": "critiqued",
                "retries_left": (">=", 2),
                "run_budget_spent": 0,
                "endpoint_down": 1,
            },
            Trigger.HALTED,
            None,
        ),
        RuleSpec(
            "halt_on_batch_budget",
            {
                "state": "CRITIQUE",
                "outcome": "critiqued",
                "retries_left": (">=", 2),
                "run_budget_spent": 0,
                "endpoint_down": 0,
                "batch_budget_spent": 1,
            },
            Trigger.HALTED,
            None,
        ),
    )
    agenda = Agenda(rules, "agenda_test_custom")
    assert agenda.decide("c", facts(RunState.CRITIQUE, "critiqued", retries_left=1)).rule == (
        "give_up_early"
    )
    assert agenda.decide("c", facts(RunState.CRITIQUE, "critiqued", retries_left=2)).rule == (
        "retry_while_two_left"
    )


def test_every_fact_a_rule_may_name_is_asserted_by_the_loop(tmp_path: Path) -> None:
    from effectors.testing import InstantGate, ScriptedProposer
    from harness.models import Artifact
    from harness.run import fresh_facts
    from tests.harness.helpers import make_engines, run_cohort

    gates = {
        e: InstantGate(e.value)
        for e in (Effector.VALUE_GATE, Effector.RI_GATE, Effector.PROSE_GATE)
    }
    _ws, eng = make_engines(tmp_path, gates, ScriptedProposer("fake", []))  # type: ignore[arg-type]
    assert set(fresh_facts(eng)) == set(FACTS)
    (run,) = run_cohort(_ws, eng, [Artifact(id="a", tables={"t": [{"c": 1}]}, prose="p")])
    assert set(run.facts(eng)) == set(FACTS)

"""Property tests for the FSM: a trigger fires iff the table allows it; terminals are sinks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import IllegalTransition
from harness.fsm import TRANSITIONS, RunMachine
from harness.models import RunState, Trigger

TABLE = {(t, s): d for (t, s, d) in TRANSITIONS}


@given(st.lists(st.sampled_from(list(Trigger)), max_size=40))
def test_fire_follows_the_table_exactly(triggers: list[Trigger]) -> None:
    m = RunMachine()
    for trig in triggers:
        before = m.state
        if (trig, before) in TABLE:
            assert m.fire(trig) == TABLE[(trig, before)]
        else:
            with pytest.raises(IllegalTransition):
                m.fire(trig)
            assert m.state == before


def test_terminal_states_are_sinks_and_reachable() -> None:
    for s in RunState:
        assert (RunMachine.legal(s) == frozenset()) == s.terminal
    reach = {RunState.PROPOSE}
    frontier = [RunState.PROPOSE]
    while frontier:
        s = frontier.pop()
        for _t, src, d in TRANSITIONS:
            if src == s and d not in reach:
                reach.add(d)
                frontier.append(d)
    assert reach == set(RunState)


def test_every_active_state_can_crash_to_failed() -> None:
    for s in RunState:
        if not s.terminal:
            m = RunMachine(s)
            assert m.fire(Trigger.CRASHED) == RunState.FAILED

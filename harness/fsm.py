"""The run's legal state graph, on `transitions` (the only module that imports it).

States are an Enum, the transition table is data, auto-transitions are off, every trigger
is declared. An illegal move is a bug and raises `IllegalTransition`. No work happens in
transition callbacks: effectors are run by the loop, not by the machine.
"""

from __future__ import annotations

import logging

from transitions import Machine, MachineError

from harness.errors import IllegalTransition
from harness.models import RunState as S
from harness.models import Trigger as T

__all__ = ["TRANSITIONS", "RunMachine"]

# model_override=True skips binding convenience methods (is_*, may_*, to_*) and logs each skip;
# we never want them, so the notices are noise.
logging.getLogger("transitions.core").setLevel(logging.ERROR)

_ACTIVE = [S.PROPOSE, S.VALUE_GATE, S.RI_GATE, S.PROSE_GATE, S.CRITIQUE, S.COMMIT]

# (trigger, source, destination) — the whole graph of DESIGN.md §2.
TRANSITIONS: tuple[tuple[T, S, S], ...] = (
    (T.PROPOSED, S.PROPOSE, S.VALUE_GATE),
    (T.PROPOSAL_REJECTED, S.PROPOSE, S.CRITIQUE),
    (T.VALUES_PASSED, S.VALUE_GATE, S.RI_GATE),
    (T.VALUES_FAILED, S.VALUE_GATE, S.CRITIQUE),
    (T.RELATIONS_PASSED, S.RI_GATE, S.PROSE_GATE),
    (T.PROSE_SKIPPED, S.RI_GATE, S.COMMIT),
    (T.RELATIONS_FAILED, S.RI_GATE, S.CRITIQUE),
    (T.PROSE_PASSED, S.PROSE_GATE, S.COMMIT),
    (T.PROSE_FAILED, S.PROSE_GATE, S.CRITIQUE),
    (T.CRITIQUED, S.CRITIQUE, S.PROPOSE),
    (T.BUDGET_SPENT, S.CRITIQUE, S.EXHAUSTED),
    (T.PUBLISHED, S.COMMIT, S.COMMITTED),
    (T.HELD, S.COMMIT, S.HELD),
    (T.HALTED, S.PROPOSE, S.FAILED),
    (T.HALTED, S.CRITIQUE, S.FAILED),
    *((T.CRASHED, s, S.FAILED) for s in _ACTIVE),
)


class _Machine(Machine):
    """A Machine that binds nothing to its models. `transitions` binds convenience methods
    (`is_<state>`, `may_<trigger>`, the triggers) to every model it adds; with
    `model_override=True` it binds only names the model already declares, and `RunMachine`
    declares none, so each `add_model` made ~40 checks (and a log call each) to bind
    nothing: ~90 us of a run's ~110 us set-up (issue 16). Triggers are fired through
    `Machine.events`; there are no state callbacks (no work happens in transitions)."""

    def _add_trigger_to_model(self, trigger: str, model: object) -> None:
        return

    def _add_model_to_state(self, state: object, model: object) -> None:
        return

    def _checked_assignment(self, model: object, name: str, func: object) -> None:
        return


_MACHINE: Machine | None = None


def _machine() -> Machine:
    """One Machine for the whole process; each run is a model added to it (building a
    Machine costs ~200 us, adding a model a fraction of that)."""
    global _MACHINE  # noqa: PLW0603 - a lazily built process-wide table
    if _MACHINE is None:
        _MACHINE = _Machine(
            model=None,
            states=list(S),
            transitions=[{"trigger": t.value, "source": s, "dest": d} for (t, s, d) in TRANSITIONS],
            initial=S.PROPOSE,
            auto_transitions=False,
            model_override=True,
            queued=True,
            send_event=False,
        )
    return _MACHINE


class RunMachine:
    """One run's FSM. `fire(trigger)` moves it or raises `IllegalTransition`."""

    state: S

    def __init__(self, initial: S = S.PROPOSE) -> None:
        self._machine = _machine()
        self._machine.add_model(self, initial=initial)

    def fire(self, trigger: T) -> S:
        before = self.state
        try:
            ok = self._machine.events[trigger.value].trigger(self)
        except MachineError as exc:
            raise IllegalTransition(f"{trigger.value!r} is not legal in state {before}") from exc
        if not ok:  # pragma: no cover - no conditions are used
            raise IllegalTransition(f"{trigger.value!r} did not fire in state {before}")
        return self.state

    def release(self) -> None:
        """Detach from the shared machine (a finished run)."""
        self._machine.remove_model(self)

    @staticmethod
    def legal(state: S) -> frozenset[T]:
        return frozenset(t for (t, s, _d) in TRANSITIONS if s == state)

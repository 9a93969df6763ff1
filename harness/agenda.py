"""The agenda: a durable-rules (RETE) ruleset that emits exactly one decision per cycle.

The only module (with `rules/`) that imports durable. The harness asserts one run's facts
as a durable fact (partitioned by `sid` = run id), every matching rule's action records
its decision, and the fact is retracted again. Zero or several decisions is an
`AgendaError`: a gap or an overlap in the rules. Facts, not events, are used on purpose:
durable hands an event to the first matching rule only, which would hide overlaps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from durable import engine as _engine
from durable import lang as _lang

from harness.errors import AgendaError
from harness.models import Decision
from rules import agenda_v1
from rules.agenda_v1 import Condition, RuleSpec

__all__ = ["Agenda", "Facts"]

Facts = Mapping[str, str | int]
_OPS = {"==", "!=", "<", "<=", ">", ">="}


def _condition(field: str, cond: Condition) -> Any:
    op, value = cond if isinstance(cond, tuple) else ("==", cond)
    if op not in _OPS:
        raise AgendaError(f"unknown operator {op!r} in a rule on {field!r}")
    value = value.value if hasattr(value, "value") else value  # Enum -> its value
    attr = getattr(_lang.m, field)
    return {
        "==": lambda: attr == value,
        "!=": lambda: attr != value,
        "<": lambda: attr < value,
        "<=": lambda: attr <= value,
        ">": lambda: attr > value,
        ">=": lambda: attr >= value,
    }[op]()


class Agenda:
    """Compiles a tuple of `RuleSpec`s into one durable ruleset (defined once per process)."""

    _defined: dict[str, Agenda] = {}

    def __new__(cls, rules: Sequence[RuleSpec] = agenda_v1.RULES, name: str = agenda_v1.NAME) -> Agenda:
        digest = hashlib.sha256(repr(tuple(rules)).encode()).hexdigest()[:10]
        key = f"{name}_{digest}"
        if key in cls._defined:  # durable rulesets are process-global: define once
            return cls._defined[key]
        self = super().__new__(cls)
        self._name = key
        self._rules = tuple(rules)
        self._fired: list[RuleSpec] = []
        self._define()
        cls._defined[key] = self
        return self

    @property
    def name(self) -> str:
        return self._name

    def _define(self) -> None:
        with _lang.ruleset(self._name):
            for spec in self._rules:
                expr = None
                for fld, cond in spec.when.items():
                    c = _condition(fld, cond)
                    expr = c if expr is None else expr & c
                if expr is None:
                    raise AgendaError(f"rule {spec.name!r} has no conditions")

                _lang.when_all(expr)(self._action(spec))

    def _action(self, spec: RuleSpec) -> Any:
        # durable inspects the arity: a one-argument action is synchronous.
        def action(_c: Any) -> None:
            self._fired.append(spec)

        action.__name__ = spec.name
        return action

    def decide(self, sid: str, facts: Facts) -> Decision:
        """Exactly one decision for these facts, or `AgendaError`."""
        fact = {"sid": sid, **{k: (v.value if hasattr(v, "value") else v) for k, v in facts.items()}}
        self._fired.clear()
        try:
            _lang.assert_fact(self._name, fact)
        except _engine.MessageNotHandledException:
            raise AgendaError(f"no rule decides for {dict(facts)}") from None
        try:
            _lang.retract_fact(self._name, fact)
        except _engine.MessageNotHandledException:  # pragma: no cover - retract of a known fact
            pass
        fired, self._fired = list(self._fired), []
        if len(fired) != 1:
            names = [r.name for r in fired]
            raise AgendaError(f"{len(fired)} rules decide for {dict(facts)}: {names}")
        spec = fired[0]
        return Decision(rule=spec.name, trigger=spec.trigger, effector=spec.effector)

    def forget(self, sid: str) -> None:
        """Drop a finished run's state from the engine."""
        try:
            _lang.delete_state(self._name, sid)
        except Exception:  # noqa: BLE001 - state may not exist (no fact ever stored)
            pass

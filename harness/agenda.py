"""The agenda: a durable-rules (RETE) ruleset that emits exactly one decision per cycle.

The only module (with `rules/`) that imports durable. The harness asserts one run's facts
as a durable fact (partitioned by `sid` = run id), every matching rule's action records
its decision, and the fact is retracted again. Zero or several decisions is an
`AgendaError`: a gap or an overlap in the rules. Facts, not events, are used on purpose:
durable hands an event to the first matching rule only, which would hide overlaps.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from durable import engine as _engine
from durable import lang as _lang

from harness.errors import AgendaError, RulesError
from harness.models import Decision
from rules import DEFAULT, ruleset
from rules.coverage import check_rules
from rules.spec import Condition, RuleSpec

__all__ = ["Agenda", "Facts"]

Facts = Mapping[str, str | int]


class _SynchronousHost(_engine.Host):  # type: ignore[misc]
    """durable's Host starts self-rescheduling timer threads (every 0.2 s) that call into
    its C engine for queued actions and rule timers. We use neither, and those threads race
    the caller's `assert_fact` inside the non-thread-safe engine (a segfault under load,
    seen in bench/loop). This host never starts them."""

    def _run(self) -> None:
        return None


def _install_host() -> None:
    if _lang._main_host is None:
        _lang._main_host = _SynchronousHost()
    elif not isinstance(_lang._main_host, _SynchronousHost):
        raise AgendaError(
            "durable's host was created before membrane's agenda; import "
            "harness.agenda before defining other durable rulesets"
        )


_install_host()
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


class _Ruleset:
    """One compiled durable ruleset; durable rulesets are process-global, so each is
    defined once and shared by every `Agenda` over the same rules."""

    _defined: ClassVar[dict[str, _Ruleset]] = {}

    def __init__(self, name: str, rules: tuple[RuleSpec, ...]) -> None:
        self.name = name
        self.rules = rules
        self.fired: list[RuleSpec] = []
        self.memo: dict[tuple[tuple[str, str | int], ...], Decision] = {}
        with _lang.ruleset(name):
            for spec in rules:
                expr = None
                for fld, cond in spec.when.items():
                    c = _condition(fld, cond)
                    expr = c if expr is None else expr & c
                if expr is None:
                    raise AgendaError(f"rule {spec.name!r} has no conditions")
                _lang.when_all(expr)(self._action(spec))

    @classmethod
    def get(cls, rules: Sequence[RuleSpec], name: str, *, check: bool = True) -> _Ruleset:
        digest = hashlib.sha256(repr(tuple(rules)).encode()).hexdigest()[:10]
        key = f"{name}_{digest}"
        if key not in cls._defined:
            if check and (problems := check_rules(rules)):
                raise RulesError(name, problems)
            cls._defined[key] = cls(key, tuple(rules))
        return cls._defined[key]

    def _action(self, spec: RuleSpec) -> Any:
        # durable inspects the arity: a one-argument action is synchronous.
        def action(_c: Any) -> None:
            self.fired.append(spec)

        action.__name__ = spec.name
        return action

    def consult(self, sid: str, facts: Facts) -> Decision:
        """Assert the facts, collect every rule that fires, retract them."""
        fact = {"sid": sid, **{k: _plain(v) for k, v in facts.items()}}
        self.fired.clear()
        try:
            _lang.assert_fact(self.name, fact)
        except _engine.MessageNotHandledException:
            with contextlib.suppress(Exception):  # leave no unmatched fact behind
                _lang.retract_fact(self.name, fact)
            raise AgendaError(f"no rule decides for {dict(facts)}") from None
        with contextlib.suppress(_engine.MessageNotHandledException):
            _lang.retract_fact(self.name, fact)
        fired, self.fired = list(self.fired), []
        if len(fired) != 1:
            names = [r.name for r in fired]
            raise AgendaError(f"{len(fired)} rules decide for {dict(facts)}: {names}")
        spec = fired[0]
        return Decision(rule=spec.name, trigger=spec.trigger, effector=spec.effector)


def _plain(v: object) -> str | int:
    value = getattr(v, "value", v)
    assert isinstance(value, str | int)
    return value


class Agenda:
    """Decides each cycle's one decision with a durable (RETE) ruleset compiled from rules.

    With `memo=True` (the default) the engine is consulted once per distinct fact
    combination and its decision reused. This is sound because rules only compare fact
    fields (RuleSpec allows nothing else) and each fact is retracted right after its
    decision, so no working memory carries over between cycles: the decision is a pure
    function of the facts. It takes the agenda from ~60-130 us to <1 us a cycle here
    (`python -m bench loop` measures both). `memo=False` consults the engine every cycle.
    """

    def __init__(
        self,
        rules: Sequence[RuleSpec] | None = None,
        name: str = DEFAULT,
        *,
        memo: bool = True,
        check: bool = True,
    ) -> None:
        """`rules` default to the shipped ruleset `name`. The ruleset is checked when it is
        first built (`rules.coverage`): every gap, overlap, unknown fact and illegal move is
        reported at once as a `RulesError`. `check=False` skips that (tests of the runtime
        `AgendaError` only)."""
        self._rs = _Ruleset.get(ruleset(name) if rules is None else rules, name, check=check)
        self.memo = memo

    @classmethod
    def named(cls, name: str) -> Agenda:
        """The shipped ruleset `name` (`rules.RULESETS`)."""
        return cls(None, name)

    @property
    def rules(self) -> tuple[RuleSpec, ...]:
        return self._rs.rules

    def doc(self, rule: str) -> str:
        """The rule's reason, in words (for traces and `membrane rules show`)."""
        return next((r.doc for r in self._rs.rules if r.name == rule), "")

    @property
    def name(self) -> str:
        return self._rs.name

    def decide(self, sid: str, facts: Facts) -> Decision:
        """Exactly one decision for these facts, or `AgendaError`."""
        if not self.memo:
            return self._rs.consult(sid, facts)
        key = tuple(sorted((k, _plain(v)) for k, v in facts.items()))
        hit = self._rs.memo.get(key)
        if hit is None:
            hit = self._rs.memo[key] = self._rs.consult(sid, facts)
        return hit

    def forget(self, sid: str) -> None:
        """Drop a finished run's state from the engine (facts are retracted each cycle, so
        there is usually none)."""
        with contextlib.suppress(Exception):
            _lang.delete_state(self.name, sid)

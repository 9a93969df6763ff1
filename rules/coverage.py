"""The coverage check of a ruleset, run when an agenda is built (pure Python, no engine).

It walks the reachable fact space: every (state, outcome) pair of `REACHABLE`, and for every
other fact a rule mentions, the values that can change a decision (0/1 for flags, every
threshold a rule compares and its neighbours for counts, every named value for enums and
text). Facts no rule mentions cannot change a decision and take one value. For each point
exactly one rule must match, its trigger must be legal in the state, and its effector must
fit where the trigger lands. Rules that never match are reported too. Every problem is
collected, not just the first (like pydantic_graph's GraphSetupError).

The walk is a few thousand points (~20 ms); `tests/harness/test_agenda.py` walks the same
space through durable-rules itself and checks that the engine agrees.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from harness.fsm import TRANSITIONS
from harness.models import Effector, RunState, Trigger
from rules.spec import FACTS, REACHABLE, Condition, RuleSpec

__all__ = ["check_rules", "fact_space", "matches"]

Facts = dict[str, str | int]

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _split(cond: Condition) -> tuple[str, str | int]:
    op, value = cond if isinstance(cond, tuple) else ("==", cond)
    return op, getattr(value, "value", value)


def matches(rule: RuleSpec, facts: Facts) -> bool:
    """Whether `rule` fires for `facts` (the same semantics as the durable ruleset)."""
    for name, cond in rule.when.items():
        op, value = _split(cond)
        have = facts.get(name)
        if have is None or type(have) is not type(value):
            return False
        if not _OPS[op](have, value):
            return False
    return True


def _static_problems(rules: Sequence[RuleSpec]) -> list[str]:
    problems, seen = [], set()
    for r in rules:
        if r.name in seen:
            problems.append(f"rule {r.name!r} is defined twice")
        seen.add(r.name)
        if not r.when:
            problems.append(f"rule {r.name!r} has no conditions")
        for name, cond in r.when.items():
            spec = FACTS.get(name)
            op, value = _split(cond)
            if spec is None:
                problems.append(f"rule {r.name!r} tests {name!r}, a fact the harness never asserts")
            elif op not in _OPS:
                problems.append(f"rule {r.name!r}: unknown operator {op!r} on {name!r}")
            elif spec.kind in ("flag", "count") and not isinstance(value, int):
                problems.append(f"rule {r.name!r}: {name!r} is a number, not {value!r}")
            elif spec.kind == "flag" and (op, value) not in {("==", 0), ("==", 1)}:
                problems.append(f"rule {r.name!r}: flag {name!r} is 0 or 1, not {op} {value!r}")
            elif spec.kind in ("enum", "text") and not isinstance(value, str):
                problems.append(f"rule {r.name!r}: {name!r} is text, not {value!r}")
            elif spec.kind == "enum" and value not in spec.values:
                problems.append(
                    f"rule {r.name!r}: {name!r} is never {value!r} "
                    f"(one of: {', '.join(spec.values)})"
                )
    return problems


def _domain(name: str, rules: Sequence[RuleSpec]) -> list[str | int]:
    spec = FACTS[name]
    named = [_split(r.when[name])[1] for r in rules if name in r.when]
    if spec.kind == "flag":
        return [0, 1]
    if spec.kind == "count":
        points = {0, 1}
        for v in named:
            if isinstance(v, int):
                points |= {max(0, v - 1), v, v + 1}
        return sorted(points)
    if spec.kind == "enum":
        return list(spec.values)
    return sorted({str(v) for v in named} | {"none", "<other>"})


def fact_space(rules: Sequence[RuleSpec]) -> Iterator[Facts]:
    """Every point of the reachable fact space that can tell the rules apart."""
    mentioned = sorted({n for r in rules for n in r.when if n in FACTS} - {"state", "outcome"})
    domains = [_domain(n, rules) for n in mentioned]
    for state, outcomes in REACHABLE.items():
        for outcome in outcomes:
            for values in itertools.product(*domains):
                facts: Facts = {"state": state.value, "outcome": outcome.value}
                facts.update(zip(mentioned, values, strict=True))
                yield facts


_LEGAL = {(t, s): d for (t, s, d) in TRANSITIONS}


def _move_problem(r: RuleSpec, state: RunState) -> str | None:
    if r.trigger is None:
        dest = state
    else:
        dest_or_none = _LEGAL.get((r.trigger, state))
        if dest_or_none is None:
            return f"rule {r.name!r} fires {r.trigger.value!r}, illegal in state {state.value}"
        dest = dest_or_none
    if dest.terminal and r.effector is not None:
        return f"rule {r.name!r} runs {r.effector.value} in the terminal state {dest.value}"
    if not dest.terminal and r.effector is None:
        return f"rule {r.name!r} leaves the run in {dest.value} with nothing to do"
    if r.trigger is None and r.effector is not Effector.SEED and r.trigger != Trigger.HALTED:
        return f"rule {r.name!r} stays in {state.value}: only the seed may run without a trigger"
    return None


def check_rules(rules: Sequence[RuleSpec]) -> list[str]:
    """Every problem of `rules`, or [] when they decide the whole space exactly once."""
    problems = _static_problems(rules)
    if problems:
        return problems
    matched: set[str] = set()
    gaps, overlaps = [], []
    by_pair: dict[tuple[str | int, str | int], list[RuleSpec]] = {}
    for facts in fact_space(rules):
        pair = (facts["state"], facts["outcome"])
        if pair not in by_pair:  # prune once per (state, outcome): the walk's inner loop
            head = {"state": pair[0], "outcome": pair[1]}
            by_pair[pair] = [
                r
                for r in rules
                if matches(
                    RuleSpec(
                        r.name,
                        {k: v for k, v in r.when.items() if k in head},
                        r.trigger,
                        r.effector,
                    ),
                    head,
                )
            ]
        hits = [r for r in by_pair[pair] if matches(r, facts)]
        matched.update(r.name for r in hits)
        if not hits:
            gaps.append(f"no rule decides for {facts}")
        elif len(hits) > 1:
            overlaps.append(f"{len(hits)} rules decide for {facts}: {[r.name for r in hits]}")
        else:
            bad = _move_problem(hits[0], RunState(str(facts["state"])))
            if bad and bad not in problems:
                problems.append(bad)
    never = [f"rule {r.name!r} never fires" for r in rules if r.name not in matched]
    return problems + gaps + overlaps + never

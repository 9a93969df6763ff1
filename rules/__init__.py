"""Rulesets for the agenda, by name. A pack picks one with `[policy] rules = "NAME"`."""

from __future__ import annotations

from rules import agenda_v1, agenda_v2
from rules.spec import RuleSpec

__all__ = ["DEFAULT", "RULESETS", "ruleset"]

DEFAULT = agenda_v1.NAME
RULESETS: dict[str, tuple[RuleSpec, ...]] = {
    agenda_v1.NAME: agenda_v1.RULES,
    agenda_v2.NAME: agenda_v2.RULES,
}


def ruleset(name: str) -> tuple[RuleSpec, ...]:
    """The rules of a shipped ruleset; KeyError names the known ones."""
    try:
        return RULESETS[name]
    except KeyError:
        raise KeyError(
            f"unknown ruleset {name!r}; shipped: {', '.join(sorted(RULESETS))}"
        ) from None

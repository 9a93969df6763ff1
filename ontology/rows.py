"""What the cached classification decides about one row, without the reasoner.

Given a row's object cells in column order — `(property, individual or None)` — and its
table's row class: the row classes it is entailed to belong to (through the definable
subclasses of `RowRule.when`), the class each property's values must be in (the most
specific requirement), and the cardinality restrictions it breaks as a closed record
(`CardinalityRule`). The value gate memoises a `RowPlan` per distinct row.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.pools import Pools
from ontology.index import CardinalityRule, OntologyIndex

__all__ = ["CardinalityBreach", "RowPlan", "plan_row"]

Cells = tuple[tuple[str, str | None], ...]  # (property, individual) per object column


@dataclass(frozen=True)
class CardinalityBreach:
    """A `rule` the row breaks: `too_many` (beyond max) or too few; `cells` are the
    positions (among the object cells) to blame: the surplus values, or the duplicates and
    values outside the qualifier that leave the row short."""

    rule: CardinalityRule
    too_many: bool
    count: int
    cells: tuple[int, ...]


@dataclass(frozen=True)
class RowPlan:
    required: dict[str, str]  # property -> the class its values must be in
    row_classes: frozenset[str]  # the row class, entailed superclasses and definable subclasses
    breaches: tuple[CardinalityBreach, ...]

    @property
    def dropped(self) -> frozenset[int]:
        """Cells left out of the reasoner's rows (surplus values of a max cardinality)."""
        return frozenset(i for b in self.breaches if b.too_many for i in b.cells)


def _member(pools: Pools, ind: str, cls: str) -> bool:
    info = pools.individuals.get(ind)
    return info is not None and cls in info.types


def plan_row(index: OntologyIndex, base_class: str, cells: Cells) -> RowPlan:
    pools = index.pools
    values: dict[str, list[str]] = {}
    for p, v in cells:
        if v is not None:
            values.setdefault(p, []).append(v)
    required: dict[str, str] = {}
    classes: set[str] = set()
    for rule in pools.row_rules:
        if rule.base_class != base_class:
            continue
        if all(any(_member(pools, v, c) for v in values.get(p, ())) for p, c in rule.when.items()):
            classes.add(rule.row_class)
            info = pools.classes.get(rule.row_class)
            classes.update(info.superclasses if info else ())
            for p, c in rule.require.items():
                cur = required.get(p)
                sup = pools.classes.get(c)
                if cur is None or (sup is not None and cur in sup.superclasses):
                    required[p] = c
    breaches = tuple(
        b for rule in index.cardinalities
        if rule.on_class == "⊤" or rule.on_class in classes
        if (b := _breach(index, rule, cells)) is not None
    )
    return RowPlan(required, frozenset(classes), breaches)


def _canonical(index: OntologyIndex, ind: str) -> str:
    return min((ind, *index.same_as.get(ind, ())))


def _breach(index: OntologyIndex, rule: CardinalityRule, cells: Cells) -> CardinalityBreach | None:
    counted = [(i, v) for i, (p, v) in enumerate(cells) if p in rule.counted]
    seen: dict[str, int] = {}  # canonical individual -> first position
    surplus: list[int] = []
    culprits: list[int] = []
    for i, v in counted:
        if v is None:
            continue
        if rule.qualifier is not None and not _member(index.pools, v, rule.qualifier):
            culprits.append(i)
            continue
        canon = _canonical(index, v)
        if canon in seen:
            culprits.append(i)  # the same individual again (maybe under another name)
        elif rule.max is not None and len(seen) >= rule.max:
            surplus.append(i)
            seen[canon] = i
        else:
            seen[canon] = i
    if rule.max is not None and len(seen) > rule.max:
        more = [i for i in culprits if cells[i][1] is not None
                and _canonical(index, cells[i][1] or "") in seen and seen[_canonical(
                    index, cells[i][1] or "")] in surplus]
        return CardinalityBreach(rule, True, len(seen), tuple(sorted(surplus + more)))
    unresolved = any(v is None for _, v in counted)
    if rule.min is not None and len(seen) < rule.min and not unresolved:
        return CardinalityBreach(rule, False, len(seen), tuple(culprits))
    return None

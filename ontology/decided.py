"""Row conflicts the cached classification already decides, so no reasoner call has to find them.

A row `r` of a class entailed to be under `C ⊑ ∀p.D` (or with `range(p) = D`) that asserts
`r p v`, where `v` has an entailed type `T` entailed disjoint with `D`, is inconsistent with
the base ontology on its own: `v` would have to be in `D ⊓ T ⊑ ⊥`. The classification gives
`T` (realisation) and the disjointness (asserted, probed, and for enumerations the nominals,
`ontology.nominals`), and the row plan gives `D` (`ontology.rows`): no HermiT call is needed
to know it.

`ontology.localise` bisects a cohort that is inconsistent to find the rows inconsistent on
their own, one consistency call per step; on the enumeration-heavy vino pack that bisection
was most of a cohort's reasoner time (a colour given a body, `Full`, which the nominals put
in `WineBody`, disjoint with `WineColor`). A row decided here is known guilty without a
call, and only the other rows are bisected: the same rows are found (consistency is
monotone and a row decided here is inconsistent alone), so the verdicts do not change.
What the violation classes say of the row (`value.disjoint` or `value.unsat`) is still
HermiT's answer.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.pools import Pools

__all__ = ["outside", "surely_inconsistent"]


def outside(pools: Pools, individual: str, cls: str) -> bool:
    """Whether the classification entails that `individual` is not a `cls`: one of its
    entailed named types is entailed disjoint with `cls` (both pool keys)."""
    info = pools.individuals.get(individual)
    if info is None:
        return False
    for t in info.types:
        ti = pools.classes.get(t)
        if ti is not None and cls in ti.disjoint_with:
            return True
    return False


def surely_inconsistent(
    pools: Pools, required: dict[str, str], values: Iterable[tuple[str, str | None]]
) -> bool:
    """Whether a row whose properties require `required` (property -> class, the row plan's
    ∀ restrictions and ranges) and that asserts `values` (property, individual; `None` for a
    cell that did not resolve) is inconsistent with the base ontology on its own."""
    return any(
        v is not None and (need := required.get(p)) is not None and outside(pools, v, need)
        for p, v in values
    )

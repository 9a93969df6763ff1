"""Which entities an artifact's tables name: shared by the prose gate (what the prose may
mention) and the scaffold tools (what a redraft must mention)."""

from __future__ import annotations

from collections.abc import Callable

from harness.models import Artifact, Cell
from harness.pack import Pack
from harness.pools import Pools

__all__ = ["key_entities", "view_of"]


def view_of(
    pack: Pack,
    pools: Pools,
    artifact: Artifact,
    resolve: Callable[[Cell], str | None] | None = None,
) -> set[str]:
    """Individuals some object-kind cell of the artifact resolves to."""
    resolve = resolve or pools.resolve
    view: set[str] = set()
    for table, rows in artifact.tables.items():
        binding = pack.tables.get(table)
        if binding is None:
            continue
        cols = [c for c, b in binding.columns.items() if b.kind == "object"]
        for row in rows:
            for c in cols:
                ind = resolve(row.get(c))
                if ind is not None:
                    view.add(ind)
    return view


def key_entities(
    pack: Pack,
    pools: Pools,
    artifact: Artifact,
    resolve: Callable[[Cell], str | None] | None = None,
) -> list[str]:
    """Individuals in the `[prose] entity_columns` cells, in first-seen order."""
    resolve = resolve or pools.resolve
    keys: dict[str, None] = {}
    for ref in pack.config.prose.entity_columns:
        table, _, column = ref.partition(".")
        for row in artifact.tables.get(table, []):
            ind = resolve(row.get(column))
            if ind is not None:
                keys.setdefault(ind, None)
    return list(keys)

"""Which entities an artifact's tables name: shared by the prose gate (what the prose may
mention) and the scaffold tools (what a redraft must mention)."""

from __future__ import annotations

from collections.abc import Callable

from harness.models import Artifact, Cell
from harness.pack import Pack
from harness.pools import Pools

__all__ = ["class_names", "key_entities", "view_of"]


def view_of(
    pack: Pack,
    pools: Pools,
    artifact: Artifact,
    resolve: Callable[[Cell], str | None] | None = None,
) -> set[str]:
    """Individuals some object-kind cell of the artifact resolves to, and the classes a
    class-kind cell names with their superclasses, as prose mentions name them
    (`Pools.class_view`, issue 27)."""
    resolve = resolve or pools.resolve
    view: set[str] = set()
    for table, rows in artifact.tables.items():
        binding = pack.tables.get(table)
        if binding is None:
            continue
        cols = [c for c, b in binding.columns.items() if b.kind == "object"]
        classes = [c for c, b in binding.columns.items() if b.kind == "class"]
        for row in rows:
            for c in cols:
                ind = resolve(row.get(c))
                if ind is not None:
                    view.add(ind)
            for c in classes:
                view.update(class_names(pools, row.get(c)))
    return view


def class_names(pools: Pools, cell: Cell) -> tuple[str, ...]:
    """The prose mentions true of a class-kind cell: its class and the superclasses prose
    may mention, by IRI; () for a cell naming no mentionable class."""
    if not pools.mentionable_classes:
        return ()
    cls = pools.resolve_class(cell)
    return () if cls is None else pools.class_view(cls)


def key_entities(
    pack: Pack,
    pools: Pools,
    artifact: Artifact,
    resolve: Callable[[Cell], str | None] | None = None,
) -> list[str]:
    """Individuals in the `[prose] entity_columns` cells (a class-kind cell: its class,
    by IRI), in first-seen order."""
    resolve = resolve or pools.resolve
    keys: dict[str, None] = {}
    for ref in pack.config.prose.entity_columns:
        table, _, column = ref.partition(".")
        binding = pack.tables.get(table)
        col = binding.columns.get(column) if binding else None
        for row in artifact.tables.get(table, []):
            if col is not None and col.kind == "class":
                ind = next(iter(class_names(pools, row.get(column))), None)
            else:
                ind = resolve(row.get(column))
            if ind is not None:
                keys.setdefault(ind, None)
    return list(keys)

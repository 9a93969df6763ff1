"""Pool tables: the ontology's classes and their members, as a table assertions can join.

`_pool(class, individual, name, canonical)` has one row per class C, individual I entailed
to be a member of C (asserted or inferred by the reasoner), and name N of I: its IRI
fragment, each of its labels (rdfs:label, skos:prefLabel, skos:altLabel) and each pack
alias. `canonical` is I's canonical form (the pack's `[ontology] canonical`: preferred label
or IRI fragment). So "the column's value names a member of class C" is a join:

    JOIN _pool AS p ON p.class = 'ImagingEquipmentType' AND p.name = e.equipment_type

Matching is exact on the cell's text. The cells RI_GATE sees are canonical already (the
value gate resolved every spelling, the loop wrote its canonical form back), so a join on
`p.canonical` (or `p.name`) sees every spelling of a resolvable cell the same way. The
table is built once per gate from the `Pools` the ontology layer computed (classified once
per content hash) and is read-only data.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa  # type: ignore[import-untyped]

from harness.pools import Pools

__all__ = ["POOL_TABLE", "create_pool_table"]

POOL_TABLE = "_pool"


def _rows(pools: Pools) -> tuple[list[str], list[str], list[str], list[str]]:
    classes: list[str] = []
    members: list[str] = []
    names: list[str] = []
    canonical: list[str] = []
    aliases: dict[str, list[str]] = {}
    for text, ind in pools.aliases.items():
        aliases.setdefault(ind, []).append(text)
    for cls in sorted(pools.classes):
        for ind in pools.classes[cls].members:
            info = pools.individuals.get(ind)
            labels = info.labels if info is not None else ()
            form = pools.canonical(ind)
            for name in dict.fromkeys((ind, *labels, *aliases.get(ind, ()))):
                classes.append(cls)
                members.append(ind)
                names.append(name)
                canonical.append(form)
    return classes, members, names, canonical


def create_pool_table(con: duckdb.DuckDBPyConnection, pools: Pools) -> None:
    """Create and fill `_pool` in `con` (Arrow; no value is spliced into SQL)."""
    classes, members, names, canonical = _rows(pools)
    data = pa.table({
        "class": pa.array(classes, pa.string()),
        "individual": pa.array(members, pa.string()),
        "name": pa.array(names, pa.string()),
        "canonical": pa.array(canonical, pa.string()),
    })
    con.execute(f'CREATE TABLE {POOL_TABLE} ("class" VARCHAR NOT NULL, '
                '"individual" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, '
                '"canonical" VARCHAR NOT NULL)')
    con.register("_pool_arrow", data)
    try:
        con.execute(f"INSERT INTO {POOL_TABLE} SELECT * FROM _pool_arrow")
    finally:
        con.unregister("_pool_arrow")

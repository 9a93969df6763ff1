"""Pool tables: the ontology's classes and their members, as a table assertions can join.

`_pool(class, individual, name)` has one row per class C, individual I entailed to be a
member of C (asserted or inferred by the reasoner), and name N of I: its IRI fragment and
each of its labels (rdfs:label, skos:prefLabel, skos:altLabel). So "the column's value
names a member of class C" is a join:

    JOIN _pool AS p ON p.class = 'ImagingEquipmentType' AND p.name = e.equipment_type

Matching is exact on the cell's text (the value gate's looser, case-insensitive label
matching is its own business). The table is built once per gate from the `Pools` the
ontology layer computed (classified once per content hash) and is read-only data.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa  # type: ignore[import-untyped]

from harness.pools import Pools

__all__ = ["POOL_TABLE", "create_pool_table"]

POOL_TABLE = "_pool"


def _rows(pools: Pools) -> tuple[list[str], list[str], list[str]]:
    classes: list[str] = []
    members: list[str] = []
    names: list[str] = []
    for cls in sorted(pools.classes):
        for ind in pools.classes[cls].members:
            info = pools.individuals.get(ind)
            labels = info.labels if info is not None else ()
            for name in dict.fromkeys((ind, *labels)):
                classes.append(cls)
                members.append(ind)
                names.append(name)
    return classes, members, names


def create_pool_table(con: duckdb.DuckDBPyConnection, pools: Pools) -> None:
    """Create and fill `_pool` in `con` (Arrow; no value is spliced into SQL)."""
    classes, members, names = _rows(pools)
    data = pa.table({
        "class": pa.array(classes, pa.string()),
        "individual": pa.array(members, pa.string()),
        "name": pa.array(names, pa.string()),
    })
    con.execute(f'CREATE TABLE {POOL_TABLE} ("class" VARCHAR NOT NULL, '
                '"individual" VARCHAR NOT NULL, "name" VARCHAR NOT NULL)')
    con.register("_pool_arrow", data)
    try:
        con.execute(f"INSERT INTO {POOL_TABLE} SELECT * FROM _pool_arrow")
    finally:
        con.unregister("_pool_arrow")

"""RI_GATE: relational integrity of a cohort of artifacts in one warm, in-memory DuckDB.

* `ddl`         the pack's spine read with DuckDB's own parser and catalog
* `assertions`  the pack's `assertions/*.sql` (dbt-style SELECTs of violating rows) and
                their header format — see that module's docstring for the convention
* `bounds`      `[bounds]` of pack.toml: row-count and aggregate bounds
* `pool_tables` `_pool(class, individual, name)`: the ontology's class members
* `staging`     a cohort as one Arrow table, loaded into the wide `_stage` table
* `checks`      every constraint and aggregate bound compiled into one query
* `database`    the gate's warm database (stage, spine views, pool table, assertion views)
* `gate`        `RiGate.from_pack(pack, pools)`, `judge(candidates)`, `judge_transient`
* `verdicts`    findings turned into critiques and rejected cells

Critique codes: `ri.type`, `ri.not_null`, `ri.pk_duplicate`, `ri.fk_orphan`, `ri.check`,
`ri.row_count`, `ri.aggregate`, `ri.assertion_error`, plus each assertion's own code.
"""

from effectors.ri_gate.gate import RiGate

__all__ = ["RiGate"]

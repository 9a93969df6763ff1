"""RI_GATE: relational integrity of a cohort of artifacts in one transient DuckDB.

* `ddl`        the pack's spine read with DuckDB's own parser and catalog
* `assertions` the pack's `assertions/*.sql` (dbt-style SELECTs of violating rows) and
               their header format — see that module's docstring for the convention
* `staging`    loading a cohort into unconstrained staging tables through Arrow
* `checks`     one query per constraint: not-null, key duplicates, FK orphans, CHECK
* `gate`       `RiGate.from_pack(pack)` and `RiGate.judge(candidates)`

Critique codes: `ri.type`, `ri.not_null`, `ri.pk_duplicate`, `ri.fk_orphan`, `ri.check`,
`ri.assertion_error`, plus each assertion's own code.
"""

from effectors.ri_gate.gate import RiGate

__all__ = ["RiGate"]

"""The three ways RI_GATE judges — a whole cohort in the warm database, a lone artifact in
the warm database, a fresh transient database per artifact — give identical verdicts, and
the warm database keeps nothing of one cohort for the next."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.ri_gate import RiGate
from harness.corpus import read_corpus
from harness.models import Artifact
from tests.effectors.test_ri_gate import (
    FACILITY,
    art,
    facility_gate,
    flawed_cohort,
    make_pack,
)

SPINE = "CREATE TABLE t (id VARCHAR PRIMARY KEY, n INTEGER CHECK (n < 10));"
FAILS = """-- code: ri.n_small
-- severity: error
-- message: n {n} is big
-- table: t
SELECT _artifact, _row, CAST(id AS INTEGER) AS n FROM t WHERE CAST(id AS INTEGER) > n
"""


def staged_rows(gate: RiGate) -> int:
    ((n,),) = gate._warm().con.execute("SELECT count(*) FROM _stage").fetchall()
    return int(n)


def catalog(gate: RiGate) -> list[tuple[object, ...]]:
    return gate._warm().con.execute(
        "SELECT table_name, table_type FROM information_schema.tables ORDER BY ALL").fetchall()


@pytest.mark.slow
@pytest.mark.java
def test_demo_corpus_batch_equals_lone_and_transient(tmp_path: Path) -> None:
    gate = facility_gate(tmp_path)
    demo = read_corpus(FACILITY / "corpus" / "demo.jsonl", gate.pack).artifacts
    batch = gate.judge(demo)
    assert sum(not v.passed for v in batch) >= 10  # the demo's relational defects are there
    assert [v for a in demo for v in gate.judge([a])] == batch
    flawed = [i for i, v in enumerate(batch) if v.critiques]
    sample = sorted(set(flawed) | set(range(0, len(demo), 12)))
    assert gate.judge_transient([demo[i] for i in sample]) == [batch[i] for i in sample]


@pytest.mark.java
def test_flawed_cohort_transient_equals_batch(tmp_path: Path) -> None:
    gate = facility_gate(tmp_path)
    cohort = flawed_cohort()
    assert gate.judge_transient(cohort) == gate.judge(cohort)


def test_warm_database_keeps_nothing_between_cohorts(tmp_path: Path) -> None:
    gate = RiGate.from_pack(make_pack(tmp_path, SPINE, {"t": ["id"]}))
    before = catalog(gate)
    first = art("a", t=[{"id": "1", "n": 1}, {"id": "2", "n": 20}])
    second = art("b", t=[{"id": "1", "n": 1}])  # same key as first's row 0: no duplicate
    v1, v2 = gate.judge([first]), gate.judge([second])
    assert staged_rows(gate) == 0 and catalog(gate) == before
    assert [c.code for c in v1[0].critiques] == ["ri.check"] and v2[0].critiques == ()
    fresh = RiGate.from_pack(gate.pack)
    assert fresh.judge([second]) == v2 and fresh.judge([first]) == v1


def test_a_failing_cohort_leaves_the_database_clean(tmp_path: Path) -> None:
    gate = RiGate.from_pack(make_pack(tmp_path, SPINE, {"t": ["id"]}, {"f.sql": FAILS}))
    broken = art("x", t=[{"id": "zz", "n": 1}])  # the assertion's CAST fails: isolated
    ok = art("y", t=[{"id": "5", "n": 1}])
    v_broken, v_ok = gate.judge([broken, ok])
    assert [c.code for c in v_broken.critiques] == ["ri.assertion_error"]
    assert [c.code for c in v_ok.critiques] == ["ri.n_small"]
    assert staged_rows(gate) == 0
    assert gate.judge([ok]) == [v_ok]


def test_crash_mid_cohort_still_clears_the_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = RiGate.from_pack(make_pack(tmp_path, SPINE, {"t": ["id"]}))
    a = art("a", t=[{"id": "1", "n": 1}])

    def boom(*_: object) -> list[object]:
        raise RuntimeError("engine hiccup")

    with monkeypatch.context() as m:
        m.setattr(type(gate.plan), "run", boom)
        with pytest.raises(RuntimeError):
            gate.judge([a])
    assert staged_rows(gate) == 0
    assert gate.judge([a])[0].critiques == ()


def test_close_and_reopen(tmp_path: Path) -> None:
    gate = RiGate.from_pack(make_pack(tmp_path, SPINE, {"t": ["id"]}))
    a = art("a", t=[{"id": "1", "n": 50}])
    before = gate.judge([a])
    gate.close()
    assert gate.judge([a]) == before  # a closed gate opens a new warm database on demand
    gate.close()


def test_cohort_order_does_not_matter(tmp_path: Path) -> None:
    gate = RiGate.from_pack(make_pack(tmp_path, SPINE, {"t": ["id"]}))
    cohort: list[Artifact] = [
        art(f"a{i}", t=[{"id": str(j), "n": (i * j) % 13} for j in range(i % 4 + 1)])
        for i in range(9)
    ]
    forward = gate.judge(cohort)
    assert list(reversed(gate.judge(list(reversed(cohort))))) == forward
    assert gate.judge_transient(cohort) == forward

"""The pool table `_pool(class, individual, name)`: "column values within a hypernym" as a
join in a pack assertion, against a real DuckDB; and the facility pack's own pool assertion."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.ri_gate import RiGate
from harness.errors import PackError
from harness.models import Artifact
from harness.pools import ClassInfo, IndividualInfo, Pools
from tests.effectors.test_ri_gate import art, codes, facility_artifact, facility_gate, make_pack

SPINE = "CREATE TABLE pets (id VARCHAR PRIMARY KEY, kind VARCHAR, owner VARCHAR);"
WITHIN = """-- code: ri.kind_within_animal
-- severity: error
-- message: {kind} is not an Animal
-- table: pets
-- columns: kind
SELECT p._artifact, p._row, p.kind
FROM pets AS p
WHERE p.kind IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM _pool AS a WHERE a.class = 'Animal' AND a.name = p.kind
)
"""
POOLS = Pools(
    ontology_hash="test",
    individuals={
        "dog": IndividualInfo(name="dog", labels=("Dog", "hound"), types=("Animal", "Canine")),
        "cat": IndividualInfo(name="cat", labels=("Cat",), types=("Animal",)),
        "oak": IndividualInfo(name="oak", labels=("Oak",), types=("Plant",)),
    },
    classes={  # `dog` is an Animal only by inference (Canine ⊑ Animal): members are entailed
        "Animal": ClassInfo(name="Animal", members=("cat", "dog")),
        "Canine": ClassInfo(name="Canine", members=("dog",), superclasses=("Animal",)),
        "Plant": ClassInfo(name="Plant", members=("oak",)),
    },
)


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> RiGate:
    pack = make_pack(tmp_path_factory.mktemp("pets"), SPINE, {"pets": ["id"]}, {"w.sql": WITHIN})
    return RiGate.from_pack(pack, POOLS)


def pets(*kinds: str | None) -> Artifact:
    return art(pets=[{"id": str(i), "kind": k, "owner": "o"} for i, k in enumerate(kinds)])


def test_pool_table_rows(gate: RiGate) -> None:
    con = gate._warm().con
    rows = con.execute('SELECT "class", individual, name FROM _pool ORDER BY ALL').fetchall()
    assert ("Animal", "dog", "hound") in rows and ("Canine", "dog", "Dog") in rows
    assert ("Animal", "oak", "Oak") not in rows
    assert len(rows) == len(set(rows)) == 10  # Animal: cat 2 + dog 3 names; Canine 3; Plant 2


def test_values_within_the_hypernym_pass_by_fragment_or_label(gate: RiGate) -> None:
    (v,) = gate.judge([pets("dog", "Dog", "hound", "cat", "Cat", None)])
    assert v.critiques == ()


def test_values_outside_the_hypernym_are_findings(gate: RiGate) -> None:
    (v,) = gate.judge([pets("cat", "oak", "Oak", "unicorn", "dog'; DROP TABLE _pool; --")])
    assert [(c.code, c.location.row, c.location.column) for c in v.critiques] == [
        ("ri.kind_within_animal", 1, "kind"), ("ri.kind_within_animal", 2, "kind"),
        ("ri.kind_within_animal", 3, "kind"), ("ri.kind_within_animal", 4, "kind"),
    ]
    assert not v.passed
    assert gate.judge([pets("dog")])[0].critiques == ()  # the pool table is intact


def test_an_assertion_reading_pools_needs_them(tmp_path: Path) -> None:
    pack = make_pack(tmp_path, SPINE, {"pets": ["id"]}, {"w.sql": WITHIN})
    with pytest.raises(PackError) as info:
        RiGate.from_pack(pack)
    assert info.value.file is not None and info.value.file.endswith("w.sql")
    assert "_pool" in info.value.message and "pools" in (info.value.hint or "")


@pytest.mark.java
def test_facility_radiation_check_needs_imaging_equipment(tmp_path: Path) -> None:
    gate = facility_gate(tmp_path)
    a = facility_artifact()
    a.tables["equipment"][0]["equipment_type"] = "CT scanner"  # ImagingEquipmentType
    a.tables["equipment"][1]["equipment_type"] = "VAV box"  # HVACEquipmentType
    a.tables["equipment"][2]["equipment_type"] = "TBD"  # unknown: the value gate's finding
    for task, activity in zip(a.tables["maintenance"][:3],
                              ("dosimetry calibration", "radiation leakage survey",
                               "dosimetry calibration"), strict=True):
        task["activity"] = activity
    (v,) = gate.judge([a])
    assert codes(v) == ["ri.activity_equipment_kind"]
    (c,) = v.critiques
    assert (c.severity, c.location.table, c.location.row, c.location.column) == (
        "warn", "maintenance", 1, "activity")
    assert "VAV box" in c.message and v.passed

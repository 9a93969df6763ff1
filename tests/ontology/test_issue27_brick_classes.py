"""Issue 27 on the genuine Brick Schema 1.4 (`bench.brick`: the pinned, hash-checked wheel in
the bench cache; skipped when it is not there): class-valued columns under Brick's roots, a
deprecated Location class naming its REC replacement, and Brick's fragment collisions (its
own namespace keeps the fragment)."""

from __future__ import annotations

import shutil

import pytest

from bench.brick import brick_ttl
from bench.class_columns import _pack_toml
from effectors.value_gate import ValueGate
from harness.models import Artifact
from harness.pack import load_pack

pytestmark = [pytest.mark.java, pytest.mark.slow]


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> ValueGate:
    ttl = brick_ttl()
    if ttl is None:
        pytest.skip("Brick.ttl 1.4 is not in the bench cache (bench.brick.brick_ttl(fetch=True))")
    root = tmp_path_factory.mktemp("brick") / "pack"
    root.mkdir()
    shutil.copy(ttl, root / "Brick.ttl")
    (root / "pack.toml").write_text(_pack_toml())
    (root / "spine.sql").write_text("\n".join(
        f"CREATE TABLE {t} (id VARCHAR PRIMARY KEY, type VARCHAR);"
        for t in ("locations", "equipment", "points")))
    return ValueGate.from_pack(load_pack(root), tmp_path_factory.mktemp("cache"))


def test_brick_class_cells(gate: ValueGate) -> None:
    a = Artifact(id="a", tables={
        "locations": [{"id": "L1", "type": "Mechanical_Room"}],
        "equipment": [{"id": "E1", "type": "Air Handling Unit"}, {"id": "E2", "type": "AHU"},
                      {"id": "E3", "type": "brick:Chiller"},
                      {"id": "E4", "type": "Supply_Air_Temperature_Sensor"},
                      {"id": "E5", "type": "Air Handlng Unit"}],
        "points": [{"id": "P1", "type": "Supply Air Temperature Sensor"}],
    })
    v = gate.judge([a])[0]
    found = [(c.code, c.severity, c.location.table, c.location.row) for c in v.critiques]
    assert found == [
        ("value.deprecated", "warn", "locations", 0),
        ("value.outside_root", "error", "equipment", 3),
        ("value.unknown", "error", "equipment", 4),
    ], v.critiques
    deprecated, outside, typo = v.critiques
    assert "rec:" in (deprecated.fix_hint or "")  # Brick 1.4: isReplacedBy a REC class
    assert outside.expected == "Equipment"
    assert "Air_Handling_Unit" in (typo.fix_hint or "")


def test_brick_fragment_collisions_keep_brick_names(gate: ValueGate) -> None:
    pools = gate.pools
    assert len(pools.collisions) > 10
    for frag, iris in pools.collisions.items():
        brick = "https://brickschema.org/schema/Brick#" + frag
        if brick in iris and frag in pools.classes:
            assert pools.classes[frag].iri == brick

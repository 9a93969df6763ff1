"""The issue 28 escape on the Pizza test pack: a trade-name alias with ® for the deep pan
base, at a diameter the spine's keyed CHECK forbids, fails `ri.check` exactly like the
preferred label (before canonical cells it passed RI_GATE and was committed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from effectors.registry import GateContext, build_gate
from harness.canonical import apply_canonical
from harness.models import Artifact
from harness.pack import load_pack
from ontology import load_pools
from tests.conftest import PIZZA_OWL, ROOT

pytestmark = pytest.mark.java


def test_a_trade_name_cannot_escape_the_keyed_check(tmp_path: Path) -> None:
    dest = tmp_path / "pizza"
    shutil.copytree(ROOT / "tests" / "packs" / "pizza", dest,
                    ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
    shutil.copy(PIZZA_OWL, dest / "ontology" / "pizza.owl")
    pack = load_pack(dest)
    ctx = GateContext(pack=pack, pools=load_pools(pack, tmp_path / "c"), cache_dir=tmp_path / "c")
    value_gate, ri_gate = build_gate("value_gate", ctx), build_gate("ri_gate", ctx)
    bases = ["deep pan base", "Chicago Deep Dish®", "CHICAGO DEEP DISH™", "Deep pan base.",
             "deep_pan"]
    cands = [Artifact(id=f"p{i}", tables={"pizzas": [{
        "pizza_id": "P1", "style": "vegetarian", "base": b, "topping": "Fior di Latte",
        "diameter_cm": 40}]}) for i, b in enumerate(bases)]
    values = value_gate.judge(cands)
    assert all(v.passed for v in values)
    canon = [apply_canonical(a, v.canonical) for a, v in zip(cands, values, strict=True)]
    assert {a.tables["pizzas"][0]["base"] for a in canon} == {"deep pan base"}
    assert {a.tables["pizzas"][0]["topping"] for a in canon} == {"mozzarella"}
    for v in ri_gate.judge(canon):
        assert [c.code for c in v.critiques] == ["ri.check"]

"""The value gate on the Pizza ontology (real axioms no one here wrote), through HermiT."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from effectors.value_gate import ValueGate
from harness.models import Artifact
from harness.pack import load_pack

pytestmark = pytest.mark.java


@pytest.fixture(scope="module")
def gate(pizza_pack_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> ValueGate:
    return ValueGate.from_pack(load_pack(pizza_pack_dir), tmp_path_factory.mktemp("cache"))


def row(pid: str, style: str, base: str, topping: str, cm: object = 30) -> dict[str, object]:
    return {"pizza_id": pid, "style": style, "base": base, "topping": topping, "diameter_cm": cm}


def test_pools_come_from_the_classified_pizza_ontology(gate: ValueGate) -> None:
    pools = gate.pools
    assert {"MeatTopping", "PizzaTopping", "Food"} <= set(pools.individuals["ham"].types)
    assert "VegetarianTopping" in pools.individuals["mozzarella"].types  # entailed (covering)
    assert "VegetarianTopping" in pools.classes["HamTopping"].disjoint_with
    assert pools.required_classes("PizzaRow", {"hasStyle": "vegetarian"})["hasToppingValue"] == (
        "VegetarianTopping"
    )


def test_pizza_codes(gate: ValueGate) -> None:
    rows = [
        row("P0", "vegetarian", "thin and crispy base", "mozzarella"),
        row("P1", "vegetarian", "deep pan base", "ham"),  # meat on a vegetarian pizza
        row("P2", "vegetarian", "deep pan base", "anchovies"),  # fish on a vegetarian pizza
        row("P3", "meat lover", "deep pan base", "deep pan base"),  # a base as topping
        row("P4", "meat lover", "mozzarella", "ham"),  # a topping as base
        row("P5", "meat lover", "thin_base", "ham", cm=70),  # out of the datatype facet
        row("P6", "meat lover", "thin_base", "pineapple"),  # not in the pools
    ]
    (v,) = gate.judge([Artifact(id="pizzas", tables={"pizzas": rows})])
    found = [(c.code, c.location.row, c.location.column, c.expected) for c in v.critiques]
    assert found == [
        ("value.disjoint", 1, "topping", "VegetarianTopping"),
        ("value.disjoint", 2, "topping", "VegetarianTopping"),
        ("value.disjoint", 3, "topping", "PizzaTopping"),
        ("value.disjoint", 4, "base", "PizzaBase"),
        ("value.range", 5, "diameter_cm", "xsd:integer ≥ 20 and ≤ 50"),
        ("value.unknown", 6, "topping", "PizzaTopping"),
    ]
    assert not any(c.row == 0 for c in v.rejected)


def test_clean_pizzas_are_admitted(gate: ValueGate) -> None:
    rows = [
        row("P0", "vegetarian", "thin and crispy base", "mushrooms"),
        row("P1", "meat lover", "deep pan base", "ham"),
        row("P2", "meat lover", "deep_pan", "tomato", cm="42"),
    ]
    (v,) = gate.judge([Artifact(id="ok", tables={"pizzas": rows})])
    assert v.critiques == () and v.passed


def test_two_bases_where_the_ontology_allows_one(pizza_pack_dir: Path, tmp_path: Path) -> None:
    """A second base column bound to the same (functional) property: a pizza with two
    different bases is a `value.cardinality` on the surplus cell; the same base twice is fine."""
    dest = tmp_path / "pizza2"
    shutil.copytree(pizza_pack_dir, dest)
    toml = dest / "pack.toml"
    base_col = 'base = { kind = "object", property = "hasBaseValue" }'
    toml.write_text(toml.read_text().replace(
        base_col, base_col + '\nextra_base = { kind = "object", property = "hasBaseValue" }'))
    gate = ValueGate.from_pack(load_pack(dest), tmp_path / "cache")
    rows = [
        {**row("P0", "meat lover", "deep pan base", "ham"), "extra_base": "deep_pan"},
        {**row("P1", "meat lover", "deep pan base", "ham"), "extra_base": "thin and crispy base"},
    ]
    (v,) = gate.judge([Artifact(id="bases", tables={"pizzas": rows})])
    assert [(c.code, c.location.row, c.location.column, c.expected) for c in v.critiques] == [
        ("value.cardinality", 1, "extra_base", "≤1 hasBaseValue"),
    ]
    assert "Functional(hasBaseValue)" in v.critiques[0].evidence
    assert [(r.row, r.column) for r in v.rejected] == [(1, "extra_base")]


def test_pizza_rows_are_independent(gate: ValueGate) -> None:
    assert gate.index.rows_independent, gate.index.independence_note

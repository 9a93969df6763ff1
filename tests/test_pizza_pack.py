"""The pizza pack (packs/pizza) on the Manchester Pizza ontology, a third-party ontology: its
files are what its generator writes, `pack check` finds nothing, `pack test` passes, and on its
generated demo corpus (issue 18, done-when 4) every seeded defect is caught by the gate that
owns it (recall 100%, nothing else raised) and the clean originals get no critique; the demo
commits >= 95% (slow)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from effectors.registry import GateContext, build_gate
from harness.corpus import read_corpus
from harness.pack import Pack, load_pack
from harness.packcheck import check_pack
from harness.packtest import run_pack_tests
from harness.report import audit
from ontology import load_pools
from tests.conftest import PIZZA_OWL, ROOT

PIZZA = ROOT / "packs" / "pizza"
Key = tuple[object, ...]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pizza_generate", PIZZA / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pizza-corpus")
    _generator().corpus(11, 120, out)  # what `make demo PACK=pizza` generates
    return out


@pytest.fixture(scope="module")
def pizza_pack() -> Pack:
    return load_pack(PIZZA)


def test_the_shipped_files_are_what_the_generator_writes(tmp_path: Path) -> None:
    gen = _generator()
    assert (PIZZA / "ontology" / "pizza_menu.owl").read_text(encoding="utf-8") == gen.owl()
    gen.references(tmp_path)
    shipped = sorted(p.name for p in (PIZZA / "references").glob("*.txt"))
    assert shipped == sorted(p.name for p in tmp_path.glob("*.txt"))
    for name in shipped:
        assert (PIZZA / "references" / name).read_bytes() == (tmp_path / name).read_bytes()


def test_the_third_party_ontology_ships_unmodified_with_its_notice() -> None:
    third = PIZZA / "ontology" / "third-party"
    assert (third / "pizza.owl").read_bytes() == PIZZA_OWL.read_bytes()
    notice = (third / "NOTICE").read_text(encoding="utf-8")
    assert "CC BY 3.0" in notice and "creativecommons.org/licenses/by/3.0" in notice
    assert "4922ecb" in notice and "unmodified" in notice


def test_the_corpus_is_deterministic_and_seeds_every_defect_kind(
    corpus_dir: Path, tmp_path: Path
) -> None:
    _generator().corpus(11, 120, tmp_path)
    for name in ("demo.jsonl", "demo.clean.jsonl", "demo.truth.jsonl"):
        assert (tmp_path / name).read_bytes() == (corpus_dir / name).read_bytes()
    truth = [json.loads(x) for x in (corpus_dir / "demo.truth.jsonl").read_text().splitlines()]
    kinds = Counter(t["defect"] for t in truth)
    assert set(kinds) == {"veg_meat", "veg_label", "two_bases", "unknown_topping",
                          "placeholder", "price_order", "prose_unknown", "prose_count",
                          "prose_truncated"}
    assert min(kinds.values()) >= 5


def _key(gate: str, code: str, d: dict[str, Any]) -> Key:
    if code.startswith("prose."):
        return (gate, code, d.get("observed") if code == "prose.unknown_entity" else None)
    return (gate, code, d.get("table"), d.get("row"), d.get("column"))


def _critiques(pack: Pack, path: Path, cache: Path) -> list[tuple[str, Counter[Key]]]:
    corpus = read_corpus(path, pack)
    assert not corpus.errors and len(corpus.artifacts) == 120
    pools = load_pools(pack, cache)
    ctx = GateContext(pack=pack, pools=pools, cache_dir=cache)
    gates = [build_gate(n, ctx) for n in ("value_gate", "ri_gate", "prose_gate")]
    out = []
    for art, verdicts in zip(corpus.artifacts, audit(gates, corpus.artifacts), strict=True):
        got: Counter[Key] = Counter()
        for gate, v in verdicts.items():
            assert not v.crashed, (art.id, gate, v.critiques)
            for c in v.critiques:
                if c.severity == "info":
                    continue
                loc = c.location
                got[_key(gate, c.code, {"table": loc.table, "row": loc.row,
                                        "column": loc.column, "observed": c.observed})] += 1
        out.append((art.id, got))
    return out


@pytest.mark.java
def test_ground_truth_recall_is_total_and_nothing_else_is_raised(
    pizza_pack: Pack, corpus_dir: Path, tmp_path: Path
) -> None:
    truth: dict[str, Counter[Key]] = {}
    for line in (corpus_dir / "demo.truth.jsonl").read_text().splitlines():
        t = json.loads(line)
        truth.setdefault(t["artifact_id"], Counter())[_key(t["gate"], t["code"], t)] += 1
    missed: list[tuple[str, Key]] = []
    spurious: list[tuple[str, Key]] = []
    for art_id, got in _critiques(pizza_pack, corpus_dir / "demo.jsonl", tmp_path):
        want = truth.get(art_id, Counter())
        missed += [(art_id, k) for k in want - got]
        spurious += [(art_id, k) for k in got - want]
    total = sum(sum(c.values()) for c in truth.values())
    assert total > 150
    assert missed == [], f"recall < 100%: {len(missed)} of {total} missed, e.g. {missed[:5]}"
    assert spurious == [], f"{len(spurious)} critiques no seeded defect explains: {spurious[:5]}"


@pytest.mark.java
def test_the_clean_originals_raise_no_critique(
    pizza_pack: Pack, corpus_dir: Path, tmp_path: Path
) -> None:
    raised = [(a, k) for a, got in _critiques(pizza_pack, corpus_dir / "demo.clean.jsonl",
                                              tmp_path) for k in got]
    assert raised == []


@pytest.mark.java
def test_pack_check_is_clean_and_pack_test_passes() -> None:
    report = check_pack(PIZZA)
    assert [(p.code, p.message) for p in report.problems] == []
    tests = run_pack_tests(PIZZA)
    assert len(tests.results) >= 8 and tests.failed == []


@pytest.mark.java
def test_a_wrong_expectation_fails_the_pack_test(tmp_path: Path) -> None:
    dest = tmp_path / "pizza"
    shutil.copytree(PIZZA, dest, ignore=shutil.ignore_patterns("corpus", "demo", "__pycache__"))
    cases = (dest / "tests" / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(cases[0])  # the clean menu, now said to get a disjoint recipe
    first["expect"] = [{"code": "value.disjoint", "cell": "pizzas[0].recipe"}]
    (dest / "tests" / "examples.jsonl").write_text(json.dumps(first) + "\n", encoding="utf-8")
    assert len(run_pack_tests(dest).failed) == 1


@pytest.mark.java
@pytest.mark.slow
def test_the_vegetarian_split_is_the_one_hermit_infers_from_pizza(tmp_path: Path) -> None:
    """Our VegetarianRecipe / NonVegetarianRecipe split is Pizza's own VegetarianPizza /
    NonVegetarianPizza, which HermiT infers from each named pizza's closure axiom when the
    recipes are typed with their Pizza classes (American, Margherita, ...)."""
    gen = _generator()
    dest = tmp_path / "pizza"
    shutil.copytree(PIZZA, dest, ignore=shutil.ignore_patterns("corpus", "demo", "__pycache__"))
    (dest / "ontology" / "pizza_menu.owl").write_text(gen.owl(typed=True), encoding="utf-8")
    toml = dest / "pack.toml"  # 212 s at load ~6.5 on two cores: room beyond the 300 s default
    ns, text = 'namespace = "http://membrane.dev/packs/pizza#"\n', toml.read_text(encoding="utf-8")
    assert ns in text
    toml.write_text(text.replace(ns, ns + "reasoner_timeout_s = 1200\n"), encoding="utf-8")
    pools = load_pools(load_pack(dest), tmp_path / "cache")
    for recipe in gen.RECIPES:
        veg = recipe in gen.VEGETARIAN
        assert pools.is_member(recipe, "VegetarianPizza") is veg, recipe
        assert pools.is_member(recipe, "NonVegetarianPizza") is not veg, recipe
    assert len(gen.VEGETARIAN) == 9


@pytest.mark.java
@pytest.mark.slow
def test_the_demo_commits_at_least_95_percent(corpus_dir: Path, tmp_path: Path) -> None:
    from harness.cli import main

    ws = tmp_path / "ws"
    ws.mkdir()
    code = main(["batch", str(corpus_dir / "demo.jsonl"), "--pack", str(PIZZA),
                 "--workspace", str(ws)])
    assert code in (0, 3)  # 3: some run did not commit
    committed = (ws / "current" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(committed) >= 114, f"{len(committed)}/120 committed"
    assert all(re.fullmatch(r"menu-\d{4}", json.loads(x)["id"]) for x in committed)

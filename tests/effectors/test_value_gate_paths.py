"""The fast path (cached classification, per-row memo, one warm HermiT call per cohort) and
the naive path (each artifact alone, every row realised, a fresh owlready2 `sync_reasoner`
per call) give identical verdicts — on the demo corpus (a sample: the naive path costs
~1 s a call; `MEMBRANE_FULL_EQUIVALENCE=1` runs all 240), the pizza, crew and tiny packs.
The cold fallback (a JVM per call) agrees too."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from effectors.value_gate import ValueGate
from harness.models import Artifact
from harness.pack import Pack, load_pack
from ontology import HermitRunner
from ontology.naive import OwlreadyReasoner
from ontology.warm import WarmHermit
from tests.conftest import FACILITY, PIZZA_OWL, ROOT

pytestmark = [pytest.mark.java, pytest.mark.slow]

DEMO = FACILITY / "corpus" / "demo.jsonl"


def paths_agree(pack: Pack, cache: Path, cohort: list[Artifact], ids: set[str] | None = None
                ) -> None:
    fast = ValueGate.from_pack(pack, cache, WarmHermit())
    naive = ValueGate.from_pack(pack, cache, OwlreadyReasoner(), naive=True)
    batch = fast.judge(cohort)
    chosen = [(a, v) for a, v in zip(cohort, batch, strict=True) if ids is None or a.id in ids]
    for a, v in chosen:
        assert naive.judge([a]) == [v], a.id
    assert fast.judge(cohort) == batch  # answered from the memo the second time


def demo_sample() -> tuple[list[Artifact], set[str]]:
    corpus = [Artifact.model_validate_json(line) for line in DEMO.read_text().splitlines()]
    if os.environ.get("MEMBRANE_FULL_EQUIVALENCE") == "1":
        return corpus, {a.id for a in corpus}
    truth = [json.loads(t) for t in (FACILITY / "corpus" / "demo.truth.jsonl").read_text()
             .splitlines()]
    by_code: dict[str, list[str]] = {}
    for t in truth:
        by_code.setdefault(t["code"], []).append(t["artifact_id"])
    ids = set(by_code["value.disjoint"][:6]) | set(by_code["value.unknown"][:3])
    ids |= {"fac-0052", "fac-0001"} | {a.id for a in corpus[:3]}
    return corpus, ids


def test_demo_corpus(facility_pack: Pack, tmp_path: Path) -> None:
    corpus, ids = demo_sample()
    paths_agree(facility_pack, tmp_path, corpus, ids)


def test_pizza_pack(pizza_pack_dir: Path, tmp_path: Path) -> None:
    def row(pid: str, style: str, base: str, topping: str, cm: object = 30) -> dict[str, object]:
        return {"pizza_id": pid, "style": style, "base": base, "topping": topping,
                "diameter_cm": cm}

    cohort = [
        Artifact(id="mixed", tables={"pizzas": [
            row("P0", "vegetarian", "thin and crispy base", "mozzarella"),
            row("P1", "vegetarian", "deep pan base", "ham"),
            row("P2", "vegetarian", "deep pan base", "anchovies"),
            row("P3", "meat lover", "deep pan base", "deep pan base"),
            row("P4", "meat lover", "mozzarella", "ham"),
            row("P5", "meat lover", "thin_base", "ham", cm=70),
            row("P6", "meat lover", "thin_base", "pineapple"),
            row("P7", "TBD", "thin_base", "tomato"),
        ]}),
        Artifact(id="clean", tables={"pizzas": [
            row("P0", "vegetarian", "thin and crispy base", "mushrooms"),
            row("P1", "meat lover", "deep pan base", "ham"),
        ]}),
    ]
    paths_agree(load_pack(pizza_pack_dir), tmp_path, cohort)


def test_crew_pack(tmp_path: Path) -> None:
    def flight(fid: str, aircraft: str = "A320", captain: str = "Ann", fo: str = "Cat",
               relief: str = "Dan", cabin_4: str = "Eve") -> dict[str, object]:
        return {"flight_id": fid, "aircraft": aircraft, "captain": captain,
                "first_officer": fo, "relief_pilot": relief, "cabin_1": "Eve", "cabin_2": "Fay",
                "cabin_3": "Gus", "cabin_4": cabin_4}

    cohort = [
        Artifact(id="a", tables={"flights": [flight("F0"), flight("F1", cabin_4="Hal"),
                                             flight("F2", fo="Annie", relief="ann")]}),
        Artifact(id="b", tables={"flights": [flight("F3", captain="Cat", fo="Dan"),
                                             flight("F4", aircraft="A350", relief="Cat"),
                                             flight("F6", fo="Eve")]}),
        Artifact(id="c", tables={"flights": [flight("F5", captain="Bob", fo="Annie")]}),
    ]
    paths_agree(load_pack(ROOT / "tests" / "packs" / "crew"), tmp_path, cohort)


def test_tiny_pack_unsat(tiny_pack_dir: Path, tmp_path: Path) -> None:
    cohort = [
        Artifact(id="bad", tables={"things": [
            {"id": "1", "colour": "blue"}, {"id": "2", "colour": "red"},
            {"id": "3", "colour": "red"}, {"id": "4", "colour": "blue"},
        ]}),
        Artifact(id="good", tables={"things": [{"id": "1", "colour": "blue"}]}),
    ]
    pack = load_pack(tiny_pack_dir)
    paths_agree(pack, tmp_path, cohort)
    cold = ValueGate.from_pack(pack, tmp_path, HermitRunner())
    warm = ValueGate.from_pack(pack, tmp_path, WarmHermit())
    assert cold.judge(cohort) == warm.judge(cohort)


@pytest.fixture
def tiny_pack_dir(tmp_path: Path) -> Path:
    from tests.ontology.conftest import TINY_OWL, TINY_TOML

    dest = tmp_path / "tiny"
    dest.mkdir()
    (dest / "pack.toml").write_text(TINY_TOML)
    (dest / "tiny.owl").write_text(TINY_OWL)
    (dest / "spine.sql").write_text("CREATE TABLE things (id VARCHAR PRIMARY KEY);")
    return dest


@pytest.fixture
def pizza_pack_dir(tmp_path: Path) -> Path:
    dest = tmp_path / "pizza"
    shutil.copytree(ROOT / "tests" / "packs" / "pizza", dest,
                    ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
    shutil.copy(PIZZA_OWL, dest / "ontology" / "pizza.owl")
    return dest

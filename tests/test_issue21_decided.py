"""Issue 21: a cohort no longer asks HermiT what the classification already decides. A row
whose value has an entailed type disjoint with what the row requires (a body given as a
colour: the nominals put `Full` in `WineBody`, disjoint with `WineColor`) is inconsistent on
its own; `localise` counts it guilty without bisecting the cohort for it. Same verdicts,
far fewer reasoner calls (the bisection was most of a vino cohort's time)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness.models import Artifact
from harness.pack import load_pack
from harness.pools import ClassInfo, IndividualInfo, Pools
from ontology.decided import outside, surely_inconsistent
from tests.conftest import ROOT

VINO = ROOT / "tests" / "packs" / "vino"


def _pools() -> Pools:
    classes = {
        "Colour": ClassInfo(name="Colour", members=("Red",), disjoint_with=("Body",)),
        "Body": ClassInfo(name="Body", members=("Full",), disjoint_with=("Colour",)),
        "Grape": ClassInfo(name="Grape", members=("Merlot",)),
    }
    people = {
        "Red": IndividualInfo(name="Red", types=("Colour",)),
        "Full": IndividualInfo(name="Full", types=("Body",)),
        "Merlot": IndividualInfo(name="Merlot", types=("Grape",)),
    }
    return Pools(ontology_hash="x", individuals=people, classes=classes)


def test_a_value_is_outside_a_class_only_when_a_type_of_it_is_disjoint_with_it() -> None:
    pools = _pools()
    assert outside(pools, "Full", "Colour")
    assert not outside(pools, "Red", "Colour")  # a member
    assert not outside(pools, "Merlot", "Colour")  # not known to be one, not known not to be
    assert not outside(pools, "Nobody", "Colour")  # not an individual of the pools
    assert not outside(pools, "Full", "Unknown")


def test_a_row_is_decided_inconsistent_only_by_a_required_class() -> None:
    pools = _pools()
    assert surely_inconsistent(pools, {"hasColor": "Colour"}, [("hasColor", "Full")])
    assert not surely_inconsistent(pools, {"hasColor": "Colour"}, [("hasColor", "Red")])
    assert not surely_inconsistent(pools, {}, [("hasColor", "Full")])  # nothing required
    assert not surely_inconsistent(pools, {"hasColor": "Colour"}, [("hasBody", "Full")])
    assert not surely_inconsistent(pools, {"hasColor": "Colour"}, [("hasColor", None)])


def _wines(n: int, bad_every: int) -> list[Artifact]:
    """Wines of the vino pack, 5 rows each; every `bad_every`-th artifact has a body as a
    colour, a colour as a body, a grape as a region or a region as a maker (each distinct)."""
    rng = random.Random(7)
    grapes = {
        "red": ["Merlot grape", "Syrah grape"],
        "white": ["Chardonnay grape", "Riesling grape"],
    }
    wrong = [
        ("colour", "full"),
        ("colour", "light"),
        ("body", "red"),
        ("region", "Merlot grape"),
        ("maker", "Bordeaux"),
        ("flavour", "dry"),
        ("sugar", "white"),
    ]
    out = []
    for i in range(n):
        rows = []
        for j in range(5):
            colour = rng.choice(["red", "white"])
            rows.append(
                {
                    "wine_id": f"W-{j}",
                    "name": f"Cuvée {i}-{j}",
                    "colour": colour,
                    "body": rng.choice(["light", "medium", "full"]),
                    "flavour": rng.choice(["delicate", "strong"]),
                    "sugar": "dry",
                    "grape": rng.choice(grapes[colour]),
                    "maker": f"Winery{rng.randint(1, 40):02d}",
                    "region": "Bordeaux",
                }
            )
        if i % bad_every == 0:
            column, value = wrong[(i // bad_every) % len(wrong)]
            rows[i % 5][column] = value
        out.append(Artifact(id=f"w{i:03d}", tables={"wines": rows}))
    return out


@pytest.mark.java
def test_the_gate_gives_the_same_verdicts_with_far_fewer_reasoner_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from effectors import value_gate
    from ontology.warm import WarmHermit

    pack = load_pack(VINO)
    corpus = _wines(120, 4)  # 30 defective artifacts, most of them distinct rows
    fast = WarmHermit()
    verdicts = value_gate.ValueGate.from_pack(pack, tmp_path, fast).judge(corpus)
    bad = sum(1 for v in verdicts if not v.passed)
    assert bad == 30
    monkeypatch.setattr(value_gate, "surely_inconsistent", lambda *a, **k: False)
    slow = WarmHermit()
    before = value_gate.ValueGate.from_pack(pack, tmp_path, slow).judge(corpus)
    assert verdicts == before
    codes = {c.code for v in verdicts for c in v.critiques if c.severity == "error"}
    assert {"value.disjoint", "value.unsat"} <= codes  # both kinds of finding, as before
    # one realisation of the suspects, one consistency check of the rest, then each decided
    # row realised alone (`_refine`): no bisection call for the rows decided here
    assert fast.calls <= bad + 3 < slow.calls

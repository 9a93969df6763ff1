"""Issue 21: enumerated classes (`owl:oneOf`) are decided by their nominals, without a HermiT
probe per class (the probes are what made the W3C wine ontology crawl). On the vino pack (an
enumeration-heavy, wine-like ontology behind an import map): the same disjointness as the
probes gave, fewer reasoner seconds, and the value gate judges enumerated values."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.models import Artifact, Verdict
from harness.pack import load_pack
from ontology.nominals import different_pairs, enumerations
from ontology.reason import Classification, HermitRunner
from tests.conftest import ROOT

VINO = ROOT / "tests" / "packs" / "vino"
BASE = "http://membrane.dev/tests/vino-base#"
BASE_NT = (VINO / "ontology" / "third-party" / "vino-base-1.0.nt").read_text(encoding="utf-8")


def test_the_enumerations_and_their_distinct_members_are_read_off_the_triples() -> None:
    enums = enumerations(BASE_NT)
    assert enums[BASE + "WineColor"] == tuple(sorted(BASE + m for m in ("White", "Rose", "Red")))
    assert set(enums) == {BASE + c for c in ("WineColor", "WineBody", "WineFlavor", "WineSugar")}
    different = different_pairs(BASE_NT)
    assert frozenset((BASE + "Red", BASE + "Full")) in different
    assert frozenset((BASE + "Red", BASE + "Red")) not in different


_NODE = st.sampled_from(["_:a", "_:b", "_:c", "<http://x/C>", "<http://x/i>",
                         "<http://www.w3.org/1999/02/22-rdf-syntax-ns#nil>"])
_PRED = st.sampled_from(["<http://www.w3.org/2002/07/owl#oneOf>",
                         "<http://www.w3.org/1999/02/22-rdf-syntax-ns#first>",
                         "<http://www.w3.org/1999/02/22-rdf-syntax-ns#rest>",
                         "<http://www.w3.org/2002/07/owl#equivalentClass>",
                         "<http://www.w3.org/2002/07/owl#distinctMembers>",
                         "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_NODE, _PRED, _NODE), max_size=20))
def test_malformed_lists_and_cycles_never_crash_the_reader(triples: list[tuple[str, str, str]]
                                                           ) -> None:
    nt = "\n".join(f"{s} {p} {o} ." for s, p, o in triples)
    for c, members in enumerations(nt).items():
        assert not c.startswith("_:") and all(not m.startswith("_:") for m in members)
    assert all(len(pair) == 2 for pair in different_pairs(nt))


class _Recording(HermitRunner):
    """A cold HermiT that keeps what it was asked to classify."""

    def __init__(self) -> None:
        super().__init__()
        self.inputs: list[str] = []

    def classify(self, ntriples: str) -> Classification | None:
        self.inputs.append(ntriples)
        return super().classify(ntriples)


def _wine(colour: str = "red", body: str = "full") -> dict[str, object]:
    return {"wine_id": "W-1", "name": "Cuvée test", "colour": colour, "body": body,
            "flavour": "strong", "sugar": "dry", "grape": "Merlot grape",
            "maker": "Winery01", "region": "Bordeaux"}


@pytest.mark.java
def test_no_probe_for_an_enumeration_and_the_gate_judges_enumerated_values(
    tmp_path: Path,
) -> None:
    from effectors.value_gate import ValueGate

    pack = load_pack(VINO)
    runner = _Recording()
    gate = ValueGate.from_pack(pack, tmp_path, runner)
    probes = [nt for nt in runner.inputs if "membrane" in nt and "complementOf" in nt]
    assert len(probes) == 1  # the probe call: for the non-enumerated required classes only
    probed = {line.split()[2] for line in probes[0].splitlines() if "complementOf" in line}
    assert probed and not probed & {f"<{BASE}{c}>" for c in ("WineColor", "WineBody",
                                                              "WineFlavor", "WineSugar")}
    classes = gate.pools.classes
    assert set(classes["WineColor"].disjoint_with) == {"WineBody", "WineFlavor", "WineSugar"}
    cands = [Artifact(id=f"w{i}", tables={"wines": [_wine(**kw)]}) for i, kw in enumerate(
        [{}, {"colour": "full"}, {"body": "red"}, {"colour": "Rosé"}])]
    verdicts: list[Verdict] = gate.judge(cands)
    got = [sorted({c.code for c in v.critiques if c.severity == "error"}) for v in verdicts]
    assert got[0] == [] and got[3] == ["value.unknown"]  # "Rosé" is "rose", no label
    for wrong in got[1:3]:  # a body as a colour, a colour as a body: rejected by HermiT
        assert wrong and set(wrong) <= {"value.disjoint", "value.unsat"}


@pytest.mark.java
@pytest.mark.slow
def test_the_nominals_give_the_disjointness_the_probes_gave(tmp_path: Path) -> None:
    """The old way (a probe `N_C ≡ ¬C` for every required class) and the new one agree on
    every class's disjoint classes."""
    from ontology.index import PROBE_NS
    from ontology.load import load_ontology
    from ontology.pools import _disjointness, _probe_triples
    from ontology.reason import THING

    pack = load_pack(VINO)
    loaded = load_ontology(pack.ontology_path, pack.ontology_imports)
    base_nt = loaded.ntriples()
    classes = sorted({str(c.iri) for c in loaded.world.classes()
                      if not str(c.iri).startswith(PROBE_NS)})
    runner = HermitRunner()
    result = runner.classify(base_nt)
    assert result is not None
    required = [BASE + c for c in ("WineColor", "WineBody", "WineFlavor", "WineSugar",
                                   "WineGrape", "Winery", "Region")]
    old_probed = runner.classify(base_nt + _probe_triples(required))
    assert old_probed is not None
    old = _disjointness(loaded, result, classes, old_probed, required)
    enums = enumerations(base_nt)
    rest = [c for c in required if c not in enums]
    new_probed = runner.classify(base_nt + _probe_triples(rest))
    assert new_probed is not None
    new = _disjointness(loaded, result, classes, new_probed, rest,
                        (enums, [c for c in required if c in enums], different_pairs(base_nt)))
    assert {k: v for k, v in new.items() if v} == {k: v for k, v in old.items() if v}
    assert THING not in new

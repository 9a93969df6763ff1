"""The reasoner gate for lessons that change the ontology (issue 13, done-when 2), with
HermiT and the real value gate: an axiom that would make a committed artifact fail is
rejected; a consistent alias is approved and waits for a person; an inconsistent axiom or a
malformed one is rejected with the reason; the pack itself is never changed."""

from __future__ import annotations

import hashlib
import json

import pytest

from effectors.lesson_check import OntologyCheck, parse_axiom
from effectors.value_gate import ValueGate
from harness.learning.learn_pass import ScoreGate, review_and_learn
from harness.learning.lesson_store import LessonStore
from harness.learning.lessons import LessonProposal, Scope
from harness.models import Artifact
from harness.pack import Pack
from tests.conftest import FACILITY

pytestmark = [pytest.mark.java, pytest.mark.slow]

NS = "http://membrane.dev/packs/facility#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"

# imaging rows may only name HVAC manufacturers: consistent (no row is asserted in the
# ontology), but every committed imaging row names an imaging manufacturer
IMAGING_ROWS_NEED_HVAC_MAKERS = f"""
<{NS}ImagingEquipmentRow> <{RDFS}subClassOf> _:r .
_:r <{RDF}type> <{OWL}Restriction> .
_:r <{OWL}onProperty> <{NS}hasManufacturer> .
_:r <{OWL}allValuesFrom> <{NS}HVACManufacturer> .
"""
# Siemens Healthineers is an imaging manufacturer; the classes are disjoint
INCONSISTENT = f"<{NS}siemens_healthineers> <{RDF}type> <{NS}HVACManufacturer> ."


def proposal(target: str, **payload: str) -> LessonProposal:
    return LessonProposal(
        target=target,  # type: ignore[arg-type]
        scope=Scope(pack="facility", column="equipment.manufacturer"),
        text=f"a {target} lesson",
        score=0.9,
        payload=payload,
    )


@pytest.fixture(scope="module")
def committed() -> list[Artifact]:
    """Demo artifacts that pass the value gate as they are (the clean ones)."""
    lines = (FACILITY / "corpus" / "demo.jsonl").read_text().splitlines()
    return [Artifact.model_validate(json.loads(x)) for x in lines[:40]]


def test_the_reasoner_gate(
    facility_pack: Pack, committed: list[Artifact], tmp_path_factory: pytest.TempPathFactory
) -> None:
    cache = tmp_path_factory.mktemp("cache")
    gate = ValueGate.from_pack(facility_pack, cache)
    passing = [a for a, v in zip(committed, gate.judge(committed), strict=True) if v.passed]
    imaging = [
        a for a in passing
        if any(r.get("manufacturer") == "Siemens Healthineers" for r in a.tables["equipment"])
    ]
    assert passing and imaging
    before = hashlib.sha256(facility_pack.ontology_path.read_bytes()).hexdigest()
    check = OntologyCheck(facility_pack, cache, lambda: passing, ValueGate.from_pack)

    narrows = check(proposal("value_axiom", axiom=IMAGING_ROWS_NEED_HVAC_MAKERS))
    assert not narrows.approved and "would fail the value gate" in narrows.reason
    assert imaging[0].id in narrows.reason or "committed artifact" in narrows.reason

    broken = check(proposal("value_axiom", axiom=INCONSISTENT))
    assert not broken.approved and "does not load" in broken.reason

    junk = check(proposal("value_axiom", axiom="CTScanner SubClassOf ImagingThing"))
    assert not junk.approved and "N-Triples" in junk.reason

    alias = check(proposal("value_alias", alias="Siemens", individual="siemens_healthineers"))
    assert alias.approved, alias.reason
    nobody = check(proposal("value_alias", alias="Acme", individual="no_such_maker"))
    assert not nobody.approved and "no individual" in nobody.reason

    # through the pass: the consistent one waits for a person, the other is rejected
    store = LessonStore(tmp_path_factory.mktemp("lessons") / "l.sqlite")
    try:
        out = review_and_learn(
            None,
            _Listed(
                [
                    proposal("value_alias", alias="Siemens", individual="siemens_healthineers"),
                    proposal("value_axiom", axiom=IMAGING_ROWS_NEED_HVAC_MAKERS),
                ]
            ),
            ScoreGate(reasoner=check),
            store,
            "t",
        )
        assert len(out.applied) == 1 and len(out.rejected) == 1
        (waiting,) = store.lessons()
        assert waiting.status == "pending" and waiting.target == "value_alias"
    finally:
        store.close()
    assert hashlib.sha256(facility_pack.ontology_path.read_bytes()).hexdigest() == before
    assert "Siemens" not in facility_pack.config.ontology.aliases


class _Listed:
    name = "listed"

    def __init__(self, items: list[LessonProposal]) -> None:
        self.items = items

    def propose(self, summary: object) -> list[LessonProposal]:
        return self.items


def test_axioms_are_n_triples_with_their_blank_nodes_renamed() -> None:
    lines = parse_axiom(IMAGING_ROWS_NEED_HVAC_MAKERS, tag="t")
    assert len(lines) == 4 and all("_:tr" in x for x in lines)
    assert parse_axiom('<http://a#x> <http://a#p> "_:keep me" .', tag="t")[0].endswith(
        '"_:keep me" .'
    )
    for bad in ("", "<a> <b> <c> .", "<http://a#x> <http://a#p> .", "x y z ."):
        with pytest.raises(ValueError):
            parse_axiom(bad)

"""Setup errors surface as PackError / InfrastructureError before any artifact runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.value_gate import ValueGate
from harness.errors import InfrastructureError, PackError
from harness.models import Artifact
from harness.pack import load_pack
from ontology import BaseOntology, HermitRunner, load_pools
from ontology.warm import WarmHermit, default_reasoner

pytestmark = pytest.mark.java


def test_unparseable_owl_names_the_file(facility_copy: Path, tmp_path: Path) -> None:
    owl = facility_copy / "ontology" / "facility.owl"
    owl.write_text("<rdf:RDF this is not xml")
    with pytest.raises(PackError) as err:
        load_pools(load_pack(facility_copy), tmp_path / "cache")
    assert err.value.file == str(owl)


def test_missing_import_is_not_fetched(tiny_pack: Path, tmp_path: Path) -> None:
    owl = tiny_pack / "tiny.owl"
    owl.write_text(owl.read_text().replace(
        '<owl:Ontology rdf:about="http://membrane.dev/tests/tiny"/>',
        '<owl:Ontology rdf:about="http://membrane.dev/tests/tiny">'
        '<owl:imports rdf:resource="http://example.org/elsewhere.owl"/></owl:Ontology>',
    ))
    with pytest.raises(PackError, match=r"elsewhere\.owl"):
        load_pools(load_pack(tiny_pack), tmp_path / "cache")


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('row_class = "EquipmentRow"', 'row_class = "GadgetRow"', "GadgetRow"),
        ('property = "hasStandard"', 'property = "hasNorm"', "hasNorm"),
        ('property = "onFloor"', 'property = "hasStandard"', "hasStandard"),  # wrong kind
    ],
)
def test_binding_to_missing_class_or_property(
    facility_copy: Path, tmp_path: Path, old: str, new: str, named: str
) -> None:
    toml = facility_copy / "pack.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new, 1))
    with pytest.raises(PackError, match=named) as err:
        load_pools(load_pack(facility_copy), tmp_path / "cache")
    assert err.value.file == str(toml.resolve())


def test_inconsistent_base_ontology(facility_copy: Path, tmp_path: Path) -> None:
    owl = facility_copy / "ontology" / "facility.owl"
    both = (
        '<owl:NamedIndividual rdf:about="#chimera">'
        '<rdf:type rdf:resource="#ImagingStandard"/><rdf:type rdf:resource="#HVACStandard"/>'
        "</owl:NamedIndividual>\n</rdf:RDF>"
    )
    owl.write_text(owl.read_text().replace("</rdf:RDF>", both))
    with pytest.raises(PackError, match="inconsistent") as err:
        load_pools(load_pack(facility_copy), tmp_path / "cache")
    assert err.value.file == str(owl.resolve())
    assert "<http://membrane.dev/packs/facility#chimera>" in str(err.value)


def test_missing_java_is_an_infrastructure_error(
    facility_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("owlready2.JAVA_EXE", str(tmp_path / "no-java-here"))
    with pytest.raises(InfrastructureError, match="Java 17"):
        load_pools(load_pack(facility_copy), tmp_path / "cache")


def test_reasoner_timeout_fails_closed(tiny_pack: Path, tmp_path: Path) -> None:
    gate = ValueGate.from_pack(load_pack(tiny_pack), tmp_path / "cache")
    gate.runner = HermitRunner(timeout_s=0.01)
    a = Artifact(id="a", tables={"things": [{"id": "1", "colour": "red"}]})
    with pytest.raises(InfrastructureError, match="did not answer"):
        gate.judge([a])


def test_other_inconsistency_is_isolated_as_unsat(tiny_pack: Path, tmp_path: Path) -> None:
    gate = ValueGate.from_pack(load_pack(tiny_pack), tmp_path / "cache")
    bad = Artifact(id="bad", tables={"things": [
        {"id": "1", "colour": "blue"}, {"id": "2", "colour": "red"}, {"id": "3", "colour": "blue"},
    ]})
    good = Artifact(id="good", tables={"things": [{"id": "1", "colour": "blue"}]})
    v_bad, v_good = gate.judge([bad, good])
    assert [(c.code, c.location.row, c.location.key) for c in v_bad.critiques] == [
        ("value.unsat", 1, "2")
    ]
    assert v_good.critiques == ()
    assert gate.judge([bad]) == [v_bad]


def test_warm_reasoner_timeout_fails_closed(tiny_pack: Path, tmp_path: Path) -> None:
    gate = ValueGate.from_pack(load_pack(tiny_pack), tmp_path / "cache", WarmHermit())
    gate.runner = WarmHermit(timeout_s=1e-9)
    a = Artifact(id="a", tables={"things": [{"id": "1", "colour": "red"}]})
    with pytest.raises(InfrastructureError, match="did not answer"):
        gate.judge([a])


def test_warm_reasoner_failure_fails_closed() -> None:
    broken = BaseOntology.of("<urn:a> this is not N-Triples at all\n")
    with pytest.raises(InfrastructureError, match="HermiT failed"):
        WarmHermit().consistent(broken, [])


def test_subprocess_fallback_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_REASONER", "subprocess")
    assert isinstance(default_reasoner(), HermitRunner)


def test_cold_reasoner_crash_fails_closed(tiny_pack: Path, tmp_path: Path) -> None:
    gate = ValueGate.from_pack(load_pack(tiny_pack), tmp_path / "cache", HermitRunner())
    gate.runner = HermitRunner(memory_mb=1)  # the JVM cannot even start with a 1 MB heap
    a = Artifact(id="a", tables={"things": [{"id": "1", "colour": "red"}]})
    with pytest.raises(InfrastructureError):
        gate.judge([a])

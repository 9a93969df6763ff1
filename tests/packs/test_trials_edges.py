"""Issue 28's edges on the trials test pack: a non-DL ontology is a PackError before HermiT
(and before anything is written), assertion codes may hold digits, `kind = "text"` and
`[ontology]` keys are validated. Real HermiT where a reasoner is involved."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import PackError
from harness.models import Critique
from harness.pack import load_pack
from ontology import check_ontology, load_pools
from ontology.dl import non_simple_uses
from tests.conftest import ROOT

TRIALS = ROOT / "tests" / "packs" / "trials"
CHAIN = """  <owl:ObjectProperty rdf:about="#hasMoiety"/>
  <owl:ObjectProperty rdf:about="#hasActiveMoiety"><owl:propertyChainAxiom rdf:parseType="Collection"><rdf:Description rdf:about="#hasIntervention"/><rdf:Description rdf:about="#hasMoiety"/></owl:propertyChainAxiom></owl:ObjectProperty>
  <owl:Class rdf:about="#ArmRow"><rdfs:subClassOf><owl:Restriction><owl:onProperty rdf:resource="#hasActiveMoiety"/><owl:maxCardinality rdf:datatype="http://www.w3.org/2001/XMLSchema#nonNegativeInteger">1</owl:maxCardinality></owl:Restriction></rdfs:subClassOf></owl:Class>
</rdf:RDF>"""


def variant(tmp: Path, owl: tuple[str, str] | None = None,
            toml: tuple[str, str] | None = None) -> Path:
    dest = tmp / "trials"
    shutil.copytree(TRIALS, dest, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    for name, change in (("trials.owl", owl), ("pack.toml", toml)):
        if change:
            path = dest / name
            text = path.read_text()
            assert change[0] in text
            path.write_text(text.replace(change[0], change[1], 1))
    return dest


def test_a_property_chain_in_a_cardinality_restriction_is_a_pack_error_before_hermit(
    tmp_path: Path,
) -> None:
    pack = load_pack(variant(tmp_path, owl=("</rdf:RDF>", CHAIN)))
    cache = tmp_path / "ws" / ".membrane" / "cache"
    with pytest.raises(PackError) as e:
        check_ontology(pack, cache)
    assert e.value.file == str(pack.ontology_path)
    assert "hasActiveMoiety" in str(e.value) and "§11.2" in str(e.value)
    assert not (tmp_path / "ws").exists()  # nothing written
    with pytest.raises(PackError):  # and never HermiT's InfrastructureError
        load_pools(pack, cache)


@pytest.mark.java
def test_a_non_dl_pack_exits_2_without_a_stack_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = variant(tmp_path, owl=("</rdf:RDF>", CHAIN))
    corpus = tmp_path / "in.jsonl"
    corpus.write_text(json.dumps({"id": "t1", "tables": {}}) + "\n")
    code = main(["batch", str(corpus), "--pack", str(pack), "-w", str(tmp_path / "ws"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "trials.owl" in err and "Traceback" not in err and "java." not in err
    assert not (tmp_path / "ws").exists()  # nothing written: the workspace was never made


@pytest.mark.parametrize(("extra", "culprit"), [
    ('<owl:ObjectProperty rdf:about="#hasArea"><rdf:type rdf:resource='
     '"http://www.w3.org/2002/07/owl#TransitiveProperty"/><rdf:type rdf:resource='
     '"http://www.w3.org/2002/07/owl#FunctionalProperty"/></owl:ObjectProperty>',
     "FunctionalProperty(hasArea)"),
    ('<owl:ObjectProperty rdf:about="#hasAreaAny"><rdf:type rdf:resource='
     '"http://www.w3.org/2002/07/owl#TransitiveProperty"/></owl:ObjectProperty>'
     '<owl:ObjectProperty rdf:about="#hasArea"><rdfs:subPropertyOf rdf:resource="#hasAreaAny"/>'
     '</owl:ObjectProperty><owl:Class rdf:about="#TrialRow"><rdfs:subClassOf><owl:Restriction>'
     '<owl:onProperty rdf:resource="#hasAreaAny"/><owl:minCardinality rdf:datatype='
     '"http://www.w3.org/2001/XMLSchema#nonNegativeInteger">1</owl:minCardinality>'
     '</owl:Restriction></rdfs:subClassOf></owl:Class>', "TrialRow ⊑ ≥ 1 hasAreaAny"),
])
def test_other_non_simple_uses_are_found(tmp_path: Path, extra: str, culprit: str) -> None:
    pack = load_pack(variant(tmp_path, owl=("</rdf:RDF>", extra + "\n</rdf:RDF>")))
    with pytest.raises(PackError, match=r"not OWL 2 DL") as e:
        check_ontology(pack, tmp_path / "cache")
    assert culprit in str(e.value)


def test_the_shipped_packs_are_dl() -> None:
    from ontology.load import load_ontology

    for pack in (TRIALS, ROOT / "packs" / "facility", ROOT / "tests" / "packs" / "crew"):
        p = load_pack(pack)
        assert non_simple_uses(load_ontology(p.ontology_path).ntriples()) == []


@pytest.mark.parametrize("code", ["ri.pd1_outside_oncology", "value.sglt2_x", "ri.iso9001.a1"])
def test_codes_may_hold_digits_after_each_parts_first_letter(code: str) -> None:
    assert Critique(code=code, gate="g").code == code


@pytest.mark.parametrize("code", ["ri.1pd", "Ri.x", "ri", "ri.pd-1", "ri..x"])
def test_codes_still_refuse_the_rest(code: str) -> None:
    with pytest.raises(ValueError):
        Critique(code=code, gate="g")


def test_an_assertion_code_with_a_leading_digit_is_a_pack_error(tmp_path: Path) -> None:
    from effectors.ri_gate import RiGate

    dest = variant(tmp_path)
    sql = dest / "assertions" / "pd1_outside_oncology.sql"
    sql.write_text(sql.read_text().replace("ri.pd1_outside_oncology", "ri.1pd_outside"))
    with pytest.raises(PackError, match="dotted lowercase"):
        RiGate.from_pack(load_pack(dest), None)


@pytest.mark.parametrize(("toml", "needle"), [
    (('title = { kind = "text", property = "hasTitle", max_length = 200 }',
      'title = { kind = "data", property = "hasTitle", max_length = 200 }'), "max_length"),
    (('canonical = "label"', 'canonical = "fragment"'), "canonical"),
    (('"atorva" = "atorvastatin"', '"atorva" = "atorva statin"'), "aliases"),
])
def test_pack_keys_are_validated(tmp_path: Path, toml: tuple[str, str], needle: str) -> None:
    with pytest.raises(PackError, match=needle):
        load_pack(variant(tmp_path, toml=toml))


@pytest.mark.java
def test_an_alias_naming_no_individual_is_a_pack_error(tmp_path: Path) -> None:
    pack = load_pack(variant(tmp_path, toml=('"atorva" = "atorvastatin"',
                                             '"atorva" = "simvastatin"')))
    with pytest.raises(PackError, match="simvastatin"):
        load_pools(pack, tmp_path / "cache")


def test_a_text_column_needs_a_string_property(tmp_path: Path) -> None:
    pack = load_pack(variant(tmp_path, toml=(
        'title = { kind = "text", property = "hasTitle", max_length = 200 }',
        'title = { kind = "text", property = "hasEnrolment" }')))
    with pytest.raises(PackError, match='kind "text"') as e:
        check_ontology(pack, tmp_path / "cache")
    assert "XMLSchema#integer" in str(e.value)
    check_ontology(load_pack(TRIALS), tmp_path / "cache")  # hasTitle: xsd:string

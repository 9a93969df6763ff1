"""Issue 27, intake: every ontology file read by a spec-conformant RDF parser and handed to
owlready2 as N-Triples; imports from the parsed graph, resolved offline (map, "skip", XML
catalog); what owlready2 and HermiT cannot take set aside with a report. Hand-written files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import PackError
from ontology.load import load_ontology, ontology_files
from ontology.rdf import parse_file, sniff

# the six lines of the issue: xml:base ending in "#", rdf:ID, a typed node in that namespace
XML_BASE_HASH = """<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:owl="http://www.w3.org/2002/07/owl#" xmlns="http://ex.org/t#" xml:base="http://ex.org/t#">
  <owl:Class rdf:ID="Wine"/>
  <Wine rdf:ID="w1"/>
</rdf:RDF>
"""

TURTLE_BASE = """@base <http://ex.org/base/> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<onto> a owl:Ontology .
<#Wine> a owl:Class ; rdfs:label "wine"@en .
<#Red> a owl:Class ; rdfs:subClassOf <#Wine> .
<cellar/w1> a <#Red> .
"""

META = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix : <http://ex.org/m#> .
<http://ex.org/m> a owl:Ontology .
:Relationship a owl:Class .
:Equipment a owl:Class .
:feeds a rdf:Property , owl:ObjectProperty , :Relationship .
:hasPoint a owl:ObjectProperty , :Relationship .
:objectName a rdf:Property , :Relationship .
:ahu1 a :Equipment ; :feeds :ahu1 .
:EquipmentShape a sh:NodeShape ; sh:targetClass :Equipment ;
    sh:property [ sh:path :hasPoint ; sh:minCount 1 ; sh:in ( :ahu1 ) ] .
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("name", ["t.rdf", "t.owl", "t.ttl"])  # recognised by content
def test_xml_base_ending_in_hash_gives_one_hash(tmp_path: Path, name: str) -> None:
    loaded = load_ontology(_write(tmp_path, name, XML_BASE_HASH))
    wine = loaded.world["http://ex.org/t#Wine"]
    assert wine is not None and loaded.world["http://ex.org/t##Wine"] is None
    assert [i.iri for i in wine.instances()] == ["http://ex.org/t#w1"]


def test_turtle_with_base_and_relative_iris(tmp_path: Path) -> None:
    loaded = load_ontology(_write(tmp_path, "wine.owl", TURTLE_BASE))  # Turtle in a .owl
    red = loaded.world["http://ex.org/base/#Red"]
    assert red is not None and red.is_a == [loaded.world["http://ex.org/base/#Wine"]]
    assert [i.iri for i in red.instances()] == ["http://ex.org/base/cellar/w1"]
    assert loaded.report.files[0][1] == "Turtle"


def test_ntriples_and_owl_xml_are_read(tmp_path: Path) -> None:
    nt = _write(tmp_path, "a.nt", "<http://ex.org/n#A> "
                "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
                "<http://www.w3.org/2002/07/owl#Class> .\n")
    assert load_ontology(nt).world["http://ex.org/n#A"] is not None
    owx = _write(tmp_path, "b.owx", """<?xml version="1.0"?>
<Ontology xmlns="http://www.w3.org/2002/07/owl#" ontologyIRI="http://ex.org/x">
  <Declaration><Class IRI="http://ex.org/x#B"/></Declaration>
  <SubClassOf><Class IRI="http://ex.org/x#C"/><Class IRI="http://ex.org/x#B"/></SubClassOf>
</Ontology>
""")
    loaded = load_ontology(owx)
    assert loaded.report.files[0][1] == "OWL/XML"
    assert loaded.world["http://ex.org/x#C"].is_a == [loaded.world["http://ex.org/x#B"]]


def test_a_syntax_error_names_the_file_line_and_syntax(tmp_path: Path) -> None:
    p = _write(tmp_path, "bad.ttl", TURTLE_BASE + "<#Rose> a \n")
    with pytest.raises(PackError) as err:
        load_ontology(p)
    assert err.value.file == str(p) and err.value.line == 9 and "Turtle" in err.value.message


def test_a_property_typed_by_a_class_is_set_aside_with_shapes(tmp_path: Path) -> None:
    loaded = load_ontology(_write(tmp_path, "m.ttl", META))  # bare: TypeError metaclass conflict
    assert loaded.world["http://ex.org/m#feeds"] is not None
    aside = {s.reason: s for s in loaded.report.set_aside}
    assert aside["property-typed-by-class"].count == 3
    assert any(":feeds" in e or "m#feeds" in e for e in aside["property-typed-by-class"].examples)
    # the shape, its property node and the sh:in list all go: 3 + 3 + 2 triples
    assert aside["shacl"].count == 8
    assert aside["rdf-property"].count == 2
    assert loaded.report.kept + loaded.report.set_aside_triples == 20
    assert "shacl" not in loaded.ntriples()


def test_a_class_punned_as_a_property_keeps_the_property(tmp_path: Path) -> None:
    text = META.split(":EquipmentShape", maxsplit=1)[0] + ":Link a owl:Class , owl:ObjectProperty .\n"
    loaded = load_ontology(_write(tmp_path, "p.ttl", text))
    aside = {s.reason: s.count for s in loaded.report.set_aside}
    assert aside["class-and-property"] == 1
    assert "http://ex.org/m#Link" not in {c.iri for c in loaded.world.classes()}


IMPORTER = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<http://ex.org/main> a owl:Ontology ; owl:imports <http://ex.org/far/bacnet> .
<http://ex.org/main#Sensor> a owl:Class ; rdfs:subClassOf <http://ex.org/far/bacnet#Object> .
"""


def test_an_unresolvable_import_names_it_and_the_remedies(tmp_path: Path) -> None:
    p = _write(tmp_path, "main.ttl", IMPORTER)
    with pytest.raises(PackError) as err:
        load_ontology(p)
    text = str(err.value)
    assert "<http://ex.org/far/bacnet>" in text and err.value.file == str(p)
    assert '"skip"' in text and "catalog-v001.xml" in text and "[ontology.imports]" in text


def test_a_skipped_import_is_logged_with_what_is_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    p = _write(tmp_path, "main.ttl", IMPORTER)
    loaded = load_ontology(p, {"http://ex.org/far/bacnet": None})
    assert loaded.world["http://ex.org/main#Sensor"] is not None
    [skipped] = loaded.report.skipped
    assert skipped.iri == "http://ex.org/far/bacnet" and "bacnet#Object" in skipped.lost
    assert "http://ex.org/far/bacnet" in caplog.text and "skip" in caplog.text


CATALOG = """<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<catalog prefer="public" xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">
    <group id="Folder Repository, directory=, recursive=true" prefer="public" xml:base="">
        <uri id="Imports Wizard Entry" name="http://ex.org/far/bacnet" uri="vendor/bacnet-2020.ttl"/>
    </group>
</catalog>
"""


def test_an_xml_catalog_beside_the_ontology_resolves_the_import(tmp_path: Path) -> None:
    p = _write(tmp_path, "main.ttl", IMPORTER)
    (tmp_path / "vendor").mkdir()
    _write(tmp_path, "vendor/bacnet-2020.ttl", "<http://ex.org/far/bacnet#Object> "
           "a <http://www.w3.org/2002/07/owl#Class> .\n")
    _write(tmp_path, "catalog-v001.xml", CATALOG)
    assert [f.name for f in ontology_files(p)] == ["main.ttl", "bacnet-2020.ttl"]
    loaded = load_ontology(p)
    sensor = loaded.world["http://ex.org/main#Sensor"]
    assert sensor.is_a == [loaded.world["http://ex.org/far/bacnet#Object"]]


@pytest.mark.parametrize("bad", [
    '<!DOCTYPE catalog [<!ENTITY x "y">]>\n',  # entities are refused, not expanded
    "",
])
def test_a_catalog_with_a_doctype_or_a_target_outside_is_refused(tmp_path: Path, bad: str) -> None:
    p = _write(tmp_path, "main.ttl", IMPORTER)
    sub = tmp_path / "onto"
    sub.mkdir()
    p = _write(sub, "main.ttl", IMPORTER)
    _write(tmp_path, "outside.ttl", "")
    text = CATALOG.replace("vendor/bacnet-2020.ttl", "../outside.ttl")
    _write(sub, "catalog-v001.xml", text.replace("<catalog", bad + "<catalog", 1))
    with pytest.raises(PackError) as err:
        load_ontology(p)
    assert err.value.file == str(sub / "catalog-v001.xml")


def test_imports_come_from_the_graph_not_from_bytes(tmp_path: Path) -> None:
    # a comment and a literal that look like imports are neither
    text = IMPORTER.replace("owl:imports <http://ex.org/far/bacnet>",
                            'rdfs:comment "owl:imports <http://ex.org/nowhere>"')
    p = _write(tmp_path, "main.ttl", "# owl:imports <http://ex.org/gone>\n" + text)
    assert [f.name for f in ontology_files(p)] == ["main.ttl"]


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_parse_or_are_a_pack_error(data: bytes) -> None:
    import tempfile

    assert sniff(data) in ("RDF/XML", "OWL/XML", "Turtle")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.owl"
        p.write_bytes(data)
        try:
            parse_file(p)
        except PackError as exc:
            assert exc.file == str(p)


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_literals_reach_owlready2_as_parsed(tmp_path_factory: pytest.TempPathFactory,
                                            label: str) -> None:
    escaped = (label.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
               .replace("\r", "\\r"))
    d = tmp_path_factory.mktemp("lit")
    p = d / "l.ttl"
    p.write_text("<http://ex.org/l#A> a <http://www.w3.org/2002/07/owl#Class> ; "
                 f'<http://www.w3.org/2000/01/rdf-schema#label> "{escaped}" .\n',
                 encoding="utf-8")
    loaded = load_ontology(p)
    assert [str(x) for x in loaded.world["http://ex.org/l#A"].label] == [label]


def test_a_metaclass_conflict_never_surfaces_bare(tmp_path: Path) -> None:
    from ontology.load import _parse

    p = _write(tmp_path, "m.ttl", META)
    fresh_world = type(load_ontology(_write(tmp_path, "t.rdf", XML_BASE_HASH)).world)()
    raw = list(parse_file(p).triples)  # not normalised: owlready2 fails on :objectName
    with pytest.raises(PackError) as err:
        _parse(fresh_world, "http://ex.org/m", p, raw)
    assert err.value.file == str(p) and "metaclass conflict" in err.value.message
    assert "<http://ex.org/m#objectName> rdf:type rdf:Property" in err.value.message


def test_an_iri_owlready2_holds_differently_is_a_setup_error(tmp_path: Path) -> None:
    import pyoxigraph as ox

    from ontology.load import _check_iris

    p = _write(tmp_path, "t.rdf", XML_BASE_HASH)
    loaded = load_ontology(p)
    stray = ox.Triple(ox.NamedNode("http://ex.org/t#Wine"), ox.NamedNode(
        "http://www.w3.org/2000/01/rdf-schema#seeAlso"), ox.NamedNode("http://ex.org/t#Gone"))
    with pytest.raises(PackError) as err:
        _check_iris(loaded.world, p, [], [[stray]])
    assert "<http://ex.org/t#Gone>" in err.value.message and err.value.file == str(p)


PACK_TOML = """[pack]
name = "brickish"
version = "0.1.0"
[files]
ontology = "ontology/m.ttl"
spine = "spine.sql"
[ontology]
namespace = "http://ex.org/m#"
{imports}
[tables.equipment]
row_class = "Equipment"
key = ["id"]
[tables.equipment.columns]
id = {{ kind = "id" }}
[prose]
enabled = false
"""


def _pack(tmp_path: Path, imports: str) -> Path:
    d = tmp_path / "brickish"
    (d / "ontology").mkdir(parents=True)
    text = META.replace("<http://ex.org/m> a owl:Ontology .",
                        "<http://ex.org/m> a owl:Ontology ; owl:imports <http://ex.org/far/bacnet> .")
    (d / "ontology" / "m.ttl").write_text(text, encoding="utf-8")
    (d / "spine.sql").write_text("CREATE TABLE equipment (id VARCHAR PRIMARY KEY);\n")
    (d / "pack.toml").write_text(PACK_TOML.format(imports=imports), encoding="utf-8")
    return d


SKIP = '[ontology.imports]\n"http://ex.org/far/bacnet" = "skip"'


@pytest.mark.java
def test_pack_check_prints_the_normalisation_report(tmp_path: Path) -> None:
    from harness.packcheck import check_pack

    report = check_pack(_pack(tmp_path, SKIP))
    assert not report.errors, [p.render() for p in report.errors]
    codes = [p.code for p in report.warnings]
    assert codes.count("dl-set-aside") == 3 and "import-skipped" in codes
    shacl = next(p for p in report.warnings if "SHACL" in p.message)
    assert shacl.message.startswith("8 triple(s) set aside") and shacl.file == "ontology/m.ttl"
    assert "http://ex.org/far/bacnet" in next(
        p.message for p in report.warnings if p.code == "import-skipped")
    strict = check_pack(_pack(tmp_path / "s", SKIP), strict_dl=True)
    assert [p.code for p in strict.errors] == ["dl-set-aside"] * 3


def test_pack_check_without_skip_names_the_import(tmp_path: Path) -> None:
    from harness.packcheck import check_pack

    report = check_pack(_pack(tmp_path, ""))
    assert any("<http://ex.org/far/bacnet>" in p.message and '"skip"' in p.fix
               for p in report.errors)


@pytest.mark.java
def test_cli_strict_dl_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    d = _pack(tmp_path, SKIP)
    assert main(["pack", "check", str(d)]) == 0
    assert "ontology/m.ttl: warning: 8 triple(s) set aside" in capsys.readouterr().out
    assert main(["pack", "check", "--strict-dl", str(d)]) == 2
    assert "ontology/m.ttl: error: 8 triple(s) set aside" in capsys.readouterr().out


def test_a_class_that_is_also_a_shape_stays_a_class(tmp_path: Path) -> None:
    # Brick's idiom: every class is also an sh:NodeShape with sh:property constraints
    text = META + """:AHU a owl:Class , sh:NodeShape ; rdfs:subClassOf :Equipment ;
    rdfs:label "air handling unit" ; sh:property [ sh:path :hasPoint ; sh:minCount 1 ] .
"""
    loaded = load_ontology(_write(tmp_path, "b.ttl", text))
    ahu = loaded.world["http://ex.org/m#AHU"]
    assert ahu.is_a == [loaded.world["http://ex.org/m#Equipment"]]
    assert list(ahu.label) == ["air handling unit"]
    aside = {s.reason: s.count for s in loaded.report.set_aside}
    assert aside["shacl"] == 8 + 4  # its sh:NodeShape type, sh:property and the node's two


@settings(max_examples=80, deadline=None)
@given(st.one_of(
    st.binary(max_size=300),
    st.builds(lambda name, uri: CATALOG.replace("http://ex.org/far/bacnet", name)
              .replace("vendor/bacnet-2020.ttl", uri).encode(),
              st.text(max_size=20),
              st.sampled_from(["http://[x", "file:///etc/passwd", "../x", "/etc/passwd"])
              | st.text(max_size=30)),
))
def test_any_catalog_reads_or_is_a_pack_error(data: bytes) -> None:
    import tempfile

    from ontology.catalog import read_catalog

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "catalog-v001.xml"
        p.write_bytes(data)
        try:
            entries = read_catalog(p)
        except PackError as exc:
            assert exc.file == str(p)
        else:
            assert all(v.is_file() and v.is_relative_to(Path(d).resolve())
                       for v in entries.values())

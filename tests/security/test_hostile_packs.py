"""A third-party pack is untrusted (issue 17, hostile packs): its paths stay inside the pack
folder, its parse errors echo none of the file, its XML cannot fetch or expand entities,
and its imports are read from the pack only. Every refusal names the file and line."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import PackError
from harness.pack import load_pack, path_outside
from ontology.imports import closure
from ontology.rdf import parse_file
from tests.conftest import FACILITY

SECRET = "aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYSECRET\nhunter2hunter2\n"


def _pack(tmp_path: Path) -> Path:
    d = tmp_path / "pack"
    shutil.copytree(FACILITY, d, ignore=shutil.ignore_patterns("corpus", "__pycache__", "tests"))
    return d


def _set(pack: Path, section: str, key: str, value: str) -> int:
    """Set `key = "value"` in [section] of pack.toml; the 1-based line it is on."""
    toml = pack / "pack.toml"
    lines = toml.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"[{section}]")
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("["):
            break
        if lines[i].split("=")[0].strip() == key:
            lines[i] = f"{key} = '{value}'"
            toml.write_text("\n".join(lines) + "\n", encoding="utf-8")
            return i + 1
    lines.insert(start + 1, f"{key} = '{value}'")
    toml.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return start + 2


def _refused(pack: Path) -> PackError:
    with pytest.raises(PackError) as info:
        load_pack(pack)
    return info.value


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    p = tmp_path / "outside" / "credentials"
    p.parent.mkdir()
    p.write_text(SECRET, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spine", "/etc/passwd"),
        ("references", "/etc"),
        ("assertions", "/tmp"),
        ("prompts", "../../outside"),
        ("spine", "sub/../../outside/credentials"),
        ("ontology", "ontology/../../outside/credentials"),
        ("chapter", "/etc/hostname"),
        ("spine", "C:\\Windows\\win.ini"),
        ("spine", "..\\outside\\credentials"),
    ],
)
def test_a_path_leaving_the_pack_is_refused_with_its_line(
    tmp_path: Path, secret: Path, key: str, value: str
) -> None:
    pack = _pack(tmp_path)
    line = _set(pack, "files", key, value)
    err = _refused(pack)
    assert err.file is not None and err.file.endswith("pack.toml")
    assert err.line == line
    assert f"[files] {key}" in err.message and err.hint


def test_an_import_map_entry_leaving_the_pack_is_refused(tmp_path: Path, secret: Path) -> None:
    pack = _pack(tmp_path)
    toml = pack / "pack.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(
        text + '\n[ontology.imports]\n"http://ex.org/x" = "../outside/credentials"\n',
        encoding="utf-8",
    )
    err = _refused(pack)
    assert err.file is not None and err.file.endswith("pack.toml")
    assert err.line == len(text.splitlines()) + 3


@pytest.mark.parametrize("what", ["spine", "ontology", "references"])
def test_a_symlink_to_outside_is_refused(tmp_path: Path, secret: Path, what: str) -> None:
    pack = _pack(tmp_path)
    if what == "references":  # the folder itself
        shutil.rmtree(pack / "references")
        (pack / "references").symlink_to(secret.parent, target_is_directory=True)
        line = _set(pack, "files", "references", "references")
    else:
        target = pack / ("spine.sql" if what == "spine" else "ontology/facility.owl")
        target.unlink()
        target.symlink_to(secret)
        line = _set(pack, "files", what, str(target.relative_to(pack)))
    err = _refused(pack)
    assert err.file is not None and err.file.endswith("pack.toml") and err.line == line
    assert "symbolic link" in err.message
    assert "wJalr" not in str(err) and "hunter2" not in str(err)


@pytest.mark.parametrize("folder", ["assertions", "references", "prompts"])
def test_a_symlink_inside_a_pack_folder_is_refused(
    tmp_path: Path, secret: Path, folder: str
) -> None:
    pack = _pack(tmp_path)
    link = pack / folder / "stolen.txt"
    link.symlink_to(secret)
    err = _refused(pack)
    assert err.file == str(link)


def test_links_that_stay_inside_are_fine(tmp_path: Path) -> None:
    pack = _pack(tmp_path)
    (pack / "spine.sql").rename(pack / "real_spine.sql")
    (pack / "spine.sql").symlink_to(pack / "real_spine.sql")
    (pack / "references" / "again.txt").symlink_to(next((pack / "references").glob("*.txt")))
    assert load_pack(pack).spine_path.name == "spine.sql"


def test_path_outside_never_raises(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for rel in ("a\0b", "loop", "x" * 5000, "", ".", "a/./b", "~/x"):
        path_outside(tmp_path.resolve(), rel)
    assert path_outside(tmp_path.resolve(), "a\0b") == "contains a NUL character"


def test_a_batch_on_a_hostile_pack_exits_2_with_file_and_line(
    tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = _pack(tmp_path)
    line = _set(pack, "files", "spine", str(secret))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "tables": {}}\n', encoding="utf-8")
    code = main(
        ["batch", str(corpus), "--pack", str(pack), "-w", str(tmp_path / "ws"), "--no-progress"]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"pack.toml:{line}" in err
    assert "wJalr" not in err and "Traceback" not in err


# -- parse errors echo nothing of the file -------------------------------------------------


@pytest.mark.parametrize("name", ["spine.sql", "ontology/facility.owl"])
def test_a_parse_error_names_the_line_and_echoes_nothing(tmp_path: Path, name: str) -> None:
    from effectors.ri_gate import RiGate

    pack = _pack(tmp_path)
    (pack / name).write_text("\n" + SECRET, encoding="utf-8")
    with pytest.raises(PackError) as info:
        if name == "spine.sql":
            RiGate.from_pack(load_pack(pack))
        else:
            parse_file(pack / name)
    err = info.value
    assert err.file is not None and err.file.endswith(name.rsplit("/", 1)[-1])
    assert err.line == 2
    for word in ("aws_secret_access_key", "wJalr", "hunter2"):
        assert word not in str(err)


def test_an_assertion_parse_error_echoes_nothing(tmp_path: Path) -> None:
    from effectors.ri_gate import RiGate

    pack = _pack(tmp_path)
    head = "-- code: ri.x\n-- severity: warn\n-- message: m\n"
    (pack / "assertions" / "bad.sql").write_text(head + SECRET, encoding="utf-8")
    with pytest.raises(PackError) as info:
        RiGate.from_pack(load_pack(pack))
    assert info.value.line == 4 and "wJalr" not in str(info.value)
    assert "aws_secret" not in str(info.value)


def test_a_syntax_error_still_names_an_sql_keyword(tmp_path: Path) -> None:
    from effectors.ri_gate.ddl import parse_spine

    spine = tmp_path / "spine.sql"
    spine.write_text("CREATE TABLE t (x INT);\nCREATE TABLE TABLE u (y INT);\n", encoding="utf-8")
    with pytest.raises(PackError) as info:
        parse_spine(spine)
    assert info.value.line == 2 and '"TABLE"' in info.value.message


# -- XML: external entities and entity expansion ---------------------------------------------

RDF_HEAD = (
    '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
    'xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#">\n'
)
OWX_HEAD = '<Ontology xmlns="http://www.w3.org/2002/07/owl#" ontologyIRI="http://x.org/o">\n'


def _laughs(levels: int = 10) -> str:
    first = '<!ENTITY l0 "lollollollollollollollollollollollollollollollol">\n'
    return first + "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">\n' for i in range(1, levels))


def _rdf(doctype: str, ref: str) -> str:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [\n{doctype}]>\n{RDF_HEAD}'
        f'<rdf:Description rdf:about="http://x.org/a"><rdfs:label>{ref}</rdfs:label>'
        "</rdf:Description>\n</rdf:RDF>\n"
    )


def _owx(doctype: str, ref: str) -> str:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE Ontology [\n{doctype}]>\n{OWX_HEAD}'
        f'<Declaration><Class IRI="http://x.org/{ref}"/></Declaration>\n</Ontology>\n'
    )


HOSTILE_DOCTYPES = {
    "billion laughs": (_laughs(), "&l9;", 4, "refers to other entities"),
    "external entity": ('<!ENTITY x SYSTEM "file:///etc/passwd">\n', "&x;", 3, "SYSTEM"),
    "public entity": ('<!ENTITY x PUBLIC "-//x//y" "http://127.0.0.1:9/x">\n', "&x;", 3, "PUBLIC"),
    "parameter entity": (
        '<!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd">\n%p;\n',
        "",
        3,
        "parameter entity",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_DOCTYPES))
@pytest.mark.parametrize("syntax", ["RDF/XML", "OWL/XML"])
def test_hostile_xml_entities_are_refused_before_parsing(
    tmp_path: Path, case: str, syntax: str
) -> None:
    doctype, ref, line, fragment = HOSTILE_DOCTYPES[case]
    p = tmp_path / "o.owl"
    p.write_text((_rdf if syntax == "RDF/XML" else _owx)(doctype, ref), encoding="utf-8")
    t0 = time.process_time()
    with pytest.raises(PackError) as info:
        parse_file(p)
    assert time.process_time() - t0 < 5  # refused, not expanded (10^9 x 48 bytes)
    assert info.value.file == str(p) and info.value.line == line
    assert fragment in info.value.message


def test_an_external_dtd_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "o.owl"
    p.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF SYSTEM "http://127.0.0.1:9/x.dtd">\n'
        f"{RDF_HEAD}</rdf:RDF>\n",
        encoding="utf-8",
    )
    with pytest.raises(PackError) as info:
        parse_file(p)
    assert info.value.line == 2 and "external DTD" in info.value.message


def test_flat_entities_expanding_past_the_cap_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ontology.rdf.MAX_ENTITY_EXPANSION", 10_000)
    p = tmp_path / "o.owl"
    p.write_text(_rdf(f'<!ENTITY big "{"x" * 1000}">\n', "&big;" * 11), encoding="utf-8")
    with pytest.raises(PackError) as info:
        parse_file(p)
    assert "11,000 bytes" in info.value.message


def test_protege_entity_abbreviations_still_parse(tmp_path: Path) -> None:
    doctype = (
        '<!ENTITY owl "http://www.w3.org/2002/07/owl#" >\n'
        '<!-- a comment -->\n<!ENTITY xsd "http://www.w3.org/2001/XMLSchema#">\n'
    )
    p = tmp_path / "o.owl"
    p.write_text(_rdf(doctype, "&owl;Thing &xsd;string"), encoding="utf-8")
    (triple,) = parse_file(p).triples
    assert (
        str(triple.object) == '"http://www.w3.org/2002/07/owl#Thing '
        'http://www.w3.org/2001/XMLSchema#string"'
    )
    assert (
        len(
            parse_file(FACILITY.parent / "pizza" / "ontology" / "third-party" / "pizza.owl").triples
        )
        > 1000
    )


# -- owl:imports stay in the pack ---------------------------------------------------------------

IMPORTER = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
<http://ex.org/main> a owl:Ontology ; owl:imports <http://ex.org/far/bacnet> .
"""


def test_an_import_found_by_name_through_a_symlink_to_outside_is_refused(
    tmp_path: Path, secret: Path
) -> None:
    d = tmp_path / "pack" / "ontology"
    d.mkdir(parents=True)
    (d / "main.ttl").write_text(IMPORTER, encoding="utf-8")
    (d / "bacnet").symlink_to(secret)
    with pytest.raises(PackError) as info:
        closure(d / "main.ttl", {})
    assert info.value.file == str(d / "bacnet") and "symbolic link" in info.value.message


def test_an_import_found_by_name_inside_the_folder_is_read(tmp_path: Path) -> None:
    d = tmp_path / "ontology"
    d.mkdir()
    (d / "main.ttl").write_text(IMPORTER, encoding="utf-8")
    (d / "real.ttl").write_text(
        "<http://ex.org/far/bacnet> a <http://www.w3.org/2002/07/owl#Ontology> .\n",
        encoding="utf-8",
    )
    os.symlink("real.ttl", d / "bacnet")
    assert len(closure(d / "main.ttl", {}).files) == 2


@pytest.mark.parametrize("how", ["absolute", "symlink"])
def test_pack_check_reports_a_path_leaving_the_pack_and_reads_nothing_there(
    tmp_path: Path, secret: Path, how: str
) -> None:
    from harness.packcheck import check_pack

    pack = _pack(tmp_path)
    if how == "absolute":
        line = _set(pack, "files", "spine", str(secret))
    else:
        (pack / "references" / "stolen.txt").symlink_to(secret)
    report = check_pack(pack)
    (problem,) = [p for p in report.errors if p.code == "file-outside"]
    if how == "absolute":
        assert (problem.file, problem.line) == ("pack.toml", line)
    else:
        assert problem.file.endswith("stolen.txt")
    shown = str(report.as_dict())
    assert "wJalr" not in shown and "aws_secret" not in shown


def test_a_prose_fields_references_folder_linked_outside_is_refused(
    tmp_path: Path, secret: Path
) -> None:
    pack = _pack(tmp_path)
    (pack / "notes_refs").symlink_to(secret.parent, target_is_directory=True)
    toml = pack / "pack.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text + '\n[prose.fields.notes]\nreferences = "notes_refs"\n', encoding="utf-8")
    err = _refused(pack)
    assert err.file is not None and err.file.endswith("pack.toml")
    assert err.line == len(text.splitlines()) + 3 and "symbolic link" in err.message


def test_pack_check_reports_a_prose_fields_folder_leaving_the_pack(
    tmp_path: Path, secret: Path
) -> None:
    from harness.packcheck import check_pack

    pack = _pack(tmp_path)
    toml = pack / "pack.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text + '\n[prose.fields.notes]\nreferences = "refs"\n', encoding="utf-8")
    (pack / "refs").mkdir()
    (pack / "refs" / "stolen.txt").symlink_to(secret)
    (problem,) = [p for p in check_pack(pack).errors if p.code == "file-outside"]
    assert problem.file.endswith("stolen.txt")

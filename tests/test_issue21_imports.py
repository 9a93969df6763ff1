"""Issue 21: `owl:imports` resolved through an import map in pack.toml (`[ontology.imports]`,
IRI -> file in the pack folder) instead of the naming rule (the file named as the IRI's last
segment, next to the importing file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import PackError
from harness.pack import load_pack
from ontology.load import load_ontology, ontology_files

BASE_IRI = "http://example.org/third-party/vino-base"

_BASE = f"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:owl="http://www.w3.org/2002/07/owl#"
         xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"
         xml:base="{BASE_IRI}">
  <owl:Ontology rdf:about="{BASE_IRI}"/>
  <owl:Class rdf:about="{BASE_IRI}#WineColor"/>
</rdf:RDF>
"""

_EXT = f"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:owl="http://www.w3.org/2002/07/owl#"
         xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"
         xml:base="http://example.org/packs/vino">
  <owl:Ontology rdf:about="http://example.org/packs/vino">
    <owl:imports rdf:resource="{BASE_IRI}"/>
  </owl:Ontology>
  <owl:Class rdf:about="http://example.org/packs/vino#WineRow"/>
</rdf:RDF>
"""

_TOML = """[pack]
name = "vino"
version = "0.1.0"

[files]
ontology = "ontology/vino.owl"
spine = "spine.sql"

[ontology]
namespace = "http://example.org/packs/vino#"
{imports}

[tables.wines]
row_class = "WineRow"
key = ["wine_id"]
[tables.wines.columns]
wine_id = {{ kind = "id" }}
"""


def _pack(tmp_path: Path, imports: str) -> Path:
    d = tmp_path / "vino"
    (d / "ontology" / "third-party").mkdir(parents=True)
    (d / "ontology" / "vino.owl").write_text(_EXT, encoding="utf-8")
    # not named as the IRI's last segment ("vino-base"): the naming rule cannot find it
    (d / "ontology" / "third-party" / "vino-base-2024.rdf").write_text(_BASE, encoding="utf-8")
    (d / "spine.sql").write_text("CREATE TABLE wines (wine_id VARCHAR PRIMARY KEY);\n")
    (d / "pack.toml").write_text(_TOML.format(imports=imports), encoding="utf-8")
    return d


def test_without_a_map_the_error_says_how_to_map_the_import(tmp_path: Path) -> None:
    pack = load_pack(_pack(tmp_path, ""))
    with pytest.raises(PackError) as err:
        ontology_files(pack.ontology_path, pack.ontology_imports)
    assert BASE_IRI in str(err.value) and "[ontology.imports]" in str(err.value)


def test_the_import_map_names_the_local_file(tmp_path: Path) -> None:
    mapped = f'[ontology.imports]\n"{BASE_IRI}" = "ontology/third-party/vino-base-2024.rdf"'
    pack = load_pack(_pack(tmp_path, mapped))
    files = ontology_files(pack.ontology_path, pack.ontology_imports)
    assert [f.name for f in files] == ["vino.owl", "vino-base-2024.rdf"]
    loaded = load_ontology(pack.ontology_path, pack.ontology_imports)
    assert loaded.world[f"{BASE_IRI}#WineColor"] is not None
    assert loaded.world["http://example.org/packs/vino#WineRow"] is not None


@pytest.mark.parametrize(("entry", "problem"), [
    (f'"{BASE_IRI}" = "ontology/missing.rdf"', "no such file"),
    (f'"{BASE_IRI}" = "../../etc/passwd"', "no such file"),
    ('"not an iri" = "ontology/vino.owl"', "not an IRI"),
])
def test_a_bad_map_entry_is_a_pack_error(tmp_path: Path, entry: str, problem: str) -> None:
    with pytest.raises(PackError) as err:
        load_pack(_pack(tmp_path, "[ontology.imports]\n" + entry))
    assert problem in str(err.value) and str(err.value.file).endswith("pack.toml")

"""`membrane pack derive`: pools and candidate axioms from sample tables, each candidate
admitted only if HermiT finds the ontology consistent and every sample artifact still passes
the value gate (real HermiT, real value gate)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cli import main
from harness.corpus import read_corpus
from harness.models import Artifact
from harness.pack import load_pack
from harness.packcheck import check_pack
from harness.packderive import Candidate, _components, derive_pack
from tests.conftest import FACILITY

CLEAN = FACILITY / "corpus" / "demo.clean.jsonl"
DEMO = FACILITY / "corpus" / "demo.jsonl"


def _imaging_row_with_an_hvac_standard(pack_dir: Path) -> tuple[Artifact, int]:
    """A sample artifact whose first imaging row (an IEC 60601 standard) is given an ASHRAE
    standard seen in the sample: the canonical failure, with values the pools know."""
    arts = read_corpus(CLEAN, load_pack(pack_dir)).artifacts[:20]
    ashrae = next(
        r["standard"]
        for a in arts
        for r in a.tables["equipment"]
        if str(r["standard"]).startswith("ASHRAE")
    )
    for a in arts:
        for i, r in enumerate(a.tables["equipment"]):
            if str(r["standard"]).startswith("IEC 60601"):
                rows = [dict(x) for x in a.tables["equipment"]]
                rows[i]["standard"] = ashrae
                return a.model_copy(update={"tables": {**a.tables, "equipment": rows}}), i
    raise AssertionError("no imaging row in the sample")


@pytest.mark.java
def test_derive_admits_gated_axioms_that_catch_the_canonical_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "derived"
    assert (
        main(
            [
                "pack",
                "derive",
                "--pack",
                str(FACILITY),
                "--from-sample",
                str(CLEAN),
                "--limit",
                "20",
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    admitted = {c["name"] for c in report["admitted"]}
    assert {"disjoint-pools", "partition equipment.equipment_type/standard"} <= admitted
    assert report["pools"]["EquipmentStandard"] >= 5
    assert report["assertions_left_out"] == ["radiation_check_on_imaging.sql"]
    assert json.loads((out / "derive.json").read_text(encoding="utf-8")) == report

    checked = check_pack(out)
    assert checked.errors == [], [e.render() for e in checked.errors]

    from effectors.value_gate import ValueGate

    broken, row = _imaging_row_with_an_hvac_standard(out)
    with tempfile.TemporaryDirectory() as cache:
        [verdict] = ValueGate.from_pack(load_pack(out), Path(cache)).judge([broken])
    assert ("value.disjoint", f"equipment[{row}].standard") in {
        (c.code, str(c.location.cell())) for c in verdict.critiques
    }


@pytest.mark.java
def test_a_candidate_is_admitted_only_if_consistent_and_the_sample_passes(
    tmp_path: Path,
) -> None:
    sample = tmp_path / "sample.jsonl"
    sample.write_text(
        "".join(CLEAN.read_text(encoding="utf-8").splitlines(True)[:5]), encoding="utf-8"
    )
    first = json.loads(sample.read_text(encoding="utf-8").splitlines()[0])
    maker = first["tables"]["equipment"][0]["manufacturer"]
    ind = "".join(ch if ch.isalnum() else "_" for ch in maker).strip("_")
    inconsistent = Candidate(
        "bad: one individual in two disjoint pools",
        "",
        f'  <rdf:Description rdf:about="#{ind}"><rdf:type rdf:resource="#EquipmentStandard"/>'
        '</rdf:Description>\n  <owl:Class rdf:about="#EquipmentStandard"><owl:disjointWith '
        'rdf:resource="#EquipmentManufacturer"/></owl:Class>',
    )
    refuted = Candidate(
        "bad: every standard must be in an empty class",
        "",
        '  <owl:Class rdf:about="#NoStandard"><owl:disjointWith '
        'rdf:resource="#EquipmentStandard"/></owl:Class>\n'
        '  <owl:Class rdf:about="#EquipmentRow"><rdfs:subClassOf><owl:Restriction>'
        '<owl:onProperty rdf:resource="#hasStandard"/><owl:allValuesFrom '
        'rdf:resource="#NoStandard"/></owl:Restriction></rdfs:subClassOf></owl:Class>',
    )
    harmless = Candidate("fine: a class of its own", "", '  <owl:Class rdf:about="#Unused"/>')
    report = derive_pack(
        FACILITY, sample, tmp_path / "out", candidates=[inconsistent, refuted, harmless]
    )
    assert [c.admitted for c in report.candidates] == [False, False, True]
    assert inconsistent.why.startswith("HermiT:") and "inconsistent" in inconsistent.why
    assert "would fail: value.disjoint at equipment[0].standard" in refuted.why
    owl = (tmp_path / "out" / "ontology" / "derived.owl").read_text(encoding="utf-8")
    assert "#Unused" in owl and "#NoStandard" not in owl


def test_a_sample_with_placeholders_or_a_full_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    assert (
        main(
            [
                "pack",
                "derive",
                "--pack",
                str(FACILITY),
                "--from-sample",
                str(CLEAN),
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert "the folder is not empty" in capsys.readouterr().err


@pytest.mark.java
def test_a_sample_that_is_not_good_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # demo.jsonl's first artifact has placeholders: the pools cannot admit it
    assert (
        main(
            [
                "pack",
                "derive",
                "--pack",
                str(FACILITY),
                "--from-sample",
                str(DEMO),
                "--limit",
                "1",
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 2
    )
    assert "the pools alone do not admit the sample" in capsys.readouterr().err


@given(st.sets(st.tuples(st.sampled_from("abcdef"), st.sampled_from("uvwxyz")), max_size=12))
def test_components_partition_the_co_occurrence_graph(pairs: set[tuple[str, str]]) -> None:
    groups = _components(pairs)
    lefts = [g[0] for g in groups]
    rights = [g[1] for g in groups]
    assert sum(map(len, lefts)) == len({a for a, _ in pairs})  # each value in one group
    assert sum(map(len, rights)) == len({b for _, b in pairs})
    for a, b in pairs:  # a pair never crosses two groups
        assert [i for i, g in enumerate(lefts) if a in g] == [
            i for i, g in enumerate(rights) if b in g
        ]

"""The trials test pack: canonical cells end to end at the gate level (value gate -> the
canonical table -> RI gate), the Lipitor escape of issue 28 and its edges. Real HermiT and
DuckDB."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.registry import GateContext, build_gate
from harness.canonical import apply_canonical
from harness.models import Artifact, Verdict
from harness.pack import load_pack
from ontology import load_pools
from tests.conftest import ROOT

pytestmark = pytest.mark.java

TRIALS = ROOT / "tests" / "packs" / "trials"
TRIAL = {"trial_id": "NCT-0001", "title": "Statins after myocardial infarction (LIPID-2)",
         "phase": "Phase 3", "area": "cardiology", "enrolment": 1200}
ARM = {"trial_id": "NCT-0001", "arm_id": "A", "intervention": "atorvastatin",
       "route": "oral", "dose_mg": 40}


@pytest.fixture(scope="module")
def gates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    pack = load_pack(TRIALS)
    cache = tmp_path_factory.mktemp("cache")
    ctx = GateContext(pack=pack, pools=load_pools(pack, cache), cache_dir=cache)
    return {name: build_gate(name, ctx) for name in ("value_gate", "ri_gate")}


def artifact(trial: dict[str, object] | None = None, *arms: dict[str, object]) -> Artifact:
    return Artifact(id="t", tables={
        "trials": [{**TRIAL, **(trial or {})}],
        "arms": [{**ARM, **a} for a in (arms or ({},))],
    })


def judge(gates: dict[str, object], *cands: Artifact) -> list[tuple[Verdict, Verdict, Artifact]]:
    """Value gate, then the canonical table applied, then the RI gate (the loop's order)."""
    values: list[Verdict] = gates["value_gate"].judge(list(cands))  # type: ignore[attr-defined]
    canon = [apply_canonical(a, v.canonical) for a, v in zip(cands, values, strict=True)]
    ris: list[Verdict] = gates["ri_gate"].judge(canon)  # type: ignore[attr-defined]
    return list(zip(values, ris, canon, strict=True))


def codes(v: Verdict) -> list[str]:
    return sorted(c.code for c in v.critiques if c.severity == "error")


def test_lipitor_at_800_mg_fails_the_dose_check_like_atorvastatin(gates: dict[str, object]) -> None:
    """Issue 28's escape: the brand name with ® resolved to atorvastatin but the CHECK saw
    the raw text and the arm was committed."""
    spellings = ["atorvastatin", "Lipitor®", "LIPITOR™", "Atorvastatin.", " lipitor ",
                 "atorva", "ＬＩＰＩＴＯＲ"]
    out = judge(gates, *(artifact(None, {"intervention": s, "dose_mg": 800}) for s in spellings))
    for spelling, (value, ri, canon) in zip(spellings, out, strict=True):
        assert value.passed, spelling
        assert canon.tables["arms"][0]["intervention"] == "atorvastatin", spelling
        assert codes(ri) == ["ri.check"], spelling
    assert [c.via for c in out[1][0].canonical] == ["alt_label"]
    assert [c.via for c in out[5][0].canonical] == ["alias"]
    assert out[0][0].canonical == ()  # already canonical: nothing to rewrite


def test_a_cell_that_does_not_resolve_stays_as_written(gates: dict[str, object]) -> None:
    ((value, _ri, canon),) = judge(gates, artifact(None, {"intervention": "Lipitorr"}))
    assert codes(value) == ["value.unknown"]
    assert canon.tables["arms"][0]["intervention"] == "Lipitorr"


def test_pd1_assertion_with_digits_in_its_code_sees_every_spelling(
    gates: dict[str, object],
) -> None:
    arm = {"intervention": "KEYTRUDA®", "route": "IV", "dose_mg": 200}
    ((value, ri, canon),) = judge(gates, artifact(None, arm))
    assert value.passed
    assert canon.tables["arms"][0] == {**ARM, "intervention": "pembrolizumab",
                                       "route": "intravenous", "dose_mg": 200}
    assert codes(ri) == ["ri.pd1_outside_oncology"]
    ((_, ri, _),) = judge(gates, artifact({"area": "Oncology"}, arm))
    assert ri.passed


def test_free_text_title_is_checked_for_placeholders_and_length(
    gates: dict[str, object],
) -> None:
    out = judge(gates, artifact({"title": "TBD"}), artifact({"title": "x" * 201}),
                artifact({"title": "Ozempic® vs. Lipitor: a pragmatic trial"}))
    assert [codes(v) for v, _, _ in out] == [["value.placeholder"], ["value.length"], []]
    assert out[2][2].tables["trials"][0]["title"] == "Ozempic® vs. Lipitor: a pragmatic trial"


def test_canonical_form_iri(tmp_path: Path) -> None:
    """`[ontology] canonical = "iri"`: cells are rewritten to the IRI fragment."""
    dest = tmp_path / "trials"
    dest.mkdir()
    for p in TRIALS.iterdir():
        if p.is_file():
            (dest / p.name).write_bytes(p.read_bytes())
    toml = dest / "pack.toml"
    toml.write_text(toml.read_text().replace('canonical = "label"', 'canonical = "iri"'))
    pack = load_pack(dest)
    ctx = GateContext(pack=pack, pools=load_pools(pack, tmp_path / "c"), cache_dir=tmp_path / "c")
    (v,) = build_gate("value_gate", ctx).judge([artifact({"phase": "Phase III"})])
    assert {c.cell: c.value for c in v.canonical} == {"trials[0].phase": "phase_3"}


def test_pool_table_holds_canonical_forms_and_aliases(gates: dict[str, object]) -> None:
    con = gates["ri_gate"]._warm().con  # type: ignore[attr-defined]
    rows = con.execute("SELECT name, canonical FROM _pool WHERE individual = 'atorvastatin' "
                       "AND class = 'Statin' ORDER BY name").fetchall()
    assert rows == [("Lipitor", "atorvastatin"), ("atorva", "atorvastatin"),
                    ("atorvastatin", "atorvastatin")]

"""Issue 21: a plain text column can be declared without an ontology property (unchecked
text): a third-party ontology need not declare one. It is still checked for placeholders and
`max_length`, and it reaches RI_GATE like any column."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from effectors.registry import GateContext, build_gate
from harness.models import Artifact, Verdict
from harness.pack import ColumnBinding, load_pack
from ontology import load_pools
from tests.packs.test_trials import ARM, TRIAL, TRIALS


def test_a_text_column_needs_no_property_but_other_kinds_do() -> None:
    assert ColumnBinding(kind="text", max_length=10).property is None
    for kind in ("object", "data"):
        with pytest.raises(ValueError):
            ColumnBinding(kind=kind)  # type: ignore[arg-type]


def _pack(tmp_path: Path) -> Path:
    d = tmp_path / "trials"
    shutil.copytree(TRIALS, d, ignore=shutil.ignore_patterns("__pycache__"))
    spine = d / "spine.sql"
    spine.write_text(spine.read_text(encoding="utf-8").replace(
        "    title      VARCHAR NOT NULL,", "    title      VARCHAR NOT NULL,\n    note VARCHAR,"),
        encoding="utf-8")
    toml = d / "pack.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        'enrolment = { kind = "data", property = "hasEnrolment" }',
        'enrolment = { kind = "data", property = "hasEnrolment" }\n'
        'note = { kind = "text", max_length = 40 }  # no property: not in the ontology'),
        encoding="utf-8")
    return d


@pytest.mark.java
def test_unchecked_text_is_judged_for_placeholders_and_length_only(tmp_path: Path) -> None:
    pack = load_pack(_pack(tmp_path))
    assert pack.tables["trials"].columns["note"].property is None
    cache = tmp_path / "cache"
    cache.mkdir()
    ctx = GateContext(pack=pack, pools=load_pools(pack, cache), cache_dir=cache)
    value_gate, ri_gate = (build_gate(n, ctx) for n in ("value_gate", "ri_gate"))
    notes = ["a crisp, dry finish", "TBD", "x" * 60]
    cands = [Artifact(id=f"t{i}", tables={"trials": [{**TRIAL, "note": n}], "arms": [ARM]})
             for i, n in enumerate(notes)]
    values: list[Verdict] = value_gate.judge(cands)  # type: ignore[attr-defined]
    got = [sorted(c.code for c in v.critiques) for v in values]
    assert got == [[], ["value.placeholder"], ["value.length"]]
    ris: list[Verdict] = ri_gate.judge(cands[:1])  # type: ignore[attr-defined]
    assert [c.code for c in ris[0].critiques if c.severity == "error"] == []

"""The second example pack, packs/facility-brick (issue 27): a register bound to Brick Schema
1.4, shipped in the pack with its BSD-3 licence. Offline, as on a fresh clone: the demo batch
commits the six clean registers unchanged and repairs the six flawed ones (each caught by the
gate that owns its defect), `pack check` prints the normalisation report and the shapes
summary with no error, and `pack test` passes. Brick's first classification makes these slow."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.packtest import run_pack_tests
from tests.conftest import ROOT

pytestmark = [pytest.mark.java, pytest.mark.slow]

PACK = ROOT / "packs" / "facility-brick"
CORPUS = PACK / "corpus" / "demo.jsonl"
BRICK_SHA256 = "f4392ed9d72abd2e33969d32dd6a8559b0df5466161c77a513c93e6e50fdbea9"


def _membrane(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=1800,
    )


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    ws = tmp_path_factory.mktemp("brick-ws")
    proc = _membrane(
        "batch", str(CORPUS), "--pack", str(PACK), "-w", str(ws), "--json", "--no-progress"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout), ws


def test_the_shipped_brick_is_the_pinned_file_with_its_licence() -> None:
    ttl = PACK / "ontology" / "Brick.ttl"
    assert hashlib.sha256(ttl.read_bytes()).hexdigest() == BRICK_SHA256
    licence = (PACK / "ontology" / "LICENSE-Brick.txt").read_text(encoding="utf-8")
    assert licence.startswith("Copyright (c) 2016-2021, Brick Development Team")
    assert "Redistributions of source code must retain" in licence


def test_the_corpus_is_what_the_generator_writes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("brick_generate", PACK / "generate.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x) for x in lines] == [*gen.CLEAN, *(a for a, *_ in gen.DEFECTS)]


def test_the_demo_commits_the_clean_registers_and_repairs_every_defect(
    batch: tuple[dict[str, Any], Path],
) -> None:
    result, ws = batch
    runs = {r["artifact_id"]: r for r in result["runs"]}
    assert result["errors"] == [] and len(runs) == 12
    assert {a: r["state"] for a, r in runs.items()} == {a: "COMMITTED" for a in runs}
    truth = [json.loads(x) for x in (PACK / "corpus" / "demo.truth.jsonl").read_text().splitlines()]
    # each flawed register was caught by the code its defect carries, and needed a repair
    for t in truth:
        assert t["code"] in runs[t["id"]]["codes"], (t, runs[t["id"]])
        assert runs[t["id"]]["attempts"] >= 2
    flawed = {t["id"] for t in truth}
    assert {a for a, r in runs.items() if r["attempts"] == 1} == set(runs) - flawed
    # the clean ones are committed as they came (cells canonicalised to their labels only)
    committed = {
        (a := json.loads(x))["id"]: a
        for x in (ws / "current" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    }
    originals = {(a := json.loads(x))["id"]: a for x in CORPUS.read_text().splitlines()}
    for aid in set(runs) - flawed:
        assert committed[aid]["prose"] == originals[aid]["prose"]
    # the repairs: the deprecated class by its replacement, the misspelt one by the nearest
    assert committed["brick-09"]["tables"]["points"][0]["point_type"] == (
        "Leaving Water Temperature Sensor"
    )
    assert committed["brick-08"]["tables"]["equipment"][0]["equipment_type"] == (
        "Air Handling Unit"
    )
    assert committed["brick-10"]["tables"]["equipment"][0]["rated_power_kw"] <= 100
    assert committed["brick-11"]["tables"]["points"][1]["equipment_id"] == "AHU-4"
    assert "450 kW" not in committed["brick-12"]["prose"]


def test_pack_check_prints_the_normalisation_report_and_the_shapes_summary() -> None:
    proc = _membrane("pack", "check", str(PACK))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    text = proc.stdout
    for needle in (
        # the normalisation report: triples kept and set aside, by reason, with examples
        "88 triple(s) set aside before reasoning",  # properties typed by Brick classes
        "7 triple(s) set aside before reasoning",  # rdf:Property
        "SHACL shapes (data constraints, not axioms for the reasoner); e.g. Brick.ttl:",
        "owl:imports <http://qudt.org/3.1.8/vocab/unit> is skipped",
        "owl:imports <https://w3id.org/rec/recimports> is skipped",
        # the shapes summary: what VALUE_GATE compiles, what it does not, what binds nothing
        "shape(s) are not checked (1 constraint(s) are)",
        "shape path(s) no column binds",
    ):
        assert needle in text, needle
    assert "facility-brick: 0 errors" in text
    assert "Switch_Room" not in text  # no class of the pack shares a fragment with Brick's


def test_pack_test_passes() -> None:
    report = run_pack_tests(PACK)
    assert report.failed == [], [r.as_dict() for r in report.failed]
    assert len(report.results) == 7

"""A pack picks its ruleset in pack.toml; every shipped ruleset runs the demo end to end,
and a pack naming no such ruleset is refused before anything is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.api import run_batch
from harness.errors import PackError
from harness.pack import load_pack
from rules import RULESETS

ROOT = Path(__file__).resolve().parent.parent
FACILITY = ROOT / "packs" / "facility"
DEMO = FACILITY / "corpus" / "demo.jsonl"


def _pack_with(tmp: Path, ruleset: str) -> Path:
    pack = tmp / "pack"
    shutil.copytree(FACILITY, pack, ignore=shutil.ignore_patterns("corpus"))
    toml = pack / "pack.toml"
    text = toml.read_text()
    assert "[policy]\n" in text
    toml.write_text(text.replace("[policy]\n", f'[policy]\nrules = "{ruleset}"\n', 1))
    return pack


@pytest.mark.java
@pytest.mark.slow
@pytest.mark.parametrize("ruleset", sorted(RULESETS))
def test_every_shipped_ruleset_runs_the_demo(tmp_path: Path, ruleset: str) -> None:
    pack = _pack_with(tmp_path, ruleset)
    ws = tmp_path / "ws"
    result = run_batch(ws, DEMO, pack)  # the whole demo corpus
    committed = sum(1 for r in result.runs if r.state == "COMMITTED")
    assert len(result.runs) == len(DEMO.read_text().splitlines()) and committed >= 0.95 * len(
        result.runs
    )
    first = json.loads((ws / "trace" / f"{result.runs[0].run_id}.jsonl").read_text().split("\n")[0])
    assert first["kind"] == "run_started" and first["agenda"].startswith(f"{ruleset}_")


def test_an_unknown_ruleset_is_a_pack_error(tmp_path: Path) -> None:
    pack = _pack_with(tmp_path, "agenda_v9")
    with pytest.raises(PackError, match="agenda_v9"):
        load_pack(pack)

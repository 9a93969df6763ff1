"""Several prose fields end to end (issue 25): a copy of the facility pack declares a plain
`summary` beside `prose`; a real batch (HermiT, DuckDB, the offline proposer) repairs only the
failing summaries, keeps the prose that passed byte for byte, refuses a line that carries an
undeclared field, names the field in the trace, renders both fields in the chapter, and
exports a `summary` column."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from harness.cli import main
from harness.export import parquet_path
from tests.conftest import FACILITY

pytestmark = [pytest.mark.java, pytest.mark.slow]

_FIELDS = """
[prose.fields.summary]          # a plain-language register beside the technical prose
references = "references/summary"
"""


def _pack(root: Path) -> Path:
    pack = root / "pack"
    shutil.copytree(FACILITY, pack, ignore=shutil.ignore_patterns("corpus", "__pycache__"))
    (pack / "pack.toml").write_text(
        (pack / "pack.toml").read_text(encoding="utf-8") + _FIELDS, encoding="utf-8"
    )
    refs = pack / "references" / "summary"
    refs.mkdir(parents=True)
    for i, n in enumerate((20, 30, 45, 60, 90)):
        (refs / f"s{i}.txt").write_text(" ".join(["word"] * n) + ".", encoding="utf-8")
    return pack


def test_a_batch_judges_and_repairs_each_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = _pack(tmp_path)
    lines = (FACILITY / "corpus" / "demo.clean.jsonl").read_text(encoding="utf-8").splitlines()
    clean = [json.loads(x) for x in lines[:4]]
    clean[0]["prose_fields"] = {"summary": ""}  # empty: too short, nothing mentioned
    # a summary naming something the tables do not hold, and too short
    clean[1]["prose_fields"] = {"summary": "It also lists a chiller."}
    clean[2]["prose_fields"] = {"summary": clean[2]["prose"]}  # the long prose: too long
    clean[3]["prose_fields"] = {"summary": "x.", "teaser": "Undeclared."}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(a) + "\n" for a in clean), encoding="utf-8")
    ws = tmp_path / "ws"
    code = main(["batch", str(corpus), "--pack", str(pack), "-w", str(ws), "--no-progress",
                 "--json", "--no-report"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2, out  # a bad line: reported, the rest committed
    assert len(out["errors"]) == 1 and "teaser" in json.dumps(out["errors"])
    committed = {
        a["id"]: a
        for a in map(json.loads, (ws / "current" / "corpus.jsonl").read_text().splitlines())
    }
    assert sorted(committed) == sorted(a["id"] for a in clean[:3])
    for a in clean[:3]:
        got = committed[a["id"]]
        assert got["prose"] == a["prose"]  # the prose passed: locked, kept byte for byte
        assert got["prose_fields"]["summary"] != a["prose_fields"]["summary"]
        words = len(got["prose_fields"]["summary"].split())
        assert 20 <= words <= 90, got["prose_fields"]["summary"]
    traces = "".join(p.read_text() for p in (ws / "trace").rglob("*.jsonl"))
    assert '"field":"summary"' in traces.replace(" ", "")
    assert "proposal.locked_prose" not in traces
    chapter = (ws / "current" / "chapters" / f"{clean[1]['id']}.md").read_text(encoding="utf-8")
    assert "## summary" in chapter and committed[clean[1]["id"]]["prose_fields"]["summary"] in (
        chapter
    )
    assert main(["export", "-w", str(ws), "--format", "parquet", "--out",
                 str(tmp_path / "out"), "--json"]) == 0
    capsys.readouterr()
    rows = duckdb.sql(
        "SELECT artifact_id, prose, summary FROM read_parquet(?) ORDER BY artifact_id",
        params=[str(parquet_path(tmp_path / "out", "artifacts"))],
    ).fetchall()
    assert [(r[0], r[2]) for r in rows] == sorted(
        (i, a["prose_fields"]["summary"]) for i, a in committed.items()
    )

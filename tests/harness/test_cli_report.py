"""`membrane report` from the runs' records without the application's imports (issue 16),
and the full path when those records cannot give it: the same report either way, the same
errors, and what the fast path never imports (the gates, the loop, the library facade)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness import api
from harness.cli import main
from harness.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "packs" / "facility"
DEMO = PACK / "corpus" / "demo.jsonl"
pytestmark = pytest.mark.java

_PROBE = (
    "import json, sys\n"
    "from harness.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "loaded = sorted(m for m in sys.modules if m.split('.')[0] in"
    " ('harness', 'effectors', 'ontology', 'rules', 'jpype', 'duckdb', 'owlready2'))\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps(loaded) + '\\n')\n"
    "sys.exit(code)\n"
)


def _probe(*args: str) -> tuple[int, str, list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], check=False, capture_output=True, text=True,
        cwd=ROOT,
    )
    marker = proc.stderr.rindex("MODULES ")
    return proc.returncode, proc.stdout, json.loads(proc.stderr[marker + 8 :])


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rep") / "ws"
    corpus = root.parent / "c.jsonl"
    corpus.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:6]))
    api.run_batch(root, corpus, PACK)
    return root


def test_the_report_reads_the_records_without_the_gates_or_the_loop(workspace: Path) -> None:
    code, stdout, loaded = _probe("report", "-w", str(workspace), "--json")
    assert code == 0
    assert json.loads(stdout) == orjson.loads(orjson.dumps(api.run_report(workspace).to_dict()))
    for module in ("harness.api", "harness.commands", "harness.loop", "effectors.registry",
                   "ontology", "jpype", "duckdb", "owlready2"):
        assert module not in loaded, module
    assert "harness.cli_report" in loaded


def test_people_see_the_same_report_from_either_path(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["report", "-w", str(workspace)]) == 0
    fast = capsys.readouterr().out
    import harness.cli_report

    monkeypatch.setattr(harness.cli_report, "recorded", lambda args: None)  # the full path
    assert main(["report", "-w", str(workspace)]) == 0
    assert capsys.readouterr().out == fast
    assert "single-shot baseline vs refined (the runs' verdicts)" in fast


def test_a_workspace_without_the_records_is_re_audited_and_says_so(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old"
    shutil.copytree(workspace, old)
    db = sqlite3.connect(Workspace(old).ledger_path)
    db.execute("DROP TABLE run_figures")
    db.commit()
    db.close()
    for path in (old / "current" / "metrics").iterdir():  # an older version's sidecars
        m = orjson.loads(path.read_bytes())
        del m["run_id"]
        path.write_bytes(orjson.dumps(m))
    assert main(["report", "-w", str(old), "--json"]) == 0
    rep: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert rep["source"] == "reaudit"
    assert rep["notes"][0].startswith("re-audited: this workspace lacks the records")
    assert main(["report", "-w", str(workspace), "--reaudit", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == "reaudit"


def test_the_report_of_nothing_or_of_a_bad_pack_exits_2_naming_it(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "-w", str(tmp_path / "empty"), "--json"]) == 2
    captured = capsys.readouterr()
    assert "nothing has run in this workspace yet" in captured.err
    assert "nothing has run" in json.loads(captured.out)["error"]
    assert main(["report", "-w", str(workspace), "--pack", str(tmp_path / "no-pack")]) == 2
    assert "no-pack" in capsys.readouterr().err
    damaged = tmp_path / "damaged"
    shutil.copytree(workspace, damaged)
    Workspace(damaged).ledger_path.write_bytes(b"not a database" * 100)
    assert main(["report", "-w", str(damaged)]) == 2
    assert "ledger.sqlite" in capsys.readouterr().err

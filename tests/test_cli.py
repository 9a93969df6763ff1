"""The CLI end to end on the shipped demo pack (real HermiT, DuckDB, SQLite), and every
bad input of the loop issue: exit code 2, a message naming the file (and line), nothing
reaching current/."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "packs" / "facility"
DEMO = PACK / "corpus" / "demo.jsonl"
pytestmark = pytest.mark.java


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("demo")
    assert (
        main(["batch", str(DEMO), "--pack", str(PACK), "-w", str(ws), "--no-progress", "--json"])
        == 0
    )
    return ws


@pytest.mark.slow
def test_demo_commits_at_least_95_percent_and_reports(
    demo_ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()  # the fixture's own batch output
    code, out, _ = _run(capsys, "report", "-w", str(demo_ws), "--pack", str(PACK), "--json")
    assert code == 0
    rep = json.loads(out)
    n = len(DEMO.read_text().splitlines())
    assert rep["runs"].get("COMMITTED", 0) >= 0.95 * n
    assert rep["baseline"]["placeholder_rate"] > 0.05 and rep["refined"]["placeholder_rate"] == 0
    assert rep["refined"]["ri_violations"] == 0 and rep["baseline"]["ri_violations"] > 0
    lines = (demo_ws / "current" / "corpus.jsonl").read_text().splitlines()
    assert len(lines) == rep["runs"]["COMMITTED"]
    # a rerun resumes: nothing left to do, nothing duplicated
    code, out, _ = _run(
        capsys, "batch", str(DEMO), "--pack", str(PACK), "-w", str(demo_ws), "--json", "--no-report"
    )
    assert code == 0 and json.loads(out)["runs"] == [] and len(json.loads(out)["skipped"]) == n
    assert (demo_ws / "current" / "corpus.jsonl").read_text().splitlines() == lines


@pytest.mark.slow
def test_every_demo_trace_verifies_and_why_answers_for_any_committed_cell(
    demo_ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code, out, _ = _run(capsys, "trace", "verify", "-w", str(demo_ws), "--json")
    assert code == 0 and json.loads(out)["failed"] == []
    committed = [
        json.loads(x) for x in (demo_ws / "current" / "corpus.jsonl").read_text().splitlines()
    ]
    checked = 0
    for art in committed[::17]:
        for table, rows in art["tables"].items():
            for i, row in enumerate(rows):
                for col in row:
                    code, out, err = _run(
                        capsys,
                        "trace",
                        "why",
                        art["id"],
                        table,
                        str(i),
                        col,
                        "-w",
                        str(demo_ws),
                        "--json",
                    )
                    assert code == 0, err
                    prov = json.loads(out)
                    assert prov["value"] == row[col]
                    assert {a["gate"] for a in prov["admitted"]} == {
                        "value_gate",
                        "ri_gate",
                        "prose_gate",
                    }
                    assert prov["committed"]["version"] >= 1
                    checked += 1
    assert checked > 300
    # a repaired cell names the attempt that repaired it; the key form of ROW works too
    code, out, _ = _run(
        capsys,
        "trace",
        "why",
        "fac-0052",
        "equipment",
        "EQ-006",
        "standard",
        "-w",
        str(demo_ws),
        "--json",
    )
    prov = json.loads(out)
    assert (
        code == 0 and prov["proposed"]["proposer"] == "offline" and prov["value"] != "ASHRAE 62.1"
    )


def test_refine_one_artifact_commits_the_canonical_repair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = next(x for x in DEMO.read_text().splitlines() if '"fac-0052"' in x)
    art = tmp_path / "a.json"
    art.write_text(line)
    code, out, err = _run(
        capsys, "refine", str(art), "--pack", str(PACK), "-w", str(tmp_path / "ws"), "--json"
    )
    assert code == 0, err
    run = json.loads(out)["run"]
    assert run["state"] == "COMMITTED" and run["codes"]["value.disjoint"] == 1


def _corpus(tmp_path: Path, *lines: str) -> Path:
    p = tmp_path / "c.jsonl"
    p.write_text("".join(x + "\n" for x in lines))
    return p


GOOD = next(iter(DEMO.read_text().splitlines()))


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ("{not json", "c.jsonl:2: not valid JSON"),
        (
            json.dumps({"id": "x1", "tables": {"pumps": []}}),
            "c.jsonl:2: artifact 'x1': unknown table 'pumps'",
        ),
        (
            json.dumps({"id": "x2", "tables": {"rooms": [{"room_id": "R", "colour": "red"}]}}),
            "unknown column(s) ['colour']",
        ),
        (json.dumps({"id": "../../etc/evil", "tables": {}}), "c.jsonl:2: invalid artifact at `id`"),
        ("[1, 2]", "c.jsonl:2: an artifact must be a JSON object"),
        # hostile lines a probe found (issue 17): each is one reported line, never a crash
        ('{"id": "ok-1", "id": "../evil", "tables": {}}', "c.jsonl:2: duplicate key 'id'"),
        (json.dumps({"id": "x3\n", "tables": {}}), "c.jsonl:2: invalid artifact at `id`"),
        ('{"id": "x4", "tables": {}, "meta": {"a": NaN}}', "c.jsonl:2: not valid JSON: NaN"),
        (
            '{"id": "x5", "tables": {}, "meta": ' + "[" * 300 + "]" * 300 + "}",
            "c.jsonl:2: the artifact is nested more than 32 levels deep",
        ),
        (
            '{"id": "x6", "tables": {}, "meta": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "c.jsonl:2: not valid JSON: nested too deep",
        ),
    ],
)
def test_bad_corpus_line_is_reported_and_never_reaches_current(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, needle: str
) -> None:
    ws = tmp_path / "ws"
    corpus = _corpus(tmp_path, GOOD, bad)
    # --strict-input: stop before anything runs
    code, _out, err = _run(
        capsys, "batch", str(corpus), "--pack", str(PACK), "-w", str(ws), "--strict-input"
    )
    assert code == 2 and needle in err and "hint:" in err
    assert not (ws / "current" / "corpus.jsonl").exists()
    # default: the batch keeps going past the bad line, reports it, exits 2
    code, _out, err = _run(
        capsys, "batch", str(corpus), "--pack", str(PACK), "-w", str(ws), "--no-report"
    )
    assert code == 2 and needle in err
    ids = [json.loads(x)["id"] for x in (ws / "current" / "corpus.jsonl").read_text().splitlines()]
    assert ids == [json.loads(GOOD)["id"]]
    assert not list(tmp_path.rglob("evil*"))


def _broken_pack(tmp_path: Path, edit: str) -> Path:
    pack = tmp_path / "pack"
    shutil.copytree(PACK, pack, ignore=shutil.ignore_patterns("corpus"))
    if edit == "toml":
        p = pack / "pack.toml"
        p.write_text(p.read_text().replace('[pack]\nname = "facility"', '[pack]\nname = "facility'))
    elif edit == "missing_spine":
        (pack / "spine.sql").unlink()
    elif edit == "owl":
        (pack / "ontology" / "facility.owl").write_text("<rdf:RDF this is not xml")
    elif edit == "sql":
        (pack / "spine.sql").write_text("CREATE TABLE rooms (room_id VARCHAR PRIMARY KEY,, oops);")
    return pack


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        ("toml", "pack.toml:"),
        ("missing_spine", "spine.sql: the spine file named in pack.toml does not exist"),
        ("owl", "facility.owl"),
        ("sql", "spine.sql"),
    ],
)
def test_broken_pack_file_is_a_clear_setup_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, needle: str
) -> None:
    pack = _broken_pack(tmp_path, edit)
    ws = tmp_path / "ws"
    code, _out, err = _run(
        capsys, "batch", str(_corpus(tmp_path, GOOD)), "--pack", str(pack), "-w", str(ws)
    )
    assert code == 2, err
    assert needle in err
    assert "Traceback" not in err
    assert not (ws / "current" / "corpus.jsonl").exists()


def test_refine_of_a_bad_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    art = tmp_path / "a.json"
    art.write_text('{"id": "a b c", "tables": {}}')
    code, _out, err = _run(
        capsys, "refine", str(art), "--pack", str(PACK), "-w", str(tmp_path / "ws")
    )
    assert code == 2 and "a.json: invalid artifact at `id`" in err


def test_trace_commands_on_an_empty_workspace_say_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = _run(capsys, "trace", "list", "-w", str(tmp_path))
    assert code == 2 and "run `membrane batch`" in err


def test_init_creates_a_workspace_and_keeps_an_existing_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "init", "--pack", "packs/facility", "-w", str(tmp_path), "--json")
    assert code == 0
    made = json.loads(out)["created"]
    assert "membrane.toml" in made and (tmp_path / "current").is_dir()
    # recorded relative to the workspace (how membrane.toml paths resolve), not to the cwd
    recorded = tomllib.loads((tmp_path / "membrane.toml").read_text())["pack"]
    assert (tmp_path / recorded).resolve() == (ROOT / "packs" / "facility").resolve()
    code, _out, err = _run(capsys, "init", "--pack", "no/such/pack", "-w", str(tmp_path / "x"))
    assert code == 2 and "pack.toml" in err
    (tmp_path / "membrane.toml").write_text('pack = "elsewhere"\n')
    code, out, _ = _run(capsys, "init", "-w", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["created"] == []
    assert (tmp_path / "membrane.toml").read_text() == 'pack = "elsewhere"\n'


def test_bad_membrane_toml_is_a_setup_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "membrane.toml").write_text("cohort_size = 'many'\n")
    code, _out, err = _run(capsys, "batch", str(DEMO), "-w", str(tmp_path))
    assert code == 2 and "membrane.toml" in err and "cohort_size" in err


def test_an_empty_corpus_is_an_error_not_a_silent_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _corpus(tmp_path, "", "   ")
    code, _out, err = _run(capsys, "batch", str(corpus), "--pack", str(PACK), "-w", str(tmp_path))
    assert code == 2 and "c.jsonl: the corpus has no artifacts" in err and "hint:" in err

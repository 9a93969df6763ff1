"""`membrane pack new`: the skeleton is checked clean, passes its own tests and a batch
commits its test artifacts (new -> check -> test -> batch, real engines, offline proposer)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.cli import main
from harness.packnew import _name, skeleton


@pytest.mark.java
def test_new_check_test_batch_commits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack = tmp_path / "catalogue"
    assert main(["pack", "new", str(pack), "--json"]) == 0
    made = json.loads(capsys.readouterr().out)["files"]
    for part in (
        "pack.toml",
        "spine.sql",
        "ontology/catalogue.owl",
        "prompts/propose.md",
        "assertions/lamp_too_heavy.sql",
        "tests/examples.jsonl",
        "references/reference-01.txt",
    ):
        assert part in made and (pack / part).is_file()

    assert main(["pack", "check", str(pack), "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["errors"] == 0 and checked["warnings"] == 0, checked["problems"]

    assert main(["pack", "test", str(pack), "--json"]) == 0
    tested = json.loads(capsys.readouterr().out)
    assert tested["passed"] == 2 and tested["failed"] == 0
    failing = [r for r in tested["results"] if r["got"]]
    assert [o["code"] for o in failing[0]["got"]] == ["value.disjoint"]

    corpus = tmp_path / "corpus.jsonl"
    cases = (pack / "tests" / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    corpus.write_text(
        "".join(json.dumps(json.loads(c)["artifact"]) + "\n" for c in cases), encoding="utf-8"
    )
    ws = tmp_path / "ws"
    assert (
        main(
            [
                "batch",
                str(corpus),
                "--pack",
                str(pack),
                "-w",
                str(ws),
                "--no-progress",
                "--no-report",
                "--strict",
                "--json",
            ]
        )
        == 0
    )
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["state"] for r in runs] == ["COMMITTED", "COMMITTED"]
    assert runs[1]["codes"] == {"value.disjoint": 1}  # the oak lamp was repaired
    published = (ws / "current" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    [committed] = [a for a in map(json.loads, published) if a["id"] == "catalogue-test-02"]
    assert committed["tables"]["items"][0]["material"] in ("steel", "brass")


def test_a_folder_that_is_not_empty_is_refused_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["pack", "new", str(tmp_path)]) == 2
    assert "the folder is not empty" in capsys.readouterr().err
    assert not (tmp_path / "pack.toml").exists()
    assert main(["pack", "new", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "pack.toml").is_file()
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_every_section_of_pack_toml_is_commented(tmp_path: Path) -> None:
    toml = skeleton(tmp_path / "x")["pack.toml"]
    headers = [line for line in toml.splitlines() if line.startswith("[")]
    assert {
        "[pack]",
        "[files]",
        "[ontology]",
        "[policy]",
        "[prose]",
        "[bounds.rows]",
        "[[bounds.aggregate]]",
        "[[prose.quantities]]",
    } <= {h.split("#")[0].strip() for h in headers}
    for h in headers:  # a comment on the header or just above it
        i = toml.splitlines().index(h)
        assert "#" in h or toml.splitlines()[i - 1].startswith("#"), h


@given(st.text(max_size=30))
def test_the_pack_name_from_any_folder_name_is_valid(folder: str) -> None:
    name = _name(Path("/tmp") / (folder.replace("/", "_").replace("\0", "") or "x"))
    assert re.fullmatch(r"[a-z][a-z0-9_-]*", name)


@pytest.mark.java
def test_the_readme_commands_for_writing_a_pack_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The commands of docs/how-to/write-a-pack.md ("Writing a pack"), as printed, from an
    empty folder."""
    import shlex

    page = Path(__file__).resolve().parent.parent / "docs" / "how-to" / "write-a-pack.md"
    section = page.read_text(encoding="utf-8").split("# Writing a pack", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert [c.split()[:3] for c in commands] == [
        ["membrane", "pack", "new"],
        ["membrane", "pack", "check"],
        ["membrane", "pack", "test"],
    ]
    monkeypatch.chdir(tmp_path)
    for command in commands:
        assert main(shlex.split(command)[1:]) == 0, (command, capsys.readouterr())


def _odd_sample(path: Path) -> Path:
    """Six artifacts of one table whose names a pack must keep as they are: a space, SQL
    keywords, a quote, accents and CJK; a key, pools, a number, free text, and a second
    prose field (`summary`)."""
    quote = 'say "hi"'
    pairs = [
        ("lamp", "steel"),
        ("lamp", "brass"),
        ("chair", "oak"),
        ("chair", "pine"),
        ("table", "oak"),
    ]
    lines = []
    for n in range(6):
        rows = []
        for j in range(3):
            kind, material = pairs[(n + j) % 5]
            rows.append(
                {
                    "item id": f"IT-{n}{j}",
                    "select": kind,
                    quote: material,
                    "Größe": "groß" if j % 2 else "klein",
                    "数量": (j + 1) * 1.5,
                    "note": f"row {j} of artifact {n}, number {n * 10 + j}",
                }
            )
        prose = "The stock lists " + ", ".join(f"a {r['select']} of {r[quote]}" for r in rows)
        summary = "Three items: " + ", ".join(str(r["select"]) for r in rows) + "."
        lines.append(
            {
                "id": f"odd-{n}",
                "tables": {"stock items": rows},
                "prose": prose + ".",
                "prose_fields": {"summary": summary},
            }
        )
    path.write_text(
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8"
    )
    return path


@pytest.mark.java
@pytest.mark.slow
def test_new_from_a_sample_checks_tests_and_batches_the_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = _odd_sample(tmp_path / "odd.jsonl")
    pack = tmp_path / "stock"
    assert main(["pack", "new", str(pack), "--from-sample", str(sample), "--json"]) == 0
    made = json.loads(capsys.readouterr().out)["files"]
    assert {
        "pack.toml",
        "spine.sql",
        "ontology/stock.owl",
        "derive.json",
        "prompts/propose.md",
        "tests/examples.jsonl",
        "references/reference-01.txt",
    } <= set(made)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left

    toml = (pack / "pack.toml").read_text(encoding="utf-8")
    for line in (
        'key = ["item id"]',
        '"select" = { kind = "object", property = "hasSelect" }',
        '"say \\"hi\\"" = { kind = "object", property = "hasSayHi" }',
        '"数量" = { kind = "data"',
        '"note" = { kind = "text" }',
        "[prose.fields.summary]",
    ):
        assert line in toml, line
    assert '"say ""hi""" VARCHAR NOT NULL' in (pack / "spine.sql").read_text(encoding="utf-8")
    derived = json.loads((pack / "derive.json").read_text(encoding="utf-8"))
    assert "disjoint-pools" in {c["name"] for c in derived["admitted"]}

    assert main(["pack", "check", str(pack), "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["errors"] == 0, checked["problems"]

    assert main(["pack", "test", str(pack), "--json"]) == 0
    tested = json.loads(capsys.readouterr().out)
    assert (tested["passed"], tested["failed"]) == (2, 0)
    assert [o["code"] for r in tested["results"] for o in r["got"]] == ["value.unknown"]

    ws = tmp_path / "ws"
    assert (
        main(
            [
                "batch",
                str(sample),
                "--pack",
                str(pack),
                "-w",
                str(ws),
                "--no-progress",
                "--no-report",
                "--strict",
                "--json",
            ]
        )
        == 0
    )
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["state"] for r in runs] == ["COMMITTED"] * 6
    assert all(not r["codes"] for r in runs)  # the sample passes as it is


@pytest.mark.java
def test_a_sample_the_pools_cannot_admit_leaves_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"id": "I1", "kind": "lamp"}, {"id": "I2", "kind": "lamp"}, {"id": "I3", "kind": "TBD"}]
    sample = tmp_path / "s.jsonl"
    sample.write_text(json.dumps({"id": "a-1", "tables": {"items": rows}}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["pack", "new", str(out), "--from-sample", str(sample)]) == 2
    err = capsys.readouterr().err
    assert (
        f"{sample}:1: the pools alone do not admit the sample: a-1 would fail: "
        "value.placeholder at items[2].kind" in err
    ), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_new_in_the_current_empty_folder_keeps_it_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "shop"
    here.mkdir()
    inode = here.stat().st_ino
    monkeypatch.chdir(here)
    assert main(["pack", "new", "."]) == 0
    assert here.stat().st_ino == inode  # the shell's folder, not a new one in its place
    assert (here / "pack.toml").read_text(encoding="utf-8").count('name = "shop"') == 1
    assert [p.name for p in tmp_path.iterdir()] == ["shop"]

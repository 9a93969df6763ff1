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
    for part in ("pack.toml", "spine.sql", "ontology/catalogue.owl", "prompts/propose.md",
                 "assertions/lamp_too_heavy.sql", "tests/examples.jsonl",
                 "references/reference-01.txt"):
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
    corpus.write_text("".join(json.dumps(json.loads(c)["artifact"]) + "\n" for c in cases),
                      encoding="utf-8")
    ws = tmp_path / "ws"
    assert main(["batch", str(corpus), "--pack", str(pack), "-w", str(ws), "--no-progress",
                 "--no-report", "--strict", "--json"]) == 0
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
    assert {"[pack]", "[files]", "[ontology]", "[policy]", "[prose]", "[bounds.rows]",
            "[[bounds.aggregate]]", "[[prose.quantities]]"} <= {
        h.split("#")[0].strip() for h in headers}
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
    """The commands of README's "Writing a pack", as printed, from an empty folder."""
    import shlex

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Writing a pack", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert [c.split()[:3] for c in commands] == [["membrane", "pack", "new"],
                                                  ["membrane", "pack", "check"],
                                                  ["membrane", "pack", "test"]]
    monkeypatch.chdir(tmp_path)
    for command in commands:
        assert main(shlex.split(command)[1:]) == 0, (command, capsys.readouterr())

"""Every example `membrane --help` and each command's `--help` print runs, as printed,
against a demo workspace (the shipped demo corpus refined once) and exits 0. The examples
are read from the real parser, so a new command's example is covered automatically."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
from pathlib import Path

import pytest

from harness.api import run_batch
from harness.cli import _parser, main
from harness.learning.lesson_store import LessonStore
from harness.learning.lessons import LessonProposal, Scope

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "packs" / "facility" / "corpus" / "demo.jsonl"

pytestmark = [pytest.mark.java, pytest.mark.slow]


def _parsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [p]
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _parsers(sub)
    return out


def _examples() -> list[str]:
    found: list[str] = []
    for parser in _parsers(_parser()):
        for raw in (parser.epilog or "").splitlines():
            line = raw.strip()
            if line.startswith("membrane ") and line not in found:
                found.append(line)
    return found


def test_the_help_has_examples_for_every_command() -> None:
    examples = _examples()
    commands = {e.split()[1] for e in examples}
    assert {
        "batch",
        "refine",
        "report",
        "trace",
        "rules",
        "recover",
        "init",
        "learn",
        "review",
        "revert",
        "correct",
        "corrections",
        "preferences",
        "feedback",
        "pack",
        "export",
        "serve",
    } <= commands


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder laid out as the examples expect: `packs/` (the repository's), a refined
    demo workspace `ws/`, and `artifact.json` (the first demo artifact)."""
    d = tmp_path_factory.mktemp("examples")
    (d / "packs").symlink_to(ROOT / "packs")
    result = run_batch(d / "ws", DEMO, ROOT / "packs" / "facility")
    assert len(result.runs) == len(DEMO.read_text().splitlines())
    first = DEMO.read_text().splitlines()[0]
    (d / "artifact.json").write_text(json.dumps(json.loads(first)))
    # the review examples: fac-0001 and fac-0002 again with one interval changed, under a
    # pack that requires approval, so runs fac-0001.r2 and fac-0002.r2 wait in the queue
    # (and an approved fac-0001.r2 gives `revert fac-0001 --to 1` a version to undo)
    pack = d / "approval-pack"
    shutil.copytree(ROOT / "packs" / "facility", pack, ignore=shutil.ignore_patterns("corpus"))
    toml = pack / "pack.toml"
    toml.write_text(toml.read_text().replace("require_approval = false", "require_approval = true"))
    again = []
    for line in (d / "ws" / "current" / "corpus.jsonl").read_text().splitlines():
        a = json.loads(line)
        if a["id"] in ("fac-0001", "fac-0002"):
            a["tables"]["maintenance"][-1]["interval_months"] += 1
            again.append(json.dumps(a) + "\n")
    (d / "again.jsonl").write_text("".join(again))
    held = run_batch(d / "ws", d / "again.jsonl", pack)
    assert [r.state for r in held.runs] == ["HELD", "HELD"]
    run_batch(d / "ws", DEMO, ROOT / "packs" / "facility")  # the last pack is the shipped one
    # `learn accept 3fa2c1` / `learn decline b71e09`: two pending ontology lessons, keyed as
    # the examples name them (a real key is a hash of the lesson)
    store = LessonStore(d / "ws" / ".membrane" / "learning" / "lessons.sqlite")
    try:
        for key, alias in (("3fa2c1", "Siemens"), ("b71e09", "GE")):
            p = LessonProposal(
                target="value_alias",
                scope=Scope(pack="facility", column="equipment.manufacturer"),
                text=f"{alias} is a spelling of an imaging manufacturer",
                score=0.9,
                payload={
                    "alias": alias,
                    "individual": "siemens_healthineers" if alias == "Siemens" else "ge_healthcare",
                },
            )
            real = store.apply(p, "2026-11-25T00:00:00+00:00").key
            store.rekey(real, key + real[6:])
    finally:
        store.close()
    _corrections(d)
    return d


def _corrections(d: Path) -> None:
    """The corrections examples: the feature on, `review-notes.jsonl` to import, and a
    preference (`corrections show 14b1bacf1b81`, the id of "Use kW rather than BTU/h." in
    the facility pack) and a feedback item (#1) already promoted and routed."""
    toml = d / "ws" / "membrane.toml"
    before = toml.read_text() if toml.exists() else ""
    toml.write_text(before + "\n[learning.corrections]\nenabled = true\n")
    notes = [
        ("use kW not BTU/h", "2026-11-02T09:00:00+00:00", "a"),
        ("prefer kW over BTU/h", "2026-11-02T10:00:00+00:00", "b"),
        ("BTU/h -> kW please", "2026-11-03T09:00:00+00:00", "b"),
        ("the pool has no Philips MRI models, add them", "2026-11-02T09:00:00+00:00", "a"),
        ("add Philips MRI models to the pool", "2026-11-03T09:00:00+00:00", "b"),
        ("the pool lacks Philips MRI models", "2026-11-03T10:00:00+00:00", "c"),
    ]
    lines = [
        json.dumps({"text": t, "at": at, "session": s, "reviewer": "dana"}) for t, at, s in notes
    ]
    (d / "review-notes.jsonl").write_text("\n".join(lines) + "\n")
    ws = str(d / "ws")
    assert main(["corrections", "import", str(d / "review-notes.jsonl"), "--workspace", ws]) == 0
    assert main(["corrections", "analyze", "--workspace", ws]) == 0


@pytest.mark.parametrize("example", _examples())
def test_every_help_example_runs(
    example: str,
    demo_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if example.startswith("membrane serve"):
        pytest.skip("serves until stopped: tests/serve/test_cli_serve.py runs it as a process")
    monkeypatch.chdir(demo_dir)
    argv = [*shlex.split(example)[1:], "--workspace", str(demo_dir / "ws")]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, f"{example!r} exited {code}: {captured.err[-2000:]}"

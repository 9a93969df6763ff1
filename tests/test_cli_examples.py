"""Every example `membrane --help` and each command's `--help` print runs, as printed,
against a demo workspace (the shipped demo corpus refined once) and exits 0. The examples
are read from the real parser, so a new command's example is covered automatically."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

import pytest

from harness.api import run_batch
from harness.cli import _parser, main

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
    assert {"batch", "refine", "report", "trace", "rules", "recover", "init"} <= commands


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
    return d


@pytest.mark.parametrize("example", _examples())
def test_every_help_example_runs(
    example: str,
    demo_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(demo_dir)
    argv = [*shlex.split(example)[1:], "--workspace", str(demo_dir / "ws")]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, f"{example!r} exited {code}: {captured.err[-2000:]}"

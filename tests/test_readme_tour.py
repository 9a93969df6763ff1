"""Issue 18: the README's 20-line tour runs as printed (every command but `membrane serve`,
which does not return), in a workspace of its own that sees the shipped facility pack."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def tour() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## A tour in 20 lines", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_tour_fits_in_20_lines_and_starts_with_the_demo_batch() -> None:
    commands = tour()
    assert 0 < len(commands) <= 20
    assert all(c.startswith("membrane ") for c in commands)
    assert commands[0].startswith("membrane batch packs/facility/corpus/demo.jsonl")


@pytest.mark.java
@pytest.mark.slow
def test_the_tour_runs(tmp_path: Path) -> None:
    (tmp_path / "packs").mkdir()
    (tmp_path / "packs" / "facility").symlink_to(ROOT / "packs" / "facility")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMBRANE_")}
    env["MEMBRANE_ALLOW_MODEL_REQUESTS"] = "0"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for command in tour():
        if command.startswith("membrane serve"):
            continue
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    assert (tmp_path / "refined" / "equipment").is_dir()
    assert (tmp_path / "packs" / "mine" / "pack.toml").is_file()

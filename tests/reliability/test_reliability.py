"""The fast part of the reliability suite (`make test`): a handful of kill points of the
crash matrix, each followed by a rerun and every check of the full matrix, and the
checker's self-test (each kind of damage a crash could leave is reported). The full
matrix, the soak and the other probes run under `make reliability`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.java


def test_a_handful_of_kill_points_lose_and_duplicate_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.reliability", "--quick", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.stdout, done.stderr[-3000:]
    report = json.loads(done.stdout)
    rows = {r["probe"]: r for r in report["rows"]}
    assert report["failures"] == [], json.dumps(report["failures"], indent=1)[:4000]
    assert done.returncode == 0
    crash = [r for name, r in rows.items() if name.startswith("crash:")]
    assert sum(r["tries"] for r in crash) >= 5
    assert all(r["failures"] == 0 and r["lost"] == 0 for r in report["rows"])
    assert report["distinct_kill_points"] >= 5  # each try really killed a process
    self_test = rows["checker self-test: damage found"]
    assert self_test["tries"] >= 9 and self_test["clean"] == self_test["tries"]

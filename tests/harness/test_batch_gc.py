"""The garbage collector of a process that runs one batch (issue 16): `membrane batch` tunes
it in its own process (`harness.lifeline.batch_gc`), a caller of `main([...])` or the API
keeps its own settings."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.lifeline import BATCH_GC_THRESHOLD

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "packs" / "facility"


def test_batch_gc_freezes_what_is_loaded_and_raises_the_thresholds() -> None:
    code = (
        "import gc\n"
        "from harness.lifeline import batch_gc\n"
        "batch_gc()\n"
        "print(*gc.get_threshold(), gc.get_freeze_count() > 1000)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == [*map(str, BATCH_GC_THRESHOLD), "True"]


@pytest.mark.java
def test_a_batch_run_by_main_with_arguments_leaves_the_callers_collector_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`main([...])` is a library call (a test, an embedding program): its process is not
    the command's own, so its thresholds and frozen objects stay as they were."""
    corpus = tmp_path / "one.jsonl"
    corpus.write_bytes((PACK / "corpus" / "demo.jsonl").read_bytes().splitlines(True)[0])
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    argv = ["batch", str(corpus), "--pack", str(PACK), "-w", str(tmp_path / "ws")]
    assert main([*argv, "--no-progress", "--json", "--no-report"]) == 0
    capsys.readouterr()
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


@pytest.mark.java
def test_a_worker_tunes_its_own_collector_whether_forked_or_spawned() -> None:
    """A `--workers` worker judges one batch and exits: `prewarm` tunes its collector, also
    when it was forked from a process that kept Python's thresholds (this one)."""
    from harness.pool import Prestarted

    before = gc.get_threshold()
    pre = Prestarted(1)
    try:
        assert pre.pool.submit(gc.get_threshold).result(timeout=300) == BATCH_GC_THRESHOLD
    finally:
        pre.release()
    assert gc.get_threshold() == before

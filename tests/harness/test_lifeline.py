"""Worker processes die with the process that started them (`harness.lifeline`): a
SIGKILLed batch leaves no `--workers` worker (tests/harness/test_pool.py) and no PROSE_GATE
`prose_workers` worker either (here), instead of orphans holding memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import FACILITY
from tests.harness.pooled import alive, children, cmdline

# a process with a two-worker prose gate, which says "ready" and then waits to be killed
_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from effectors.prose_gate import ProseGate
    from harness.pack import load_pack
    from ontology import load_pools

    if __name__ == "__main__":
        pack = load_pack(Path(sys.argv[1]))
        gate = ProseGate(pack, load_pools(pack, Path(sys.argv[2])), workers=3)
        assert gate.wait_ready()
        print("ready", flush=True)
        time.sleep(600)
    """
)


@pytest.mark.java
def test_prose_workers_die_with_a_killed_parent(tmp_path: Path) -> None:
    script = tmp_path / "hold.py"
    script.write_text(_SCRIPT, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(FACILITY), str(tmp_path / "cache")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    workers: list[int] = []
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        workers = [p for p in children(proc.pid) if "spawn_main" in cmdline(p)]
        assert len(workers) == 2  # the gate judges one chunk itself
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(w) for w in workers), "prose workers outlived their parent"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        for w in workers:  # what a failure here would leave behind
            if alive(w):
                os.kill(w, signal.SIGKILL)

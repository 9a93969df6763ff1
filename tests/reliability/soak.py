"""The soak (issue 17): 30 batches back to back in one workspace, each on the next slice of
the demo corpus, about half of them first killed by a real SIGKILL at a random moment and
rerun, against the same 30 batches run without a kill. Each completing batch reports its peak RSS and the file descriptors still open as
it ends; at the end nothing is lost (the corpus equals one uninterrupted batch of the same
artifacts, byte for byte) and RSS and descriptors are flat across the 30 batches."""

from __future__ import annotations

import random
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from tests.reliability import proc
from tests.reliability.matrix import DEMO, Outcome, Reference, batch_argv, check, fresh_ws

BATCHES = 30
PER_BATCH = 4
RSS_GROWTH = 0.15  # the last five batches' median peak RSS within 15% of the first five's


def _batches(
    ws: Path, parts: list[Path], out: Path, rng: random.Random | None, o: Outcome
) -> tuple[list[int], list[int]]:
    """Run each slice in turn in `ws` (with `rng`, about half of them first killed at a
    random moment); the peak RSS and open descriptors of each completing batch."""
    rss: list[int] = []
    fds: list[int] = []
    for i, part in enumerate(parts):
        if rng is not None and rng.random() < 0.5:  # a real kill at a random moment
            child = proc.start(batch_argv(part, ws), out / "soak-kill.out")
            time.sleep(rng.uniform(0.2, 3.5))
            if child.poll() is None:
                child.kill()
                if child.wait() == proc.KILLED:
                    o.killed += 1
        code, child = proc.run(batch_argv(part, ws), out / "soak.out", stats=True)
        if code != 0:
            o.problems.append(f"batch {i} exited {code}: {child.text()[-600:]}")
            continue
        stats = child.stats()
        rss.append(stats.get("rss_kib", 0))
        fds.append(stats.get("fds", 0))
    return rss, fds


def run_soak(cache: Path, base: Path, batches: int = BATCHES) -> tuple[Outcome, dict[str, Any]]:
    """The reference is the same 30 batches run without a kill: the learning cycle after each
    batch changes what later batches' proposer chooses, so one batch of all 120 artifacts
    is not the same run."""
    t0 = time.monotonic()
    o = Outcome("soak", f"{batches} batches")
    base.mkdir(parents=True, exist_ok=True)
    lines = DEMO.read_text().splitlines(keepends=True)[: batches * PER_BATCH]
    parts = []
    for i in range(batches):
        part = base / f"soak-{i:02d}.jsonl"
        part.write_text("".join(lines[i * PER_BATCH : (i + 1) * PER_BATCH]))
        parts.append(part)
    ref_ws = fresh_ws(base, "soak-reference", cache)
    _batches(ref_ws, parts, base, None, o)
    if o.problems:
        return o, {}
    db = sqlite3.connect(ref_ws / ".membrane" / "ledger.sqlite")
    try:
        commits = dict(db.execute("SELECT artifact_id, content_hash FROM commits").fetchall())
    finally:
        db.close()
    want = (ref_ws / "current" / "corpus.jsonl").read_bytes()
    ref = Reference(parts[0], want, commits, {}, 0.0, cache)
    ws = fresh_ws(base, "soak", cache)
    rss, fds = _batches(ws, parts, base, random.Random(30), o)
    probs, lost = check(ws, ref, want, base / "soak-check.out")
    o.problems += probs
    o.lost = lost
    figures: dict[str, Any] = {"kills": o.killed, "rss_kib": rss, "fds": fds}
    if len(rss) >= 10:
        first, last = sorted(rss[:5])[2], sorted(rss[-5:])[2]
        figures["rss_growth"] = round(last / first - 1, 4)
        if last > first * (1 + RSS_GROWTH):
            o.problems.append(f"peak RSS grew from {first} KiB to {last} KiB")
    if fds and max(fds) - min(fds) > 1:
        o.problems.append(f"open file descriptors not flat: {min(fds)}..{max(fds)}")
    o.seconds = time.monotonic() - t0
    if o.clean:
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(ref_ws, ignore_errors=True)
    return o, figures

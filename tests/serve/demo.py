"""A small workspace with every kind of run the dashboard shows, made by the real loop on
the shipped demo corpus: EXHAUSTED runs (a one-attempt budget on defective artifacts),
COMMITTED runs that needed several attempts, and HELD runs waiting for a person (a copy of
the facility pack that requires approval)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.api import run_batch

ROOT = Path(__file__).resolve().parents[2]
FACILITY = ROOT / "packs" / "facility"
DEMO = FACILITY / "corpus" / "demo.jsonl"

HELD = 3  # runs waiting for a person


def build(base: Path) -> Path:
    """`base/ws`: the workspace (returned); `base/` also holds the corpora and the pack copy."""
    lines = DEMO.read_text().splitlines()
    ws = base / "ws"
    ws.mkdir(parents=True)
    # overlays computed and reported, not applied: the EXHAUSTED runs would otherwise make
    # the learned overlay hold every later run for approval
    (ws / "membrane.toml").write_text("[learning]\napply_overlays = false\n")
    (base / "first.jsonl").write_text("\n".join(lines[:16]) + "\n")
    (base / "second.jsonl").write_text("\n".join(lines[16:40]) + "\n")
    run_batch(ws, base / "first.jsonl", FACILITY, max_attempts=1)  # defective: EXHAUSTED
    run_batch(ws, base / "second.jsonl", FACILITY)  # repaired in 2-3 attempts: COMMITTED
    pack = base / "approval-pack"
    shutil.copytree(FACILITY, pack, ignore=shutil.ignore_patterns("corpus"))
    toml = pack / "pack.toml"
    toml.write_text(toml.read_text().replace("require_approval = false", "require_approval = true"))
    again = []
    for line in (ws / "current" / "corpus.jsonl").read_text().splitlines()[-HELD:]:
        a = json.loads(line)
        a["tables"]["maintenance"][-1]["interval_months"] += 1
        again.append(json.dumps(a) + "\n")
    (base / "again.jsonl").write_text("".join(again))
    held = run_batch(ws, base / "again.jsonl", pack)
    assert [r.state for r in held.runs] == ["HELD"] * HELD, [r.state for r in held.runs]
    run_batch(ws, base / "second.jsonl", FACILITY)  # the last pack is the shipped one
    return ws


if __name__ == "__main__":  # pragma: no cover - `python -m tests.serve.demo DIR` for a look
    import sys

    print(build(Path(sys.argv[1])))

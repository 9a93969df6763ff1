"""Held artifacts (approval required) survive every recovery, verify, and never reach
current/; and `membrane report` needs no --pack after a batch (the ledger remembers it)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from harness.api import run_batch, run_recover, run_report
from harness.inspect import verify_traces
from harness.ledger import Ledger
from harness.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
FACILITY = ROOT / "packs" / "facility"
DEMO = FACILITY / "corpus" / "demo.jsonl"

pytestmark = pytest.mark.java


def test_held_artifacts_survive_recovery_and_verify(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(FACILITY, pack, ignore=shutil.ignore_patterns("corpus"))
    toml = pack / "pack.toml"
    toml.write_text(
        toml.read_text().replace("require_approval = false", "require_approval = true", 1)
    )
    corpus = tmp_path / "three.jsonl"
    corpus.write_text("".join(DEMO.read_text().splitlines(keepends=True)[:3]))
    ws_root = tmp_path / "ws"
    result = run_batch(ws_root, corpus, pack)
    assert [r.state for r in result.runs] == ["HELD"] * 3
    ws = Workspace(ws_root)

    def held_files() -> dict[str, str]:
        return {
            p.stem: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in (ws.held / "artifacts").glob("*.json")
        }

    before = held_files()
    assert len(before) == 3 and all(k == v for k, v in before.items())
    for _ in range(2):  # recover twice: batch and refine recover first, every time
        rec = run_recover(ws_root)
        assert rec["orphans_removed"] == 0
        assert held_files() == before
    assert (ws.current / "corpus.jsonl").read_text() == ""  # nothing published
    ledger = Ledger(ws.ledger_path)
    try:
        assert {h.content_hash for h in ledger.held()} == set(before)
        assert ledger.latest_commits() == []
    finally:
        ledger.close()
    assert all(r.ok for r in verify_traces(ws))
    # a rerun skips what is held (settled for this input), and keeps it
    again = run_batch(ws_root, corpus, pack)
    assert len(again.skipped) == 3 and held_files() == before
    # the workspace remembers its pack: no --pack, no membrane.toml
    assert not ws.config_path.exists()
    rep = run_report(ws_root)
    assert rep is not None

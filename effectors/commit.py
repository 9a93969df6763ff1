"""COMMIT: the only effector that writes `current/` (DESIGN.md §4).

1. The artifact and its metrics sidecar are written to content-addressed files
   (`current/artifacts/<sha256>.json`, `current/metrics/<sha256>.json`): temp file, fsync,
   os.replace, fsync of the folder.
2. The single commit point is one SQLite transaction in the ledger.
3. `current/corpus.jsonl` is derived from the ledger (`rebuild_view`); `recover` rebuilds it,
   moves superseded versions to `archive/`, removes files the ledger does not name, and
   settles runs a kill interrupted. Killed at any instant, nothing is lost or duplicated.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harness.ledger import CommitRow, Ledger
from harness.models import Artifact
from harness.trace.chain import read_trace, verify_chain
from harness.workspace import Workspace, atomic_write

__all__ = [
    "Committer",
    "RecoveryReport",
    "artifact_bytes",
    "content_hash",
    "rebuild_view",
    "recover",
]


def artifact_bytes(artifact: Artifact) -> bytes:
    return orjson.dumps(artifact.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Committer:
    name = "commit"

    def __init__(self, ws: Workspace, ledger: Ledger) -> None:
        self.ws = ws
        self.ledger = ledger

    def write_objects(self, artifact: Artifact, metrics: Mapping[str, Any]) -> tuple[str, str]:
        data = artifact_bytes(artifact)
        digest = content_hash(data)
        mdata = orjson.dumps(dict(metrics), option=orjson.OPT_SORT_KEYS)
        mdigest = content_hash(mdata)
        for path, payload in (
            (self.ws.current / "artifacts" / f"{digest}.json", data),
            (self.ws.current / "metrics" / f"{mdigest}.json", mdata),
        ):
            if not path.exists():
                atomic_write(path, payload)
        return digest, mdigest

    def commit(
        self,
        run_id: str,
        artifact: Artifact,
        metrics: Mapping[str, Any],
        trace_seq: int,
        trace_hash: str,
        at: str,
    ) -> CommitRow:
        digest, mdigest = self.write_objects(artifact, metrics)
        return self.ledger.commit(artifact.id, digest, mdigest, run_id, trace_seq, trace_hash, at)


def rebuild_view(ws: Workspace, ledger: Ledger) -> int:
    """Write `current/corpus.jsonl` (latest version of each artifact, by id) atomically."""
    lines = []
    for row in ledger.latest_commits():
        path = ws.current / "artifacts" / f"{row.content_hash}.json"
        lines.append(path.read_bytes().rstrip(b"\n"))
    atomic_write(ws.current / "corpus.jsonl", b"".join(line + b"\n" for line in lines))
    return len(lines)


@dataclass
class RecoveryReport:
    settled_committed: int = 0
    interrupted: int = 0
    archived: int = 0
    orphans_removed: int = 0


def _trim_partial_line(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(cut)
            os.fsync(fh.fileno())


def _settle_runs(ws: Workspace, ledger: Ledger, report: RecoveryReport) -> None:
    for run in ledger.runs(status="running"):
        path = ws.trace_path(run.run_id)
        length, head = 0, ""
        if path.exists():
            _trim_partial_line(path)
            result = verify_chain(path, anchor=None)
            length, head = result.length, result.head
            if not result.ok and result.problem and "no ledger anchor" not in result.problem:
                length, head = _valid_prefix(path)
        committed = ledger.commit_of_run(run.run_id) is not None
        status = "COMMITTED" if committed else "INTERRUPTED"
        ledger.finish_run(run.run_id, status, length, head, None)
        if committed:
            report.settled_committed += 1
        else:
            report.interrupted += 1


def _valid_prefix(path: Path) -> tuple[int, str]:
    """Length and head of the longest valid prefix of a damaged trace (kept as evidence)."""
    from harness.trace.chain import event_hash

    n, prev = 0, ""
    for _lineno, payload in read_trace(path):
        if (
            payload.get("seq") != n
            or payload.get("prev") != prev
            or event_hash(payload) != payload.get("hash")
        ):
            break
        n, prev = n + 1, payload["hash"]
    return n, prev


def _sweep_objects(ws: Workspace, ledger: Ledger, report: RecoveryReport) -> None:
    latest = ledger.latest_commits()
    keep_art = {r.content_hash for r in latest}
    keep_met = {r.metrics_hash for r in latest}
    older = {r.content_hash for r in ledger.all_commits()} - keep_art
    for sub, keep in (("artifacts", keep_art), ("metrics", keep_met)):
        folder = ws.current / sub
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            digest = path.stem
            if path.suffix == ".json" and digest in keep:
                continue
            if sub == "artifacts" and path.suffix == ".json" and digest in older:
                dest = ws.archive / sub / path.name
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, dest)
                report.archived += 1
            else:
                path.unlink()
                report.orphans_removed += 1


def recover(ws: Workspace, ledger: Ledger) -> RecoveryReport:
    """Bring the workspace back to what the ledger says. Safe to run at any time."""
    ws.ensure()
    report = RecoveryReport()
    _settle_runs(ws, ledger, report)
    _sweep_objects(ws, ledger, report)
    rebuild_view(ws, ledger)
    return report

"""Retention: `membrane gc` removes superseded archive versions and old traces without
breaking verification (issue 16).

What may go, and what never does:

* **Archived versions** (`archive/artifacts/<hash>.json`): per artifact, the newest
  `keep_archive` superseded versions stay; older ones go, unless their content is also
  live (a revert made it current again), kept for another version, or held for review.
* **Traces** (`trace/<run>.jsonl`) of finished runs started more than `keep_traces_days`
  days ago. Never: a running run, a pending HELD run, a run with review records still
  to append, the newest run of each artifact (the report's baseline), the run of each
  artifact's newest commit, and the run its metrics sidecar names (an approval's or a
  revert's source): what `trace why` and `membrane report` read.

Removing is two steps: tombstones in the ledger (one transaction: kind, name, the trace's
anchor, when), then the files. A kill in between leaves a tombstone over a file that is
still there; the next gc removes it. The anchors stay in `runs` and the anchor log, so
`trace verify` reports a pruned trace as "pruned, anchor kept" and `trace verify
--checkpoint` still proves the workspace extends a checkpoint; what cannot be checked any
more is that run's records themselves. A dry run is the default: nothing is removed
without `apply`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness.errors import ConfigError
from harness.ledger import CommitRow, Ledger, RunRow
from harness.workspace import Workspace

__all__ = ["GcPlan", "Removal", "apply_plan", "plan_gc"]

_FINISHED = frozenset(
    {"COMMITTED", "EXHAUSTED", "FAILED", "HELD", "INTERRUPTED", "REJECTED", "REVERT"}
)


@dataclass(frozen=True)
class Removal:
    """One file gc removes (or, in a dry run, would remove)."""

    kind: str  # "trace" | "archive"
    name: str  # the run id, or the archived content hash
    path: Path
    bytes: int
    why: str
    trace_len: int | None = None
    trace_head: str | None = None


@dataclass
class GcPlan:
    keep_archive: int | None
    keep_traces_days: float | None
    removals: list[Removal] = field(default_factory=list)
    kept: dict[str, int] = field(default_factory=dict)  # why kept -> how many

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.removals)

    def as_json(self, applied: bool) -> dict[str, object]:
        return {
            "applied": applied,
            "keep_archive": self.keep_archive,
            "keep_traces_days": self.keep_traces_days,
            "traces": [r.name for r in self.removals if r.kind == "trace"],
            "archive": [r.name for r in self.removals if r.kind == "archive"],
            "bytes": self.bytes,
            "kept": dict(sorted(self.kept.items())),
        }


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _when(text: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _source_run(ws: Workspace, row: CommitRow) -> str | None:
    """The run a commit's metrics sidecar names (an approval's held run; a revert's names
    none: `_protected_runs` keeps the runs that published its content)."""
    try:
        data = json.loads((ws.current / "metrics" / f"{row.metrics_hash}.json").read_bytes())
    except (OSError, ValueError):
        return None
    run = data.get("run_id") if isinstance(data, dict) else None
    return run if isinstance(run, str) else None


def _archive_removals(ws: Workspace, ledger: Ledger, keep: int, plan: GcPlan) -> None:
    latest = ledger.latest_commits()
    live = {r.content_hash for r in latest}
    held = {h.content_hash for h in ledger.held("pending")}
    by_artifact: dict[str, list[CommitRow]] = {}
    for row in ledger.all_commits():
        by_artifact.setdefault(row.artifact_id, []).append(row)
    keep_hashes = set(live) | held
    candidates: dict[str, str] = {}  # hash -> why it may go
    for artifact_id, rows in by_artifact.items():
        superseded = [r for r in sorted(rows, key=lambda r: -r.version)
                      if r.content_hash not in live]
        for i, r in enumerate(superseded):
            if i < keep:
                keep_hashes.add(r.content_hash)
            else:
                candidates.setdefault(
                    r.content_hash, f"{artifact_id} v{r.version}: older than the newest {keep} "
                    "superseded version(s)"
                )
    folder = ws.archive / "artifacts"
    for digest, why in sorted(candidates.items()):
        if digest in keep_hashes:
            plan.kept["archive: content still kept for another version"] = (
                plan.kept.get("archive: content still kept for another version", 0) + 1
            )
            continue
        path = folder / f"{digest}.json"
        if path.is_file():
            plan.removals.append(Removal("archive", digest, path, _size(path), why))


def _protected_runs(ws: Workspace, ledger: Ledger, runs: list[RunRow]) -> dict[str, str]:
    """run id -> why its trace is never pruned."""
    out: dict[str, str] = {}
    for h in ledger.held("pending"):
        out[h.run_id] = "held for review"
    for run_id, _seq, _payload in ledger.trace_tails():
        out[run_id] = "review records still to append"
    first: dict[tuple[str, str], list[str]] = {}  # (artifact, content) -> runs that committed it
    for row in ledger.all_commits():
        first.setdefault((row.artifact_id, row.content_hash), []).append(row.run_id)
    for row in ledger.latest_commits():
        out.setdefault(row.run_id, "the newest commit's run")
        src = _source_run(ws, row)
        if src is not None:
            out.setdefault(src, "the run the newest commit's metrics name")
        # a revert's sidecar names no run: `trace why` reads the run that first published
        # the restored content
        for run_id in first.get((row.artifact_id, row.content_hash), ()):
            out.setdefault(run_id, "the run that published the newest content (a revert's source)")
    newest: dict[str, RunRow] = {}
    for r in runs:  # the ledger's order is start order
        newest[r.artifact_id] = r
    for r in newest.values():
        out.setdefault(r.run_id, "the artifact's newest run")
    return out


def _trace_removals(
    ws: Workspace, ledger: Ledger, days: float, now: datetime, plan: GcPlan
) -> None:
    runs = ledger.runs()
    protected = _protected_runs(ws, ledger, runs)
    cutoff = now - timedelta(days=days)
    for r in runs:
        path = ws.trace_path(r.run_id)
        if not path.is_file():
            continue
        why = protected.get(r.run_id)
        if why is None and r.status not in _FINISHED:
            why = f"status {r.status}"
        started = _when(r.started_at)
        if why is None and (started is None or started > cutoff):
            why = f"younger than {days:g} day(s)"
        if why is None and (r.trace_len is None or r.trace_head is None):
            why = "no anchor in the ledger"
        if why is not None:
            key = f"trace: {why.split(' (')[0]}"
            if key.startswith("trace: younger than"):
                key = "trace: younger than the cutoff"
            plan.kept[key] = plan.kept.get(key, 0) + 1
            continue
        plan.removals.append(
            Removal("trace", r.run_id, path, _size(path),
                    f"{r.status}, started {r.started_at}", r.trace_len, r.trace_head)
        )


def plan_gc(
    ws: Workspace,
    *,
    keep_archive: int | None,
    keep_traces_days: float | None,
    now: datetime | None = None,
) -> GcPlan:
    """What `membrane gc` would remove (None: that kind is left alone)."""
    if keep_archive is not None and keep_archive < 0:
        raise ConfigError("--keep-archive must be 0 or more", hint="e.g. --keep-archive 3")
    if keep_traces_days is not None and not keep_traces_days >= 0:
        raise ConfigError("--keep-traces-days must be 0 or more", hint="e.g. --keep-traces-days 30")
    if not ws.ledger_path.exists():
        raise ConfigError(
            "nothing has run in this workspace yet", file=ws.root,
            hint="run `membrane batch` first, or pass --workspace",
        )
    plan = GcPlan(keep_archive, keep_traces_days)
    ledger = Ledger.reader(ws.ledger_path)
    try:
        if keep_archive is not None:
            _archive_removals(ws, ledger, keep_archive, plan)
        if keep_traces_days is not None:
            _trace_removals(ws, ledger, keep_traces_days, now or datetime.now(UTC), plan)
    finally:
        ledger.close()
    return plan


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def apply_plan(ws: Workspace, plan: GcPlan, at: str) -> int:
    """Remove what `plan` lists: tombstones first (one ledger transaction), then the files,
    then an fsync of each folder. The caller holds the workspace lock and made `plan`
    under it. Returns the number of files removed."""
    if not plan.removals:
        return 0
    ledger = Ledger(ws.ledger_path)
    try:
        ledger.record_pruned(
            [(r.name, r.trace_len, r.trace_head) for r in plan.removals if r.kind == "trace"],
            [r.name for r in plan.removals if r.kind == "archive"],
            at,
        )
    finally:
        ledger.close()
    removed = 0
    folders: set[Path] = set()
    for r in plan.removals:
        try:
            r.path.unlink()
        except FileNotFoundError:
            continue
        removed += 1
        folders.add(r.path.parent)
    for folder in sorted(folders):
        _fsync_dir(folder)
    return removed

"""The workspace's object store, its derived view and recovery (DESIGN.md §4).

1. Artifacts and their metrics sidecars are content-addressed files (`<sha256>.json`):
   committed ones under `current/artifacts/` and `current/metrics/`, held ones (waiting
   for a person) under `.membrane/held/`; each written whole (temp file, fsync,
   os.replace, fsync of the folder).
2. The single commit point is one SQLite transaction in the ledger (`harness.ledger`).
3. `current/corpus.jsonl` is derived from the ledger (`rebuild_view`). `recover` settles
   runs a kill interrupted, moves superseded versions to `archive/`, removes files no
   ledger row names (in `current/` and in `.membrane/held/`) and rebuilds the view
   (`corpus.jsonl` and the chapters, `current/chapters/<id>.md`).
   Killed at any instant, nothing is lost or duplicated.

Only the COMMIT effector (`effectors.commit.Committer`) writes objects during a run;
this module is the kernel both it and recovery share.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from harness.chapters import sync_chapters
from harness.errors import TraceError
from harness.ledger import CommitRow, HeldRow, Ledger
from harness.models import ARTIFACT_OMITTED_WHEN_EMPTY, Artifact
from harness.storage import sweep_temp_files
from harness.trace.chain import append_line, seal, verify_chain
from harness.trace.events import CommitEvent
from harness.workspace import SyncGroup, Workspace, atomic_write

__all__ = [
    "RecoveryReport",
    "artifact_bytes",
    "content_hash",
    "object_bytes",
    "object_files",
    "published_bytes",
    "rebuild_view",
    "recover",
    "write_objects",
]


# orjson writes JSON's own types (str, int, float, bool, None, dict, list) as pydantic's
# JSON mode does; every other type goes to `_not_plain` (the pass-through options) or
# fails in orjson, and then pydantic's serialiser decides the bytes
_PLAIN = (orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME
          | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS)


def _not_plain(value: object) -> Any:
    raise TypeError(type(value).__name__)


def artifact_bytes(artifact: Artifact) -> bytes:
    """The canonical bytes of an artifact (sorted keys): what its content hash is of.

    The bytes of `artifact.model_dump(mode="json")`, found ~10x faster when the fields hold
    only JSON's own types, as an artifact read from JSON does (a batch computes them ~3
    times an artifact): the fields are written as they are, those of
    `ARTIFACT_OMITTED_WHEN_EMPTY` left out when empty, as the model's serialiser does. Any
    other value (a datetime, a set, a str subclass in `meta`) takes pydantic's path."""
    fields = {name: getattr(artifact, name) for name in Artifact.model_fields}
    for name in ARTIFACT_OMITTED_WHEN_EMPTY:
        if not fields[name]:
            del fields[name]
    try:
        return orjson.dumps(fields, default=_not_plain, option=_PLAIN)
    except TypeError:  # orjson.JSONEncodeError is one
        return orjson.dumps(artifact.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def object_bytes(artifact: Artifact, metrics: Mapping[str, Any]) -> tuple[bytes, str, bytes, str]:
    """(artifact bytes, their hash, metrics sidecar bytes, their hash): what COMMIT stores."""
    data = artifact_bytes(artifact)
    mdata = orjson.dumps(dict(metrics), option=orjson.OPT_SORT_KEYS)
    return data, content_hash(data), mdata, content_hash(mdata)


def object_files(
    folder: Path, data: bytes, digest: str, mdata: bytes, mdigest: str
) -> tuple[tuple[Path, bytes], tuple[Path, bytes]]:
    """Where an artifact and its metrics sidecar go under `folder` (current/ or held/)."""
    return (
        (folder / "artifacts" / f"{digest}.json", data),
        (folder / "metrics" / f"{mdigest}.json", mdata),
    )


def write_objects(
    folder: Path,
    artifact: Artifact,
    metrics: Mapping[str, Any],
    group: SyncGroup | None = None,
) -> tuple[str, str]:
    """Write the artifact and its metrics sidecar under `folder/artifacts` and
    `folder/metrics`, content-addressed; returns (artifact hash, metrics hash). With a
    `group` the files are durable only after `group.sync()` (group commit); without one,
    each is fsynced as it is written."""
    data, digest, mdata, mdigest = object_bytes(artifact, metrics)
    for path, payload in object_files(folder, data, digest, mdata, mdigest):
        if group is not None:
            group.write_once(path, payload)
        elif not path.exists():
            atomic_write(path, payload)
    return digest, mdigest


def published_bytes(ws: Workspace, row: CommitRow, *, verify: bool = True) -> bytes:
    """A committed artifact's bytes, checked against the hash its ledger row names; a
    missing or edited file is a TraceError saying what to do (never republished)."""
    path = ws.current / "artifacts" / f"{row.content_hash}.json"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(
            f"{path}: the committed artifact {row.artifact_id!r} (version {row.version}) is "
            "missing; restore the file (e.g. from a backup), or `membrane revert "
            f"{row.artifact_id}` to an earlier version"
        ) from None
    if verify and content_hash(data) != row.content_hash:
        raise TraceError(
            f"{path}: the committed artifact {row.artifact_id!r} (version {row.version}) was "
            "changed after it was committed (its sha256 differs from its name); restore it, "
            f"or `membrane revert {row.artifact_id}` to an earlier version"
        )
    return data


def rebuild_view(
    ws: Workspace, ledger: Ledger, *, chapters: bool = True, verify: bool = False
) -> int:
    """Write `current/corpus.jsonl` (latest version of each artifact, by id) atomically and,
    unless `chapters` is false (COMMIT wrote them already), bring `current/chapters/` in line
    with the ledger (`harness.chapters.sync_chapters`). `verify` (recovery does) hashes each
    file against its ledger row first: tampered bytes are never republished."""
    latest = ledger.latest_commits()
    # streamed to the file: at 20,000 artifacts the whole view was ~150 MB in memory twice
    atomic_write(
        ws.current / "corpus.jsonl",
        (published_bytes(ws, row, verify=verify).rstrip(b"\n") + b"\n" for row in latest),
    )
    if chapters:
        sync_chapters(ws, latest, ledger=ledger)
    return len(latest)


@dataclass
class RecoveryReport:
    settled_committed: int = 0
    settled_held: int = 0
    interrupted: int = 0
    archived: int = 0
    orphans_removed: int = 0
    reviews_replayed: int = 0
    commits_completed: int = 0  # commit records a kill kept out of a trace, appended
    chapters_rendered: int = 0
    chapters_removed: int = 0
    temp_files_removed: int = 0  # `.<name>.tmp-<PID>` a dead writer left (a kill, a full disk)


def _trim_partial_line(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(cut)
            os.fsync(fh.fileno())


def _settle_runs(ws: Workspace, ledger: Ledger, report: RecoveryReport) -> None:
    """A run still 'running' was killed: anchor the valid prefix of its trace (kept as
    evidence) and settle it by what the ledger says it reached."""
    for run in ledger.runs(status="running"):
        path = ws.trace_path(run.run_id)
        length, head = 0, ""
        if path.exists():
            _trim_partial_line(path)
            result = verify_chain(path, anchor=None)  # stops at the first bad record
            length, head = result.length, result.head
        commit = ledger.commit_of_run(run.run_id)
        held = ledger.held_of_run(run.run_id) if commit is None else None
        if commit is not None:
            status = "COMMITTED"
            report.settled_committed += 1
        elif held is not None:
            status = "HELD"
            report.settled_held += 1
        else:
            status = "INTERRUPTED"
            report.interrupted += 1
        if (commit or held) is not None and path.exists():
            length, head = _complete_trace(path, run.run_id, length, head, commit, held, report)
        ledger.finish_run(run.run_id, status, length, head, None)


def _complete_trace(
    path: Path,
    run_id: str,
    length: int,
    head: str,
    commit: CommitRow | None,
    held: HeldRow | None,
    report: RecoveryReport,
) -> tuple[int, str]:
    """The kill came after the commit point (the ledger row) but before the trace's
    commit record: append that record from the ledger row, so the provenance has no gap
    (`trace why` finds what published the artifact). Only onto a whole, valid trace."""
    lines = [x for x in path.read_bytes().splitlines() if x.strip()]
    if len(lines) != length:
        return length, head  # damaged past the valid prefix: evidence, left as it is
    want_held = held is not None
    for line in lines:
        ev = orjson.loads(line)
        if ev.get("kind") == "commit" and bool(ev.get("held")) == want_held:
            return length, head
    row = commit if commit is not None else held
    assert row is not None
    event = CommitEvent(
        seq=length,
        run_id=run_id,
        at=datetime.now(UTC).isoformat(timespec="microseconds"),
        prev=head,
        artifact_id=row.artifact_id,
        version=commit.version if commit is not None else 0,
        content_hash=row.content_hash,
        metrics_hash=row.metrics_hash,
        held=want_held,
        why=(held.why if held is not None else "")
        + " (recorded by recovery: the run was killed after its commit point)",
    )
    data, digest = seal(event)
    append_line(path, data)
    report.commits_completed += 1
    return length + 1, digest


def _replay_trace_tails(ws: Workspace, ledger: Ledger, report: RecoveryReport) -> None:
    """A review act the ledger committed but a kill kept out of its trace: append it.
    (Appended already: nothing to do. Either way the ledger forgets the tail.)"""
    for run_id, seq, payload in ledger.trace_tails():
        path = ws.trace_path(run_id)
        length = 0
        if path.exists():
            _trim_partial_line(path)
            length = verify_chain(path, anchor=None).length
        if length == seq:
            append_line(path, payload.encode())
            report.reviews_replayed += 1
        ledger.drop_trace_tail(run_id, seq)


def _sweep(
    folder: Path,
    keep: set[str],
    report: RecoveryReport,
    superseded: frozenset[str] = frozenset(),
    archive: Path | None = None,
) -> None:
    """Remove files whose hash no ledger row names; move `superseded` ones to `archive`."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.suffix == ".json" and path.stem in keep:
            continue
        if archive is not None and path.suffix == ".json" and path.stem in superseded:
            dest = archive / path.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, dest)
            report.archived += 1
        else:
            path.unlink()
            report.orphans_removed += 1


def _sweep_unknown_traces(ws: Workspace, ledger: Ledger, report: RecoveryReport) -> None:
    """A trace no ledger row names: a cohort `--workers` judged whose transaction a kill
    kept out (its runs were never registered and are judged again). The batch that runs
    in one process registers runs before it opens their traces, so it leaves none."""
    if not ws.traces.is_dir():
        return
    known = ledger.run_ids()
    for path in ws.traces.glob("*.jsonl"):
        if path.stem not in known:
            path.unlink()
            report.orphans_removed += 1


def _sweep_objects(ws: Workspace, ledger: Ledger, report: RecoveryReport) -> None:
    latest = ledger.latest_commits()
    keep_art = {r.content_hash for r in latest}
    older = frozenset({r.content_hash for r in ledger.all_commits()} - keep_art)
    _sweep(ws.current / "artifacts", keep_art, report, older, ws.archive / "artifacts")
    _sweep(ws.current / "metrics", {r.metrics_hash for r in latest}, report)
    held = ledger.held()
    _sweep(ws.held / "artifacts", {r.content_hash for r in held}, report)
    _sweep(ws.held / "metrics", {r.metrics_hash for r in held}, report)


def _temp_folders(ws: Workspace) -> list[Path]:
    """Where `atomic_write` and the chapters leave temp files (`scratch/` is disposable)."""
    current = [ws.current, *(ws.current / d for d in ("artifacts", "metrics", "chapters"))]
    held = [ws.held / "artifacts", ws.held / "metrics"]
    learning = [ws.state / "learning", ws.state / "learning" / "accepted"]
    state = [ws.root, ws.state, ws.inputs, ws.cache, ws.transcripts, ws.traces, *learning]
    transcripts = sorted(ws.transcripts.iterdir()) if ws.transcripts.is_dir() else []
    return [*current, *held, *state, *(p for p in transcripts if p.is_dir())]


def recover(ws: Workspace, ledger: Ledger) -> RecoveryReport:
    """Bring the workspace back to what the ledger says. Safe to run at any time."""
    ws.ensure()
    report = RecoveryReport()
    report.temp_files_removed = sweep_temp_files(_temp_folders(ws))
    _replay_trace_tails(ws, ledger, report)
    _settle_runs(ws, ledger, report)
    _sweep_unknown_traces(ws, ledger, report)
    _sweep_objects(ws, ledger, report)
    rebuild_view(ws, ledger, chapters=False, verify=True)
    report.chapters_rendered, report.chapters_removed = sync_chapters(
        ws, ledger.latest_commits(), ledger=ledger
    )
    return report

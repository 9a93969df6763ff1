"""Reading traces back: `trace list | show | verify | why` (provenance of one cell)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

import orjson

from harness.chapters import ChapterProblem, verify_chapters
from harness.errors import ConfigError, PackError, TraceError
from harness.ledger import CommitRow, Ledger, RunRow
from harness.locate import workspace_pack
from harness.scratch import Scratch
from harness.store import published_bytes
from harness.trace.chain import VerifyResult, read_trace, verify_chain
from harness.workspace import Workspace

__all__ = [
    "Provenance",
    "list_runs",
    "row_index",
    "show_attempt",
    "show_run",
    "verify_commits",
    "verify_committed_chapters",
    "verify_traces",
    "why",
]


def _ledger(ws: Workspace) -> Ledger:
    if not ws.ledger_path.exists():
        raise ConfigError(
            "no ledger in this workspace (nothing has run here yet)",
            file=ws.root,
            hint="run `membrane batch` or `membrane refine` first, or pass --workspace",
        )
    return Ledger.reader(ws.ledger_path)  # read-only: never waits on a batch's writes


def verify_committed_chapters(ws: Workspace, run_id: str | None = None) -> list[ChapterProblem]:
    """`trace verify` checks the chapters too: each latest commit's chapter exists and hashes
    to its header, which names that version; with no RUN, no chapter is an orphan."""
    ledger = _ledger(ws)
    try:
        rows = ledger.latest_commits()
    finally:
        ledger.close()
    if run_id is None:
        return verify_chapters(ws, rows)
    mine = [r for r in rows if r.run_id == run_id]
    return [p for p in verify_chapters(ws, mine) if p.code != "chapter.orphan"]


def verify_commits(ws: Workspace, run_id: str | None = None) -> list[VerifyResult]:
    """Each artifact's newest commit: its file exists and hashes to the ledger row's
    content hash (`commit.missing`, `commit.edited`), and that hash is the one its run's
    trace recorded when it was published (`commit.mismatch`: the ledger was edited, e.g.
    two rows' hashes swapped). Only the failures are returned."""
    ledger = _ledger(ws)
    try:
        rows = [r for r in ledger.latest_commits() if run_id is None or r.run_id == run_id]
    finally:
        ledger.close()
    out = []
    for row in rows:
        path = ws.current / "artifacts" / f"{row.content_hash}.json"
        if not path.is_file():
            out.append(_commit_fail(row, "its committed file is missing", "commit.missing"))
            continue
        if hashlib.sha256(path.read_bytes()).hexdigest() != row.content_hash:
            out.append(_commit_fail(row, f"{path.name} was edited after commit", "commit.edited"))
            continue
        traced = _published_hash(ws, row.run_id)
        if traced is not None and traced != row.content_hash:
            out.append(
                _commit_fail(
                    row,
                    f"the ledger names {row.content_hash[:12]} but the run's trace published "
                    f"{traced[:12]} (the ledger was edited)",
                    "commit.mismatch",
                )
            )
    return out


def _commit_fail(row: CommitRow, problem: str, code: str) -> VerifyResult:
    return VerifyResult(
        row.run_id, False, 0, "", f"{row.artifact_id} v{row.version}: {problem}", code
    )


def _published_hash(ws: Workspace, run_id: str) -> str | None:
    """The content hash the run's trace says it published (commit, approval or revert)."""
    path = ws.trace_path(run_id)
    if not path.exists():
        return None
    found = None
    try:
        for _n, ev in read_trace(path):
            kind = ev.get("kind")
            if (kind == "commit" and not ev.get("held")) or (
                kind == "review" and ev.get("action") in ("approved", "reverted")
            ):
                found = ev.get("content_hash")
    except TraceError:
        return None
    return str(found) if found else None


def list_runs(ws: Workspace) -> list[RunRow]:
    ledger = _ledger(ws)
    try:
        return ledger.runs()
    finally:
        ledger.close()


def show_run(ws: Workspace, run_id: str) -> list[dict[str, Any]]:
    path = ws.trace_path(run_id)
    if "/" not in run_id and not path.is_file() and ws.ledger_path.exists():
        ledger = _ledger(ws)
        try:
            when = ledger.pruned("trace").get(run_id)
        finally:
            ledger.close()
        if when is not None:
            raise ConfigError(
                f"the trace of run {run_id!r} was pruned by `membrane gc` on {when}",
                file=path,
                hint="its anchor is kept in the ledger (`membrane trace verify` checks it); "
                "the records are gone",
            )
    if "/" in run_id or not path.is_file():
        raise ConfigError(
            f"no trace for run {run_id!r}", file=path, hint="see `membrane trace list`"
        )
    return [payload for _n, payload in read_trace(path)]


def show_attempt(ws: Workspace, run_id: str, attempt: int) -> dict[str, Any]:
    """What attempt `attempt` of a run proposed (its candidate, kept content-addressed in
    `scratch/` or, for attempt 1, `.membrane/inputs/`, checked against the hash its trace
    records) and what the gates and the critique said of it (from the trace)."""
    events = show_run(ws, run_id)
    proposal = next(
        (e for e in events if e["kind"] == "proposal" and e["attempt"] == attempt), None
    )
    if proposal is None:
        tried = sorted({e["attempt"] for e in events if e["kind"] == "proposal"})
        raise ConfigError(
            f"run {run_id!r} has no attempt {attempt}",
            hint=f"its attempts: {', '.join(map(str, tried)) or 'none'}",
        )
    digest = proposal["content_hash"]
    scratch = Scratch(ws.scratch, ws.inputs)
    data = scratch.get(run_id, digest)
    if data is None:
        raise ConfigError(
            f"attempt {attempt} of {run_id!r} is no longer in scratch/",
            file=scratch.path(run_id, digest),
            hint="scratch is staging and may have been pruned; the trace keeps what changed",
        )
    if hashlib.sha256(data).hexdigest() != digest:
        raise TraceError(
            f"{scratch.path(run_id, digest)} differs from what the trace recorded for "
            f"attempt {attempt} (content hash mismatch)"
        )
    mine = [e for e in events if e.get("attempt") == attempt]
    return {
        "proposal": orjson.loads(data),
        "verdicts": [e for e in mine if e["kind"] == "verdict"],
        "critique": next((e for e in mine if e["kind"] == "critique"), None),
    }


def verify_traces(ws: Workspace, run_id: str | None = None) -> list[VerifyResult]:
    """Verify one run's trace, or every trace in the workspace, against the ledger anchors."""
    ledger = _ledger(ws)
    try:
        rows = {r.run_id: r for r in ledger.runs()}
        pruned = ledger.pruned("trace")  # `membrane gc` removed these files, not the anchors
    finally:
        ledger.close()
    if run_id is not None:
        if run_id not in rows and not ws.trace_path(run_id).exists():
            raise ConfigError(f"unknown run {run_id!r}", hint="see `membrane trace list`")
        ids = [run_id]
    else:
        on_disk = {p.stem for p in ws.traces.glob("*.jsonl")} if ws.traces.is_dir() else set()
        ids = sorted(on_disk | set(rows))
    writing = ws.busy()  # a batch is running: its unfinished runs are in progress, not damage
    results = []
    for rid in ids:
        path = ws.trace_path(rid)
        row = rows.get(rid)
        if not path.exists():
            row = rows.get(rid)
            if rid in pruned and row is not None:
                results.append(
                    VerifyResult(
                        rid, True, row.trace_len or 0, row.trace_head or "",
                        f"pruned, anchor kept (membrane gc, {pruned[rid]})", "trace.pruned",
                    )
                )
                continue
            results.append(
                VerifyResult(rid, False, 0, "", "trace file is missing", "trace.missing")
            )
            continue
        anchor = (
            (row.trace_len, row.trace_head)
            if row
            and row.trace_len is not None
            and row.trace_head is not None
            and row.status != "running"
            else None
        )
        if row is None:
            results.append(
                VerifyResult(
                    rid,
                    False,
                    0,
                    "",
                    "the ledger knows no such run (a stray or planted file)",
                    "trace.unknown_run",
                )
            )
            continue
        result = verify_chain(path, anchor)
        if writing and row.status == "running" and result.code == "trace.unanchored":
            result = VerifyResult(
                rid, True, result.length, result.head, "in progress (a batch is writing it)",
                "trace.in_progress",
            )
        results.append(result)
    return results


@dataclass(frozen=True)
class Provenance:
    artifact_id: str
    cell: str
    value: Any
    version: int
    content_hash: str
    run_id: str
    proposed: dict[str, Any]
    admitted: list[dict[str, Any]]
    committed: dict[str, Any]
    # raw -> canonical, when the value gate resolved another spelling (label, alias ...)
    canonical: dict[str, Any] | None = None
    # set when the newest version is a person's revert to older content: who, when, why
    restored: dict[str, Any] | None = None


def row_index(
    tables: dict[str, list[dict[str, Any]]],
    table: str,
    row: str,
    key: list[str] | None = None,
) -> int:
    """The index of ROW in `table`: a 0-based index, or a key. With the pack's `key`
    columns, the key is their values joined by "/" ("R1/A" for a composite key, as
    `Pack.row_key` prints it); without a pack, the one row whose id-like value (any
    column) equals ROW."""
    rows = tables.get(table)
    if rows is None:
        raise ConfigError(
            f"the committed artifact has no table {table!r}",
            hint=f"tables: {', '.join(sorted(tables))}",
        )
    if row.isdigit() and (not key or not _key_matches(rows, row, key)):  # a key wins
        idx = int(row)
    else:
        matches = _key_matches(rows, row, key)
        if len(matches) != 1:
            what = f"key ({'/'.join(key)})" if key else "key"
            raise ConfigError(
                f"{'no' if not matches else len(matches)} row(s) with {what} {row!r} "
                f"in table {table!r}",
                hint="give the row's 0-based index, or its key as the pack declares it"
                + ("" if key else " (no pack found: pass the key of a single row)"),
            )
        idx = matches[0]
    if not 0 <= idx < len(rows):
        raise ConfigError(f"table {table!r} has {len(rows)} rows; row {idx} does not exist")
    return idx


def _key_matches(rows: list[dict[str, Any]], row: str, key: list[str] | None) -> list[int]:
    if key:
        return [i for i, r in enumerate(rows) if "/".join(str(r.get(k)) for k in key) == row]
    return [i for i, r in enumerate(rows) if any(str(v) == row for v in r.values())]


def _pack_key(ws: Workspace, table: str) -> list[str] | None:
    """The pack's `key` of `table`, when the workspace's pack can be found."""
    try:
        pack = workspace_pack(ws, ws.config())
    except (ConfigError, PackError):
        return None
    binding = pack.tables.get(table)
    return list(binding.key) if binding else None


def _source_commit(ws: Workspace, artifact_id: str) -> tuple[CommitRow, dict[str, Any] | None]:
    """The newest commit of an artifact, and when it is a person's revert to older content,
    the commit that first published that content (whose trace tells the story) and who
    restored it."""
    ledger = _ledger(ws)
    try:
        commit = ledger.latest_commit(artifact_id)
        versions = [c for c in ledger.all_commits() if c.artifact_id == artifact_id]
        status = {c.run_id: r.status for c in versions if (r := ledger.run(c.run_id)) is not None}
    finally:
        ledger.close()
    if commit is None:
        raise ConfigError(
            f"artifact {artifact_id!r} has no committed version",
            hint="see `membrane trace list` for its runs",
        )
    if status.get(commit.run_id) != "REVERT":
        return commit, None
    _n, act = next(iter(read_trace(ws.trace_path(commit.run_id))))
    restored = {k: act.get(k) for k in ("run_id", "by", "at", "note", "version", "seq")}
    origin = [
        c
        for c in versions
        if c.content_hash == commit.content_hash and status.get(c.run_id) != "REVERT"
    ]
    return (replace(origin[0], version=commit.version) if origin else commit), restored


def why(ws: Workspace, artifact_id: str, table: str, row: str, column: str) -> Provenance:
    """Which attempt proposed a committed cell, which verdicts admitted it, which commit published it."""
    commit, restored = _source_commit(ws, artifact_id)
    art = orjson.loads(published_bytes(ws, commit))  # a missing or edited file: TraceError
    idx = row_index(art["tables"], table, row, _pack_key(ws, table))
    if column not in art["tables"][table][idx]:
        raise ConfigError(f"row {idx} of {table!r} has no column {column!r}")
    cell = f"{table}[{idx}].{column}"
    proposed: dict[str, Any] | None = None
    admitted: list[dict[str, Any]] = []
    committed: dict[str, Any] | None = None
    canonical: dict[str, Any] | None = None
    for _n, ev in read_trace(ws.trace_path(commit.run_id)):
        kind = ev.get("kind")
        if kind == "proposal" and any(c["cell"] == cell for c in ev["changes"]):
            proposed = {
                "attempt": ev["attempt"],
                "proposer": ev["proposer"],
                "seq": ev["seq"],
                "at": ev["at"],
                "hash": ev["hash"],
            }
            admitted, canonical = [], None
        if kind == "verdict" and proposed:
            for c in ev.get("canonical", ()):
                if c["cell"] == cell:
                    canonical = {
                        **c,
                        "gate": ev["gate"],
                        "attempt": ev["attempt"],
                        "seq": ev["seq"],
                    }
        if kind == "verdict" and proposed and ev["passed"] and cell not in ev["rejected"]:
            admitted.append(
                {
                    "gate": ev["gate"],
                    "attempt": ev["attempt"],
                    "seq": ev["seq"],
                    "hash": ev["hash"],
                    "batch_size": ev["batch_size"],
                }
            )
        elif (kind == "commit" and not ev.get("held")) or (
            kind == "review" and ev.get("action") == "approved"
        ):
            committed = {
                "seq": ev["seq"],
                "version": ev["version"],
                "at": ev["at"],
                "hash": ev["hash"],
                "content_hash": ev["content_hash"],
                **({"approved_by": ev["by"]} if kind == "review" else {}),
            }
    if proposed is None or committed is None:
        raise TraceError(
            f"the trace of run {commit.run_id} does not account for {cell}",
        )
    return Provenance(
        artifact_id,
        cell,
        art["tables"][table][idx][column],
        commit.version,
        commit.content_hash,
        commit.run_id,
        proposed,
        admitted,
        committed,
        canonical,
        restored,
    )

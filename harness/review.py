"""The human review queue (DESIGN.md §8): HELD runs wait here for a person.

* `held_runs` lists the pending ones, oldest first, with why they were held (the pack's
  policy, which learned overlay, or a spot-check sample).
* `show` gives the held artifact, the verdicts of the attempt that passed and a diff
  against the run's input.
* `approve` publishes a held artifact through the same commit protocol as COMMIT: the
  object is written content-addressed to `current/`, then one ledger transaction makes
  the commit row, settles the held row, re-anchors the run's trace with the review record
  and appends the override to the outcome log. Only an artifact whose trace shows every
  gate passed on the held attempt (and whose stored bytes still hash to what was held)
  can be approved: approve never bypasses a gate.
* `reject` settles a held run as REJECTED (nothing is published).
* `revert` undoes a committed version: the older content (from `archive/`) becomes the
  newest version, by a revert run whose trace is the review record.

Each act is a trace record and an outcome-log record (human override). The ledger
transaction is the commit point; the trace record is appended right after and, if a kill
comes between, recovery appends it (`trace_tail`). A second approve of the same run is a
clear error, never a second version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError

from harness.errors import ConfigError
from harness.learning.outcomes import OutcomeRecord, OverrideRecord
from harness.ledger import CommitRow, HeldRow, Ledger, RunRow
from harness.models import Artifact
from harness.store import rebuild_view, write_objects
from harness.trace.chain import append_line, read_trace, seal, verify_chain
from harness.trace.events import ReviewEvent
from harness.workspace import Workspace

__all__ = ["HeldItem", "ReviewError", "approve", "held_runs", "reject", "revert", "show"]


class ReviewError(ConfigError):
    """A review act that cannot be taken (not HELD, unknown artifact, a gate not passed):
    exit 2, nothing written."""


@dataclass(frozen=True)
class HeldItem:
    run_id: str
    artifact_id: str
    held_at: str
    why: str
    proposer: str | None
    attempts: int | None


def _proposer_of(ledger: Ledger, run_id: str) -> OutcomeRecord | None:
    raw = ledger.run_outcome_record(run_id)
    if raw is None:
        return None
    try:
        return OutcomeRecord.model_validate_json(raw)
    except ValidationError:
        return None


def held_runs(ledger: Ledger) -> list[HeldItem]:
    """Pending held runs, oldest first."""
    out = []
    for h in ledger.held(status="pending"):
        rec = _proposer_of(ledger, h.run_id)
        out.append(
            HeldItem(
                h.run_id,
                h.artifact_id,
                h.held_at,
                h.why or "approval required",
                rec.proposer if rec else None,
                rec.attempts if rec else None,
            )
        )
    return out


def _pending(ledger: Ledger, run_id: str) -> tuple[HeldRow, RunRow]:
    held = ledger.held_of_run(run_id)
    run = ledger.run(run_id)
    if held is None or run is None:
        status = f" (it is {run.status})" if run is not None else ""
        raise ReviewError(
            f"run {run_id!r} is not held for review{status}",
            hint="`membrane review list` shows the runs waiting for a person",
        )
    if held.status != "pending" or run.status != "HELD":
        raise ReviewError(
            f"run {run_id!r} was already {held.status} at {held.reviewed_at}",
            hint="a review act is taken once; `membrane revert` undoes a published version",
        )
    return held, run


def _events(ws: Workspace, run: RunRow) -> list[dict[str, Any]]:
    """The run's trace, verified against its ledger anchor (a review acts on evidence)."""
    path = ws.trace_path(run.run_id)
    if run.trace_len is None or run.trace_head is None or not path.exists():
        raise ReviewError(f"run {run.run_id!r} has no anchored trace", file=path)
    result = verify_chain(path, (run.trace_len, run.trace_head))
    if not result.ok:
        raise ReviewError(
            f"the trace of run {run.run_id!r} does not verify ({result.code}: {result.problem})",
            file=path,
            hint="`membrane trace verify` says more; a tampered run cannot be reviewed",
        )
    return [payload for _n, payload in read_trace(path)]


def _held_object(ws: Workspace, held: HeldRow) -> tuple[bytes, dict[str, Any]]:
    """The held artifact's bytes (checked against the held hash) and its metrics."""
    path = ws.held / "artifacts" / f"{held.content_hash}.json"
    try:
        data = path.read_bytes()
        metrics = orjson.loads((ws.held / "metrics" / f"{held.metrics_hash}.json").read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ReviewError(f"the held artifact is unreadable: {exc}", file=path) from exc
    if hashlib.sha256(data).hexdigest() != held.content_hash:
        raise ReviewError(
            "the held artifact differs from what was held (content hash mismatch)", file=path
        )
    return data, metrics


def _gates_passed(events: list[dict[str, Any]], held: HeldRow) -> list[str]:
    """What keeps this run from being approved (empty: nothing). The HOLD decision's
    attempt must have passed VALUE_GATE, RI_GATE and (when the pack has prose) PROSE_GATE,
    with no failed verdict, and the held record must name the held bytes."""
    holds = [e for e in events if e.get("kind") == "decision" and e.get("effector") == "hold"]
    if not holds:
        return ["its trace has no HOLD decision"]
    facts = holds[-1].get("facts", {})
    attempt = facts.get("attempt")
    verdicts = [e for e in events if e.get("kind") == "verdict" and e.get("attempt") == attempt]
    needed = {"value_gate", "ri_gate"} | ({"prose_gate"} if facts.get("has_prose") else set())
    passed = {v["gate"] for v in verdicts if v.get("passed")}
    problems = [f"{v['gate']} failed attempt {attempt}" for v in verdicts if not v.get("passed")]
    problems += [f"{g} never passed attempt {attempt}" for g in sorted(needed - passed)]
    commits = [e for e in events if e.get("kind") == "commit" and e.get("held")]
    if not commits or commits[-1].get("content_hash") != held.content_hash:
        problems.append("the trace's held record names other bytes than the held row")
    return problems


def show(ws: Workspace, ledger: Ledger, run_id: str) -> dict[str, Any]:
    """A held run for a person: the artifact, its verdicts, a diff against the input."""
    held = ledger.held_of_run(run_id)
    run = ledger.run(run_id)
    if held is None or run is None:
        raise ReviewError(
            f"run {run_id!r} was never held",
            hint="`membrane review list` shows the runs waiting for a person",
        )
    data, _metrics = _held_object(ws, held)
    events = _events(ws, run)
    artifact = Artifact.model_validate_json(data)
    holds = [e for e in events if e.get("kind") == "decision" and e.get("effector") == "hold"]
    attempt = holds[-1]["facts"].get("attempt") if holds else None
    before = _input_of(ws, run)
    rec = _proposer_of(ledger, run_id)
    return {
        "run_id": run_id,
        "artifact_id": held.artifact_id,
        "status": held.status,
        "why": held.why,
        "held_at": held.held_at,
        "reviewed_at": held.reviewed_at,
        "note": held.note,
        "proposer": rec.proposer if rec else None,
        "attempt": attempt,
        "blocked_by": _gates_passed(events, held),
        "verdicts": [
            {
                "gate": e["gate"],
                "passed": e["passed"],
                "codes": [c["code"] for c in e.get("critiques", [])],
            }
            for e in events
            if e.get("kind") == "verdict" and e.get("attempt") == attempt
        ],
        "diff": diff(before, artifact) if before is not None else None,
        "artifact": artifact.model_dump(mode="json"),
    }


def _input_of(ws: Workspace, run: RunRow) -> Artifact | None:
    path = ws.inputs / f"{run.input_hash}.json"
    try:
        return Artifact.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


def diff(before: Artifact, after: Artifact) -> dict[str, Any]:
    """Cell by cell (changed, added, removed) and the prose, before → after."""
    old = before.cell_values()
    new = after.cell_values()
    return {
        "changed": [
            {"cell": k, "before": old[k], "after": new[k]}
            for k in new
            if k in old and old[k] != new[k]
        ],
        "added": [{"cell": k, "after": new[k]} for k in new if k not in old],
        "removed": [{"cell": k, "before": old[k]} for k in old if k not in new],
        "prose": {"before": before.prose, "after": after.prose}
        if before.prose != after.prose
        else None,
    } | _fields_diff(before, after)


def _fields_diff(before: Artifact, after: Artifact) -> dict[str, Any]:
    """The other prose fields (`prose_fields`) that differ, before → after; {} if none."""
    names = sorted(set(before.prose_fields) | set(after.prose_fields))
    changed = {
        n: {"before": before.prose_fields.get(n), "after": after.prose_fields.get(n)}
        for n in names
        if before.prose_fields.get(n) != after.prose_fields.get(n)
    }
    return {"prose_fields": changed} if changed else {}


def _override(
    ledger: Ledger, run_id: str, action: str, previous: str, result: str, note: str, at: str
) -> str:
    """The outcome-log record of a person's act on a run (the run's own record gives the
    proposer and pack; a run the log never saw is recorded as `unknown`)."""
    rec = _proposer_of(ledger, run_id)
    run = ledger.run(run_id)
    return OverrideRecord(
        run_id=run_id,
        artifact_id=run.artifact_id if run else (rec.artifact_id if rec else "unknown"),
        pack=rec.pack if rec else "unknown",
        proposer=rec.proposer if rec else "unknown",
        human_override=action,
        previous=previous,
        result=result,
        note=note[:2000],
        run_finished_at=rec.finished_at if rec else at,
        at=at,
    ).model_dump_json()


def _review_tail(
    run: RunRow, at: str, action: str, by: str, note: str, version: int | None, digest: str | None
) -> tuple[int, str, str]:
    assert run.trace_len is not None and run.trace_head is not None
    event = ReviewEvent(
        seq=run.trace_len,
        run_id=run.run_id,
        at=at,
        prev=run.trace_head,
        action=action,
        artifact_id=run.artifact_id,
        by=by,
        note=note,
        version=version,
        content_hash=digest,
    )
    line, head = seal(event)
    return run.trace_len, head, line.decode()


def _append_tail(ws: Workspace, ledger: Ledger, run_id: str, tail: tuple[int, str, str]) -> None:
    append_line(ws.trace_path(run_id), tail[2].encode())
    ledger.drop_trace_tail(run_id, tail[0])


def approve(
    ws: Workspace, ledger: Ledger, run_id: str, *, by: str, note: str, clock: Callable[[], str]
) -> CommitRow:
    """Publish a held artifact (it passed every gate) as the artifact's next version."""
    held, run = _pending(ledger, run_id)
    events = _events(ws, run)
    problems = _gates_passed(events, held)
    if problems:
        raise ReviewError(
            f"run {run_id!r} cannot be approved: " + "; ".join(problems),
            hint="only an artifact that passed every gate can be published; reject it",
        )
    data, metrics = _held_object(ws, held)
    artifact = Artifact.model_validate_json(data)
    digest, mdigest = write_objects(ws.current, artifact, metrics)  # content-addressed
    at = clock()
    latest = ledger.latest_commit(held.artifact_id)
    version = (latest.version if latest else 0) + 1
    tail = _review_tail(run, at, "approved", by, note, version, digest)
    row = CommitRow(held.artifact_id, version, digest, mdigest, run_id, tail[0], tail[1], at)
    record = _override(ledger, run_id, "approved", "partial", "success", note, at)
    try:
        ledger.review_held(run_id, "approved", at, note, tail, record, commit=row)
    except (LookupError, ValueError) as exc:
        raise ReviewError(f"run {run_id!r} changed while it was being approved: {exc}") from exc
    _append_tail(ws, ledger, run_id, tail)
    rebuild_view(ws, ledger)
    return row


def reject(
    ws: Workspace, ledger: Ledger, run_id: str, *, by: str, reason: str, clock: Callable[[], str]
) -> None:
    """Settle a held run as REJECTED: nothing is published; the proposer is charged."""
    if not reason.strip():
        raise ReviewError("a rejection needs a reason", hint="pass --reason TEXT")
    _held, run = _pending(ledger, run_id)
    _events(ws, run)  # a tampered trace is not re-anchored by a review
    at = clock()
    tail = _review_tail(run, at, "rejected", by, reason, None, None)
    record = _override(ledger, run_id, "rejected", "partial", "failure", reason, at)
    try:
        ledger.review_held(run_id, "rejected", at, reason, tail, record)
    except LookupError as exc:
        raise ReviewError(f"run {run_id!r} changed while it was being rejected") from exc
    _append_tail(ws, ledger, run_id, tail)


def revert(
    ws: Workspace,
    ledger: Ledger,
    artifact_id: str,
    *,
    to: int | None,
    by: str,
    note: str,
    clock: Callable[[], str],
) -> CommitRow:
    """Make an older committed version of an artifact its newest version again."""
    latest = ledger.latest_commit(artifact_id)
    if latest is None:
        raise ReviewError(
            f"artifact {artifact_id!r} has no committed version",
            hint="see `membrane report` or current/corpus.jsonl for committed artifacts",
        )
    target_version = latest.version - 1 if to is None else to
    if target_version < 1 or target_version >= latest.version:
        raise ReviewError(
            f"artifact {artifact_id!r} is at version {latest.version}; "
            + (
                "it has no earlier version to revert to"
                if latest.version == 1
                else f"--to must be between 1 and {latest.version - 1}"
            )
        )
    target = ledger.commit_version(artifact_id, target_version)
    if target is None:
        raise ReviewError(f"artifact {artifact_id!r} has no version {target_version}")
    if target.content_hash == latest.content_hash:
        raise ReviewError(
            f"version {target_version} of {artifact_id!r} has the same content as the newest"
        )
    data = None
    for folder in (ws.current, ws.archive):
        path = folder / "artifacts" / f"{target.content_hash}.json"
        if path.is_file():
            data = path.read_bytes()
            break
    if data is None and (when := ledger.pruned("archive").get(target.content_hash)):
        raise ReviewError(
            f"version {target_version} of {artifact_id!r} was pruned from archive/ by "
            f"`membrane gc` on {when}; it cannot be restored",
            file=ws.archive / "artifacts" / f"{target.content_hash}.json",
        )
    if data is None or hashlib.sha256(data).hexdigest() != target.content_hash:
        raise ReviewError(
            f"version {target_version} of {artifact_id!r} is missing or damaged in archive/",
            file=ws.archive / "artifacts" / f"{target.content_hash}.json",
        )
    artifact = Artifact.model_validate_json(data)
    at = clock()
    metrics = {"reverted_to": target_version, "reverted_from": latest.version, "by": by}
    digest, mdigest = write_objects(ws.current, artifact, metrics)
    version = latest.version + 1
    run_id = f"{artifact_id}.r{ledger.count_runs(artifact_id) + 1}"
    run = RunRow(run_id, artifact_id, "review", digest, "REVERT", at, 0, "", None)
    tail = _review_tail(run, at, "reverted", by, note, version, digest)
    row = CommitRow(artifact_id, version, digest, mdigest, run_id, tail[0], tail[1], at)
    undone = ledger.run(latest.run_id)
    record = None
    if undone is not None and undone.status == "COMMITTED":  # a proposer's version: charge it
        record = _override(ledger, latest.run_id, "reverted", "success", "failure", note, at)
    try:
        ledger.revert(run, tail, row, record, undone=latest.run_id)
    except ValueError as exc:
        raise ReviewError(f"artifact {artifact_id!r} changed while reverting: {exc}") from exc
    _append_tail(ws, ledger, run_id, tail)
    rebuild_view(ws, ledger)
    return row

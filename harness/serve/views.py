"""What each page and endpoint shows, assembled from the library's own calls: the ledger
(read-only), `harness.inspect` (verify, why), `harness.review` (the queue), `harness.report`
(baseline vs refined) and the learned state. Nothing here writes to the workspace.

Ids reach the file system only after they match the strict id pattern and the ledger
knows them (`known_run`)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from harness import inspect, review
from harness.errors import ConfigError, TraceError
from harness.learning.outcomes import OutcomeRecord, parse_records
from harness.learning.state import LearningState, fold_all
from harness.ledger import Ledger
from harness.serve import reader
from harness.serve.errors import ApiError
from harness.workspace import Workspace

__all__ = [
    "Cached",
    "learning",
    "provenance",
    "report",
    "review_queue",
    "timeline",
    "verify",
]

# run ids are artifact ids with a `.rN` suffix; both become file names only through this
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,139}$")
REPORT_TIMEOUT_S = 600
_CELL_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ .:-]{0,127}$")


def check_id(value: str, what: str) -> str:
    if not ID.fullmatch(value) or ".." in value:
        raise ApiError(404, f"{what}.not_found", f"no {what} {value!r}")
    return value


def known_run(ledger: Ledger, run_id: str) -> reader.RunItem:
    check_id(run_id, "run")
    item = reader.run_item(ledger, run_id)
    if item is None:
        raise ApiError(404, "run.not_found", f"no run {run_id!r} in this workspace")
    return item


# -- the trace, read as a batch writes it -------------------------------------------------
def read_events(ws: Workspace, run_id: str) -> tuple[list[dict[str, Any]], bool]:
    """The run's trace records; a torn last line (a batch is writing it) is left out and
    reported as `partial`, never an error. A damaged line inside is kept as `unreadable`."""
    path = ws.trace_path(run_id)
    try:
        lines = path.read_bytes().split(b"\n")
    except FileNotFoundError:
        return [], False
    events: list[dict[str, Any]] = []
    partial = False
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            ev = orjson.loads(line)
            if not isinstance(ev, dict):
                raise ValueError("not a record")
            events.append(ev)
        except (orjson.JSONDecodeError, ValueError):
            if i == last:
                partial = True
            else:
                events.append({"kind": "unreadable", "line": i + 1})
    return events, partial


def _codes(ev: dict[str, Any]) -> list[str]:
    return [str(c.get("code")) for c in ev.get("critiques", ()) if c.get("severity") == "error"]


def _step(ev: dict[str, Any], cells: dict[str, Any]) -> dict[str, Any]:
    """One trace record, summarised for the timeline (a proposal: its diff against the
    previous attempt, from the cells the trace recorded so far)."""
    kind = ev.get("kind")
    base = {"kind": kind, "seq": ev.get("seq"), "at": ev.get("at")}
    if kind == "proposal":
        changes = ev.get("changes", ())
        diff = [
            {"cell": c["cell"], "before": cells.get(c["cell"]), "after": c.get("value")}
            for c in changes
        ]
        first = not cells
        for c in changes:
            cells[c["cell"]] = c.get("value")
        for cell in ev.get("removed", ()):
            cells.pop(cell, None)
        return base | {
            "attempt": ev.get("attempt"),
            "proposer": ev.get("proposer"),
            "input": first,
            "diff": [] if first else diff,
            "cells": len(changes),
            "removed": list(ev.get("removed", ())),
            "prose_changed": bool(ev.get("prose_changed")),
            "notes": list(ev.get("notes", ()))[:50],
            "lessons": list(ev.get("lessons", ())),
            "tokens": int(ev.get("tokens_prompt", 0)) + int(ev.get("tokens_completion", 0)),
        }
    if kind == "verdict":
        return base | {
            "attempt": ev.get("attempt"),
            "gate": ev.get("gate"),
            "passed": bool(ev.get("passed")),
            "crashed": bool(ev.get("crashed")),
            "codes": _codes(ev),
            "warnings": [
                str(c.get("code")) for c in ev.get("critiques", ()) if c.get("severity") != "error"
            ],
            "critiques": [
                {k: c.get(k) for k in ("code", "severity", "message", "location", "fix_hint")}
                for c in ev.get("critiques", ())[:200]
            ],
            "batch_size": ev.get("batch_size"),
        }
    if kind == "critique":
        return base | {
            "attempt": ev.get("attempt"),
            "gate": ev.get("gate"),
            "codes": list(ev.get("codes", ())),
            "locked": ev.get("locked"),
        }
    if kind == "usage":
        return base | {
            "tokens": int(ev.get("tokens_prompt", 0)) + int(ev.get("tokens_completion", 0)),
            "cached": bool(ev.get("cached")),
        }
    keep = (
        "version",
        "content_hash",
        "held",
        "why",
        "action",
        "by",
        "note",
        "message",
        "effector",
        "scope",
        "line",
    )
    return base | {k: ev[k] for k in keep if k in ev}


def timeline(ws: Workspace, ledger: Ledger, run_id: str) -> dict[str, Any]:
    """A run as cycles: each decision (rule fired, effector, state move) with what its
    effector recorded (proposal and its diff, verdicts and codes, critique, tokens)."""
    item = known_run(ledger, run_id)
    events, partial = read_events(ws, run_id)
    cells: dict[str, Any] = {}
    cycles: list[dict[str, Any]] = []
    head: list[dict[str, Any]] = []
    tokens = 0
    for ev in events:
        if ev.get("kind") == "decision":
            cycles.append(
                {
                    "cycle": ev.get("cycle"),
                    "seq": ev.get("seq"),
                    "at": ev.get("at"),
                    "rule": ev.get("rule"),
                    "effector": ev.get("effector"),
                    "trigger": ev.get("trigger"),
                    "state_before": ev.get("state_before"),
                    "state_after": ev.get("state_after"),
                    "attempt": (ev.get("facts") or {}).get("attempt"),
                    "steps": [],
                }
            )
            continue
        step = _step(ev, cells)
        tokens += int(step.get("tokens", 0)) if ev.get("kind") in ("usage",) else 0
        (cycles[-1]["steps"] if cycles else head).append(step)
    started = next((e for e in events if e.get("kind") == "run_started"), {})
    return {
        "run": dataclasses.asdict(item),
        "started": {
            k: started.get(k)
            for k in (
                "pack",
                "pack_version",
                "proposer",
                "max_attempts",
                "overlay",
                "spot_check",
                "agenda",
            )
        },
        "cycles": cycles,
        "records": len(events),
        "partial": partial,
        "tokens": tokens,
    }


# -- provenance and verification (harness.inspect) ---------------------------------------
def provenance(
    ws: Workspace, artifact_id: str, table: str, row: str, column: str
) -> dict[str, Any]:
    check_id(artifact_id, "artifact")
    for value, what in ((table, "table"), (row, "row"), (column, "column")):
        if not _CELL_PART.fullmatch(value):
            raise ApiError(404, f"cell.{what}_not_found", f"no {what} {value!r}")
    try:
        return dataclasses.asdict(inspect.why(ws, artifact_id, table, row, column))
    except ConfigError as exc:
        code = "artifact.not_committed" if "no committed version" in str(exc) else "cell.not_found"
        raise ApiError(404, code, str(exc)) from exc
    except TraceError as exc:
        raise ApiError(409, "trace.unaccounted", str(exc)) from exc


def committed_artifact(ws: Workspace, ledger: Ledger, artifact_id: str) -> dict[str, Any]:
    """The newest committed version of an artifact (its tables, for cell links)."""
    check_id(artifact_id, "artifact")
    commit = ledger.latest_commit(artifact_id)
    if commit is None:
        raise ApiError(
            404, "artifact.not_committed", f"artifact {artifact_id!r} has no committed version"
        )
    path = ws.current / "artifacts" / f"{commit.content_hash}.json"
    try:
        art = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ApiError(
            409, "commit.missing", f"the committed file of {artifact_id!r} is unreadable"
        ) from exc
    return {"commit": dataclasses.asdict(commit), "artifact": art}


def verify(ws: Workspace, run_id: str | None) -> dict[str, Any]:
    try:
        results = inspect.verify_traces(ws, run_id)
        results += inspect.verify_commits(ws, run_id)
    except ConfigError as exc:
        raise ApiError(404, "run.not_found", str(exc)) from exc
    chapters = inspect.verify_committed_chapters(ws, run_id)
    failures = [dataclasses.asdict(r) for r in results if not r.ok]
    failures += [dataclasses.asdict(c) for c in chapters]
    return {
        "ok": not failures,
        "checked": len({r.run_id for r in results}),
        "in_progress": sum(1 for r in results if r.code == "trace.in_progress"),
        "failures": failures,
    }


# -- the review queue (harness.review) ----------------------------------------------------
def review_queue(ledger: Ledger) -> list[dict[str, Any]]:
    return [dataclasses.asdict(h) for h in review.held_runs(ledger)]


def review_item(ws: Workspace, ledger: Ledger, run_id: str) -> dict[str, Any]:
    check_id(run_id, "run")
    try:
        return review.show(ws, ledger, run_id)
    except ConfigError as exc:
        raise ApiError(404, "review.not_held", str(exc)) from exc


# -- cached computations (recomputed when the ledger changes) ----------------------------
class Cached:
    """One value per ledger fingerprint; computed by one thread at a time."""

    def __init__(self, compute: Callable[[Workspace], dict[str, Any]]) -> None:
        self._compute = compute
        self._lock = threading.Lock()
        self._key: tuple[int, ...] | None = None
        self._value: dict[str, Any] | None = None

    def get(self, ws: Workspace, key: tuple[int, ...]) -> dict[str, Any]:
        with self._lock:
            if self._value is None or key != self._key:
                self._value = self._compute(ws)
                self._key = key
            return self._value


def _pack_path(ws: Workspace) -> Path:
    config = ws.config()
    if config.pack:
        return (ws.root / config.pack).resolve()
    with reader.open_ledger(ws) as ledger:
        last = ledger.last_pack()
    if not last:
        raise ApiError(409, "report.no_pack", "no pack in membrane.toml and no batch ran here")
    return Path(last)


def report(ws: Workspace) -> dict[str, Any]:
    """`membrane report`'s data, computed in a process of its own (`python -m
    harness.serve.report_job WS`): the gates load the pack's ontology, a JVM (HermiT) and
    process-global engines, none of which the server should hold or share between request
    threads. Seconds, once per ledger change (`Cached`)."""
    proc = subprocess.run(
        [sys.executable, "-m", "harness.serve.report_job", str(ws.root)],
        capture_output=True,
        timeout=REPORT_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise ApiError(
            409, "report.failed", "the report could not be computed: " + " / ".join(tail)
        )
    data: dict[str, Any] = orjson.loads(proc.stdout)
    return data


def compute_report(ws: Workspace) -> dict[str, Any]:
    """`membrane report`'s data, from what the runs recorded (`harness.report`); a
    workspace from an older membrane falls back to every gate auditing the inputs and the
    committed corpus, and says so. Runs in `report_job`'s own process (see `report`)."""
    from effectors.registry import GateContext, build_gate
    from harness.api import learn_report_data
    from harness.pack import load_pack
    from harness.report import recorded_or_reaudit
    from ontology import load_pools

    pack = load_pack(_pack_path(ws))
    gates: list[Any] = []

    def audit_gates() -> list[Any]:  # only for the fallback: the pools and the JVM cost
        pools = load_pools(pack, ws.cache)
        ctx = GateContext(pack=pack, pools=pools, cache_dir=ws.cache, seed=ws.config().seed)
        gates.extend(build_gate(name, ctx) for name in ("value_gate", "ri_gate", "prose_gate"))
        return gates

    try:
        rep = recorded_or_reaudit(ws, pack, audit_gates)
    finally:
        for g in gates:
            close = getattr(g, "close", None)
            if callable(close):
                close()
    rep.learning = learn_report_data(ws.root, update=False)
    data: dict[str, Any] = dict(rep.to_dict())
    with reader.open_ledger(ws) as ledger:
        data["attempts_histogram"] = reader.attempts_histogram(ledger)
    data["cost"]["runs"] = data["cost"]["runs"][-200:]  # the newest; per batch is the total
    data["pack"] = {"name": pack.config.pack.name, "version": pack.config.pack.version}
    return data


def _reliability_over_time(ws: Workspace, points: int = 24) -> dict[str, list[dict[str, Any]]]:
    """Each proposer's reliability after each stretch of the outcome log (folded in
    `points` chunks, the same fold as the learned state)."""
    with reader.open_ledger(ws) as ledger:
        log = reader.outcome_log(ledger)
    records, _bad = parse_records([raw for _seq, raw in log])
    series: dict[str, list[dict[str, Any]]] = {}
    state = LearningState()
    step = max(1, -(-len(records) // points))
    for start in range(0, len(records), step):
        chunk = records[start : start + step]
        state = fold_all(state, chunk)
        at = next(
            (getattr(r, "finished_at", None) or getattr(r, "at", "") for r in reversed(chunk)), ""
        )
        for name, stats in state.by_proposer.items():
            if stats.reliability is not None:
                series.setdefault(name, []).append(
                    {"records": start + len(chunk), "at": at, "reliability": stats.reliability}
                )
    return series


def learning(ws: Workspace) -> dict[str, Any]:
    """The learned state as saved (no cycle is run: that would write), its history, and
    the lessons (when the lesson store exists)."""
    from harness.api import learn_lessons, learn_report_data

    data = learn_report_data(ws.root, update=False, now=datetime.now(UTC))
    data["reliability_over_time"] = _reliability_over_time(ws)
    lessons_db = ws.state / "learning" / "lessons.sqlite"
    data["lessons"] = learn_lessons(ws.root) if lessons_db.is_file() else []
    return data


def outcome_of(raw: str | None) -> OutcomeRecord | None:
    if not raw:
        return None
    try:
        return OutcomeRecord.model_validate_json(raw)
    except ValueError:
        return None

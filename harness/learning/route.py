"""Promotion, routing and watching of correction records (one `analyze` tick).

* **Recurrence gate** (restart-proof: it reads the occurrences in the ledger; code-determined
  signals only, the distiller's confidence never admits anything): a record is promoted when
  its primary reviewers' occurrences reach `min_support` (3) on `min_days` (2) distinct
  calendar days in `min_sessions` (2) distinct sessions. A `policy` record is promoted at
  once: routing it to a person changes nothing.
* **Router**, authority-guarded: it holds a `RouteSink` and nothing else — it cannot reach
  a pack, a gate or the policy (this module imports none of them, and the import contract
  `the corrections router cannot reach packs or gates` in pyproject.toml keeps it so). A
  `preference` is written to the workspace preferences (then injected into proposer context,
  marked as a learned preference); an `infra_gap` becomes a proposed pack change in the
  feedback queue, never applied; a `policy` record goes to a person. A preference whose
  lesson reads as a relaxation (`looks_like_policy`) goes to a person too. At most
  `max_routes` per tick; the rest stay `promoted` for the next (`overflow`, `rate_limited`).
* **Watcher**: a written preference whose lesson recurs afterwards is `reopened`; one quiet for
  `verify_days` (7) with the preference still present is `verified`; an infra gap quiet for
  `inconclusive_days` (14) is `inconclusive` (the harness cannot prove its proposal fixed it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from harness.learning.correction_store import Record, RecordStatus, parse_at
from harness.learning.detect import looks_like_policy

__all__ = ["Recurrence", "RouteSink", "TickResult", "Watch", "analyze", "proposal_for"]


@dataclass(frozen=True)
class Recurrence:
    min_support: int = 3
    min_days: int = 2
    min_sessions: int = 2

    def admits(self, rec: Record) -> bool:
        return (
            rec.support >= self.min_support
            and rec.days >= self.min_days
            and rec.sessions >= self.min_sessions
        )


@dataclass(frozen=True)
class Watch:
    verify_days: int = 7
    inconclusive_days: int = 14


class RouteSink(Protocol):
    """All the router may do."""

    def records(
        self,
        *,
        kind: Any = None,
        status: Any = None,
        before: Any = None,
        since: Any = None,
        limit: Any = None,
    ) -> list[Record]: ...

    def set_status(
        self,
        record_id: str,
        status: RecordStatus,
        now: str,
        *,
        promoted: bool = False,
        routed: bool = False,
    ) -> None: ...

    def write_preference(self, rec: Record, now: str) -> None: ...

    def open_feedback(self, rec: Record, proposal: str, now: str) -> None: ...

    def seen_since(self, record_id: str, at: str) -> bool: ...


@dataclass
class TickResult:
    promoted: list[str] = field(default_factory=list)
    routed: dict[str, list[str]] = field(
        default_factory=lambda: {"preference": [], "feedback": [], "person": []}
    )
    overflow: int = 0
    watched: dict[str, list[str]] = field(
        default_factory=lambda: {"reopened": [], "verified": [], "inconclusive": []}
    )

    def as_dict(self) -> dict[str, Any]:
        return {
            "promoted": self.promoted,
            "routed": {**self.routed, "overflow": self.overflow, "rateLimited": self.overflow > 0},
            "watcher": self.watched,
        }


def proposal_for(rec: Record) -> str:
    where = rec.scope.column or rec.scope.table or rec.scope.pack or "the pack"
    if rec.kind == "infra_gap":
        return (
            f"Proposed pack change for {where} (never applied by membrane): {rec.lesson} "
            f"Seen {rec.support} times on {rec.days} days."
        )
    return f"Needs a person (never applied automatically): {rec.lesson} Seen {rec.support} times."


def analyze(
    sink: RouteSink, recurrence: Recurrence, max_routes: int, now: str, watch: Watch = Watch()
) -> TickResult:
    """Promote what passed the gate, route at most `max_routes`, then watch."""
    out = TickResult()
    for rec in sink.records(status=("candidate",)):
        if rec.kind == "noise":
            continue
        if rec.kind == "policy" or recurrence.admits(rec):
            sink.set_status(rec.id, "promoted", now, promoted=True)
            out.promoted.append(rec.id)
    waiting = sorted(sink.records(status=("promoted",)), key=lambda r: (r.promoted_at or "", r.id))
    for rec in waiting[:max_routes]:
        if rec.kind == "preference" and not looks_like_policy(rec.lesson):
            sink.write_preference(rec, now)
            sink.set_status(rec.id, "active", now, routed=True)
            out.routed["preference"].append(rec.id)
        elif rec.kind == "infra_gap":
            sink.open_feedback(rec, proposal_for(rec), now)
            sink.set_status(rec.id, "queued", now, routed=True)
            out.routed["feedback"].append(rec.id)
        else:
            sink.open_feedback(rec, proposal_for(rec), now)
            sink.set_status(rec.id, "person", now, routed=True)
            out.routed["person"].append(rec.id)
    out.overflow = max(0, len(waiting) - max_routes)
    _watch(sink, now, watch, out)
    return out


def _watch(sink: RouteSink, now: str, watch: Watch, out: TickResult) -> None:
    t = parse_at(now)
    for rec in sink.records(status=("active", "verified", "reopened", "queued")):
        if rec.routed_at is None:
            continue
        recurred = sink.seen_since(rec.id, rec.routed_at)
        if rec.kind == "preference":
            if recurred and rec.status in ("active", "verified"):
                sink.set_status(rec.id, "reopened", now)
                out.watched["reopened"].append(rec.id)
            elif (
                not recurred
                and rec.status == "active"
                and t - parse_at(rec.routed_at) >= timedelta(days=watch.verify_days)
            ):
                sink.set_status(rec.id, "verified", now)
                out.watched["verified"].append(rec.id)
        elif rec.kind == "infra_gap" and rec.status == "queued":
            quiet_since = parse_at(rec.last_seen_at) if recurred else parse_at(rec.routed_at)
            if t - quiet_since >= timedelta(days=watch.inconclusive_days):
                sink.set_status(rec.id, "inconclusive", now)
                out.watched["inconclusive"].append(rec.id)

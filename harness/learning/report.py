"""What the learning layer says to people: the state per proposer (with staleness), what the
last cycle changed, and `membrane learn report` as Markdown and JSON.

`run_cycle` wraps `learning_cycle`: it compares the state before and after and, when the
cycle learned something, keeps the difference in `.membrane/learning/last_cycle.json`
(overlays set or tightened, patterns that reached 3 occurrences, reliability moves). That
file is a report, not state: `rebuild` neither reads nor needs it.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

import orjson

from harness.learning.state import PATTERN_OCCURRENCES_FOR_APPROVAL, LearningState
from harness.learning.store import CycleReport, learning_cycle, load_state
from harness.ledger import Ledger
from harness.workspace import Workspace, atomic_write

__all__ = ["changes", "last_cycle", "markdown", "proposers", "run_cycle", "stale"]


def _last_path(ws: Workspace) -> Any:
    return ws.state / "learning" / "last_cycle.json"


def changes(before: LearningState, after: LearningState) -> dict[str, Any]:
    """What a cycle changed: overlays (new or tightened), patterns that reached the approval
    count, and each proposer's reliability before → after."""
    overlays = []
    for name, ov in sorted(after.overlays.items()):
        old = before.overlays.get(name)
        if old != ov:
            overlays.append(
                {
                    "proposer": name,
                    "before": dataclasses.asdict(old) if old else None,
                    "after": dataclasses.asdict(ov),
                }
            )
    patterns = [
        {"key": p.key, "occurrences": p.occurrences, "fix_hint": p.fix_hint}
        for key, p in sorted(after.patterns.items())
        if p.occurrences >= PATTERN_OCCURRENCES_FOR_APPROVAL
        and (
            key not in before.patterns
            or before.patterns[key].occurrences < PATTERN_OCCURRENCES_FOR_APPROVAL
        )
    ]
    moves = []
    for name, st in sorted(after.by_proposer.items()):
        old_rel = before.by_proposer[name].reliability if name in before.by_proposer else None
        if st.reliability != old_rel:
            moves.append({"proposer": name, "before": old_rel, "after": st.reliability})
    return {
        "records": after.records - before.records,
        "overlays": overlays,
        "patterns_reached_3": patterns,
        "reliability": moves,
    }


def run_cycle(ws: Workspace, ledger: Ledger, at: str) -> CycleReport:
    """A learning cycle that also keeps what it changed (when it learned anything)."""
    before, _seq = load_state(ws)
    report = learning_cycle(ws, ledger)
    if report.records or report.refused:
        after, _seq = load_state(ws)
        data = {"at": at, "refused": report.refused, **changes(before, after)}
        atomic_write(_last_path(ws), orjson.dumps(data, option=orjson.OPT_SORT_KEYS))
    return report


def last_cycle(ws: Workspace) -> dict[str, Any] | None:
    try:
        data = orjson.loads(_last_path(ws).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _when(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def stale(last_at: str, now: datetime, days: int) -> bool:
    """An overlay whose proposer has had no outcome for `days` days (flagged, never decayed:
    a person decides whether to relax it)."""
    when = _when(last_at)
    if when is None:
        return False
    if when.tzinfo is None and now.tzinfo is not None:
        now = now.replace(tzinfo=None)
    return now - when > timedelta(days=days)


def proposers(state: LearningState, now: datetime, stale_days: int) -> dict[str, Any]:
    """Per proposer: the sums, reliability (all outcomes and since the last relax), the
    overlay and whether it is stale, the last relax, and per pack."""
    out: dict[str, Any] = {}
    for name, st in sorted(state.by_proposer.items()):
        ep = state.epoch.get(name)
        ov = state.overlays.get(name)
        relaxed = state.relaxed.get(name)
        out[name] = {
            "runs": st.runs,
            "settled": st.settled,
            "success_rate": round(st.successes / st.settled, 4) if st.settled else None,
            "avg_retries": round(st.retries / st.runs, 4) if st.runs else None,
            "quality": round(st.quality / st.runs, 4) if st.runs else None,
            "reliability": st.reliability,
            "reliability_since_relax": ep.reliability if ep else None,
            "last_outcome_at": st.last_at or None,
            "overlay": dataclasses.asdict(ov) if ov else None,
            "stale": bool(ov) and stale(st.last_at, now, stale_days),
            "relaxed": dataclasses.asdict(relaxed) if relaxed else None,
            "packs": {
                key.split("::", 1)[1]: {"runs": ps.runs, "reliability": ps.reliability}
                for key, ps in sorted(state.by_proposer_pack.items())
                if key.split("::", 1)[0] == name
            },
        }
    return out


def status(ws: Workspace, state: LearningState, same: bool | None, now: datetime) -> dict[str, Any]:
    """`membrane learn status`'s data: the learned state per proposer (stale overlays
    flagged) and its patterns; `same`: whether a rebuild equalled the incremental state."""
    stale_days = ws.config().learning.stale_days
    return {
        "records": state.records,
        "rebuilt_equals_incremental": same,
        "stale_days": stale_days,
        "proposers": proposers(state, now, stale_days),
        "patterns": [
            {
                "key": p.key,
                "occurrences": p.occurrences,
                "since_relax": p.since_relax,
                "confidence": p.confidence,
                "last_seen": p.last_seen,
                "fix_hint": p.fix_hint,
            }
            for p in sorted(state.patterns.values(), key=lambda p: (-p.occurrences, p.key))
        ],
    }


def report_data(ws: Workspace, data: dict[str, Any]) -> dict[str, Any]:
    """`membrane learn report`'s data from `status`'s: strongest and weakest proposers,
    patterns seen 3+ times, overlays (stale ones flagged) and what the last cycle changed."""
    ranked = sorted(
        (
            {"proposer": name, "runs": p["runs"], "reliability": p["reliability"]}
            for name, p in data["proposers"].items()
            if p["reliability"] is not None
        ),
        key=lambda r: (-r["reliability"], r["proposer"]),
    )
    return {
        "records": data["records"],
        "strongest": ranked[:3],
        "weakest": list(reversed(ranked[-3:])) if ranked else [],
        "overlays": [
            {"proposer": name, **p["overlay"], "stale": p["stale"]}
            for name, p in data["proposers"].items()
            if p["overlay"]
        ],
        "patterns": [p for p in data["patterns"] if p["occurrences"] >= 3],
        "last_cycle": last_cycle(ws),
        "proposers": data["proposers"],
    }


def markdown(data: dict[str, Any]) -> str:
    """`membrane learn report` for people (the JSON report rendered)."""
    lines = [f"# Learning report ({data['records']} outcome records)", ""]
    for title, key in (("Strongest proposers", "strongest"), ("Weakest proposers", "weakest")):
        lines += [f"## {title}", ""]
        rows = data[key]
        if not rows:
            lines += ["(none with a settled run yet)", ""]
            continue
        lines += ["| proposer | runs | reliability |", "|---|---:|---:|"]
        lines += [f"| {r['proposer']} | {r['runs']} | {r['reliability']:.2f} |" for r in rows]
        lines.append("")
    lines += ["## Overlays", ""]
    if not data["overlays"]:
        lines += ["No proposer runs under an overlay.", ""]
    else:
        lines += [
            "| proposer | risk | max retries | approval | reason | updated | stale |",
            "|---|---:|---:|---|---|---|---|",
        ]
        for o in data["overlays"]:
            lines.append(
                f"| {o['proposer']} | {o['risk_multiplier']} | {o['max_retries']} | "
                f"{'yes' if o['require_approval'] else 'no'} | {o['reason'] or '-'} | "
                f"{o['updated_at']} | {'STALE' if o['stale'] else 'no'} |"
            )
        lines.append("")
    lines += ["## Patterns seen 3 or more times", ""]
    if not data["patterns"]:
        lines += ["None.", ""]
    else:
        lines += ["| pattern | occurrences | confidence | fix |", "|---|---:|---:|---|"]
        lines += [
            f"| {p['key']} | {p['occurrences']} | {p['confidence']:.2f} | {p['fix_hint'] or '-'} |"
            for p in data["patterns"]
        ]
        lines.append("")
    lines += ["## The last cycle", ""]
    last = data["last_cycle"]
    if last is None:
        lines += ["No cycle has learned anything yet.", ""]
    else:
        lines.append(f"At {last['at']}: {last['records']} record(s) learned.")
        for o in last["overlays"]:
            before = o["before"]
            lines.append(
                f"- overlay for {o['proposer']}: "
                + ("set" if before is None else "tightened")
                + f" ({o['after']['reason'] or 'no reason'})"
            )
        for p in last["patterns_reached_3"]:
            lines.append(f"- pattern {p['key']} reached {p['occurrences']} occurrences")
        for m in last["reliability"]:
            b = "-" if m["before"] is None else f"{m['before']:.2f}"
            a = "-" if m["after"] is None else f"{m['after']:.2f}"
            lines.append(f"- reliability of {m['proposer']}: {b} → {a}")
        lines.append("")
    return "\n".join(lines)

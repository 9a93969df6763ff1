"""The deterministic lesson reviewer (the default; offline): it mines a batch's traces.

What it looks for, per run, in the order the gates ran:

* **cascades**: an attempt the proposer made failed a *later* gate on something it did not
  touch — a dangling reference (`ri.*` on a foreign-key column) or the prose (`prose.*`) —
  right after it repaired what an earlier gate named. The input carried that defect all
  along; the earlier gate's failure hid it, so the run paid one more proposer call. Lesson:
  `check_references` on that column, or `redraft_prose`, so the next proposer repairs both
  in one attempt.
* **values that stuck**: a `value.*` critique on a cell whose committed value is the same
  across runs for rows of the same class (the row's first object column, e.g. the
  equipment type). Lesson: `prefer_value` for that column and row class.

Scores grow with support: 0.5 + 0.1 per run (capped at 0.95), times the share of repairs that
agreed for a value; a single run (0.6) does not pass the default gate (0.7), two do.

It also reads, for every proposal, which lessons were in context and whether the codes they
address came back (`Observation`), which is where the feedback signals come from.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from harness.learning.lessons import Advice, LessonProposal, Scope
from harness.pack import Pack
from harness.workspace import Workspace

__all__ = ["BatchSummary", "Observation", "TraceMiner", "summarise"]

_GATE_ORDER = {"value_gate": 0, "ri_gate": 1, "prose_gate": 2}
_PROPOSAL = b'"kind":"proposal"'
_VERDICT = b'"kind":"verdict"'
_MAX_EVIDENCE = 20


@dataclass(frozen=True)
class Observation:
    """One proposal that had lessons in context, and what the gates said of it."""

    run_id: str
    attempt: int
    lessons: tuple[str, ...]
    codes_after: frozenset[str]  # error codes the gates drew on this attempt
    committed: bool  # the run committed (directly, not held)
    held: bool
    # (code, "table.column" or "") of each error: an advice about a column is ignored only
    # when its code came back on that column
    found: frozenset[tuple[str, str]] = frozenset()


@dataclass
class _Run:
    run_id: str
    status: str
    proposals: dict[int, dict[str, Any]] = field(default_factory=dict)
    verdicts: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))


@dataclass
class BatchSummary:
    """What a pass learns from: the pack, the proposer, and each finished run's trace."""

    pack: Pack
    proposer: str
    runs: list[_Run]
    committed: dict[str, dict[str, Any]]  # run_id -> committed artifact (tables, prose)

    def observations(self) -> list[Observation]:
        out = []
        for r in self.runs:
            for attempt, p in sorted(r.proposals.items()):
                keys = tuple(p.get("lessons", ()))
                if not keys:
                    continue
                errors = [
                    c
                    for v in r.verdicts.get(attempt, [])
                    for c in v.get("critiques", [])
                    if c.get("severity", "error") == "error"
                ]
                found = frozenset((c["code"], _column_of(c)) for c in errors)
                out.append(
                    Observation(
                        r.run_id,
                        attempt,
                        keys,
                        frozenset(code for code, _col in found),
                        r.status == "COMMITTED",
                        r.status == "HELD",
                        found,
                    )
                )
        return out


def _slim_proposal(ev: dict[str, Any]) -> dict[str, Any]:
    """What the miner reads of a proposal record: its lessons, the cells it changed (from
    attempt 2: the seed's record lists every cell of the input) and whether it changed the
    prose. Whole records of every run were ~1 GB after a 20,000-artifact batch (issue 22)."""
    changes = ev.get("changes", []) if int(ev["attempt"]) >= 2 else []
    return {
        "lessons": ev.get("lessons", ()),
        "prose_changed": ev.get("prose_changed"),
        "changes": [{"cell": c["cell"]} for c in changes],
    }


def _slim_verdict(ev: dict[str, Any]) -> dict[str, Any]:
    """What the miner and the lesson reviewer read of a verdict record: its gate, whether
    it passed, and each critique's code, severity and location (not messages, evidence or
    hints)."""
    out: dict[str, Any] = {k: ev[k] for k in ("gate", "passed") if k in ev}
    out["critiques"] = [
        {k: c[k] for k in ("code", "severity", "location") if k in c}
        for c in ev.get("critiques", [])
    ]
    return out


def _cell_value_critique(r: _Run) -> bool:
    """Whether any verdict of the run has a `value.*` critique on a cell."""
    return any(
        str(c.get("code", "")).startswith("value.") and (c.get("location") or {}).get("column")
        for vs in r.verdicts.values()
        for v in vs
        for c in v["critiques"]
    )


def _marked(data: bytes, marker: bytes) -> Iterator[bytes]:
    """The lines of `data` that hold `marker`, in order: only the records the miner reads
    are parsed (records are canonical JSON, so the bytes `"kind":"verdict"` appear
    unescaped only as an object's kind; `summarise` checks that it is the record's). Found
    with `bytes.find`, not by splitting every line: ~50 lines a trace, ~6 of them read."""
    pos = data.find(marker)
    while pos >= 0:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        if end < 0:
            end = len(data)
        yield data[start:end]
        pos = data.find(marker, end)


def summarise(
    ws: Workspace,
    pack: Pack,
    proposer: str,
    runs: Iterable[tuple[str, str, str | None]],
) -> BatchSummary:
    """(run_id, status, committed content hash or None) -> the summary (traces read once)."""
    out: list[_Run] = []
    committed: dict[str, dict[str, Any]] = {}
    traces = str(ws.traces)
    for run_id, status, digest in runs:
        try:
            with open(os.path.join(traces, f"{run_id}.jsonl"), "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        r = _Run(run_id, status)
        try:
            for line in _marked(data, _PROPOSAL):
                ev = orjson.loads(line)
                if ev.get("kind") == "proposal":
                    r.proposals[int(ev["attempt"])] = _slim_proposal(ev)
            for line in _marked(data, _VERDICT):
                ev = orjson.loads(line)
                if ev.get("kind") == "verdict":
                    r.verdicts[int(ev["attempt"])].append(_slim_verdict(ev))
        except Exception:  # a damaged record teaches nothing; `trace verify` reports it
            continue
        out.append(r)
        if digest and _cell_value_critique(r):  # only "values that stuck" reads it
            path = ws.current / "artifacts" / f"{digest}.json"
            with contextlib.suppress(OSError, orjson.JSONDecodeError):
                committed[run_id] = orjson.loads(path.read_bytes())
    return BatchSummary(pack, proposer, out, committed)


def _score(support: int, share: float = 1.0) -> float:
    return round(min(0.95, 0.5 + 0.1 * support) * share, 4)


class TraceMiner:
    """The default reviewer: cascades and values that stuck (see the module docstring)."""

    name = "trace-miner"

    def __init__(self, min_support: int = 2) -> None:
        self.min_support = min_support

    def propose(self, summary: BatchSummary) -> Sequence[LessonProposal]:
        return [*self._cascades(summary), *self._values(summary)]

    def _cascades(self, s: BatchSummary) -> list[LessonProposal]:
        fks = _foreign_keys(s.pack)
        refs: dict[str, list[str]] = defaultdict(list)  # column -> runs
        ref_codes: dict[str, Counter[str]] = defaultdict(Counter)
        prose: list[str] = []
        prose_codes: Counter[str] = Counter()
        for r in s.runs:
            for attempt in sorted(r.proposals):
                if attempt < 2:
                    continue
                before = _failed_gate(r.verdicts.get(attempt - 1, []))
                after = _failed_gate(r.verdicts.get(attempt, []))
                if before is None or after is None or after[0] <= before[0]:
                    continue
                touched = {c["cell"] for c in r.proposals[attempt].get("changes", [])}
                prose_touched = bool(r.proposals[attempt].get("prose_changed"))
                for c in after[1]:
                    loc = c.get("location") or {}
                    code = c["code"]
                    if code.startswith("prose.") and not prose_touched:
                        prose.append(r.run_id)
                        prose_codes[code] += 1
                    elif code.startswith("ri.") and loc.get("column"):
                        column = f"{loc.get('table')}.{loc['column']}"
                        cell = f"{loc.get('table')}[{loc.get('row')}].{loc['column']}"
                        if column in fks and cell not in touched:
                            refs[column].append(r.run_id)
                            ref_codes[column][code] += 1
        out = []
        for column, run_ids in sorted(refs.items()):
            n = len(set(run_ids))
            if n < self.min_support:
                continue
            codes = tuple(sorted(ref_codes[column]))
            out.append(
                LessonProposal(
                    target="proposer_context",
                    scope=Scope(pack=s.pack.name, column=column),
                    text=(
                        f"When you repair {column.split('.')[0]} rows, check every "
                        f"{column} reference in the same attempt: in {n} runs the RI gate "
                        f"found a dangling {column} ({', '.join(codes)}) only after the "
                        "earlier repair, which cost another attempt."
                    ),
                    evidence=tuple(dict.fromkeys(run_ids))[:_MAX_EVIDENCE],
                    score=_score(n),
                    advice=Advice(kind="check_references", column=column, codes=codes),
                )
            )
        n = len(set(prose))
        if n >= self.min_support:
            codes = tuple(sorted(prose_codes))
            out.append(
                LessonProposal(
                    target="proposer_context",
                    scope=Scope(pack=s.pack.name),
                    text=(
                        "Redraft the prose in the same attempt as any table repair: in "
                        f"{n} runs the prose gate failed ({', '.join(codes)}) right after "
                        "the tables were fixed."
                    ),
                    evidence=tuple(dict.fromkeys(prose))[:_MAX_EVIDENCE],
                    score=_score(n),
                    advice=Advice(kind="redraft_prose", codes=codes),
                )
            )
        return out

    def _values(self, s: BatchSummary) -> list[LessonProposal]:
        class_col = _class_columns(s.pack)
        seen: dict[tuple[str, str, Any], Counter[Any]] = defaultdict(Counter)
        runs: dict[tuple[str, str, Any], list[str]] = defaultdict(list)
        codes: dict[tuple[str, str, Any], Counter[str]] = defaultdict(Counter)
        for r in s.runs:
            final = s.committed.get(r.run_id)
            if final is None:
                continue
            for attempt in sorted(r.verdicts):
                for v in r.verdicts[attempt]:
                    for c in v.get("critiques", []):
                        loc = c.get("location") or {}
                        table, row, column = loc.get("table"), loc.get("row"), loc.get("column")
                        if not c["code"].startswith("value.") or not (
                            isinstance(table, str) and isinstance(row, int) and column
                        ):
                            continue
                        rows = final.get("tables", {}).get(table, [])
                        when = class_col.get(table)
                        if row >= len(rows) or when is None or when == column:
                            continue
                        k = (f"{table}.{column}", when, rows[row].get(when))
                        value = rows[row].get(column)
                        if value is None or k[2] is None:
                            continue
                        seen[k][value] += 1
                        runs[k].append(r.run_id)
                        codes[k][c["code"]] += 1
        out = []
        for k, counter in sorted(seen.items(), key=lambda kv: str(kv[0])):
            n = len(set(runs[k]))
            value, hits = counter.most_common(1)[0]
            share = hits / sum(counter.values())
            if n < self.min_support or share < 0.6:
                continue
            column, when, when_value = k
            out.append(
                LessonProposal(
                    target="proposer_context",
                    scope=Scope(pack=s.pack.name, column=column, row_class=str(when_value)),
                    text=(
                        f"In {column}, rows whose {when} is {when_value!r} take {value!r}: "
                        f"{hits} of {sum(counter.values())} repairs in {n} runs committed it."
                    ),
                    evidence=tuple(dict.fromkeys(runs[k]))[:_MAX_EVIDENCE],
                    score=_score(n, share),
                    advice=Advice(
                        kind="prefer_value",
                        column=column,
                        value=value,
                        when_column=when,
                        when_value=when_value,
                        codes=tuple(sorted(codes[k])),
                    ),
                )
            )
        return out


def _column_of(c: dict[str, Any]) -> str:
    loc = c.get("location") or {}
    if loc.get("table") and loc.get("column"):
        return f"{loc['table']}.{loc['column']}"
    return ""


def _failed_gate(verdicts: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]] | None:
    """The first failing gate of an attempt (its order and its error critiques)."""
    for v in sorted(verdicts, key=lambda v: _GATE_ORDER.get(v.get("gate", ""), 9)):
        if not v.get("passed", True) and v.get("gate") in _GATE_ORDER:
            errors = [c for c in v.get("critiques", []) if c.get("severity", "error") == "error"]
            return _GATE_ORDER[v["gate"]], errors
    return None


def _foreign_keys(pack: Pack) -> set[str]:
    """`table.column` of every id column that is not (only) its table's key."""
    return {
        f"{t}.{c}"
        for t, b in pack.tables.items()
        for c, col in b.columns.items()
        if col.kind == "id" and c not in b.key
    }


def _class_columns(pack: Pack) -> dict[str, str]:
    """Per table, the column that best says what a row is: its first object column."""
    out = {}
    for t, b in pack.tables.items():
        first = next((c for c, col in b.columns.items() if col.kind == "object"), None)
        if first is not None:
            out[t] = first
    return out

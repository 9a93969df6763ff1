"""`membrane report`: the single-shot baseline against the refined corpus.

Baseline = the inputs of the settled runs (the last settled run of each artifact); refined
= the latest committed version of each artifact. Attempts come from the run outcomes.

Two ways to get the gates' figures, one tally (`_Tally`) for both:

* **recorded** (the default, issue 22): what the runs already wrote down. The baseline is
  each run's attempt-1 verdicts; the refined side is the verdicts of the attempt that
  produced each committed version (its metrics sidecar names the run and the attempt; a
  revert's names the version it restored). Each run that finished records, with its
  anchor, its figures (`harness.trace.figures`: a fold over the records it wrote, and
  the words and cells of its input and of what it published) in the ledger's
  `run_figures` table, so the report reads one table (issue 16: ~0.1 s for 2,000 runs).
  A run without a well-formed record (one that finished before the table existed, one
  recovery settled, a damaged row) is read from its files as before: its trace, its
  stored input and committed files as plain JSON. The loop's cascade stops at the first failing gate, so an
  input the value gate failed was never judged by RI_GATE or PROSE_GATE: those baseline
  figures count the inputs that gate judged (`CorpusFigures.judged`), and the report says
  so (`Report.notes`). A workspace whose records lack what this needs (an old one) falls
  back to the re-audit, and the report says that too.
* **re-audit** (`--reaudit`): every gate judges every artifact on its own again (no
  cascade), in chunks of `AUDIT_CHUNK` artifacts, so memory stays flat.

Cost comes from every run (settled or not: tokens spent are spent): model calls,
prompt/completion tokens and model wall time from the `usage` records, and the run's
wall time from its first to its last record; per run and summed per batch. A run's
figures hold them; a trace read instead is read once for both the cost and the recorded
verdicts, and only the lines the report needs are parsed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from statistics import mean
from typing import Any

import orjson

from effectors.base import Gate, run_gate
from harness.ledger import CommitRow, Ledger, RunRow
from harness.models import Artifact, Verdict
from harness.pack import Pack
from harness.trace.figures import GATES, Judged, RecordedRun, judged_of_record
from harness.workspace import Workspace

__all__ = [
    "AUDIT_CHUNK",
    "SOURCE_REAUDIT",
    "SOURCE_RECORDED",
    "CorpusFigures",
    "Cost",
    "NotRecorded",
    "Report",
    "audit",
    "build_report",
    "costs",
    "fallback_note",
    "figures",
    "recorded_or_reaudit",
    "recorded_report",
]

AUDIT_CHUNK = 256  # artifacts a re-audit holds and judges at a time
SOURCE_RECORDED = "recorded"
SOURCE_REAUDIT = "reaudit"


def audit(gates: Sequence[Gate], artifacts: Sequence[Artifact]) -> list[dict[str, Verdict]]:
    """Every gate on every artifact, batched per gate. One dict gate-name -> verdict each."""
    out: list[dict[str, Verdict]] = [{} for _ in artifacts]
    for gate in gates:
        for i, v in enumerate(run_gate(gate, list(artifacts))):
            out[i][gate.name] = v
    return out


@dataclass(frozen=True)
class CorpusFigures:
    artifacts: int
    placeholder_rate: float  # placeholder cells / object-kind cells
    value_coherence: float  # 1 - value errors / object- and class-kind cells (at least 0)
    ri_violations: int  # error-severity RI findings, summed
    prose_unknown_entities: int
    prose_coverage: float  # mean share of key entities the prose mentions
    prose_truncated: int
    mean_words: float
    passing: int  # artifacts no gate had an error for
    # gate -> how many of the artifacts it judged (all of them in a re-audit; in the
    # recorded baseline, the inputs the cascade brought to that gate)
    judged: dict[str, int] = field(default_factory=dict)


def _judged(v: Verdict) -> Judged:
    return Judged(
        v.passed, tuple((c.code, c.severity) for c in v.critiques), v.metrics.get("coverage")
    )


@dataclass
class _Tally:
    """The corpus figures, added up one artifact at a time (nothing per artifact is kept
    but the prose coverages)."""

    artifacts: int = 0
    object_cells: int = 0
    placeholders: int = 0
    value_bad: int = 0
    ri: int = 0
    unknown: int = 0
    truncated: int = 0
    words: int = 0
    passing: int = 0
    coverage: list[float] = field(default_factory=list)
    judged: dict[str, int] = field(default_factory=dict)

    def add(
        self,
        object_cells: int,
        words: int,
        verdicts: Mapping[str, Judged],
        expected: Iterable[str] = (),
    ) -> None:
        """One artifact. It passes when every gate of `expected` judged it and none of its
        verdicts failed (an input the cascade stopped at a failed gate never passes)."""
        self.artifacts += 1
        self.object_cells += object_cells
        self.words += words
        for name, v in verdicts.items():
            self.judged[name] = self.judged.get(name, 0) + 1
            for code, sev in v.codes:
                self.placeholders += code == "value.placeholder"
                self.value_bad += code.startswith("value.") and sev == "error"
                self.ri += code.startswith("ri.") and sev == "error"
                self.unknown += code == "prose.unknown_entity"
                self.truncated += code == "prose.truncated"
        if "prose_gate" in verdicts:
            self.coverage.append(_coverage(verdicts["prose_gate"]))
        self.passing += all(v.passed for v in verdicts.values()) and all(
            g in verdicts for g in expected
        )

    def figures(self) -> CorpusFigures:
        obj = self.object_cells or 1
        return CorpusFigures(
            artifacts=self.artifacts,
            placeholder_rate=self.placeholders / obj,
            value_coherence=max(0.0, 1.0 - self.value_bad / obj),
            ri_violations=self.ri,
            prose_unknown_entities=self.unknown,
            prose_coverage=mean(self.coverage) if self.coverage else 1.0,
            prose_truncated=self.truncated,
            mean_words=self.words / self.artifacts if self.artifacts else 0.0,
            passing=self.passing,
            judged=dict(self.judged),
        )


def _coverage(v: Judged) -> float:
    return 1.0 if v.coverage is None else v.coverage


_NAMED = ("object", "class")  # cells that name an ontology entity: what VALUE_GATE resolves


def _object_cells(pack: Pack, tables: Mapping[str, Any]) -> int:
    n = 0
    for t, rows in tables.items():
        binding = pack.tables.get(t)
        if binding is None:
            continue
        cols = binding.columns
        for row in rows:
            n += sum(1 for c in row if c in cols and cols[c].kind in _NAMED)
    return n


class _ObjectColumns:
    """Object-kind cells of plain JSON tables, each table's object columns found once."""

    def __init__(self, pack: Pack) -> None:
        self.of = {
            t: frozenset(c for c, col in b.columns.items() if col.kind in _NAMED)
            for t, b in pack.tables.items()
        }

    def count(self, payload: Mapping[str, Any]) -> int:
        tables = payload.get("tables")
        if not isinstance(tables, dict):
            return 0
        n = 0
        for t, rows in tables.items():
            cols = self.of.get(t)
            if not cols or not isinstance(rows, list):
                continue
            if all(type(row) is dict for row in rows):  # as JSON reads them: one C loop
                n += sum(map(len, map(cols.intersection, rows)))
            else:
                n += sum(len(cols.intersection(row)) for row in rows if isinstance(row, dict))
        return n


def _words(prose: object) -> int:
    return len(prose.split()) if isinstance(prose, str) else 0


def figures(
    pack: Pack, artifacts: Sequence[Artifact], verdicts: Sequence[dict[str, Verdict]]
) -> CorpusFigures:
    tally = _Tally()
    for a, vs in zip(artifacts, verdicts, strict=True):
        tally.add(
            _object_cells(pack, a.tables),
            _words(a.prose),
            {name: _judged(v) for name, v in vs.items()},
        )
    return tally.figures()


@dataclass
class Cost:
    """Model cost and wall time of one run (`id` = run id) or one batch (`id` = batch id)."""

    id: str
    batch_id: str
    runs: int = 0
    calls: int = 0  # model calls
    cached_calls: int = 0  # of which answered from the transcripts
    tokens_prompt: int = 0
    tokens_completion: int = 0
    model_seconds: float = 0.0  # wall time spent in model calls
    wall_seconds: float = 0.0  # first to last trace record
    first_at: str = field(default="", repr=False)
    last_at: str = field(default="", repr=False)

    @property
    def tokens(self) -> int:
        return self.tokens_prompt + self.tokens_completion

    def to_dict(self) -> dict[str, object]:
        out = {k: v for k, v in vars(self).items() if k not in ("first_at", "last_at")}
        out["tokens"] = self.tokens
        out["model_seconds"] = round(self.model_seconds, 6)
        out["wall_seconds"] = round(self.wall_seconds, 6)
        return out


def _seconds(first: str, last: str) -> float:
    try:
        return max(
            0.0, (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
        )
    except ValueError:
        return 0.0


_USAGE = b'"kind":"usage"'
_VERDICT = b'"kind":"verdict"'
_REVIEW = b'"kind":"review"'


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        ev = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None  # a torn last line of an interrupted run
    return ev if isinstance(ev, dict) else None


@dataclass
class _RunRecord:
    cost: Cost
    # attempt -> gate -> what the figures need of its verdict record (not the record: at
    # 20,000 runs the parsed records were ~200 MB)
    verdicts: dict[int, dict[str, Judged]] = field(default_factory=dict)


def _add_usage(cost: Cost, ev: Mapping[str, Any]) -> None:
    cost.calls += 1
    cost.cached_calls += int(bool(ev.get("cached")))
    cost.tokens_prompt += int(ev.get("tokens_prompt", 0))
    cost.tokens_completion += int(ev.get("tokens_completion", 0))
    cost.model_seconds += float(ev.get("seconds", 0.0))


def _scan(ws: Workspace, row: RunRow, attempts: frozenset[int]) -> _RunRecord | None:
    """One pass over a run's trace: its cost, and its verdict records of `attempts`.
    Only the lines that matter are parsed (records are canonical JSON: `"kind":"..."`
    appears as such only as a record's kind). None when the trace is missing."""
    rec = _RunRecord(Cost(id=row.run_id, batch_id=row.batch_id, runs=1))
    try:
        data = _read_bytes(os.path.join(ws.traces, f"{row.run_id}.jsonl"))
    except FileNotFoundError:
        return None
    cost = rec.cost
    lines = data.splitlines()
    for i, line in enumerate(lines):
        if i == 0 or _USAGE in line or _VERDICT in line or _REVIEW in line:
            ev = _loads(line)
        else:
            continue
        if ev is None:
            continue
        kind = ev.get("kind")
        if kind == "review":
            lines = lines[:i]
            break  # a person's later act, not the run's time
        if not cost.first_at:
            cost.first_at = str(ev.get("at", ""))
        if kind == "usage":
            _add_usage(cost, ev)
        elif kind == "verdict" and ev.get("attempt") in attempts and ev.get("gate") in GATES:
            try:
                judged = judged_of_record(ev)
            except (KeyError, TypeError) as exc:
                raise NotRecorded(
                    f"{ws.trace_path(row.run_id)}: a verdict record without its critiques"
                ) from exc
            rec.verdicts.setdefault(int(ev["attempt"]), {})[str(ev["gate"])] = judged
    _last_record(cost, lines)
    return rec


def _last_record(cost: Cost, lines: Sequence[bytes]) -> None:
    """The run's time ends at its last whole record before any review."""
    for line in reversed(lines):
        last = _loads(line)
        if last is not None:
            cost.first_at = cost.first_at or str(last.get("at", ""))
            cost.last_at = str(last.get("at", ""))
            break
    cost.wall_seconds = _seconds(cost.first_at, cost.last_at)


def _run_cost(ws: Workspace, row: RunRow) -> Cost:
    rec = _scan(ws, row, frozenset())
    return rec.cost if rec is not None else Cost(id=row.run_id, batch_id=row.batch_id, runs=1)


def _batch_costs(per_run: Iterable[Cost]) -> list[Cost]:
    batches: dict[str, Cost] = {}
    for c in per_run:
        b = batches.setdefault(c.batch_id, Cost(id=c.batch_id, batch_id=c.batch_id))
        b.runs += 1
        b.calls += c.calls
        b.cached_calls += c.cached_calls
        b.tokens_prompt += c.tokens_prompt
        b.tokens_completion += c.tokens_completion
        b.model_seconds += c.model_seconds
        if c.first_at and (not b.first_at or c.first_at < b.first_at):
            b.first_at = c.first_at
        if c.last_at and c.last_at > b.last_at:
            b.last_at = c.last_at
    for b in batches.values():
        b.wall_seconds = _seconds(b.first_at, b.last_at)
    return list(batches.values())


def costs(ws: Workspace, rows: Sequence[RunRow]) -> tuple[list[Cost], list[Cost]]:
    """(per run, per batch) cost from the traces of `rows`, in ledger order."""
    per_run = [_run_cost(ws, r) for r in rows]
    return per_run, _batch_costs(per_run)


@dataclass
class Report:
    baseline: CorpusFigures
    refined: CorpusFigures
    runs: dict[str, int] = field(default_factory=dict)  # final state -> count
    mean_attempts: float = 0.0
    max_attempts: int = 0
    run_costs: list[Cost] = field(default_factory=list)  # every run in the ledger
    batch_costs: list[Cost] = field(default_factory=list)
    learning: dict[str, Any] | None = None  # `membrane learn report`'s data (api fills it)
    source: str = SOURCE_REAUDIT  # "recorded" (the runs' verdicts) or "reaudit"
    notes: list[str] = field(default_factory=list)  # which figures differ and why

    def to_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "notes": self.notes,
            "learning": self.learning,
            "baseline": vars(self.baseline),
            "refined": vars(self.refined),
            "runs": self.runs,
            "mean_attempts": self.mean_attempts,
            "max_attempts": self.max_attempts,
            "cost": {
                "batches": [c.to_dict() for c in self.batch_costs],
                "runs": [c.to_dict() for c in self.run_costs],
            },
        }


@dataclass
class _Ledgered:
    every_run: list[RunRow]  # not a person's revert
    latest: dict[str, RunRow]  # artifact -> its last settled run
    commits: list[CommitRow]  # the latest version of each artifact
    figures: dict[str, str]  # run id -> its recorded figures (harness.trace.figures)
    versions: dict[tuple[str, int], CommitRow]  # (artifact, version) -> every commit


def _read_ledger(ws: Workspace) -> _Ledgered:
    ledger = Ledger.reader(ws.ledger_path)  # reading only (works on a read-only workspace)
    try:
        every_run = [r for r in ledger.runs() if r.status != "REVERT"]  # a person's act
        latest: dict[str, RunRow] = {}
        for r in every_run:  # the last settled run of each artifact
            if r.status not in ("running", "INTERRUPTED"):
                latest[r.artifact_id] = r
        commits = ledger.latest_commits()
        figures = ledger.run_figures()
        versions = {(c.artifact_id, c.version): c for c in ledger.all_commits()}
    finally:
        ledger.close()
    return _Ledgered(every_run, latest, commits, figures, versions)


def _attempts(latest: Mapping[str, RunRow]) -> tuple[dict[str, int], float, int]:
    states: dict[str, int] = {}
    attempts = []
    for r in latest.values():
        states[r.status] = states.get(r.status, 0) + 1
        if r.outcome:
            attempts.append(int(json.loads(r.outcome)["attempts"]))
    return states, (mean(attempts) if attempts else 0.0), (max(attempts) if attempts else 0)


def _read_bytes(path: str | Path) -> bytes:
    """A file's bytes, read in one call of its size (the report reads ~4 files a run:
    ~half the time of `open().read()`, whose buffered reader is built for streams)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size + 1)
        if len(data) != size:  # a short read, or the file changed since: read to its end
            parts = [data]
            while chunk := os.read(fd, 1 << 16):
                parts.append(chunk)
            data = b"".join(parts)
        return data
    finally:
        os.close(fd)


def _read_json(path: str | Path) -> Any:
    return orjson.loads(_read_bytes(path))


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def build_report(
    ws: Workspace, pack: Pack, gates: Sequence[Gate], *, chunk: int = AUDIT_CHUNK
) -> Report:
    """The re-audit: every gate judges every input and every committed artifact again,
    `chunk` artifacts at a time (each chunk is loaded, judged, tallied and dropped)."""
    led = _read_ledger(ws)
    names = [g.name for g in gates]
    tallies = (_Tally(), _Tally())
    paths = (
        [ws.inputs / f"{r.input_hash}.json" for r in led.latest.values()],
        [ws.current / "artifacts" / f"{c.content_hash}.json" for c in led.commits],
    )
    for tally, files in zip(tallies, paths, strict=True):
        for part in _chunks(files, chunk):
            arts = [Artifact.model_validate(_read_json(p)) for p in part]
            for a, vs in zip(arts, audit(gates, arts), strict=True):
                tally.add(
                    _object_cells(pack, a.tables),
                    _words(a.prose),
                    {name: _judged(v) for name, v in vs.items()},
                    names,
                )
    states, mean_att, max_att = _attempts(led.latest)
    run_costs, batch_costs = costs(ws, led.every_run)
    return Report(
        baseline=tallies[0].figures(),
        refined=tallies[1].figures(),
        runs=states,
        mean_attempts=mean_att,
        max_attempts=max_att,
        run_costs=run_costs,
        batch_costs=batch_costs,
        source=SOURCE_REAUDIT,
    )


class NotRecorded(Exception):
    """The workspace's records lack what the recorded report needs (an old workspace)."""


def _expected_gates(pack: Pack) -> tuple[str, ...]:
    return GATES if pack.config.prose.enabled else GATES[:2]


def _recorded(led: _Ledgered, cells: _ObjectColumns) -> dict[str, RecordedRun]:
    """The runs' figures the ledger holds, each well formed (any other is read from the
    run's files), their cells counted in the pack's object columns."""
    out = {}
    for run_id, text in led.figures.items():
        rec = RecordedRun.parse(text, cells.of)
        if rec is not None:
            out[run_id] = rec
    return out


def _source(
    ws: Workspace, c: CommitRow, recorded: Mapping[str, RecordedRun], led: _Ledgered
) -> tuple[str, int]:
    """The run and attempt whose verdicts made a latest commit. When the run that wrote the
    commit recorded the same metrics sidecar, the sidecar names that run and the attempt it
    recorded; otherwise (an older run; an approval of one) the sidecar is read. A revert's
    sidecar names the version it restored: the run that made that version."""
    rec = recorded.get(c.run_id)
    pub = rec.published if rec is not None else None
    if pub is not None and pub.metrics_hash == c.metrics_hash:
        return c.run_id, pub.attempt
    mpath = os.path.join(ws.current, "metrics", f"{c.metrics_hash}.json")
    try:
        m = _read_json(mpath)
        if "run_id" not in m and "reverted_to" in m:
            restored = led.versions.get((c.artifact_id, int(m["reverted_to"])))
            if restored is not None and restored.version < c.version:
                return _source(ws, restored, recorded, led)
        return str(m["run_id"]), int(m["attempts"])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise NotRecorded(f"{mpath}: no metrics sidecar naming its run") from exc


def _cost_of(r: RunRow, rec: RecordedRun) -> Cost:
    return Cost(
        id=r.run_id,
        batch_id=r.batch_id,
        runs=1,
        calls=rec.calls,
        cached_calls=rec.cached_calls,
        tokens_prompt=rec.tokens_prompt,
        tokens_completion=rec.tokens_completion,
        model_seconds=rec.model_seconds,
        wall_seconds=_seconds(rec.first_at, rec.last_at),
        first_at=rec.first_at,
        last_at=rec.last_at,
    )


def recorded_report(ws: Workspace, pack: Pack) -> Report:
    """The report from what the runs recorded (see the module doc). Raises `NotRecorded`
    naming what is missing when the workspace predates those records."""
    led = _read_ledger(ws)
    cells = _ObjectColumns(pack)
    figs = _recorded(led, cells)
    sources = [(c, *_source(ws, c, figs, led)) for c in led.commits]
    wanted: dict[str, set[int]] = {}
    for _c, run_id, attempt in sources:
        wanted.setdefault(run_id, set()).add(attempt)
    for r in led.latest.values():
        wanted.setdefault(r.run_id, set()).add(1)  # the baseline: the input's verdicts
    recorded: dict[str, dict[int, dict[str, Judged]]] = {}
    run_costs: list[Cost] = []
    for r in led.every_run:
        fig = figs.get(r.run_id)
        if fig is not None:  # what it recorded as it finished: its trace is not read
            run_costs.append(_cost_of(r, fig))
            recorded[r.run_id] = fig.verdicts
            continue
        want = frozenset(wanted.get(r.run_id, ()))
        rec = _scan(ws, r, want)
        if rec is None and want:
            raise NotRecorded(f"{ws.trace_path(r.run_id)}: the trace is missing")
        run_costs.append(rec.cost if rec else Cost(id=r.run_id, batch_id=r.batch_id, runs=1))
        if rec is not None and rec.verdicts:
            recorded[r.run_id] = rec.verdicts
    expected = _expected_gates(pack)
    base = _Tally()
    inputs = str(ws.inputs)
    for r in led.latest.values():
        verdicts = recorded.get(r.run_id, {}).get(1, {})
        fig = figs.get(r.run_id)
        if fig is not None:
            base.add(fig.inputs.cells, fig.inputs.words, verdicts, expected)
            continue
        payload = _read_json(os.path.join(inputs, f"{r.input_hash}.json"))
        base.add(cells.count(payload), _words(payload.get("prose")), verdicts, expected)
    refined = _Tally()
    committed = os.path.join(ws.current, "artifacts")
    for c, run_id, attempt in sources:
        verdicts = recorded.get(run_id, {}).get(attempt, {})
        missing = [g for g in expected if g not in verdicts]
        if missing:
            raise NotRecorded(
                f"{ws.trace_path(run_id)}: no {', '.join(missing)} verdict for attempt {attempt}"
                f" (the one that made {c.artifact_id} version {c.version})"
            )
        fig = figs.get(run_id)
        pub = fig.published if fig is not None else None
        if pub is not None and pub.content_hash == c.content_hash:
            refined.add(pub.counted.cells, pub.counted.words, verdicts, expected)
            continue
        payload = _read_json(os.path.join(committed, f"{c.content_hash}.json"))
        refined.add(cells.count(payload), _words(payload.get("prose")), verdicts, expected)
    states, mean_att, max_att = _attempts(led.latest)
    b = base.figures()
    return Report(
        baseline=b,
        refined=refined.figures(),
        runs=states,
        mean_attempts=mean_att,
        max_attempts=max_att,
        run_costs=run_costs,
        batch_costs=_batch_costs(run_costs),
        source=SOURCE_RECORDED,
        notes=_notes(b, expected),
    )


_FIGURES_OF = {
    "value_gate": "placeholder rate, value coherence",
    "ri_gate": "RI violations",
    "prose_gate": "prose unknown entities, key coverage, truncated",
}


def _notes(b: CorpusFigures, expected: Sequence[str]) -> list[str]:
    """Which recorded baseline figures count fewer inputs than a re-audit would, and why."""
    notes = []
    for gate in expected:
        n = b.judged.get(gate, 0)
        if n < b.artifacts:
            notes.append(
                f"baseline {_FIGURES_OF[gate]}: over the {n} of {b.artifacts} inputs "
                f"{gate} judged (the loop stops at the first failing gate; "
                "`membrane report --reaudit` judges every input with every gate)"
            )
    return notes


def fallback_note(why: str) -> str:
    return (
        f"re-audited: this workspace lacks the records the fast report reads ({why}); "
        "runs of this version record them"
    )


def recorded_or_reaudit(ws: Workspace, pack: Pack, gates: Callable[[], Sequence[Gate]]) -> Report:
    """The recorded report, else (an old workspace) the re-audit, saying why."""
    try:
        return recorded_report(ws, pack)
    except NotRecorded as exc:
        rep = build_report(ws, pack, gates())
        rep.notes.insert(0, fallback_note(str(exc)))
        return rep

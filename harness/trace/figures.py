"""What `membrane report` needs of one run, folded from the run's records as it writes
them (issue 16), so the report reads one ledger table instead of every run's trace,
input, metrics sidecar and published artifact.

`RunFigures` is a fold over a run's own trace records (the `TraceWriter` feeds it each
record it appends): its first and last record's time, its model calls and tokens (the
`usage` records) and, per attempt, what each gate's verdict record says (passed, the
critiques' codes and severities, the prose coverage metric). `ArtifactShape` is what the
report counts of an artifact: the words of its prose and, per table and column, how many
cells it has (the report sums the columns its pack names as objects or classes, so a
report under another pack counts what that pack names).

`RecordedRun` is the JSON the ledger keeps per finished run (`Ledger.run_figures`), read
back defensively: a malformed or foreign record reads as None and the report falls back
to the run's files, as for a run that finished before these records existed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from harness.models import Artifact
from harness.trace.events import Event, UsageEvent, VerdictEvent

__all__ = [
    "FIGURES_VERSION",
    "GATES",
    "ArtifactShape",
    "Counted",
    "Judged",
    "Published",
    "PublishedCounted",
    "RecordedRun",
    "RunFigures",
    "judged_of_record",
    "shape_of",
]

FIGURES_VERSION = 1
GATES = ("value_gate", "ri_gate", "prose_gate")  # the verdicts the report counts


@dataclass(frozen=True)
class Judged:
    """What the report's figures need of one verdict."""

    passed: bool
    codes: tuple[tuple[str, str], ...]  # (code, severity) of each critique
    coverage: float | None  # PROSE_GATE's key-entity coverage metric


def _coverage_of(value: Any) -> float | None:
    """The coverage metric as a trace line holds it: JSON has no NaN or infinity (orjson
    writes them as null), so neither has a value here."""
    if value is None:
        return None
    cov = float(value)
    return cov if math.isfinite(cov) else None


def judged_of_record(ev: dict[str, Any]) -> Judged:
    """A verdict record as the trace line holds it (KeyError/TypeError when it lacks its
    critiques). A crashed gate, or any error-severity critique, did not pass."""
    codes = tuple((str(c["code"]), str(c.get("severity", "error"))) for c in ev["critiques"])
    passed = not ev.get("crashed") and not any(s == "error" for _c, s in codes)
    return Judged(passed, codes, _coverage_of(ev.get("metrics", {}).get("coverage")))


def _judged_of_event(ev: VerdictEvent) -> Judged:
    codes = tuple((c.code, c.severity) for c in ev.critiques)
    passed = not ev.crashed and not any(s == "error" for _c, s in codes)
    return Judged(passed, codes, _coverage_of(ev.metrics.get("coverage")))


@dataclass(frozen=True)
class ArtifactShape:
    words: int  # words of the prose (whitespace-separated)
    cells: dict[str, dict[str, int]]  # table -> column -> cells of that column


def shape_of(artifact: Artifact) -> ArtifactShape:
    cells: dict[str, dict[str, int]] = {}
    for table, rows in artifact.tables.items():
        counts: dict[str, int] = {}
        for row in rows:
            for col in row:
                counts[col] = counts.get(col, 0) + 1
        cells[table] = counts
    return ArtifactShape(len(artifact.prose.split()), cells)


@dataclass(frozen=True)
class Published:
    """What a run committed or held: the artifact's and metrics sidecar's content hashes,
    the attempt the sidecar names, and the artifact's shape."""

    content_hash: str
    metrics_hash: str
    attempt: int
    shape: ArtifactShape


@dataclass(slots=True)
class RunFigures:
    """The fold over one run's records (see the module doc)."""

    first_at: str = ""
    last_at: str = ""
    calls: int = 0
    cached_calls: int = 0
    tokens_prompt: int = 0
    tokens_completion: int = 0
    model_seconds: float = 0.0
    verdicts: dict[int, dict[str, Judged]] = field(default_factory=dict)

    def see(self, ev: Event) -> None:
        if not self.first_at:
            self.first_at = ev.at
        self.last_at = ev.at
        if isinstance(ev, VerdictEvent):
            if ev.gate in GATES:
                self.verdicts.setdefault(ev.attempt, {})[ev.gate] = _judged_of_event(ev)
        elif isinstance(ev, UsageEvent):
            self.calls += 1
            self.cached_calls += int(ev.cached)
            self.tokens_prompt += ev.tokens_prompt
            self.tokens_completion += ev.tokens_completion
            self.model_seconds += ev.seconds

    def to_json(self, inputs: ArtifactShape, published: Published | None) -> str:
        """The run's record for the ledger (`RecordedRun.parse` reads it)."""
        doc: dict[str, Any] = {
            "v": FIGURES_VERSION,
            "first_at": self.first_at,
            "last_at": self.last_at,
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "tokens_prompt": self.tokens_prompt,
            "tokens_completion": self.tokens_completion,
            "model_seconds": self.model_seconds,
            "verdicts": {
                str(attempt): {
                    gate: [j.passed, [list(c) for c in j.codes], j.coverage]
                    for gate, j in gates.items()
                }
                for attempt, gates in self.verdicts.items()
            },
            "input": [inputs.words, inputs.cells],
            "published": None
            if published is None
            else [
                published.content_hash,
                published.metrics_hash,
                published.attempt,
                published.shape.words,
                # the same columns as its input (a proposer edits values): not repeated
                None if published.shape.cells == inputs.cells else published.shape.cells,
            ],
        }
        return orjson.dumps(doc).decode()


def _named(cells: Any, named: Mapping[str, frozenset[str]]) -> int:
    """The cells a recorded shape has in the columns `named` lists per table."""
    if not isinstance(cells, dict):
        raise TypeError("not a shape")
    n = 0
    for table, cols in named.items():
        counts = cells.get(table)
        if counts is not None:
            n += sum(counts.get(c, 0) for c in cols)
    if type(n) is not int:
        raise TypeError("not a count")
    return n


# the commonest verdicts, made once: passed with no critique, no coverage or full coverage
_PASSED = {None: Judged(True, (), None), 1.0: Judged(True, (), 1.0)}


def _judged(doc: Any) -> Judged:
    passed, codes, cov = doc
    if type(passed) is not bool or not isinstance(codes, list):
        raise TypeError("not a verdict")
    if passed and not codes and (cov is None or type(cov) is float):
        hit = _PASSED.get(cov)
        if hit is not None:
            return hit
    return Judged(
        passed,
        tuple((str(c), str(s)) for c, s in codes),
        _coverage_of(cov),
    )


@dataclass(frozen=True)
class Counted:
    """What the report counts of an artifact: its words and its object cells."""

    words: int
    cells: int


@dataclass(frozen=True)
class PublishedCounted:
    """What a run committed or held, as the report reads it back."""

    content_hash: str
    metrics_hash: str
    attempt: int  # the attempt its metrics sidecar names
    counted: Counted


@dataclass(frozen=True)
class RecordedRun:
    """A run's record in the ledger, read back for a pack: the cells counted are those in
    the columns it names (`named`: table -> columns)."""

    first_at: str
    last_at: str
    calls: int
    cached_calls: int
    tokens_prompt: int
    tokens_completion: int
    model_seconds: float
    verdicts: dict[int, dict[str, Judged]]
    inputs: Counted
    published: PublishedCounted | None

    @classmethod
    def parse(cls, text: str | bytes, named: Mapping[str, frozenset[str]]) -> RecordedRun | None:
        """None for anything but a well-formed record of this version."""
        try:
            doc = orjson.loads(text)
            if not isinstance(doc, dict) or doc.get("v") != FIGURES_VERSION:
                return None
            words, cells = doc["input"]
            if type(words) is not int:
                return None
            inputs = Counted(words, _named(cells, named))
            pub = doc["published"]
            published = None
            if pub is not None:
                chash, mhash, attempt, pwords, pcells = pub
                if type(pwords) is not int or type(attempt) is not int:
                    return None
                counted = Counted(pwords, inputs.cells if pcells is None else _named(pcells, named))
                published = PublishedCounted(str(chash), str(mhash), attempt, counted)
            ints = [doc[k] for k in ("calls", "cached_calls", "tokens_prompt", "tokens_completion")]
            if not all(type(i) is int for i in ints):
                return None
            return cls(
                first_at=str(doc["first_at"]),
                last_at=str(doc["last_at"]),
                calls=ints[0],
                cached_calls=ints[1],
                tokens_prompt=ints[2],
                tokens_completion=ints[3],
                model_seconds=float(doc["model_seconds"]),
                verdicts={
                    int(attempt): {str(g): _judged(j) for g, j in gates.items()}
                    for attempt, gates in doc["verdicts"].items()
                },
                inputs=inputs,
                published=published,
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            return None

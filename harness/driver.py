"""The one driver of a batch: `BatchRun`, an iterable run object (like pydantic_graph's
`GraphRun`), used by the API, the CLI, the benchmarks and the tests alike.

    batch = BatchRun(ws, engines, artifacts, cohort_size=256)
    for cycle in batch:          # or batch.step() by hand, or batch.run()
        print(cycle.done, "/", cycle.total)
    result = batch.result

Artifacts whose (id, input hash) already settled are skipped (a rerun resumes). The rest
are stepped in cohorts (DESIGN.md §9). Before each cohort the driver asks the agenda
whether to start runs at all (the facts of a fresh run): a rule, not an `if`, stops a
batch whose endpoint is down.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.errors import CorpusError
from harness.loop import start_cohort, step_cohort
from harness.models import Artifact, RunState, Trigger
from harness.run import Engines, Run, fresh_facts
from harness.store import artifact_bytes, content_hash, rebuild_view
from harness.trace import TraceWriter
from harness.workspace import SyncGroup, Workspace

if TYPE_CHECKING:
    from harness.learning.store import CycleReport
    from harness.report import Report  # filled in by the API when asked for

__all__ = ["BatchResult", "BatchRun", "Cycle", "RunSummary"]


@dataclass(frozen=True)
class RunSummary:
    artifact_id: str
    run_id: str
    state: str
    attempts: int
    codes: dict[str, int]
    error: str | None = None


@dataclass
class BatchResult:
    runs: list[RunSummary] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already settled for the same input
    skipped_states: dict[str, str] = field(default_factory=dict)  # skipped id -> settled state
    errors: list[CorpusError] = field(default_factory=list)
    seconds: float = 0.0
    recovered: dict[str, int] = field(default_factory=dict)
    report: Report | None = None
    halted: str | None = None  # why the batch stopped early (an endpoint is unavailable)
    halted_by: str | None = None  # the rule that stopped it
    not_started: int = 0  # artifacts left for a later batch because it stopped
    tokens: int = 0  # model tokens this batch spent
    learning: CycleReport | None = None  # the learning cycle run after the batch
    lessons: dict[str, object] | None = None  # the gated lesson pass run after the batch

    def count(self, state: RunState) -> int:
        return sum(1 for r in self.runs if r.state == state.value)

    @property
    def artifacts_per_s(self) -> float:
        return len(self.runs) / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Cycle:
    """One step: the cohort it stepped, the runs that ended in it, and progress."""

    cohort: Sequence[Run]
    finished: Sequence[Run]
    done: int  # runs ended so far in this batch
    total: int  # runs this batch will start (skipped artifacts not counted)


def _check_unique(seen: dict[str, tuple[int, str]], aid: str, number: int) -> None:
    """A batch refines each artifact once: two with one id (or ids that differ only in
    case, which share files on a case-insensitive file system) would start runs under one
    run id. The CLI's corpus reader refuses them per line; this is the same rule for a
    batch built from the API (`Session.batch`), before anything is written."""
    first = seen.setdefault(aid.lower(), (number, aid))
    if first[0] == number:
        return
    what = "the same id" if first[1] == aid else f"an id that differs only in case ({first[1]!r})"
    raise CorpusError(
        f"artifact {number} of the batch, {aid!r}, has {what} as artifact {first[0]}",
        hint="ids must be unique within a batch, without case: drop or rename one of them",
    )


def _rebuilt(packed: bytes) -> tuple[Artifact, bytes]:
    data = zlib.decompress(packed)
    return Artifact.model_validate_json(data), data


class BatchRun:
    """A batch in progress. `step()` advances every active run of the current cohort by one
    cycle (starting the next cohort when needed) and returns what happened, or None when
    the batch is over; iterating calls `step()` until then; `run()` runs to the end."""

    def __init__(
        self,
        ws: Workspace,
        eng: Engines,
        artifacts: Iterable[Artifact],
        *,
        cohort_size: int = 256,
        batch_id: str | None = None,
        pack: str = "",
        pack_version: str = "",
    ) -> None:
        if cohort_size < 1:
            raise ValueError("cohort_size must be at least 1")
        self.ws, self.eng = ws, eng
        self.cohort_size = cohort_size
        self.batch_id = batch_id or f"b-{eng.clock()}"
        self.pack, self.pack_version = pack, pack_version
        self.result = BatchResult()
        self._t0 = time.perf_counter()
        settled = eng.ledger.settled_inputs()
        # only the canonical bytes of what is left to do are kept, zlib-compressed (an
        # artifact is rebuilt from them when its cohort starts): `artifacts` may be a
        # stream, and 20,000 artifacts as models were ~240 MB (issue 22); ~1 KB each now
        self._todo: list[bytes] = []
        self._ids: list[str] = []  # the id of each, beside it (`--workers` sends them on)
        seen: dict[str, tuple[int, str]] = {}  # id without case -> (item number, id)
        for number, a in enumerate(artifacts, start=1):
            _check_unique(seen, a.id, number)
            data = artifact_bytes(a)
            state = settled.get((a.id, content_hash(data)))
            if state is not None:
                self.result.skipped.append(a.id)
                self.result.skipped_states[a.id] = state
            else:
                self._todo.append(zlib.compress(data, 1))
                self._ids.append(a.id)
        self._next = 0  # index into _todo of the next artifact to start
        self._cohort: list[Run] | None = None
        self._done = 0
        self._over = False
        self._view_at, self._view_cost, self._view_stale = time.perf_counter(), 0.0, False

    @property
    def total(self) -> int:
        return len(self._todo)

    def step(self) -> Cycle | None:
        if self._over:
            return None
        if self._cohort is None and not self._start_cohort():
            self._finish()
            return None
        cohort = self._cohort
        assert cohort is not None
        before = {r.run_id for r in cohort if r.state.terminal}
        try:
            step_cohort(cohort, self.eng)
        except BaseException:  # the batch stops (a full disk, say): recovery settles its runs
            for r in cohort:
                r.trace.abandon()
            raise
        ended = [r for r in cohort if r.state.terminal and r.run_id not in before]
        self._done += len(ended)
        if all(r.state.terminal for r in cohort):
            self._close_cohort(cohort)
        return Cycle(cohort=cohort, finished=ended, done=self._done, total=self.total)

    def __iter__(self) -> Iterator[Cycle]:
        while (cycle := self.step()) is not None:
            yield cycle

    iterate = __iter__

    def run(self) -> BatchResult:
        for _ in self:
            pass
        self.close()
        return self.result

    def close(self) -> None:
        """Release what the batch holds beyond its end (`--workers`' processes, which exit
        while the batch's caller runs the learning pass and the report)."""

    # -- cohorts -------------------------------------------------------------------

    def _next_chunk(self, size: int | None = None) -> list[tuple[str, bytes]] | None:
        """The ids and packed inputs of the next cohort (`size` artifacts, `cohort_size`
        unless given), or None when none is left or the agenda stops the batch (the facts
        of a fresh run: an endpoint down, a budget spent)."""
        if self._next >= len(self._todo):
            return None
        probe = self.eng.agenda.decide("batch-probe", fresh_facts(self.eng))
        if probe.trigger is Trigger.HALTED:
            self.result.halted_by = probe.rule
            self.result.not_started = len(self._todo) - self._next
            self._next = len(self._todo)
            return None
        end = self._next + (size or self.cohort_size)
        chunk = list(zip(self._ids[self._next : end], self._todo[self._next : end], strict=True))
        self._todo[self._next : self._next + len(chunk)] = [b""] * len(chunk)  # drop them
        self._next += len(chunk)
        return chunk

    def _start_cohort(self) -> bool:
        chunk = self._next_chunk()
        if chunk is None:
            return False
        inputs = SyncGroup()
        runs = [self._new_run(*_rebuilt(packed), inputs) for _aid, packed in chunk]
        inputs.sync()  # every input durable, once, before the runs that name them
        start_cohort(runs, self.eng, self.batch_id, self.pack, self.pack_version)
        self._cohort = runs
        return True

    def _new_run(self, artifact: Artifact, data: bytes, inputs: SyncGroup) -> Run:
        digest = content_hash(data)  # the input's identity: resume skips a settled (id, hash)
        inputs.write_once(self.ws.inputs / f"{digest}.json", data)
        run_id = f"{artifact.id}.r{self.eng.ledger.count_runs(artifact.id) + 1}"
        trace = TraceWriter(self.ws.trace_path(run_id), run_id, self.eng.clock)
        return Run(run_id=run_id, input=artifact, input_hash=digest, trace=trace)

    def _close_cohort(self, cohort: list[Run]) -> None:
        self._refresh_view(final=False)
        self.result.runs.extend(
            RunSummary(r.input.id, r.run_id, r.state.value, r.attempt, dict(r.codes), r.error)
            for r in cohort
        )
        self._cohort = None

    def _refresh_view(self, final: bool) -> None:
        """`current/corpus.jsonl` is derived from the ledger and rereads every committed
        artifact, so rebuilding it after each cohort made a batch quadratic (issue 22: 3 s
        a rebuild at 20,000 artifacts). It is rebuilt at the end of the batch, and in
        between only once the time since the last rebuild is ten times what that rebuild
        took (it stays under a tenth of the wall time and still shows progress). A killed
        batch's view is rebuilt by the next recovery."""
        now = time.perf_counter()
        if final and not self._view_stale:
            return  # nothing committed since the last rebuild (or nothing ran)
        if not final and now - self._view_at < 10 * self._view_cost:
            self._view_stale = True
            return
        rebuild_view(self.ws, self.eng.ledger, chapters=False)  # COMMIT wrote its chapters
        done = time.perf_counter()
        self._view_at, self._view_cost, self._view_stale = done, done - now, False

    def _finish(self) -> None:
        self._refresh_view(final=True)
        self._over = True
        self.result.halted = self.eng.endpoint_down
        self.result.tokens = self.eng.batch_tokens
        self.result.seconds = time.perf_counter() - self._t0

"""`membrane batch --workers N` (issue 16): cohorts judged by long-lived worker
processes, committed by this one.

Each worker is started before the JVM or DuckDB could be running in this process (neither
survives a fork): forked, from a process that has one thread and imported what the workers
judge with (`Prestarted`, on Linux), else spawned (`start_method`). It
builds its gates and proposer once (`harness.engines`), and judges whole cohorts in
memory: the same `start_cohort` / `step_cohort` as one process, with a ledger, committer,
scratch and traces that only record. It returns every run's trace bytes, what it would
commit or hold, and its anchor. The parent keeps the agenda's batch decisions (start a
cohort or stop), the single writer of the workspace and the one commit point:

    for each judged cohort, in the order they come back:
        inputs, traces, objects  -> written whole, one sync of them all
        one ledger transaction   -> the runs registered, committed or held, and anchored
        chapters, the corpus view

Until that transaction nothing of the cohort is in the ledger, so a worker killed
mid-cohort loses nothing: the pool is replaced and the cohort judged again under the same
run ids; a kill of the parent leaves unregistered traces and objects that recovery
sweeps, and a rerun judges those artifacts again. What the workers commit is what one
process commits, byte for byte: a run's verdicts and proposals depend on its artifact,
the pack and the learned state the parent hands every worker, not on which process ran it.

Model token budgets: each cohort starts from the batch's spend when it was sent, so with
N workers a batch budget may be overshot by what N - 1 cohorts spend at once.
"""

from __future__ import annotations

import importlib
import io
import logging
import multiprocessing
import os
import re
import signal
import sys
import zlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Protocol, cast

from effectors.proposers.openai_client import TranscriptStore
from harness.chapters import ChapterRenderer, write_chapter
from harness.driver import BatchRun, Cycle, RunSummary
from harness.engines import EngineOptions, build_engines, utc_now
from harness.errors import InfrastructureError, PackError
from harness.ledger import CommitRow, FinishRow, HeldRow, Ledger
from harness.lifeline import batch_gc, die_with_parent
from harness.loop import start_cohort, step_cohort
from harness.models import Artifact, Effector
from harness.pack import Pack, load_pack
from harness.pools import Pools
from harness.ports import Gate, Pending
from harness.run import Engines, Overlay, Run
from harness.scratch import Scratch
from harness.store import content_hash, object_bytes, object_files
from harness.trace import TraceWriter
from harness.workspace import Config, SyncGroup, Workspace

__all__ = [
    "CohortResult",
    "CohortTask",
    "EarlySpec",
    "Executor",
    "PoolBatchRun",
    "Prestarted",
    "ProcessExecutor",
    "WorkerSpec",
    "init_worker",
    "judge",
    "judge_as",
    "prewarm",
    "tail_cohort",
]

_log = logging.getLogger(__name__)

MAX_TRIES = 3  # a cohort whose worker died this often stops the batch
_EXIT_S = 30.0  # a stopped worker's time to exit before it is killed


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker needs to build its engines as the parent did (picklable)."""

    root: str
    pack: str
    options: EngineOptions
    overlay: Overlay | None
    lessons: tuple[Any, ...]
    batch_id: str
    pack_name: str
    pack_version: str


@dataclass(frozen=True)
class EarlySpec:
    """What a batch knows of its workers' gates before it opens its session: the workspace,
    the pack and the options (`WorkerSpec` has the rest, from the session)."""

    root: str
    pack: str
    options: EngineOptions


@dataclass
class _Early:
    """Gates a worker built from an `EarlySpec` while the batch opened its session, with
    what they were built from (`init_worker` uses them when its spec still says the same)."""

    spec: EarlySpec
    config: Config
    pack: Pack
    pools: Pools
    gates: dict[Effector, Gate]

    def fits(self, spec: WorkerSpec, config: Config, pack: Pack) -> bool:
        early = self.spec
        return (early.root, early.pack, early.options) == (spec.root, spec.pack, spec.options) \
            and config == self.config and pack == self.pack

    def close(self) -> None:
        for gate in self.gates.values():
            closer = getattr(gate, "close", None)
            if callable(closer):
                closer()


@dataclass(frozen=True)
class CohortTask:
    index: int
    runs: tuple[tuple[str, bytes, str, int], ...]  # run id, input bytes, input hash, version
    tokens_spent: int


@dataclass(frozen=True)
class _Stored:
    """An artifact a run committed or held, as the parent stores it."""

    data: bytes
    digest: str
    mdata: bytes
    mdigest: str
    version: int  # the commit's version (0: held)
    trace_seq: int
    trace_hash: str
    at: str
    why: str = ""


@dataclass
class _Judged:
    run_id: str
    artifact_id: str
    input_hash: str
    started_at: str
    trace: bytes
    finish: FinishRow
    summary: RunSummary
    scratch: list[tuple[str, bytes]] = field(default_factory=list)
    commit: _Stored | None = None
    hold: _Stored | None = None


@dataclass
class CohortResult:
    index: int
    runs: list[_Judged]
    tokens: int
    endpoint_down: str | None
    # the model transcripts the cohort wrote: (path under .membrane/transcripts/, bytes)
    transcripts: tuple[tuple[str, bytes], ...] = ()


# -- the worker's side -------------------------------------------------------------------


class _RecordingLedger:
    """The ledger as a worker sees it: what the loop would write, kept for the parent."""

    def __init__(self) -> None:
        self.started: dict[str, str] = {}
        self.finished: dict[str, FinishRow] = {}

    def start_runs(self, rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        self.started.update((r[0], r[4]) for r in rows)

    def finish_runs(self, rows: Sequence[FinishRow]) -> None:
        self.finished.update((r[0], r) for r in rows)


class _RecordingCommitter:
    """COMMIT and HOLD as a worker runs them: the rows the parent's transaction will
    write (versions from the ledger as the parent read it), the bytes to store."""

    def __init__(self) -> None:
        self.versions: dict[str, int] = {}  # artifact id -> newest committed version
        self.stored: dict[str, _Stored] = {}

    def commit_many(self, items: Sequence[Pending]) -> list[CommitRow]:
        rows = []
        for p in items:
            data, digest, mdata, mdigest = object_bytes(p.artifact, p.metrics)
            version = self.versions.get(p.artifact.id, 0) + 1
            self.stored[p.run_id] = _Stored(
                data, digest, mdata, mdigest, version, p.trace_seq, p.trace_hash, p.at
            )
            rows.append(
                CommitRow(
                    p.artifact.id,
                    version,
                    digest,
                    mdigest,
                    p.run_id,
                    p.trace_seq,
                    p.trace_hash,
                    p.at,
                )
            )
        return rows

    def commit(
        self,
        run_id: str,
        artifact: Artifact,
        metrics: Mapping[str, Any],
        trace_seq: int,
        trace_hash: str,
        at: str,
    ) -> CommitRow:
        return self.commit_many([Pending(run_id, artifact, metrics, trace_seq, trace_hash, at)])[0]

    def hold(
        self,
        run_id: str,
        artifact: Artifact,
        metrics: Mapping[str, Any],
        trace_seq: int,
        trace_hash: str,
        at: str,
        why: str = "",
    ) -> HeldRow:
        data, digest, mdata, mdigest = object_bytes(artifact, metrics)
        self.stored[run_id] = _Stored(
            data, digest, mdata, mdigest, 0, trace_seq, trace_hash, at, why
        )
        return HeldRow(
            artifact.id, run_id, digest, mdigest, trace_seq, trace_hash, at, "pending", why
        )


class _RecordingScratch(Scratch):
    """Each attempt's candidate, kept in memory for the parent to stage."""

    def __init__(self, root: Path, inputs: Path | None = None) -> None:
        super().__init__(root, inputs)
        self.kept: dict[str, dict[str, bytes]] = {}

    def put(self, run_id: str, digest: str, data: bytes) -> None:
        self.kept.setdefault(run_id, {})[digest] = data

    def get(self, run_id: str, digest: str) -> bytes | None:
        data = self.kept.get(run_id, {}).get(digest)
        return data if data is not None else super().get(run_id, digest)


class _NoSync(SyncGroup):
    """A worker writes no file the ledger names: nothing to sync."""

    def sync(self) -> None:
        self._paths = []


@dataclass
class _Worker:
    spec: WorkerSpec
    ws: Workspace
    eng: Engines
    ledger: _RecordingLedger
    committer: _RecordingCommitter
    scratch: _RecordingScratch


_STATE: dict[str, _Worker] = {}  # this worker process's engines, under "worker"
_EARLY: dict[str, _Early] = {}  # gates `prewarm` built, under "gates", until a spec takes them


def init_worker(spec: WorkerSpec) -> None:
    """Build this worker's engines once (gates warm for every cohort it judges); the gates
    `prewarm` built are used if they were built from what `spec` says."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a batch stops
    from ontology import load_pools  # owlready2 is heavy: imported where it is used

    ws = Workspace(Path(spec.root))
    config = ws.config()
    pack = load_pack(Path(spec.pack))
    early = _EARLY.pop("gates", None)
    gates: dict[Effector, Gate] | None = None
    if early is not None and early.fits(spec, config, pack):
        pools, gates = early.pools, early.gates
    else:
        if early is not None:
            early.close()
        pools = load_pools(pack, ws.cache)
    ledger, committer = _RecordingLedger(), _RecordingCommitter()
    scratch = _RecordingScratch(ws.scratch, ws.inputs)
    eng = build_engines(
        ws,
        config,
        pack,
        pools,
        spec.options,
        ledger=cast(Ledger, ledger),
        committer=committer,
        scratch=scratch,
        overlay=spec.overlay,
        lessons=spec.lessons,
        clock=utc_now,
        gates=gates,
    )
    eng.durable = _NoSync
    _STATE["worker"] = _Worker(spec, ws, eng, ledger, committer, scratch)


def _build_early(early: EarlySpec) -> None:
    """The gates of `early`, built and the value gate's reasoner warmed (its JVM parses the
    ontology), into `_EARLY`; nothing when the pack's ontology is not classified yet (the
    batch's own process classifies it as it opens its session, once) or anything fails
    (the first cohort then builds them, and raises what it must)."""
    from harness.engines import build_gates, gate_context
    from ontology import index_cached, load_pools

    try:
        ws = Workspace(Path(early.root))
        config = ws.config()
        pack = load_pack(Path(early.pack))
        if not index_cached(pack, ws.cache):
            return
        pools = load_pools(pack, ws.cache)
        gates = build_gates(gate_context(ws, config, pack, pools, early.options))
        _EARLY["gates"] = _Early(early, config, pack, pools, dict(gates))
        warm = getattr(gates.get(Effector.VALUE_GATE), "warm_up", None)
        if callable(warm):
            warm()
    except Exception as exc:  # an optimisation: the first cohort builds them, or raises
        _log.debug("worker gates not built early: %s", exc)
        gone = _EARLY.pop("gates", None)
        if gone is not None:
            gone.close()


# What every worker judges with, imported by `prewarm` while the parent is still opening its
# session and reading the corpus (~1.3 s of a worker's ~2.3 s start on this machine).
_PREWARM = (
    "ontology",
    "harness.engines",
    "effectors.value_gate",
    "effectors.ri_gate",
    "effectors.prose_gate",
    "effectors.proposers.offline",
)


def prewarm(early: EarlySpec | None = None) -> None:
    """A process pool worker's initializer: it dies with the parent, leaves Ctrl-C to it,
    imports what it judges with and starts the JVM; with `early`, builds its gates too
    (`_build_early`), while the parent opens its session and reads the corpus. The engines
    are built by its first cohort (`judge_as`), which carries the spec the parent had by
    then."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a batch stops
    for name in _PREWARM:
        importlib.import_module(name)
    # the value gate's JVM, as its reasoner starts it (not with MEMBRANE_REASONER=subprocess)
    importlib.import_module("ontology.warm").warm_available()
    if early is not None:
        _build_early(early)
    batch_gc()  # a worker judges one batch's cohorts, then exits


def _ready() -> None:
    """A call that makes a spawn-context pool start one more process (`Prestarted`)."""


def judge_as(spec: WorkerSpec, task: CohortTask) -> CohortResult:
    """One cohort, the engines built first if this worker has none for `spec`."""
    w = _STATE.get("worker")
    if w is None or w.spec != spec:
        init_worker(spec)
    return judge(task)


def judge(task: CohortTask) -> CohortResult:
    """One cohort, start to end, in memory."""
    journal: list[tuple[str, bytes]] = []
    TranscriptStore.journal = journal  # this process judges one cohort at a time
    try:
        result = _judge(task)
    finally:
        TranscriptStore.journal = None
    result.transcripts = tuple(journal)
    return result


def _judge(task: CohortTask) -> CohortResult:
    w = _STATE["worker"]
    eng = w.eng
    eng.batch_tokens, eng.endpoint_down = task.tokens_spent, None
    w.ledger.started.clear()
    w.ledger.finished.clear()
    w.committer.stored.clear()
    w.scratch.kept.clear()
    runs: list[Run] = []
    sinks: list[io.BytesIO] = []
    for run_id, data, input_hash, version in task.runs:
        artifact = Artifact.model_validate_json(data)
        w.committer.versions[artifact.id] = version
        sink = io.BytesIO()
        trace = TraceWriter(w.ws.trace_path(run_id), run_id, eng.clock, sink=sink)
        runs.append(Run(run_id=run_id, input=artifact, input_hash=input_hash, trace=trace))
        sinks.append(sink)
    spec = w.spec
    start_cohort(runs, eng, spec.batch_id, spec.pack_name, spec.pack_version)
    while not all(r.state.terminal for r in runs):
        step_cohort(runs, eng)
    out = []
    for run, sink in zip(runs, sinks, strict=True):
        stored = w.committer.stored.get(run.run_id)
        out.append(
            _Judged(
                run_id=run.run_id,
                artifact_id=run.input.id,
                input_hash=run.input_hash,
                started_at=w.ledger.started[run.run_id],
                trace=sink.getvalue(),
                finish=w.ledger.finished[run.run_id],
                summary=RunSummary(
                    run.input.id,
                    run.run_id,
                    run.state.value,
                    run.attempt,
                    dict(run.codes),
                    run.error,
                ),
                scratch=sorted(w.scratch.kept.get(run.run_id, {}).items()),
                commit=stored if stored is not None and stored.version else None,
                hold=stored if stored is not None and not stored.version else None,
            )
        )
    tokens = eng.batch_tokens - task.tokens_spent
    return CohortResult(task.index, out, tokens, eng.endpoint_down)


# -- executors: where the workers live ---------------------------------------------------


class Executor(Protocol):
    """Workers that judge cohorts: spawned processes here (`ProcessExecutor`), Ray actors
    on a cluster (`harness.pool_ray.RayExecutor`). `died` are the errors a future raises
    when its worker died; `replace(failed, inflight)` brings up a fresh worker for the one
    `failed` ran on and returns the futures of `inflight` lost with it (to be sent again)."""

    died: tuple[type[BaseException], ...]

    def submit(self, task: CohortTask) -> Future[CohortResult]: ...

    def replace(
        self, failed: Future[CohortResult], inflight: Collection[Future[CohortResult]]
    ) -> list[Future[CohortResult]]: ...

    def shutdown(self, wait: bool = True) -> None: ...


def _new_pool(
    workers: int, method: str = "spawn", early: EarlySpec | None = None
) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context(method),
        initializer=prewarm,
        initargs=(early,),
    )


START_ENV = "MEMBRANE_WORKER_START"  # "spawn": never fork the workers


def start_method() -> str:
    """How prestarted workers start: "fork" when that is safe, else "spawn".

    Forking is safe here when this process runs one thread (so no JVM, no DuckDB thread
    pool and no lock another thread holds is copied half-way) on Linux (where the workers'
    lifeline, `PR_SET_PDEATHSIG`, is), and `MEMBRANE_WORKER_START` is not "spawn". A forked
    worker inherits the modules this process imported instead of importing them again: on
    2 cores, ~1.3 CPU s a worker (measured on the facility pack). It opens its own JVM, pack,
    pools, gates and files as a spawned one does, from the spec of its first cohort."""
    if os.environ.get(START_ENV, "").strip().lower() == "spawn" or sys.platform != "linux":
        return "spawn"
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        return "spawn"
    return "fork" if threads == 1 else "spawn"


class Prestarted:
    """`workers` processes started before the batch knows what they will judge (forked or
    spawned: `start_method`): they start their JVM, and with `early` build their gates,
    while this process opens its session and reads the corpus (before, they started only
    when the first cohort was sent, ~4 s into a batch). A `ProcessExecutor` takes them
    over; `release()` stops them at the end, at once if no executor took them (a batch
    with nothing to do, an error on the way)."""

    def __init__(self, workers: int, early: EarlySpec | None = None) -> None:
        self.workers = workers
        self.method = start_method()
        if self.method == "fork":  # imported once here, not once in each worker
            for name in _PREWARM:
                importlib.import_module(name)
            sys.stdout.flush()  # a worker flushes its copy of these buffers as it exits
            sys.stderr.flush()
        self.pool = _new_pool(workers, self.method, early)
        self.taken = False
        for _ in range(workers):  # a spawn-context pool starts one process per call sent
            self.pool.submit(_ready)  # (a fork-context one all of them at the first)

    def take(self) -> ProcessPoolExecutor:
        self.taken = True
        return self.pool

    def release(self) -> None:
        if not self.taken:  # still importing, perhaps: nothing of theirs is needed
            self.taken = True  # and no executor may take them now
            for proc in list((self.pool._processes or {}).values()):
                proc.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)


class ProcessExecutor:
    """`workers` spawned processes of this machine (never forked: the JVM), `prestarted`
    ones if given (`Prestarted`). Each cohort carries the spec its worker builds its
    engines from on its first cohort (`judge_as`)."""

    died: tuple[type[BaseException], ...] = (BrokenProcessPool,)

    def __init__(
        self, workers: int, spec: WorkerSpec, prestarted: Prestarted | None = None
    ) -> None:
        self.workers, self.spec = workers, spec
        self._pool: ProcessPoolExecutor | None = None
        self._exiting: list[BaseProcess] = []  # told to stop, not yet waited for
        self._prestarted = prestarted if prestarted and prestarted.workers == workers else None

    def submit(self, task: CohortTask) -> Future[CohortResult]:
        if self._pool is None:
            if self._prestarted is not None and not self._prestarted.taken:
                self._pool = self._prestarted.take()
            else:
                self._pool = _new_pool(self.workers)
        return self._pool.submit(judge_as, self.spec, task)

    def pids(self) -> list[int]:
        """The workers' process ids (tests kill one)."""
        return list(self._pool._processes) if self._pool is not None else []

    def replace(
        self, failed: Future[CohortResult], inflight: Collection[Future[CohortResult]]
    ) -> list[Future[CohortResult]]:
        """A dead process breaks the whole pool: every cohort without a result is lost."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        return [f for f in inflight if not has_result(f)]

    def shutdown(self, wait: bool = True) -> None:
        """Stop the workers; without `wait` they exit while this process goes on (the
        learning pass, the report), and `shutdown()` later waits for them."""
        if self._prestarted is not None and not self._prestarted.taken:
            self._prestarted.release()  # nothing was sent: stopped at once, not awaited
        pool, self._pool = self._pool, None
        if pool is not None:
            self._exiting += list(pool._processes.values())  # a pool forgets them
            pool.shutdown(wait=wait, cancel_futures=True)
        if wait:
            exiting, self._exiting = self._exiting, []
            for proc in exiting:
                proc.join(_EXIT_S)
                if proc.is_alive():  # pragma: no cover - a worker stuck on its way out
                    proc.kill()
                    proc.join(_EXIT_S)


# -- the parent's side -------------------------------------------------------------------


class PoolBatchRun(BatchRun):
    """A batch whose cohorts `workers` spawned processes judge; this process commits
    them. Iterates like `BatchRun` (one `Cycle` per committed cohort)."""

    def __init__(
        self,
        ws: Workspace,
        eng: Engines,
        artifacts: Iterable[Artifact],
        *,
        workers: int,
        spec: WorkerSpec,
        executor: Callable[[int, WorkerSpec], Executor] = ProcessExecutor,
        chapters: ChapterRenderer | None = None,
        cohort_size: int = 256,
        batch_id: str | None = None,
        pack: str = "",
        pack_version: str = "",
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        super().__init__(
            ws,
            eng,
            artifacts,
            cohort_size=cohort_size,
            batch_id=batch_id,
            pack=pack,
            pack_version=pack_version,
        )
        self.workers = workers
        self.spec = spec if spec.batch_id == self.batch_id else _with_batch(spec, self.batch_id)
        self.chapters = chapters
        self.executor = executor(workers, self.spec)
        self._inflight: dict[Future[CohortResult], CohortTask] = {}
        self._tries: dict[int, int] = {}
        self._tasks = 0
        self.restarts = 0  # pools replaced after a worker died

    def step(self) -> Cycle | None:
        if self._over:
            return None
        try:
            while len(self._inflight) <= self.workers and self._dispatch():
                pass
            if not self._inflight:
                self.executor.shutdown(wait=False)  # they exit while the batch closes
                self._finish()
                return None
            done, _ = wait(self._inflight, return_when=FIRST_COMPLETED)
            fut = min(done, key=lambda f: self._inflight[f].index)
            task = self._inflight.pop(fut)
            try:
                result = fut.result()
            except self.executor.died:
                self._inflight[fut] = task
                self._replace_pool(fut)
                return Cycle(cohort=(), finished=(), done=self._done, total=self.total)
            self._apply(task, result)
        except BaseException:
            self._shutdown()
            raise
        return Cycle(cohort=(), finished=(), done=self._done, total=self.total)

    # -- dispatch ------------------------------------------------------------------------

    def _dispatch(self) -> bool:
        """Send the next cohort to the pool, unless the agenda stops the batch."""
        left = len(self._todo) - self._next
        chunk = self._next_chunk(tail_cohort(left, self.cohort_size, self.workers))
        if chunk is None:
            return False
        ids = [aid for aid, _packed in chunk]  # checked as the corpus was read: not again
        inputs = [zlib.decompress(packed) for _aid, packed in chunk]
        versions = self.eng.ledger.latest_versions(ids)
        runs = tuple(
            (
                f"{aid}.r{self.eng.ledger.count_runs(aid) + 1}",
                data,
                content_hash(data),
                versions[aid],
            )
            for aid, data in zip(ids, inputs, strict=True)
        )
        task = CohortTask(self._tasks, runs, self.eng.batch_tokens)
        self._tasks += 1
        self._submit(task)
        return True

    def _submit(self, task: CohortTask) -> None:
        self._inflight[self.executor.submit(task)] = task

    def _replace_pool(self, failed: Future[CohortResult]) -> None:
        """A worker died: it is replaced, and every cohort in flight that died with it is
        judged again (nothing of theirs reached the ledger). A process pool loses all its
        cohorts without a result; Ray only the dead actor's."""
        self.restarts += 1
        lost = set(self.executor.replace(failed, list(self._inflight)))
        keep: dict[Future[CohortResult], CohortTask] = {}
        again: list[CohortTask] = []
        for fut, task in self._inflight.items():
            if fut not in lost:
                keep[fut] = task
                continue
            self._tries[task.index] = self._tries.get(task.index, 0) + 1
            if self._tries[task.index] >= MAX_TRIES:
                raise InfrastructureError(
                    f"a worker died {MAX_TRIES} times judging cohort {task.index + 1} "
                    f"({len(task.runs)} artifacts, first {task.runs[0][0]}); nothing of it "
                    "was committed: rerun without --workers to see the error, or with "
                    "fewer workers if the machine is short of memory"
                )
            again.append(task)
        self._inflight = keep
        for task in again:
            self._submit(task)

    def _shutdown(self) -> None:
        self.executor.shutdown()

    def close(self) -> None:
        """Wait for the workers to have exited."""
        self.executor.shutdown()

    # -- the commit point ----------------------------------------------------------------

    def _apply(self, task: CohortTask, result: CohortResult) -> None:
        """Write the cohort's files, sync them once, then one ledger transaction."""
        group = self.eng.durable()
        for _run_id, data, input_hash, _version in task.runs:
            group.write_once(self.ws.inputs / f"{input_hash}.json", data)
        for j in result.runs:
            self._write_run(j, group)
        self._write_transcripts(result.transcripts, group)
        group.sync()
        rows = self.eng.ledger.apply_cohort(
            [
                (j.run_id, j.artifact_id, self.batch_id, j.input_hash, j.started_at)
                for j in result.runs
            ],
            [_commit_row(j) for j in result.runs if j.commit is not None],
            [_hold_row(j) for j in result.runs if j.hold is not None],
            [j.finish for j in result.runs],
        )
        self._check_and_render([j for j in result.runs if j.commit is not None], rows)
        self.result.runs.extend(j.summary for j in result.runs)
        self._done += len(result.runs)
        self.eng.batch_tokens += result.tokens
        if result.endpoint_down and not self.eng.endpoint_down:
            self.eng.endpoint_down = result.endpoint_down
        self._refresh_view(final=False)

    def _write_run(self, j: _Judged, group: SyncGroup) -> None:
        group.write(self.ws.trace_path(j.run_id), j.trace)  # over a trace a kill left
        if self.eng.scratch is not None:
            for digest, data in j.scratch:
                self.eng.scratch.put(j.run_id, digest, data)
        for stored, folder in ((j.commit, self.ws.current), (j.hold, self.ws.held)):
            if stored is not None:
                for path, payload in object_files(
                    folder, stored.data, stored.digest, stored.mdata, stored.mdigest
                ):
                    group.write_once(path, payload)

    def _write_transcripts(self, files: Sequence[tuple[str, bytes]], group: SyncGroup) -> None:
        """The model transcripts a worker wrote, into this workspace (a worker on another
        node wrote them into a copy that goes when it stops; one on this machine wrote
        these very files, so `write_once` finds them there). A name that is not a
        transcript's is refused, not written."""
        for rel, data in files:
            if _TRANSCRIPT_NAME.fullmatch(rel) is None:
                raise InfrastructureError(
                    f"a worker returned a model transcript named {rel[:120]!r}, which is not "
                    "a transcript's name (XX/KEY.json); nothing of its cohort was committed"
                )
            group.write_once(self.ws.transcripts / rel, data)

    def _check_and_render(self, committed: list[_Judged], rows: list[CommitRow]) -> None:
        for j, row in zip(committed, rows, strict=True):
            assert j.commit is not None
            if row.version != j.commit.version:  # the ledger moved under the batch
                raise InfrastructureError(
                    f"{j.artifact_id}: committed as version {row.version}, but its trace says "
                    f"{j.commit.version}; another process wrote the ledger during the batch"
                )
            if self.chapters is None:
                continue
            try:  # a derived view: recovery re-renders it
                artifact = Artifact.model_validate_json(j.commit.data)
                write_chapter(self.ws, self.chapters, artifact, row, j.summary.attempts)
            except (PackError, OSError) as exc:  # after the commit point: it stands
                _log.warning("chapter of %s not written: %s", j.artifact_id, exc)


_TRANSCRIPT_NAME = re.compile(r"[0-9A-Za-z_-]{1,2}/[0-9A-Za-z_-]{1,200}\.json")


def tail_cohort(left: int, cohort_size: int, workers: int) -> int:
    """How many of the `left` artifacts not yet sent the next cohort takes: `cohort_size`
    while more than `workers` full cohorts are left; then about 1/`workers` of what is
    left, down to a quarter of `cohort_size` (a cohort has fixed costs: ~0.15-0.25 s of a
    worker's gate calls on the facility pack), with no sliver left over for a cohort of
    its own. The workers then finish nearly together, and the commit after the last
    judged cohort (the batch's tail, workers idle) is of a small one: on 2,000 artifacts
    with 2 workers, cohorts of 256 x 6, 232, 116, 116 instead of 256 x 7, 208.

    Which artifacts share a cohort changes nothing committed (a run's verdicts depend on
    its own artifact); a trace's verdict records say how many were judged together."""
    floor = max(1, cohort_size // 4)
    size = min(cohort_size, max(floor, -(-left // workers)))
    if left <= cohort_size and left - size < floor:
        size = left
    return max(1, min(size, left))


def has_result(fut: Future[CohortResult]) -> bool:
    """The cohort has its result (a future that failed or is pending has not)."""
    return fut.done() and not fut.cancelled() and fut.exception() is None


def _commit_row(j: _Judged) -> tuple[str, str, str, str, int, str, str]:
    c = j.commit
    assert c is not None
    return (j.artifact_id, c.digest, c.mdigest, j.run_id, c.trace_seq, c.trace_hash, c.at)


def _hold_row(j: _Judged) -> tuple[str, str, str, str, int, str, str, str]:
    h = j.hold
    assert h is not None
    return (j.artifact_id, h.digest, h.mdigest, j.run_id, h.trace_seq, h.trace_hash, h.at, h.why)


def _with_batch(spec: WorkerSpec, batch_id: str) -> WorkerSpec:
    return replace(spec, batch_id=batch_id)

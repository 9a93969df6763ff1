"""`membrane batch --workers N` (harness.pool, issue 16): worker processes judge cohorts,
the parent is the single commit point. The committed corpus is one process's, byte for
byte; a worker killed mid-cohort loses nothing; a parent killed inside a cohort's commit
leaves what recovery sweeps (the crash matrix has those points: tests/reliability)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

import pytest

from harness import api
from harness.chapters import ChapterRenderer, check_chapter
from harness.cli import main
from harness.corpus import CorpusStream
from harness.engines import DeferredProposer
from harness.errors import ConfigError, InfrastructureError
from harness.ledger import Ledger
from harness.lifeline import BATCH_GC_THRESHOLD
from harness.models import Artifact
from harness.pack import Pack, load_pack
from harness.pool import (
    CohortResult,
    CohortTask,
    PoolBatchRun,
    Prestarted,
    ProcessExecutor,
    WorkerSpec,
    tail_cohort,
)
from harness.report import recorded_report
from harness.store import recover
from harness.workspace import SyncGroup, Workspace
from tests.harness.pooled import PACK, alive, children, cmdline, demo_corpus, published, verify
from tests.proposers.conftest import offline_model, write_config
from tests.proposers.server import Responder, ScriptedServer


@pytest.mark.java
@pytest.mark.slow
def test_two_workers_commit_what_one_process_commits_byte_for_byte(
    one_process_48: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, one = one_process_48
    result = api.run_batch(tmp_path / "ws", corpus, PACK, cohort_size=8, workers=2, report=True)
    assert len(result.runs) == 48
    assert published(tmp_path / "ws") == published(one)
    verify(tmp_path / "ws", capsys)
    ref = Ledger.reader(Workspace(one).ledger_path)
    got = Ledger.reader(Workspace(tmp_path / "ws").ledger_path)
    try:  # the same runs, the same ends, the same learning records
        assert sorted((r.run_id, r.status) for r in got.runs()) == sorted(
            (r.run_id, r.status) for r in ref.runs()
        )
        assert len(got.outcome_records()) == len(ref.outcome_records())
        # each worker's run recorded what the report reads, as one process's runs do
        assert set(got.run_figures()) == {r.run_id for r in got.runs()} == set(ref.run_figures())
        # the workers rendered the chapters: each is what the batch's process (or recovery)
        # renders from the stored artifact and its ledger row
        commits = got.latest_commits()
        ref_rows = {r.artifact_id: r for r in ref.latest_commits()}
    finally:
        ref.close()
        got.close()
    renderer = ChapterRenderer(load_pack(PACK))
    current = Workspace(tmp_path / "ws").current
    assert len(commits) == len(ref_rows) > 0
    for row in commits:
        stored = Artifact.model_validate_json(
            (current / "artifacts" / f"{row.content_hash}.json").read_bytes()
        )
        attempts = json.loads((current / "metrics" / f"{row.metrics_hash}.json").read_bytes())
        chapter = (current / "chapters" / f"{row.artifact_id}.md").read_bytes()
        assert chapter == renderer.render(stored, row, attempts["attempts"])
        assert check_chapter(current / "chapters" / f"{row.artifact_id}.md", row) is None
        assert (row.version, row.content_hash) == (
            ref_rows[row.artifact_id].version,
            ref_rows[row.artifact_id].content_hash,
        )
    assert result.report is not None and result.report.source == "recorded"
    pack = load_pack(PACK)
    fast = recorded_report(Workspace(tmp_path / "ws"), pack).to_dict()
    with pytest.MonkeyPatch.context() as m:  # the same report from the runs' files
        m.setattr(Ledger, "run_figures", lambda self: {})
        assert recorded_report(Workspace(tmp_path / "ws"), pack).to_dict() == fast
    assert not _workers_left()  # the batch waited for them to exit
    # a rerun with workers skips everything it settled; the workers started for it while
    # the corpus was read are stopped, not left behind
    again = api.run_batch(tmp_path / "ws", corpus, PACK, cohort_size=8, workers=2)
    assert not again.runs and len(again.skipped) == 48
    assert not _workers_left()


def _workers_left() -> list[int]:
    return [p for p in workers_of(os.getpid()) if alive(p)]


def workers_of(pid: int) -> list[int]:
    """The pool workers among `pid`'s children: spawned ones run `spawn_main`, forked ones
    the parent's own command line (a JVM or a model server the test started runs another)."""
    own = cmdline(pid)
    return [p for p in children(pid) if "spawn_main" in (line := cmdline(p)) or line == own]


def test_workers_fork_only_from_one_thread_on_linux_unless_told_to_spawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Forked workers skip the imports (`Prestarted`); a process with another thread (a JVM,
    DuckDB's pool, a progress bar) may hold a lock a fork copies half-way: spawn then."""
    import subprocess
    import sys
    import threading

    from harness.pool import START_ENV, start_method

    probe = "from harness.pool import start_method; print(start_method())"
    env = {k: v for k, v in os.environ.items() if k != START_ENV}
    fresh = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    assert fresh.stdout.strip() == ("fork" if sys.platform == "linux" else "spawn")
    told = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True,
        env={**env, START_ENV: "spawn"},
    )
    assert told.stdout.strip() == "spawn"
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert start_method() == "spawn"
    finally:
        stop.set()
        other.join()
    monkeypatch.setattr(sys, "platform", "darwin")
    assert start_method() == "spawn"


@pytest.mark.java
@pytest.mark.slow
def test_forked_workers_of_the_cli_commit_what_one_process_commits(
    one_process_48: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`membrane batch --workers 2` from a fresh process forks its workers (one thread, on
    Linux): the same committed bytes as one process, traces that verify, no worker left.
    The command's process and each worker tune their garbage collector (`batch_gc`)."""
    import subprocess
    import sys

    if sys.platform != "linux":
        pytest.skip("workers fork on Linux only")
    corpus, one = one_process_48
    probe = tmp_path / "probe.py"  # the CLI, telling how its workers started
    probe.write_text(
        "import gc, sys\n"
        "import harness.pool as pool\n"
        "real = pool.Prestarted.__init__\n"
        "def init(self, *args):\n"
        "    real(self, *args)\n"
        "    print('started by', self.method, file=sys.stderr)\n"
        "    print('worker gc', self.pool.submit(gc.get_threshold).result(), file=sys.stderr)\n"
        "pool.Prestarted.__init__ = init\n"
        "from harness.cli import main\n"
        "code = main()\n"
        "print('batch gc', gc.get_threshold(), gc.get_freeze_count() > 0, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    argv = [sys.executable, str(probe), "batch", str(corpus), "--pack", str(PACK), "--json"]
    argv += ["-w", str(tmp_path / "ws"), "--workers", "2", "--cohort-size", "8", "--no-progress"]
    env = {k: v for k, v in os.environ.items() if k != "MEMBRANE_WORKER_START"}
    done = subprocess.run(
        argv, check=False, capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "started by fork" in done.stderr
    assert f"worker gc {BATCH_GC_THRESHOLD}" in done.stderr
    assert f"batch gc {BATCH_GC_THRESHOLD} True" in done.stderr
    assert published(tmp_path / "ws") == published(one)
    verify(tmp_path / "ws", capsys)


def test_prestarted_workers_no_batch_took_are_stopped_at_once() -> None:
    """`--workers` spawns its processes before the session is open (they import while
    the parent reads the corpus); with nothing to judge they are stopped, not awaited."""
    pre = Prestarted(2)
    pids = list(pre.pool._processes)  # a spawn-context pool started one per call sent
    assert len(pids) == 2 and all(alive(p) for p in pids)
    started = time.monotonic()
    pre.release()
    assert time.monotonic() - started < 10
    assert not any(alive(p) for p in pids)


def test_workers_are_prestarted_only_when_the_corpus_may_hold_work(tmp_path: Path) -> None:
    """A rerun whose inputs the ledger all settled starts no worker before it knows."""
    ws = Workspace(tmp_path / "ws")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a"}\n\n{"id": "c"}\n')
    assert api._may_have_work(ws, corpus)  # no ledger yet
    ws.ledger_path.parent.mkdir(parents=True)
    ledger = Ledger(ws.ledger_path)
    try:
        h = "0" * 64
        ledger.apply_cohort(
            [("a.r1", "a", "b", h, "t"), ("c.r1", "c", "b", h, "t")],
            [("a", h, h, "a.r1", 3, "x", "t")],
            [],
            [("a.r1", "COMMITTED", 5, "z", None, None)],  # c.r1 never ended
        )
        assert ledger.settled_count() == 1 and api._may_have_work(ws, corpus)
        ledger.finish_runs([("c.r1", "EXHAUSTED", 5, "w", None, None)])
        assert ledger.settled_count() == 2 and not api._may_have_work(ws, corpus)
        with open(corpus, "a") as fh:
            fh.write('{"id": "d"}\n')  # one more line than settled inputs
        assert api._may_have_work(ws, corpus)
    finally:
        ledger.close()


def test_a_deferred_proposer_is_built_on_first_use_and_once() -> None:
    events: list[str] = []

    class Built:
        name = "built"

        def propose(self, request: object) -> object:
            return request

        def close(self) -> None:
            events.append("closed")

    def build() -> Built:
        events.append("built")
        return Built()

    deferred = DeferredProposer(build)  # type: ignore[arg-type]
    deferred.close()  # never built: nothing to build or close
    assert events == []
    assert deferred.name == "built" and deferred.propose("r") == "r"  # type: ignore[arg-type]
    deferred.close()
    assert events == ["built", "closed"]


@pytest.mark.java
def test_the_parent_of_workers_builds_no_proposer_but_names_a_bad_one(tmp_path: Path) -> None:
    with api.open_session(tmp_path / "ws", PACK, judge=False) as session:
        proposer = session.engines.proposer
        assert isinstance(proposer, DeferredProposer) and proposer._built is None
    with pytest.raises(ConfigError, match="unknown proposer 'nope'"):
        api.open_session(tmp_path / "ws", PACK, proposer="nope", judge=False)


@pytest.mark.java
@pytest.mark.slow
def test_a_worker_killed_mid_batch_loses_nothing(
    one_process_48: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, one = one_process_48
    root = tmp_path / "ws"
    pack = load_pack(PACK)
    with api.open_session(root, PACK) as session:
        recover(session.ws, session.ledger)
        batch = session.batch(CorpusStream(corpus, pack), cohort_size=8, workers=2)
        killed = False
        for cycle in batch:
            if not killed and cycle.done:  # one cohort committed, others in flight
                pids = batch.executor.pids()  # type: ignore[attr-defined]
                os.kill(pids[0], signal.SIGKILL)
                killed = True
        assert killed and batch.restarts >= 1  # type: ignore[attr-defined]
        assert len(batch.result.runs) == 48
    assert published(root) == published(one)
    verify(root, capsys)


def test_workers_must_be_a_small_count(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["batch", str(tmp_path / "c.jsonl"), "--workers", "-1", "-w", str(tmp_path)])
    assert caught.value.code == 2
    assert "not a number of workers from 0 to 64" in capsys.readouterr().err


def test_recovery_removes_traces_no_ledger_row_names(tmp_path: Path) -> None:
    """What a parent killed before a judged cohort's transaction leaves: traces of runs the
    ledger never registered (the rerun judges them again, under the same run ids)."""
    ws = Workspace(tmp_path)
    ws.ensure()
    ledger = Ledger(ws.ledger_path)
    try:
        ledger.start_runs([("a.r1", "a", "b", "0" * 64, "t")])
        ws.trace_path("a.r1").write_bytes(b"")
        ws.trace_path("b.r1").write_bytes(b'{"kind": "run_started"}\n')
        report = recover(ws, ledger)
    finally:
        ledger.close()
    assert ws.trace_path("a.r1").exists() and not ws.trace_path("b.r1").exists()
    assert report.orphans_removed >= 1


def test_apply_cohort_is_one_transaction(tmp_path: Path) -> None:
    """Registered, committed, held and anchored together, or none of it."""
    ledger = Ledger(tmp_path / "ledger.sqlite")
    try:
        h = "0" * 64
        rows = ledger.apply_cohort(
            [("a.r1", "a", "b", h, "t"), ("c.r1", "c", "b", h, "t")],
            [("a", h, h, "a.r1", 3, "x", "t")],
            [("c", h, h, "c.r1", 3, "y", "t", "spot-check")],
            [("a.r1", "COMMITTED", 5, "z", None, None), ("c.r1", "HELD", 5, "w", None, None)],
        )
        assert [(r.artifact_id, r.version) for r in rows] == [("a", 1)]
        assert {r.run_id: r.status for r in ledger.runs()} == {"a.r1": "COMMITTED", "c.r1": "HELD"}
        assert ledger.held_of_run("c.r1") is not None
        with pytest.raises(sqlite3.IntegrityError):  # a.r1 again (a bug): all rolls back
            ledger.apply_cohort(
                [("d.r1", "d", "b", h, "t"), ("a.r1", "a", "b", h, "t")],
                [("d", h, h, "d.r1", 1, "x", "t")],
                [],
                [],
            )
        assert ledger.run("d.r1") is None and ledger.latest_versions(["d", "a"]) == {"d": 0, "a": 1}
    finally:
        ledger.close()


@pytest.mark.java
@pytest.mark.slow
def test_the_workers_die_with_a_killed_batch(
    one_process_48: tuple[Path, Path], tmp_path: Path
) -> None:
    """A SIGKILLed `membrane batch --workers 2` leaves no worker (each holds a JVM)."""
    import subprocess
    import sys
    import time

    corpus, _one = one_process_48
    argv = [sys.executable, "-m", "harness", "batch", str(corpus), "--pack", str(PACK)]
    argv += ["-w", str(tmp_path / "ws"), "--workers", "2", "--cohort-size", "8", "--no-progress"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        workers: list[int] = []
        while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            workers = workers_of(proc.pid)
        assert len(workers) == 2, "the workers did not start"
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(w) for w in workers)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.java
@pytest.mark.slow
def test_model_transcripts_a_worker_wrote_elsewhere_reach_the_workspace(
    tmp_path: Path,
    serve: Callable[[Responder], ScriptedServer],
    facility_pack: Pack,
) -> None:
    """A worker on another node (a Ray actor) judges in a copy of the workspace, removed
    when it stops: the model transcripts it wrote come back with the cohort's result and
    are stored in the batch's own workspace (so `--replay` and audits find them)."""
    from ontology import load_pools

    srv = serve(offline_model(facility_pack, load_pools(facility_pack, tmp_path / "pools")))
    root, elsewhere = tmp_path / "ws", tmp_path / "node-copy"
    write_config(root, srv.base_url)
    write_config(elsewhere, srv.base_url)
    corpus = demo_corpus(tmp_path, 12)
    with api.open_session(root, PACK, judge=False) as session:
        batch = session.batch(CorpusStream(corpus, session.pack), cohort_size=4, workers=1)
        assert isinstance(batch, PoolBatchRun)
        moved = replace(batch.spec, root=str(elsewhere))  # what an unpacked shipment is
        batch.spec = moved
        batch.executor = ProcessExecutor(1, moved)
        for _ in batch:
            pass
        assert len(batch.result.runs) == 12
    assert srv.requests, "the model was not asked: nothing to carry back"

    def files(ws: Path) -> dict[str, bytes]:
        base = ws / ".membrane" / "transcripts"
        return {p.relative_to(base).as_posix(): p.read_bytes() for p in base.rglob("*.json")}

    theirs = files(elsewhere)
    assert theirs and files(root) == theirs


def test_a_transcript_name_that_is_not_one_is_refused(tmp_path: Path) -> None:
    """What a worker returns is checked before it is written: a path out of the
    transcripts folder stops the batch and writes nothing."""
    run = object.__new__(PoolBatchRun)
    run.ws = Workspace(tmp_path)
    group = SyncGroup()
    for bad in ("../../escape.json", "/etc/x.json", "ab/../../x.json", "ab/key.txt"):
        with pytest.raises(InfrastructureError, match="not a transcript's name"):
            run._write_transcripts([(bad, b"{}")], group)
    assert not any(tmp_path.rglob("*.json")) and not len(group)
    run._write_transcripts([("ab/" + "ab" * 32 + ".json", b"{}")], group)
    assert (tmp_path / ".membrane" / "transcripts" / "ab").is_dir() and len(group) == 1


@pytest.mark.java
def test_a_worker_builds_its_gates_early_and_uses_them_only_for_the_same_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`prewarm` builds the gates from what the batch knows before its session (workspace,
    pack, options) while the session opens; the first cohort's spec takes them when it
    says the same, else they are closed and built again. Nothing is built early when the
    ontology is not classified yet (the batch's process classifies it, once), and an early
    build that fails is left to the first cohort."""
    from harness import pool
    from harness.engines import EngineOptions
    from harness.models import Effector
    from ontology import load_pools

    monkeypatch.setattr(pool, "die_with_parent", lambda: None)  # this is pytest's process
    monkeypatch.setattr(pool.signal, "signal", lambda *a: None)
    monkeypatch.setattr(pool, "_STATE", {})
    monkeypatch.setattr(pool, "_EARLY", {})
    root = tmp_path / "ws"
    pack = load_pack(PACK)
    early = pool.EarlySpec(str(root.resolve()), str(PACK.resolve()), EngineOptions())

    pool._build_early(early)  # not classified in this workspace (tests share no cache)
    assert pool._EARLY == {}
    load_pools(pack, Workspace(root).cache)  # what the batch's session does
    pool._build_early(replace(early, pack=str(tmp_path / "no-such-pack")))
    assert pool._EARLY == {}  # a failure: left to the first cohort

    pool._build_early(early)
    built = pool._EARLY["gates"].gates
    assert set(built) == {Effector.VALUE_GATE, Effector.RI_GATE, Effector.PROSE_GATE}
    spec = pool.WorkerSpec(
        root=early.root, pack=early.pack, options=EngineOptions(), overlay=None, lessons=(),
        batch_id="b", pack_name="facility", pack_version="1",
    )
    pool.init_worker(spec)
    assert pool._EARLY == {}
    assert all(pool._STATE["worker"].eng.gates[k] is built[k] for k in built)

    pool._build_early(early)
    stale = pool._EARLY["gates"].gates
    closed: list[object] = []
    monkeypatch.setattr(pool._Early, "close", lambda self: closed.append(self.gates))
    pool.init_worker(replace(spec, options=EngineOptions(max_attempts=2)))
    assert closed == [stale] and pool._EARLY == {}
    assert not any(pool._STATE["worker"].eng.gates[k] is stale[k] for k in stale)


def test_the_progress_bar_starts_its_thread_with_the_batch_not_before() -> None:
    """`membrane batch`'s bar refreshes from a thread of its own: started before the batch,
    it would make `--workers` spawn its workers (`start_method`) instead of forking them."""
    import threading

    from harness import commands

    before = set(threading.enumerate())
    with commands._progress(True) as update:
        assert update is not None and set(threading.enumerate()) <= before
        update(0, 10)
        refresh = [t for t in threading.enumerate() if t not in before]
        assert refresh, "the bar refreshes from a thread once shown"
        update(10, 10)
    for thread in refresh:  # stopped with the bar
        thread.join(timeout=10)
        assert not thread.is_alive()


def _sizes(total: int, cohort_size: int, workers: int) -> list[int]:
    out = []
    while left := total - sum(out):
        out.append(tail_cohort(left, cohort_size, workers))
    return out


def test_the_last_cohorts_are_smaller_so_the_workers_finish_together() -> None:
    """Once fewer than `workers` full cohorts are left, each cohort takes about 1/`workers`
    of what is left, down to a quarter cohort, leaving no sliver of its own."""
    assert _sizes(2000, 256, 2) == [256] * 6 + [232, 116, 116]  # was [256] * 7 + [208]
    assert _sizes(1800, 256, 2) == [256] * 6 + [132, 66, 66]  # was [256] * 7 + [8]
    assert _sizes(48, 8, 2) == [8] * 5 + [4, 2, 2]
    assert _sizes(1000, 256, 1) == [256, 256, 256, 232]  # one worker: as one process
    assert _sizes(100, 256, 2) == [100]  # less than a cohort: one
    for total in range(1, 3000, 7):
        for workers in (1, 2, 3, 4):
            sizes = _sizes(total, 256, workers)
            assert sum(sizes) == total and max(sizes) <= 256
            assert min(sizes[:-1], default=64) >= 64  # a quarter cohort at least


class _Immediate:
    """An executor whose cohorts are judged the moment they are sent (judging nothing):
    what `PoolBatchRun` sends."""

    died: tuple[type[BaseException], ...] = ()

    def __init__(self, events: list[tuple[str, int, int]]) -> None:
        self.events = events

    def submit(self, task: CohortTask) -> Future[CohortResult]:
        self.events.append(("sent", task.index, len(task.runs)))
        fut: Future[CohortResult] = Future()
        fut.set_result(CohortResult(task.index, [], 0, None))
        return fut

    def replace(
        self, failed: Future[CohortResult], inflight: Collection[Future[CohortResult]]
    ) -> list[Future[CohortResult]]:
        raise AssertionError("no worker dies here")

    def shutdown(self, wait: bool = True) -> None:
        pass


@pytest.mark.java
def test_the_pool_sends_smaller_last_cohorts(tmp_path: Path) -> None:
    """The cohorts `PoolBatchRun` sends are `tail_cohort`'s sizes, committed in turn."""
    events: list[tuple[str, int, int]] = []
    corpus = demo_corpus(tmp_path, 48)
    with api.open_session(tmp_path / "ws", PACK, judge=False) as session:
        spec = WorkerSpec("", "", session.options, None, (), "", "", "")
        batch = PoolBatchRun(
            session.ws,
            session.engines,
            CorpusStream(corpus, session.pack),
            workers=2,
            spec=spec,
            executor=lambda workers, spec: _Immediate(events),
            cohort_size=8,
        )
        cycles = list(batch)  # one a committed cohort
    assert [n for _, _, n in events] == [8] * 5 + [4, 2, 2]
    assert len(cycles) == 8  # each committed in turn (of no runs: judged by nothing)

"""The library API the CLI calls: one function per command. It never prints; progress goes
to an optional callback and results come back as data."""

from __future__ import annotations

import dataclasses
import functools
import getpass
import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from effectors.commit import Committer
from effectors.registry import GateContext, build_gate
from harness import review, teach
from harness.chapters import ChapterRenderer
from harness.corpus import CorpusRead, CorpusStream, read_artifact_file
from harness.corrections import session as corrections
from harness.driver import BatchResult, BatchRun, RunSummary
from harness.engines import (
    EngineOptions,
    build_engines,
    build_gates,
    gate_context,
    proposer_id_for,
    utc_now,
)
from harness.errors import ConfigError, CorpusError, StorageError
from harness.learning import report as learn_report
from harness.learning.lesson_store import LessonStore
from harness.learning.outcomes import RelaxRecord
from harness.learning.store import load_state, rebuild_state
from harness.ledger import Ledger
from harness.locate import workspace_pack
from harness.models import Artifact
from harness.pack import Pack, load_pack
from harness.pools import Pools
from harness.ports import Gate
from harness.report import (
    NotRecorded,
    Report,
    build_report,
    fallback_note,
    recorded_or_reaudit,
    recorded_report,
)
from harness.run import Engines, Overlay
from harness.scratch import Scratch
from harness.storage import writable
from harness.store import recover
from harness.workspace import Config, Workspace, atomic_write

if TYPE_CHECKING:
    from harness.pool import Prestarted  # spawns processes: imported where used

__all__ = [
    "BatchResult",
    "BatchRun",
    "RunSummary",
    "Session",
    "init_workspace",
    "learn_accept",
    "learn_decline",
    "learn_lessons",
    "learn_relax",
    "learn_report_data",
    "learn_status",
    "open_session",
    "pack_ruleset",
    "revert_artifact",
    "review_approve",
    "review_list",
    "review_reject",
    "review_show",
    "run_batch",
    "run_refine",
    "utc_now",
]

Progress = Callable[[int, int], None]  # (finished runs, total runs)


def init_workspace(root: Path, pack: str | None = None) -> list[str]:
    """Create the workspace folders and a membrane.toml (kept if it exists). Returns what it
    made. `pack` (as given on the command line, relative to the current folder) is checked
    and recorded relative to the workspace, which is how membrane.toml paths resolve."""
    ws = Workspace(root)
    pack_entry = None
    if pack:
        pack_root = load_pack(Path(pack)).root.resolve()  # a bad pack fails here, exit 2
        try:
            pack_entry = os.path.relpath(pack_root, root.resolve())
        except ValueError:  # another drive
            pack_entry = str(pack_root)
    made = [
        str(p.relative_to(root))
        for p in (ws.scratch, ws.current, ws.traces, ws.state)
        if not p.exists()
    ]
    ws.ensure()
    if not ws.config_path.exists():
        lines = [
            "# membrane workspace configuration",
            'proposer = "offline"',
            "seed = 0",
            "cohort_size = 256",
        ]
        if pack_entry:
            lines.insert(1, f"pack = {json.dumps(pack_entry)}")  # a TOML basic string
        atomic_write(ws.config_path, ("\n".join(lines) + "\n").encode())
        made.append(ws.config_path.name)
    return made


@dataclass
class Session:
    """A workspace opened for writing: pack, pools, gates, proposer, ledger. A context
    manager: `with open_session(root) as s: s.batch(artifacts).run()`."""

    ws: Workspace
    config: Config
    pack: Pack
    pools: Pools
    ledger: Ledger
    engines: Engines
    replay: bool = False  # model answers from the transcripts only
    options: EngineOptions = field(default_factory=EngineOptions)
    batches: list[BatchRun] = field(default_factory=list)  # closed with the session

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def batch(
        self,
        artifacts: Iterable[Artifact],
        *,
        cohort_size: int | None = None,
        batch_id: str | None = None,
        workers: int = 0,
        executor: str = "process",
        ray_address: str | None = None,
        prestarted: Prestarted | None = None,
    ) -> BatchRun:
        """The batch driver over this session's engines (skips settled inputs); with
        `workers`, cohorts are judged by that many worker processes (`harness.pool`;
        `prestarted`: a `harness.pool.Prestarted` of as many, spawned earlier), or Ray
        actors with `executor="ray"` (`harness.pool_ray`)."""
        size = cohort_size or self.config.cohort_size
        pack, version = self.pack.name, self.pack.config.pack.version
        if executor == "ray" and not workers:
            workers = 2
        if workers:
            from harness.pool import (  # spawns processes: on demand
                Executor,
                PoolBatchRun,
                ProcessExecutor,
                WorkerSpec,
            )

            factory: Callable[[int, WorkerSpec], Executor] = functools.partial(
                ProcessExecutor, prestarted=prestarted
            )
            if executor == "ray":
                from harness.pool_ray import ray_executor  # the optional extra membrane[ray]

                factory = ray_executor(ray_address)

            spec = WorkerSpec(
                root=str(self.ws.root.resolve()),
                pack=str(self.pack.root.resolve()),
                options=self.options,
                overlay=self.engines.overlay,
                lessons=self.engines.lessons,
                batch_id=batch_id or "",
                pack_name=pack,
                pack_version=version,
            )
            chapters = getattr(self.engines.committer, "chapters", None)
            pooled = PoolBatchRun(
                self.ws,
                self.engines,
                artifacts,
                workers=workers,
                spec=spec,
                executor=factory,
                chapters=chapters,
                cohort_size=size,
                batch_id=batch_id,
                pack=pack,
                pack_version=version,
            )
            self.batches.append(pooled)  # its workers are waited for on close
            return pooled
        return BatchRun(
            self.ws,
            self.engines,
            artifacts,
            cohort_size=size,
            batch_id=batch_id,
            pack=pack,
            pack_version=version,
        )

    def gates(self) -> list[Gate]:
        """The three gates, built now if the session was opened without them."""
        if not self.engines.gates:
            self.engines.gates = build_gates(
                gate_context(self.ws, self.config, self.pack, self.pools, self.options)
            )
        return list(self.engines.gates.values())

    def close(self) -> None:
        """Release the ledger, the gates' and the proposer's resources (PROSE_GATE's worker
        processes, hermes' worker process) and wait for `--workers`' processes to exit."""
        try:
            for batch in self.batches:
                batch.close()
            for engine in (*self.engines.gates.values(), self.engines.proposer):
                closer = getattr(engine, "close", None)
                if callable(closer):
                    closer()
        finally:
            self.ledger.close()


def _pack_for(ws: Workspace, config: Config, pack_arg: str | Path | None) -> Pack:
    """--pack, else membrane.toml's `pack`, else the pack the workspace's last batch ran
    with (the ledger remembers it)."""
    return workspace_pack(ws, config, pack_arg)


def _check_ledger_present(ws: Workspace) -> None:
    """A workspace with traces or committed files but no ledger lost its ledger: run ids
    would restart and append to old traces (issue 17, item 6). Refuse, saying what to do."""
    if ws.ledger_path.exists():
        return
    traces = sum(1 for _ in ws.traces.glob("*.jsonl")) if ws.traces.is_dir() else 0
    folder = ws.current / "artifacts"
    objects = sum(1 for _ in folder.glob("*.json")) if folder.is_dir() else 0
    if traces or objects:
        raise ConfigError(
            f"the ledger is missing but the workspace holds {traces} trace(s) and {objects} "
            "committed file(s): runs would restart their numbering over old traces",
            file=ws.ledger_path,
            hint="restore .membrane/ledger.sqlite from a backup, or refine into a new workspace",
        )


def _check_ontology(ws: Workspace, pack: Pack) -> None:
    """The pack's ontology errors that need no reasoner (a parse error, a bad binding, not
    OWL 2 DL), raised before the workspace is written to (~45 ms; nothing when cached)."""
    from ontology import check_ontology

    check_ontology(pack, ws.cache)


def open_session(
    root: Path,
    pack_arg: str | Path | None = None,
    *,
    proposer: str | None = None,
    max_attempts: int | None = None,
    replay: bool = False,
    clock: Callable[[], str] = utc_now,
    judge: bool = True,
) -> Session:
    """Open a workspace for a batch. `replay`: the proposer answers from the transcripts in
    `.membrane/transcripts/` only, with no network. Without `judge` the gates are built
    only if asked for (`Session.gates()`): `--workers`' own process judges nothing."""
    ws = Workspace(root)
    config = ws.config()
    pack = _pack_for(ws, config, pack_arg)
    _check_ledger_present(ws)
    _check_ontology(ws, pack)  # a broken or non-DL ontology: exit 2 before anything is written
    ws.ensure()
    from ontology import load_pools  # owlready2 is heavy: trace commands never import it

    pools = load_pools(pack, ws.cache)
    ledger = Ledger(ws.ledger_path)
    ledger.remember_pack(str(pack.root.resolve()))
    opts = EngineOptions(proposer=proposer, max_attempts=max_attempts, replay=replay)
    proposer_id = proposer_id_for(config, proposer or config.proposer)
    engines = build_engines(
        ws,
        config,
        pack,
        pools,
        opts,
        ledger=ledger,
        committer=Committer(ws, ledger, ChapterRenderer(pack)),
        scratch=Scratch(ws.scratch, ws.inputs),
        overlay=_overlay(ws, ledger, proposer_id) if config.learning.apply_overlays else None,
        lessons=_lessons(ws, config, pack, proposer_id)
        + corrections.batch_hints(ws, config, pack.name, clock, replay),
        clock=clock,
        judge=judge,
    )
    return Session(ws, config, pack, pools, ledger, engines, replay, opts)


def _lessons(ws: Workspace, config: Config, pack: Pack, proposer_id: str) -> tuple[Any, ...]:
    if not config.learning.lessons:
        return ()
    teach.strategy()  # a bad LEARNING_* variable: exit 2 before anything runs
    store = teach.open_store(ws, config)
    try:
        return teach.hints(store, pack, proposer_id, config.learning.lesson_context_bytes)
    finally:
        store.close()


def _teach(session: Session, result: BatchResult, clock: Callable[[], str]) -> None:
    """The lesson pass after a batch (signals, then proposals through the gate)."""
    if not session.config.learning.lessons:
        return
    store = teach.open_store(session.ws, session.config)
    try:
        result.lessons = teach.after_batch(
            session.ws,
            session.ledger,
            session.pack,
            session.engines.proposer_id,
            result.runs,
            store,
            clock(),
            datetime.now(UTC),
            teach.reviewer_for(session.ws, session.config, replay=session.replay),
        )
    finally:
        store.close()


def _overlay(ws: Workspace, ledger: Ledger, proposer_id: str) -> Overlay | None:
    """The proposer's learned overlay, the state first brought up to date with the outcome
    log (records a killed batch left unfolded)."""
    learn_report.run_cycle(ws, ledger, utc_now())
    learned = load_state(ws)[0].overlays.get(proposer_id)
    if learned is None:
        return None
    return Overlay(
        max_attempts=learned.max_retries + 1,
        require_approval=learned.require_approval,
        risk_multiplier=learned.risk_multiplier,
        proposer=proposer_id,
        reason=learned.reason,
    )


def run_batch(
    root: Path,
    corpus: Path,
    pack_arg: str | Path | None = None,
    *,
    proposer: str | None = None,
    max_attempts: int | None = None,
    cohort_size: int | None = None,
    workers: int = 0,
    executor: str = "process",
    ray_address: str | None = None,
    strict_input: bool = False,
    report: bool = False,
    replay: bool = False,
    progress: Progress | None = None,
    clock: Callable[[], str] = utc_now,
) -> BatchResult:
    """`membrane batch`: refine every valid artifact of a corpus; report the bad lines."""
    ws = Workspace(root)
    config = ws.config()
    pack = _pack_for(ws, config, pack_arg)
    if strict_input:  # stop at a bad line before anything runs (a second pass below)
        for error in _corpus_errors(corpus, pack):
            raise error
    elif not _has_lines(corpus):
        raise _empty_corpus(corpus)
    if executor == "ray":  # no Ray installed: say so before anything is opened
        from harness.pool_ray import ray_executor

        ray_executor(ray_address)
    _check_ontology(ws, pack)  # before the lock: it creates .membrane/
    prestarted: Prestarted | None = None
    if workers and executor == "process" and _may_have_work(ws, corpus):
        from harness.pool import EarlySpec, Prestarted

        # the workers start their JVM and build their gates while this process opens the
        # session and reads the corpus; released (stopped) whatever happens below
        opts = EngineOptions(proposer=proposer, max_attempts=max_attempts, replay=replay)
        early = EarlySpec(str(ws.root.resolve()), str(pack.root.resolve()), opts)
        prestarted = Prestarted(workers, early)
    try:
        with ws.lock():
            session = open_session(
                root,
                pack.root,
                proposer=proposer,
                max_attempts=max_attempts,
                replay=replay,
                clock=clock,
                judge=not (workers or executor == "ray"),  # the workers judge: no gates here
            )
            with session:
                rec = recover(session.ws, session.ledger)
                # streamed (issue 22): the batch keeps the bytes of what is left to do, not
                # the corpus; every line is read and checked before any run starts
                read = CorpusStream(corpus, pack, session.ledger.artifact_ids())
                batch = session.batch(
                    read,
                    cohort_size=cohort_size,
                    workers=workers,
                    executor=executor,
                    ray_address=ray_address,
                    prestarted=prestarted,
                )
                if strict_input and read.errors:
                    raise read.errors[0]  # an id that differs in case from the workspace's
                if progress:
                    progress(0, batch.total)
                for cycle in batch:
                    if progress:
                        progress(cycle.done, cycle.total)
                result = batch.result  # `--workers`' processes exit meanwhile (session.close)
                result.learning = learn_report.run_cycle(session.ws, session.ledger, clock())
                _teach(session, result, clock)
                result.errors = read.errors
                result.recovered = {k: v for k, v in vars(rec).items() if v}
                if report:
                    result.report = recorded_or_reaudit(session.ws, session.pack, session.gates)
                    result.report.learning = learn_report_data(root, update=False)
                return result
    finally:
        if prestarted is not None:
            prestarted.release()


def _may_have_work(ws: Workspace, corpus: Path) -> bool:
    """Whether prestarted workers may be needed: not when the ledger settled at least as
    many inputs as the corpus has lines (a rerun, whose workers would only be stopped
    again). A guess: a wrong one costs time (workers started on demand), never a result."""
    if not ws.ledger_path.is_file():
        return True
    try:
        with open(corpus, "rb") as fh:
            lines = sum(1 for line in fh if line.strip())
        ledger = Ledger.reader(ws.ledger_path)
        try:
            return ledger.settled_count() < lines
        finally:
            ledger.close()
    except (OSError, sqlite3.Error, StorageError):  # the session says what is wrong
        return True


def _corpus_errors(corpus: Path, pack: Pack) -> list[CorpusError]:
    """Every bad line of a corpus (nothing kept of the good ones); an empty corpus is one."""
    stream = CorpusStream(corpus, pack)
    for _ in stream:
        pass
    if not stream.count and not stream.errors:
        return [_empty_corpus(corpus)]
    return stream.errors


def _has_lines(corpus: Path) -> bool:
    if not corpus.is_file():
        raise CorpusError("corpus file not found", file=corpus, hint="pass a .jsonl file")
    with open(corpus, "rb") as fh:
        return any(line.strip() for line in fh)


def _empty_corpus(corpus: Path) -> CorpusError:
    return CorpusError(
        "the corpus has no artifacts (the file is empty or all blank lines)",
        file=corpus,
        hint="one JSON artifact per line; see the corpus format in docs/reference/corpus-format.md",
    )


def run_refine(
    root: Path,
    artifact_path: Path,
    pack_arg: str | Path | None = None,
    *,
    proposer: str | None = None,
    max_attempts: int | None = None,
    replay: bool = False,
    clock: Callable[[], str] = utc_now,
) -> BatchResult:
    """`membrane refine`: one artifact, a cohort of one. A bad file raises (exit 2)."""
    ws = Workspace(root)
    pack = _pack_for(ws, ws.config(), pack_arg)
    artifact = read_artifact_file(artifact_path, pack)
    _check_ontology(ws, pack)  # before the lock: it creates .membrane/
    with ws.lock():
        session = open_session(
            root,
            pack.root,
            proposer=proposer,
            max_attempts=max_attempts,
            replay=replay,
            clock=clock,
        )
        with session:
            recover(session.ws, session.ledger)
            one = CorpusRead(artifacts=[artifact], lines=[None])
            one.refuse_case_collisions(session.ledger.artifact_ids(), artifact_path)
            if one.errors:
                raise one.errors[0]
            result = session.batch([artifact], cohort_size=1).run()
            result.learning = learn_report.run_cycle(session.ws, session.ledger, clock())
            _teach(session, result, clock)
            return result


def _require_runs(ws: Workspace) -> None:
    ws.require_runs()


def run_report(root: Path, pack_arg: str | Path | None = None, *, reaudit: bool = False) -> Report:
    """`membrane report`: baseline (the inputs) against the refined corpus, from what the
    runs recorded; `reaudit`: every gate judges every artifact again (also the fallback for
    a workspace without those records). On a read-only workspace the gates audit without
    writing it (their caches in a temporary folder)."""
    ws = Workspace(root)
    _require_runs(ws)
    rep, why = None, None
    if not reaudit:
        try:
            rep = recorded_report(ws, _pack_for(ws, ws.config(), pack_arg))
        except NotRecorded as exc:
            why = str(exc)
    if rep is None and not writable(ws.state):
        rep = _read_only_report(ws, pack_arg)
    elif rep is None:
        with open_session(root, pack_arg) as session:
            rep = build_report(session.ws, session.pack, session.gates())
    if why:
        rep.notes.insert(0, fallback_note(why))
    rep.learning = learn_report_data(root, update=False)
    return rep


def _read_only_report(ws: Workspace, pack_arg: str | Path | None) -> Report:
    from ontology import load_pools

    config = ws.config()
    pack = _pack_for(ws, config, pack_arg)
    with tempfile.TemporaryDirectory(prefix="membrane-report-") as tmp:
        cache = ws.cache if writable(ws.cache) else Path(tmp)
        ctx = GateContext(
            pack=pack, pools=load_pools(pack, cache), cache_dir=cache, seed=config.seed
        )
        gates = [build_gate(name, ctx) for name in ("value_gate", "ri_gate", "prose_gate")]
        try:
            return build_report(ws, pack, gates)
        finally:
            for gate in gates:
                closer = getattr(gate, "close", None)
                if callable(closer):
                    closer()


def pack_ruleset(root: Path, pack_arg: str | Path) -> str:
    """The agenda ruleset a pack chooses (`[policy] rules`)."""
    ws = Workspace(root)
    return _pack_for(ws, ws.config(), pack_arg).config.policy.rules


@contextmanager
def _writing(root: Path) -> Iterator[tuple[Workspace, Ledger]]:
    """The workspace locked and its ledger open, settled first (a kill's leftovers)."""
    ws = Workspace(root)
    _require_runs(ws)
    with ws.lock():
        ledger = Ledger(ws.ledger_path)
        try:
            recover(ws, ledger)
            yield ws, ledger
        finally:
            ledger.close()


def learn_status(
    root: Path, *, rebuild: bool = False, update: bool = True, now: datetime | None = None
) -> dict[str, Any]:
    """`membrane learn status|rebuild`: the learned state (brought up to date with the
    outcome log, or recomputed from it), per proposer, with stale overlays flagged.
    `update=False` reads the saved state as it is (no lock, nothing written), and so does
    a status on a read-only workspace (it cannot save a cycle)."""
    if not rebuild and (not update or not writable(Workspace(root).state)):
        ws = Workspace(root)
        _require_runs(ws)
        return learn_report.status(ws, load_state(ws)[0], None, now or datetime.now(UTC))
    with _writing(root) as (ws, ledger):
        if rebuild:
            state, same = rebuild_state(ws, ledger)
        else:
            learn_report.run_cycle(ws, ledger, utc_now())
            state, same = load_state(ws)[0], None
    return learn_report.status(ws, state, same, now or datetime.now(UTC))


def learn_report_data(
    root: Path, *, update: bool = True, now: datetime | None = None
) -> dict[str, Any]:
    """`membrane learn report`: strongest and weakest proposers, patterns seen 3+ times,
    overlays (stale ones flagged) and what the last cycle changed."""
    return learn_report.report_data(Workspace(root), learn_status(root, update=update, now=now))


def learn_relax(root: Path, proposer: str, reason: str) -> dict[str, Any]:
    """`membrane learn relax`: a person drops a proposer's overlay (logged as a relax record
    in the outcome log; its overlay numbers start again from here)."""
    if not reason.strip():
        raise ConfigError("relaxing an overlay needs a reason", hint="pass --reason TEXT")
    with _writing(root) as (ws, ledger):
        learn_report.run_cycle(ws, ledger, utc_now())
        state = load_state(ws)[0]
        if proposer not in state.overlays:
            known = ", ".join(sorted(state.overlays)) or "none"
            raise ConfigError(
                f"proposer {proposer!r} has no overlay to relax",
                hint=f"proposers under an overlay: {known} (see `membrane learn status`)",
            )
        try:
            record = RelaxRecord(proposer=proposer, reason=reason.strip(), at=utc_now())
        except ValidationError as exc:
            raise ConfigError(f"cannot record this relax: {exc.errors()[0]['msg']}") from exc
        before = state.overlays[proposer]
        ledger.append_outcome("relax", record.model_dump_json())
        learn_report.run_cycle(ws, ledger, record.at)
    return {"proposer": proposer, "relaxed": dataclasses.asdict(before), "reason": record.reason}


def learn_lessons(root: Path, status: str | None = None) -> list[dict[str, Any]]:
    """`membrane learn lessons`: every lesson with its confidence, support, scope, status."""
    ws = Workspace(root)
    _require_runs(ws)
    path = ws.state / "learning" / "lessons.sqlite"
    if writable(ws.state):
        store = teach.open_store(ws, ws.config())
    elif path.is_file():  # a read-only workspace: read the store as it is
        store = LessonStore.reader(path)
    else:
        return []
    try:
        lessons = store.lessons(status=(status,) if status else None)
        return [
            {
                "key": x.key,
                "status": x.status,
                "target": x.target,
                "confidence": x.confidence,
                "support": x.support,
                "scope": x.scope.model_dump(exclude_none=True),
                "text": x.text,
                "advice": x.advice.model_dump(mode="json", exclude_none=True) if x.advice else None,
                "payload": x.payload,
                "signals": len(store.signals(x.key)),
                "locked": x.locked,
                "updated_at": x.updated_at,
            }
            for x in sorted(lessons, key=lambda x: (-x.confidence, x.key))
        ]
    finally:
        store.close()


def learn_accept(root: Path, key: str, note: str = "", pack_arg: str | Path | None = None) -> dict[str, Any]:
    """`membrane learn accept KEY`: a person accepts a pending ontology lesson (checked
    again by the reasoner; written out as the pack edit to make)."""
    ws = Workspace(root)
    _require_runs(ws)
    pack = _pack_for(ws, ws.config(), pack_arg)
    with ws.lock():
        return teach.accept(ws, ws.config(), pack, key, note, utc_now())


def learn_decline(root: Path, key: str, reason: str) -> dict[str, Any]:
    """`membrane learn decline KEY --reason TEXT`."""
    ws = Workspace(root)
    _require_runs(ws)
    with ws.lock():
        return teach.decline(ws, ws.config(), key, reason, utc_now())


def _reviewer() -> str:
    return os.environ.get("MEMBRANE_REVIEWER") or getpass.getuser()


def review_list(root: Path) -> list[dict[str, Any]]:
    """`membrane review list`: held runs waiting for a person, oldest first, with why."""
    ws = Workspace(root)
    _require_runs(ws)
    ledger = Ledger.reader(ws.ledger_path)  # reading only
    try:
        return [dataclasses.asdict(h) for h in review.held_runs(ledger)]
    finally:
        ledger.close()


def review_show(root: Path, run_id: str) -> dict[str, Any]:
    """`membrane review show RUN`: the held artifact, its verdicts, a diff against the input."""
    ws = Workspace(root)
    _require_runs(ws)
    ledger = Ledger.reader(ws.ledger_path)  # reading only
    try:
        return review.show(ws, ledger, run_id)
    finally:
        ledger.close()


def _review_note(
    ws: Workspace, ledger: Ledger, run_id: str, note: str, clock: Callable[[], str]
) -> str:
    """A review's note as the trace and the log keep it: scrubbed of secrets; with
    corrections on, captured as a correction and kept as a reference only."""
    if not note:
        return note
    held = ledger.held_of_run(run_id)
    if held is None or held.status != "pending":
        return note  # review.approve/reject refuses it, saying why
    return corrections.review_note(ws, ws.config(), held.artifact_id, note, _reviewer(), clock())


def review_approve(
    root: Path, run_id: str, note: str = "", clock: Callable[[], str] = utc_now
) -> dict[str, Any]:
    """`membrane review approve RUN`: publish a held artifact through the commit protocol."""
    with _writing(root) as (ws, ledger):
        note = _review_note(ws, ledger, run_id, note, clock)
        row = review.approve(ws, ledger, run_id, by=_reviewer(), note=note, clock=clock)
        learn_report.run_cycle(ws, ledger, row.committed_at)
        teach.review_signal(ws, ws.config(), run_id, True, note, row.committed_at)
    return dataclasses.asdict(row)


def review_reject(
    root: Path, run_id: str, reason: str, clock: Callable[[], str] = utc_now, note: str = ""
) -> dict[str, Any]:
    """`membrane review reject RUN --reason TEXT [--note TEXT]`: nothing is published."""
    with _writing(root) as (ws, ledger):
        reason = _review_note(ws, ledger, run_id, f"{reason}\n{note}" if note else reason, clock)
        review.reject(ws, ledger, run_id, by=_reviewer(), reason=reason, clock=clock)
        at = clock()
        learn_report.run_cycle(ws, ledger, at)
        teach.review_signal(ws, ws.config(), run_id, False, reason, at)
    return {"run_id": run_id, "status": "REJECTED", "reason": reason}


def revert_artifact(
    root: Path,
    artifact_id: str,
    to: int | None = None,
    note: str = "",
    clock: Callable[[], str] = utc_now,
) -> dict[str, Any]:
    """`membrane revert ARTIFACT [--to VERSION]`: an older version becomes the newest."""
    with _writing(root) as (ws, ledger):
        undone = ledger.latest_commit(artifact_id)
        row = review.revert(ws, ledger, artifact_id, to=to, by=_reviewer(), note=note, clock=clock)
        learn_report.run_cycle(ws, ledger, row.committed_at)
        if undone is not None:
            teach.revert_signal(ws, ws.config(), undone.run_id, row.committed_at)
    return dataclasses.asdict(row)


def run_recover(root: Path) -> dict[str, int]:
    """`membrane recover`: settle interrupted runs and rebuild current/ from the ledger."""
    ws = Workspace(root)
    if not ws.ledger_path.exists():
        raise ConfigError("nothing to recover: no ledger here", file=ws.root)
    with ws.lock():
        ledger = Ledger(ws.ledger_path)
        try:
            return dict(vars(recover(ws, ledger)))
        finally:
            ledger.close()

"""The library API the CLI calls: one function per command. It never prints; progress goes
to an optional callback and results come back as data."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from effectors.commit import Committer, artifact_bytes, content_hash, rebuild_view, recover
from effectors.registry import GateContext, build_gate, build_proposer
from harness.agenda import Agenda
from harness.corpus import read_artifact_file, read_corpus
from harness.errors import ConfigError, CorpusError
from harness.ledger import Ledger
from harness.loop import Engines, Run, start_cohort, step_cohort
from harness.models import Artifact, RunState
from harness.models import Effector as E
from harness.pack import Pack, load_pack
from harness.pools import Pools
from harness.report import Report, build_report
from harness.trace import TraceWriter
from harness.workspace import Config, Workspace, atomic_write

__all__ = [
    "BatchResult",
    "RunSummary",
    "Session",
    "init_workspace",
    "open_session",
    "run_batch",
    "run_refine",
    "utc_now",
]

Progress = Callable[[int, int], None]  # (finished runs, total runs)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def init_workspace(root: Path, pack: str | None = None) -> list[str]:
    """Create the workspace folders and a membrane.toml (kept if it exists). Returns what it made."""
    ws = Workspace(root)
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
        if pack:
            lines.insert(1, f'pack = "{pack}"')
        atomic_write(ws.config_path, ("\n".join(lines) + "\n").encode())
        made.append(ws.config_path.name)
    return made


@dataclass
class Session:
    """A workspace opened for writing: pack, pools, gates, proposer, ledger (recovered)."""

    ws: Workspace
    config: Config
    pack: Pack
    pools: Pools
    ledger: Ledger
    engines: Engines

    def close(self) -> None:
        """Release the ledger, the gates' and the proposer's resources (PROSE_GATE's worker
        processes, hermes' worker process)."""
        try:
            for engine in (*self.engines.gates.values(), self.engines.proposer):
                closer = getattr(engine, "close", None)
                if callable(closer):
                    closer()
        finally:
            self.ledger.close()


def _pack_for(ws: Workspace, config: Config, pack_arg: str | Path | None) -> Pack:
    chosen = pack_arg or config.pack
    if chosen is None:
        raise ConfigError("no pack given", hint="pass --pack DIR or set `pack` in membrane.toml")
    path = Path(chosen)
    return load_pack(path if path.is_absolute() or pack_arg else ws.root / path)


def open_session(
    root: Path,
    pack_arg: str | Path | None = None,
    *,
    proposer: str | None = None,
    max_attempts: int | None = None,
    replay: bool = False,
    clock: Callable[[], str] = utc_now,
) -> Session:
    """Open a workspace for a batch. `replay`: the proposer answers from the transcripts in
    `.membrane/transcripts/` only, with no network."""
    ws = Workspace(root)
    config = ws.config()
    pack = _pack_for(ws, config, pack_arg)
    ws.ensure()
    from ontology import load_pools  # owlready2 is heavy: trace commands never import it

    pools = load_pools(pack, ws.cache)
    ctx = GateContext(
        pack=pack,
        pools=pools,
        cache_dir=ws.cache,
        seed=config.seed,
        llm=config.llm.with_env(os.environ),
        transcripts=ws.transcripts,
        replay=replay,
        prose_workers=config.prose_workers,
    )
    gates = {
        E.VALUE_GATE: build_gate("value_gate", ctx),
        E.RI_GATE: build_gate("ri_gate", ctx),
        E.PROSE_GATE: build_gate("prose_gate", ctx),
    }
    ledger = Ledger(ws.ledger_path)
    engines = Engines(
        agenda=Agenda(),
        gates=gates,
        proposer=build_proposer(proposer or config.proposer, ctx),
        committer=Committer(ws, ledger),
        ledger=ledger,
        clock=clock,
        max_attempts=max_attempts or config.max_attempts or pack.config.policy.max_attempts,
        has_prose=pack.config.prose.enabled,
        require_approval=pack.config.policy.require_approval,
        max_tokens_per_run=config.max_tokens_per_run,
        max_tokens_per_batch=config.max_tokens_per_batch,
    )
    return Session(ws, config, pack, pools, ledger, engines)


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
    errors: list[CorpusError] = field(default_factory=list)
    seconds: float = 0.0
    recovered: dict[str, int] = field(default_factory=dict)
    report: Report | None = None
    halted: str | None = None  # why the batch stopped early (an endpoint is unavailable)
    not_started: int = 0  # artifacts left for a later batch because it stopped
    tokens: int = 0  # model tokens this batch spent

    def count(self, state: RunState) -> int:
        return sum(1 for r in self.runs if r.state == state.value)

    @property
    def artifacts_per_s(self) -> float:
        return len(self.runs) / self.seconds if self.seconds > 0 else 0.0


def _new_run(session: Session, artifact: Artifact, data: bytes) -> Run:
    digest = content_hash(data)  # the input's identity: resume skips a settled (id, hash)
    path = session.ws.inputs / f"{digest}.json"
    if not path.exists():
        atomic_write(path, data)
    run_id = f"{artifact.id}.r{session.ledger.count_runs(artifact.id) + 1}"
    trace = TraceWriter(session.ws.trace_path(run_id), run_id, session.engines.clock)
    return Run(run_id=run_id, input=artifact, input_hash=digest, trace=trace)


def refine_artifacts(
    session: Session,
    artifacts: Sequence[Artifact],
    *,
    cohort_size: int,
    progress: Progress | None = None,
    batch_id: str | None = None,
) -> BatchResult:
    """Refine artifacts in cohorts; skips those already settled for the same input."""
    t0 = time.perf_counter()
    result = BatchResult()
    done = session.ledger.finished_inputs()
    todo: list[tuple[Artifact, bytes]] = []
    for a in artifacts:
        data = artifact_bytes(a)
        if (a.id, content_hash(data)) in done:
            result.skipped.append(a.id)
        else:
            todo.append((a, data))
    batch_id = batch_id or f"b-{session.engines.clock()}"
    finished = 0
    if progress:
        progress(0, len(todo))
    for i in range(0, len(todo), cohort_size):
        runs = [_new_run(session, a, data) for a, data in todo[i : i + cohort_size]]
        start_cohort(
            runs, session.engines, batch_id, session.pack.name, session.pack.config.pack.version
        )
        while any(not r.state.terminal for r in runs):
            step_cohort(runs, session.engines)
            now = finished + sum(1 for r in runs if r.state.terminal)
            if progress:
                progress(now, len(todo))
        finished += len(runs)
        rebuild_view(session.ws, session.ledger)
        result.runs.extend(
            RunSummary(r.input.id, r.run_id, r.state.value, r.attempt, dict(r.codes), r.error)
            for r in runs
        )
        if session.engines.halted:  # an endpoint is down: start no more runs
            result.halted = session.engines.halted
            result.not_started = max(0, len(todo) - i - len(runs))
            break
    result.tokens = session.engines.batch_tokens
    result.seconds = time.perf_counter() - t0
    return result


def run_batch(
    root: Path,
    corpus: Path,
    pack_arg: str | Path | None = None,
    *,
    proposer: str | None = None,
    max_attempts: int | None = None,
    cohort_size: int | None = None,
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
    read = read_corpus(corpus, pack)
    if strict_input and read.errors:
        raise read.errors[0]
    with ws.lock():
        session = open_session(
            root,
            pack.root,
            proposer=proposer,
            max_attempts=max_attempts,
            replay=replay,
            clock=clock,
        )
        try:
            rec = recover(session.ws, session.ledger)
            result = refine_artifacts(
                session,
                read.artifacts,
                cohort_size=cohort_size or config.cohort_size,
                progress=progress,
            )
            result.errors = read.errors
            result.recovered = {k: v for k, v in vars(rec).items() if v}
            if report:
                result.report = build_report(
                    session.ws, session.pack, list(session.engines.gates.values())
                )
            return result
        finally:
            session.close()


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
    with ws.lock():
        session = open_session(
            root,
            pack.root,
            proposer=proposer,
            max_attempts=max_attempts,
            replay=replay,
            clock=clock,
        )
        try:
            recover(session.ws, session.ledger)
            return refine_artifacts(session, [artifact], cohort_size=1)
        finally:
            session.close()


def run_report(root: Path, pack_arg: str | Path | None = None) -> Report:
    """`membrane report`: baseline (the inputs) against the refined corpus."""
    ws = Workspace(root)
    if not ws.ledger_path.exists():
        raise ConfigError(
            "nothing has run in this workspace yet",
            file=ws.root,
            hint="run `membrane batch` first, or pass --workspace",
        )
    session = open_session(root, pack_arg)
    try:
        return build_report(session.ws, session.pack, list(session.engines.gates.values()))
    finally:
        session.close()


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

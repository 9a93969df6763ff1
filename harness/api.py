"""The library API the CLI calls: one function per command. It never prints; progress goes
to an optional callback and results come back as data."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from effectors.commit import Committer
from effectors.critique import Critic
from effectors.registry import GateContext, build_gate, build_proposer
from harness.agenda import Agenda
from harness.corpus import read_artifact_file, read_corpus
from harness.driver import BatchResult, BatchRun, RunSummary
from harness.errors import ConfigError
from harness.learning.store import learning_cycle, load_state, rebuild_state
from harness.ledger import Ledger
from harness.models import Artifact
from harness.models import Effector as E
from harness.pack import Pack, load_pack
from harness.pools import Pools
from harness.report import Report, build_report
from harness.run import Engines, Overlay
from harness.scratch import Scratch
from harness.store import recover
from harness.workspace import Config, Workspace, atomic_write

__all__ = [
    "BatchResult",
    "BatchRun",
    "RunSummary",
    "Session",
    "init_workspace",
    "learn_status",
    "open_session",
    "pack_ruleset",
    "run_batch",
    "run_refine",
    "utc_now",
]

Progress = Callable[[int, int], None]  # (finished runs, total runs)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


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
    ) -> BatchRun:
        """The batch driver over this session's engines (skips settled inputs)."""
        return BatchRun(
            self.ws,
            self.engines,
            artifacts,
            cohort_size=cohort_size or self.config.cohort_size,
            batch_id=batch_id,
            pack=self.pack.name,
            pack_version=self.pack.config.pack.version,
        )

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
    """--pack, else membrane.toml's `pack`, else the pack the workspace's last batch ran
    with (the ledger remembers it)."""
    chosen: str | Path | None = pack_arg or config.pack
    if chosen is None and ws.ledger_path.exists():
        ledger = Ledger(ws.ledger_path)
        try:
            chosen = ledger.last_pack()
        finally:
            ledger.close()
    if chosen is None:
        raise ConfigError("no pack given", hint="pass --pack DIR or set `pack` in membrane.toml")
    path = Path(chosen)
    return load_pack(path if path.is_absolute() or pack_arg else ws.root / path)


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
) -> Session:
    """Open a workspace for a batch. `replay`: the proposer answers from the transcripts in
    `.membrane/transcripts/` only, with no network."""
    ws = Workspace(root)
    config = ws.config()
    pack = _pack_for(ws, config, pack_arg)
    _check_ontology(ws, pack)  # a broken or non-DL ontology: exit 2 before anything is written
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
    ledger.remember_pack(str(pack.root.resolve()))
    proposer_name = proposer or config.proposer
    llm = config.llm.with_env(os.environ)
    proposer_id = (
        proposer_name
        if proposer_name == "offline" or not llm.model
        else f"{proposer_name}:{llm.model}"
    )
    engines = Engines(
        agenda=Agenda.named(pack.config.policy.rules),
        gates=gates,
        proposer=build_proposer(proposer_name, ctx),
        proposer_id=proposer_id,
        overlay=_overlay(ws, ledger, proposer_id) if config.learning.apply_overlays else None,
        spot_check=pack.config.policy.spot_check,
        critic=Critic(),
        committer=Committer(ws, ledger),
        scratch=Scratch(ws.scratch, ws.inputs),
        ledger=ledger,
        clock=clock,
        max_attempts=max_attempts or config.max_attempts or pack.config.policy.max_attempts,
        has_prose=pack.config.prose.enabled,
        require_approval=pack.config.policy.require_approval,
        max_tokens_per_run=config.max_tokens_per_run,
        max_tokens_per_batch=config.max_tokens_per_batch,
    )
    return Session(ws, config, pack, pools, ledger, engines)


def _overlay(ws: Workspace, ledger: Ledger, proposer_id: str) -> Overlay | None:
    """The proposer's learned overlay, the state first brought up to date with the outcome
    log (records a killed batch left unfolded)."""
    learning_cycle(ws, ledger)
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
            rec = recover(session.ws, session.ledger)
            batch = session.batch(read.artifacts, cohort_size=cohort_size)
            if progress:
                progress(0, batch.total)
            for cycle in batch:
                if progress:
                    progress(cycle.done, cycle.total)
            result = batch.result
            result.learning = learning_cycle(session.ws, session.ledger)
            result.errors = read.errors
            result.recovered = {k: v for k, v in vars(rec).items() if v}
            if report:
                result.report = build_report(
                    session.ws, session.pack, list(session.engines.gates.values())
                )
            return result


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
            result = session.batch([artifact], cohort_size=1).run()
            result.learning = learning_cycle(session.ws, session.ledger)
            return result


def _require_runs(ws: Workspace) -> None:
    if not ws.ledger_path.exists():
        raise ConfigError(
            "nothing has run in this workspace yet",
            file=ws.root,
            hint="run `membrane batch` first, or pass --workspace",
        )


def run_report(root: Path, pack_arg: str | Path | None = None) -> Report:
    """`membrane report`: baseline (the inputs) against the refined corpus."""
    ws = Workspace(root)
    _require_runs(ws)
    with open_session(root, pack_arg) as session:
        return build_report(session.ws, session.pack, list(session.engines.gates.values()))


def pack_ruleset(root: Path, pack_arg: str | Path) -> str:
    """The agenda ruleset a pack chooses (`[policy] rules`)."""
    ws = Workspace(root)
    return _pack_for(ws, ws.config(), pack_arg).config.policy.rules


def learn_status(root: Path, *, rebuild: bool = False) -> dict[str, Any]:
    """`membrane learn status|rebuild`: the learned state (brought up to date with the
    outcome log, or recomputed from it), per proposer; overlays are reported, not applied."""
    ws = Workspace(root)
    _require_runs(ws)
    with ws.lock():
        ledger = Ledger(ws.ledger_path)
        try:
            if rebuild:
                state, same = rebuild_state(ws, ledger)
            else:
                learning_cycle(ws, ledger)
                state, same = load_state(ws)[0], None
        finally:
            ledger.close()
    return {
        "records": state.records,
        "rebuilt_equals_incremental": same,
        "proposers": {
            name: {
                "runs": st.runs,
                "settled": st.settled,
                "success_rate": round(st.successes / st.settled, 4) if st.settled else None,
                "avg_retries": round(st.retries / st.runs, 4) if st.runs else None,
                "quality": round(st.quality / st.runs, 4) if st.runs else None,
                "reliability": st.reliability,
                "overlay": dataclasses.asdict(state.overlays[name])
                if name in state.overlays
                else None,
            }
            for name, st in sorted(state.by_proposer.items())
        },
        "patterns": [
            {
                "key": p.key,
                "occurrences": p.occurrences,
                "confidence": p.confidence,
                "last_seen": p.last_seen,
                "fix_hint": p.fix_hint,
            }
            for p in sorted(state.patterns.values(), key=lambda p: (-p.occurrences, p.key))
        ],
    }


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

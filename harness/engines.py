"""The engines of a batch, built from a pack and a workspace: once in the process that
runs the batch (`harness.api.open_session`), and once in each worker of `--workers N`
(`harness.pool`), which is handed the learned overlay and lessons the parent read so the
workers decide as the parent would."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from effectors.critique import Critic
from effectors.registry import GateContext, build_gate, build_proposer, proposers
from harness.agenda import Agenda
from harness.corrections import session as corrections
from harness.ledger import Ledger
from harness.models import Effector as E
from harness.models import Proposal, ProposalRequest
from harness.pack import Pack
from harness.pools import Pools
from harness.ports import Committer, Gate, Proposer
from harness.run import Engines, Overlay
from harness.scratch import Scratch
from harness.workspace import Config, Workspace

__all__ = [
    "DeferredProposer",
    "EngineOptions",
    "build_engines",
    "build_gates",
    "gate_context",
    "proposer_id_for",
    "utc_now",
]


# the last whole second utc_now formatted, and its text (one tuple: swapped whole)
_SECOND: list[tuple[int, str]] = [(-1, "")]


def utc_now() -> str:
    """The clock of every batch: UTC, microseconds; the same text as
    `datetime.now(UTC).isoformat(timespec="microseconds")` (which floors the system
    clock's nanoseconds to microseconds too), with the date and time of day formatted
    once a second (a batch reads the clock for every trace record, issue 16)."""
    sec, us = divmod(time.time_ns() // 1000, 1_000_000)
    last, text = _SECOND[0]
    if sec != last:
        text = datetime.fromtimestamp(sec, UTC).isoformat(timespec="seconds")[:-6]  # "+00:00"
        _SECOND[0] = (sec, text)
    return f"{text}.{us:06d}+00:00"


@dataclass(frozen=True)
class EngineOptions:
    """What a batch's caller chose, beside the pack and `membrane.toml` (picklable: a
    worker is handed it)."""

    proposer: str | None = None  # None: `proposer` in membrane.toml
    max_attempts: int | None = None
    replay: bool = False


def proposer_id_for(config: Config, proposer_name: str) -> str:
    """Whose outcomes these are: `offline`, `openai:<model>`."""
    llm = config.llm.with_env(os.environ)
    if proposer_name == "offline" or not llm.model:
        return proposer_name
    return f"{proposer_name}:{llm.model}"


def gate_context(
    ws: Workspace, config: Config, pack: Pack, pools: Pools, opts: EngineOptions
) -> GateContext:
    return GateContext(
        pack=pack,
        pools=pools,
        cache_dir=ws.cache,
        seed=config.seed,
        llm=config.llm.with_env(os.environ),
        transcripts=ws.transcripts,
        replay=opts.replay,
        prose_workers=config.prose_workers,
        acp=config.acp,
    )


def build_gates(ctx: GateContext) -> dict[E, Gate]:
    """VALUE_GATE, RI_GATE and PROSE_GATE, in the order a run meets them."""
    return {
        E.VALUE_GATE: build_gate("value_gate", ctx),
        E.RI_GATE: build_gate("ri_gate", ctx),
        E.PROSE_GATE: build_gate("prose_gate", ctx),
    }


class DeferredProposer:
    """The proposer of a process that may never propose (the parent of `--workers`, whose
    workers propose; a rerun with nothing left to do): built on first use (its name too),
    not at start-up (~0.1 s for the offline one). `build_engines` checks the name is a
    registered proposer first."""

    def __init__(self, build: Callable[[], Proposer]) -> None:
        self._build = build
        self._built: Proposer | None = None

    def _get(self) -> Proposer:
        if self._built is None:
            self._built = self._build()
        return self._built

    @property
    def name(self) -> str:
        return self._get().name

    def propose(self, request: ProposalRequest) -> Proposal:
        return self._get().propose(request)

    def close(self) -> None:
        closer = getattr(self._built, "close", None)
        if callable(closer):
            closer()


def build_engines(
    ws: Workspace,
    config: Config,
    pack: Pack,
    pools: Pools,
    opts: EngineOptions,
    *,
    ledger: Ledger,
    committer: Committer,
    scratch: Scratch,
    overlay: Overlay | None,
    lessons: tuple[Any, ...],
    clock: Callable[[], str],
    judge: bool = True,
    gates: Mapping[E, Gate] | None = None,
) -> Engines:
    """Gates, proposer, agenda and policy for one process. Without `judge` (the parent of
    `--workers`, which only commits) no gate is built (`build_gates` when it must);
    `gates` built already from the same workspace, config, pack, pools and options (a
    `--workers` worker builds them while the batch opens its session) are used as they are. The
    proposer is built when first used (`DeferredProposer`) without `judge` and for the
    built-in offline one, which can raise nothing the gates did not (a setup error of
    another one, e.g. a model endpoint's settings, is still raised here)."""
    ctx = gate_context(ws, config, pack, pools, opts)
    proposer_name = opts.proposer or config.proposer

    def proposer() -> Proposer:
        return corrections.watched(build_proposer(proposer_name, ctx), ws, config, clock)

    if not judge and proposer_name not in proposers():  # the error now, not in a worker
        build_proposer(proposer_name, ctx)
    deferred = not judge or proposer_name == "offline"
    return Engines(
        agenda=Agenda.named(pack.config.policy.rules),
        gates=dict(gates) if gates is not None else build_gates(ctx) if judge else {},
        proposer=DeferredProposer(proposer) if deferred else proposer(),
        proposer_id=proposer_id_for(config, proposer_name),
        overlay=overlay,
        lessons=lessons,
        spot_check=pack.config.policy.spot_check,
        critic=Critic(pack),
        committer=committer,
        scratch=scratch,
        ledger=ledger,
        clock=clock,
        max_attempts=opts.max_attempts or config.max_attempts or pack.config.policy.max_attempts,
        has_prose=pack.config.prose.enabled,
        require_approval=pack.config.policy.require_approval,
        max_tokens_per_run=config.max_tokens_per_run,
        max_tokens_per_batch=config.max_tokens_per_batch,
    )

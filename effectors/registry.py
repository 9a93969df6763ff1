"""Registries of gates and proposers. Built-ins register through the same calls a user's
plugin would use (`register_proposer("mine", factory)`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from effectors.base import Gate, Proposer
from harness.errors import ConfigError
from harness.pack import Pack
from harness.pools import Pools
from harness.workspace import AcpConfig, LlmConfig

__all__ = [
    "GateContext",
    "build_gate",
    "build_proposer",
    "gates",
    "proposers",
    "register_gate",
    "register_proposer",
]


@dataclass(frozen=True)
class GateContext:
    """What a gate or proposer factory gets. `llm` are the endpoint settings (`[llm]` with
    environment overrides applied); `transcripts` is where model transcripts are cached
    (None: no cache); `replay` asks a proposer to answer from the transcripts only;
    `prose_workers` the processes PROSE_GATE may use on a large cohort (0: one per CPU);
    `acp` the `[acp]` settings of the `acp` proposer's agent."""

    pack: Pack
    pools: Pools
    cache_dir: Path
    seed: int = 0
    llm: LlmConfig = field(default_factory=LlmConfig)
    transcripts: Path | None = None
    replay: bool = False
    prose_workers: int = 1
    acp: AcpConfig = field(default_factory=AcpConfig)


GateFactory = Callable[[GateContext], Gate]
ProposerFactory = Callable[[GateContext], Proposer]
# a user's registration always wins over a built-in, whichever comes first
_GATES: dict[str, GateFactory] = {}
_PROPOSERS: dict[str, ProposerFactory] = {}


def register_gate(name: str, factory: GateFactory) -> None:
    _GATES[name] = factory


def register_proposer(name: str, factory: ProposerFactory) -> None:
    _PROPOSERS[name] = factory


def proposers() -> list[str]:
    return sorted({**_BUILTIN_PROPOSERS, **_PROPOSERS})


def gates() -> list[str]:
    return sorted({**_BUILTIN_GATES, **_GATES})


def build_gate(name: str, ctx: GateContext) -> Gate:
    factory = _GATES.get(name) or _BUILTIN_GATES.get(name)
    if factory is None:
        raise ConfigError(f"unknown gate {name!r}", hint=f"choose one of: {', '.join(gates())}")
    return factory(ctx)


def build_proposer(name: str, ctx: GateContext) -> Proposer:
    factory = _PROPOSERS.get(name) or _BUILTIN_PROPOSERS.get(name)
    if factory is None:
        raise ConfigError(
            f"unknown proposer {name!r}", hint=f"choose one of: {', '.join(proposers())}"
        )
    return factory(ctx)


def _value_gate(ctx: GateContext) -> Gate:
    from effectors.value_gate import ValueGate

    return ValueGate.from_pack(ctx.pack, ctx.cache_dir)


def _ri_gate(ctx: GateContext) -> Gate:
    from effectors.ri_gate import RiGate

    return RiGate.from_pack(ctx.pack, ctx.pools)


def _prose_gate(ctx: GateContext) -> Gate:
    from effectors.prose_gate import ProseGate

    workers = ctx.prose_workers or os.cpu_count() or 1
    return ProseGate(ctx.pack, ctx.pools, workers=workers)


def _offline(ctx: GateContext) -> Proposer:
    from effectors.proposers.offline import OfflineProposer

    return OfflineProposer(ctx.pack, ctx.pools, seed=ctx.seed)


def _openai(ctx: GateContext) -> Proposer:
    from effectors.proposers.openai import OpenAIProposer
    from effectors.proposers.openai_client import TranscriptStore

    store = TranscriptStore(ctx.transcripts) if ctx.transcripts is not None else None
    return OpenAIProposer(
        ctx.pack, ctx.pools, ctx.llm, seed=ctx.seed, transcripts=store, replay=ctx.replay
    )


def _hermes(ctx: GateContext) -> Proposer:
    """hermes-agent in its own environment; its sandbox is `.membrane/hermes/`."""
    from effectors.proposers.hermes import HermesProposer
    from effectors.proposers.openai_client import TranscriptStore

    store = TranscriptStore(ctx.transcripts) if ctx.transcripts is not None else None
    return HermesProposer(
        ctx.pack,
        ctx.pools,
        ctx.llm,
        ctx.cache_dir.parent / "hermes",
        seed=ctx.seed,
        transcripts=store,
        replay=ctx.replay,
    )


def _acp(ctx: GateContext) -> Proposer:
    """Any ACP agent as a separate process (default: hermes through the locked launcher);
    its sandbox is `.membrane/acp/`."""
    from effectors.proposers.acp import AcpProposer
    from effectors.proposers.openai_client import TranscriptStore

    store = TranscriptStore(ctx.transcripts) if ctx.transcripts is not None else None
    return AcpProposer(
        ctx.pack,
        ctx.pools,
        ctx.acp,
        ctx.cache_dir.parent / "acp",
        seed=ctx.seed,
        transcripts=store,
        replay=ctx.replay,
        llm=ctx.llm,
    )


# Built-ins are looked up after a user's registrations: they are never dropped, and never
# replace a user's factory of the same name (register in any order).
_BUILTIN_GATES: dict[str, GateFactory] = {
    "value_gate": _value_gate,
    "ri_gate": _ri_gate,
    "prose_gate": _prose_gate,
}
_BUILTIN_PROPOSERS: dict[str, ProposerFactory] = {
    "offline": _offline,
    "openai": _openai,
    "hermes": _hermes,
    "acp": _acp,
}

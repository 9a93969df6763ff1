"""The ports the loop depends on: one-method protocols the effectors implement, and the one
boundary where a gate crash becomes data.

The loop (`harness.loop`, `harness.driver`) imports only these; the concrete effectors come
from the registry (`effectors.registry`) through `harness.api`. A user's gate or proposer
implements the same protocols and registers through the same calls as the built-ins.

Gates judge a *batch* of candidates in one call (a cohort of one for `refine`) and return
one `Verdict` per candidate, in order. A gate never raises for a bad artifact: it returns
critiques. If a gate raises anyway, `run_gate` turns that into crashed verdicts (which
count as failed), except for `InfrastructureError`, which the loop turns into FAILED runs
(fail closed: an engine that could not answer admits nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from harness.errors import InfrastructureError
from harness.models import (
    Artifact,
    Critique,
    CritiqueReport,
    Proposal,
    ProposalRequest,
    Spine,
    Verdict,
)

__all__ = ["Committer", "Critic", "Gate", "Pending", "Proposer", "Published", "run_gate"]


@runtime_checkable
class Gate(Protocol):
    """A deterministic judge. `name` is the effector name (`value_gate`, ...)."""

    @property
    def name(self) -> str: ...

    def judge(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        """One verdict per candidate, in the same order."""
        ...


@runtime_checkable
class Proposer(Protocol):
    """Proposes a full candidate artifact for one attempt. Its output is untrusted."""

    @property
    def name(self) -> str: ...

    def propose(self, request: ProposalRequest) -> Proposal: ...


class Critic(Protocol):
    """CRITIQUE: turns failed verdicts into the typed report and spine for the next attempt,
    and checks that a proposal kept the locked cells."""

    def report(
        self, failed: Sequence[Verdict], candidate: Artifact, attempt: int
    ) -> CritiqueReport: ...

    def locked_breaches(self, spine: Spine, proposal: Artifact) -> list[Critique]: ...


class Published(Protocol):
    """What COMMIT or HOLD stored: content-addressed artifact and metrics objects."""

    @property
    def content_hash(self) -> str: ...

    @property
    def metrics_hash(self) -> str: ...


@dataclass(frozen=True)
class Pending:
    """A run whose candidate passed every gate, waiting for its group's commit point."""

    run_id: str
    artifact: Artifact
    metrics: Mapping[str, Any]
    trace_seq: int
    trace_hash: str
    at: str


class Committer(Protocol):
    """COMMIT publishes (the ledger transaction is the commit point); HOLD stores the
    artifact for a human outside `current/`. A batch commits the runs of a cycle together
    (`commit_many`: one sync of their objects, one ledger transaction); `refine` and
    reviews commit one (`commit`)."""

    def commit_many(self, items: Sequence[Pending]) -> Sequence[Any]: ...

    def commit(
        self,
        run_id: str,
        artifact: Artifact,
        metrics: Mapping[str, Any],
        trace_seq: int,
        trace_hash: str,
        at: str,
    ) -> Any: ...

    def hold(
        self,
        run_id: str,
        artifact: Artifact,
        metrics: Mapping[str, Any],
        trace_seq: int,
        trace_hash: str,
        at: str,
        why: str = "",
    ) -> Any: ...


def run_gate(gate: Gate, candidates: Sequence[Artifact]) -> list[Verdict]:
    """Call a gate; a crash (other than an infrastructure error) becomes failed verdicts."""
    if not candidates:
        return []
    try:
        verdicts = gate.judge(candidates)
        if len(verdicts) != len(candidates):
            raise RuntimeError(
                f"{gate.name} returned {len(verdicts)} verdicts for {len(candidates)} candidates"
            )
        return verdicts
    except InfrastructureError:
        raise
    except Exception as exc:
        crit = Critique(
            code="gate.crashed",
            gate=gate.name,
            message=f"{gate.name} crashed: {type(exc).__name__}: {exc}",
            evidence=(repr(exc)[:2000],),
        )
        return [
            Verdict(gate=gate.name, artifact_id=a.id, critiques=(crit,), crashed=True)
            for a in candidates
        ]

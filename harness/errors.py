"""membrane's exceptions.

Setup errors (bad input found before anything runs) and run-time errors are different
types. A *bad artifact* is never an exception: gates return critiques for it.

    MembraneError
    ├── SetupError                 bad input found before a run starts (exit code 2)
    │   ├── PackError              a pack file is missing, does not parse or is inconsistent
    │   ├── CorpusError            a corpus line / artifact file is malformed
    │   ├── ConfigError            membrane.toml or a CLI option is wrong
    │   ├── StorageError           the workspace's storage refuses: read-only, full, a ledger
    │   │                          locked past the busy timeout or damaged (`harness.storage`)
    │   └── RulesError             a ruleset has gaps, overlaps, unknown facts or illegal
    │                              moves (every problem at once, when the agenda is built)
    ├── AgendaError                the rules emitted zero or several decisions (a rules bug)
    ├── IllegalTransition          the FSM was asked for a move its table does not have
    ├── InfrastructureError        an engine or the file system failed mid-run (run ends FAILED)
    │   └── EndpointUnavailable    a model endpoint is down (circuit open) or a replay misses:
    │                              the run ends FAILED and the batch stops (exit code 5)
    ├── ProposalFailed             a proposer's answer is unusable (malformed, schema-invalid,
    │                              oversized, ...): a failed attempt with its own critique code
    └── TraceError                 a trace or the ledger anchor does not verify

Every `SetupError` carries the file (and line, when there is one) and a hint saying what
to do, so the CLI can print one clear message.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.models import CallUsage

__all__ = [
    "AgendaError",
    "ConfigError",
    "CorpusError",
    "EndpointUnavailable",
    "IllegalTransition",
    "InfrastructureError",
    "MembraneError",
    "PackError",
    "ProposalFailed",
    "RulesError",
    "SetupError",
    "StorageError",
    "TraceError",
]


class MembraneError(Exception):
    """Base of every error membrane raises on purpose."""


class SetupError(MembraneError):
    """Bad input found before a run starts."""

    def __init__(
        self,
        message: str,
        *,
        file: Path | str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file + (f":{self.line}" if self.line is not None else "") + ": "
        text = where + self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class PackError(SetupError):
    """A pack file is missing, does not parse, or contradicts itself."""


class CorpusError(SetupError):
    """A corpus line or an artifact file is malformed."""


class ConfigError(SetupError):
    """The workspace configuration or a command-line option is wrong."""


class StorageError(SetupError):
    """The workspace's storage refused: a read-only folder, a full disk, a ledger another
    process holds locked past the busy timeout, a damaged ledger. Nothing partial is
    committed; once the cause is fixed, the same command resumes."""


class RulesError(SetupError):
    """A ruleset cannot decide every reachable fact combination exactly once with a legal
    move. `problems` lists every one found (gaps, overlaps, unknown facts, bad moves)."""

    def __init__(self, name: str, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:25]
        more = f"\n  ... and {len(problems) - 25} more" if len(problems) > 25 else ""
        super().__init__(
            f"ruleset {name!r} has {len(problems)} problem(s):\n  " + "\n  ".join(shown) + more,
            hint="every reachable fact combination needs exactly one rule with a legal trigger "
            "(`membrane rules show` prints the rules and the FSM)",
        )


class AgendaError(MembraneError):
    """The agenda's rules emitted zero or several decisions for one set of facts."""


class IllegalTransition(MembraneError):
    """The FSM was asked to fire a trigger that is not legal in its state."""


class InfrastructureError(MembraneError):
    """An engine, the file system or an endpoint failed; the run fails closed."""


class EndpointUnavailable(InfrastructureError):
    """A model endpoint is unavailable (its circuit breaker is open) or a `--replay` has no
    transcript for a request. The run fails closed and the batch stops starting new runs."""


class ProposalFailed(MembraneError):
    """A proposer's answer cannot be used: a failed attempt, never a crash.

    The loop rejects the attempt with a critique of `code` (e.g. `proposal.malformed_json`)
    before any gate sees it, and accounts the model calls in `usage`.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        evidence: tuple[str, ...] = (),
        usage: tuple[CallUsage, ...] = (),
    ) -> None:
        self.code = code
        self.message = message
        self.evidence = evidence
        self.usage = usage
        super().__init__(f"{code}: {message}")


class TraceError(MembraneError):
    """A trace file or its ledger anchor does not verify."""

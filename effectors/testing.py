"""Fakes shipped for users' tests: a scripted proposer and an instant gate.

    proposer = ScriptedProposer("fake", [first_artifact, RuntimeError("down"), fixed_artifact])
    gate = InstantGate("value_gate", lambda a: [] if a.prose else [some_critique])

Both record what they were called with (`requests`, `calls`) so tests can assert on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from harness.models import Artifact, Critique, Proposal, ProposalRequest, Verdict

__all__ = ["InstantGate", "ScriptedProposer", "VerdictFn"]

VerdictFn = Callable[[Artifact], "Verdict | Iterable[Critique] | None"]


class ScriptedProposer:
    """Returns the scripted artifacts in order; an `Exception` in the script is raised.

    Asking for more proposals than scripted raises `IndexError`.
    """

    def __init__(self, name: str, proposals: Sequence[Artifact | Exception]) -> None:
        self.name = name
        self._script = list(proposals)
        self.requests: list[ProposalRequest] = []

    @property
    def remaining(self) -> int:
        return len(self._script) - len(self.requests)

    def propose(self, request: ProposalRequest) -> Proposal:
        index = len(self.requests)
        self.requests.append(request)
        if index >= len(self._script):
            raise IndexError(
                f"ScriptedProposer {self.name!r} has only {len(self._script)} proposal(s)"
            )
        item = self._script[index]
        if isinstance(item, Exception):
            raise item
        return Proposal(artifact=item, proposer=self.name, notes=(f"scripted #{index + 1}",))


class InstantGate:
    """A gate that passes everything unless `verdict_fn` says otherwise.

    `verdict_fn(artifact)` may return a full `Verdict`, the critiques to report (an empty
    iterable passes), or None (pass).
    """

    def __init__(self, name: str, verdict_fn: VerdictFn | None = None) -> None:
        self.name = name
        self.verdict_fn = verdict_fn
        self.calls: list[list[str]] = []  # artifact ids per judge() call

    def judge(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        self.calls.append([a.id for a in candidates])
        return [self._one(a) for a in candidates]

    def _one(self, artifact: Artifact) -> Verdict:
        result = self.verdict_fn(artifact) if self.verdict_fn is not None else None
        if isinstance(result, Verdict):
            return result
        critiques = tuple(result) if result is not None else ()
        return Verdict(gate=self.name, artifact_id=artifact.id, critiques=critiques)

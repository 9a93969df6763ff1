"""The self-violation signal (`[learning.corrections] self_violation = true`, off by default).

A preference may carry a violation pattern: an RE2 regex and/or keywords. `ViolationWatch`
wraps the batch's proposer: after each proposal it looks for the patterns of the preferences
the proposer was given, in the proposal's prose and text cells, and records a match against
that preference (its `violations` count climbs; preferences are injected most-violated
first). It is precision-biased (keywords match whole words only; a pattern must match text
the proposal *changed* from its candidate, so a violation already in the input is not the
proposer's), it never throws (an unparseable pattern is a no-check; a store error is
swallowed and counted), and it never blocks or alters a proposal: the proposal it returns is
the one it got.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harness.corrections.wiring import PREFERENCE_PREFIX
from harness.learning.correction_store import CorrectionStore
from harness.learning.distill import Violation
from harness.models import Artifact, Proposal, ProposalRequest
from harness.ports import Proposer
from harness.saferegex import SafePattern, compile_safe

__all__ = ["Matcher", "ViolationWatch", "changed_text"]


@dataclass(frozen=True)
class Matcher:
    regex: SafePattern | None
    keywords: tuple[re.Pattern[str], ...]

    @classmethod
    def of(cls, v: Violation) -> Matcher | None:
        rx: SafePattern | None = None
        if v.regex:
            try:
                rx = compile_safe(v.regex)
            except ValueError:
                rx = None  # an unparseable pattern checks nothing
        kws = tuple(
            re.compile(rf"(?i)(?<![\w/-]){re.escape(k)}(?![\w/-])") for k in v.keywords if k.strip()
        )
        if rx is None and not kws:
            return None
        return cls(rx, kws)

    def hits(self, texts: Iterable[str]) -> bool:
        for t in texts:
            if self.regex is not None and self.regex.search(t):
                return True
            if any(k.search(t) for k in self.keywords):
                return True
        return False


def changed_text(before: Artifact, after: Artifact) -> list[str]:
    """The prose and text cells of `after` that differ from `before`."""
    out = [t for n, t in after.texts().items() if t and t != before.text(n)]
    for table, rows in after.tables.items():
        old_rows = before.tables.get(table, [])
        for i, row in enumerate(rows):
            old = old_rows[i] if i < len(old_rows) else {}
            for col, value in row.items():
                if isinstance(value, str) and old.get(col) != value:
                    out.append(value)
    return out


@dataclass
class ViolationWatch:
    """A Proposer that is the wrapped one, plus the self-violation signal."""

    inner: Proposer
    store_path: Path
    clock: Callable[[], str]
    matchers: dict[str, Matcher] = field(default_factory=dict)
    recorded: int = 0
    errors: int = 0

    @property
    def name(self) -> str:
        return self.inner.name

    def __getattr__(self, attr: str) -> object:
        return getattr(self.inner, attr)

    def load(self) -> None:
        with CorrectionStore(self.store_path) as store:
            for p in store.preferences():
                if p["violation_pattern"]:
                    try:
                        m = Matcher.of(
                            Violation.model_validate(p["violation_pattern"], strict=False)
                        )
                    except ValueError:
                        m = None
                    if m is not None:
                        self.matchers[PREFERENCE_PREFIX + p["id"]] = m

    def propose(self, request: ProposalRequest) -> Proposal:
        proposal = self.inner.propose(request)
        try:
            self._check(request, proposal)
        except Exception:  # never throws: a failed check is counted, the proposal stands
            self.errors += 1
        return proposal

    def _check(self, request: ProposalRequest, proposal: Proposal) -> None:
        shown = [h.key for h in request.lessons if h.key in self.matchers]
        if not shown:
            return
        texts = changed_text(request.candidate, proposal.artifact)
        hit = [k for k in shown if self.matchers[k].hits(texts)]
        if not hit:
            return
        with CorrectionStore(self.store_path) as store, store.transaction():
            for key in hit:
                if store.add_violation(
                    key.removeprefix(PREFERENCE_PREFIX),
                    request.run_id,
                    request.attempt,
                    self.clock(),
                ):
                    self.recorded += 1

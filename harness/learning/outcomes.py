"""The outcome record: what a finished run teaches (DESIGN.md §8). Untrusted on the way in
(it may come back from a file a person edited): strict pydantic, a record that does not
validate is refused and never learned from."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.models import CRITIQUE_CODE_PATTERN

__all__ = ["PROPOSER_PATTERN", "FailedAttempt", "OutcomeRecord"]

# `offline`, `openai:<model>`, `hermes:<model>`: a name, then optionally ':' and a model id
PROPOSER_PATTERN = r"^[a-z][a-z0-9_-]{0,63}(:[^\s:][^\s]{0,199})?$"


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FailedAttempt(_Strict):
    """One attempt the proposer made that a gate (or the harness) refused: the codes it drew
    (errors only) and the first fix hint given for each."""

    attempt: int = Field(ge=2)  # attempt 1 is the input, not the proposer's work
    codes: tuple[str, ...] = Field(min_length=1)
    fix_hints: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _codes_are_codes(self) -> FailedAttempt:
        for c in (*self.codes, *self.fix_hints):
            if not re.match(CRITIQUE_CODE_PATTERN, c):
                raise ValueError(f"{c!r} is not a critique code")
        return self


class OutcomeRecord(_Strict):
    """One finished run.

    * `result`: `success` (COMMITTED, or approved after HELD), `failure` (EXHAUSTED, FAILED,
      or rejected by a person), `partial` (HELD, waiting for a person).
    * `quality` in [0, 1]: the share of the cells the proposer proposed (changed) over the
      run that the committed or final candidate kept admitted; 1.0 when it proposed none.
    * `dominant_failure`: the critique code raised in the most attempts (None: none).
    """

    run_id: str = Field(min_length=1, max_length=200)
    artifact_id: str = Field(min_length=1, max_length=200)
    pack: str = Field(min_length=1, max_length=200)
    pack_version: str = Field(max_length=100)
    proposer: str = Field(pattern=PROPOSER_PATTERN)
    result: Literal["success", "failure", "partial"]
    attempts: int = Field(ge=1, le=1000)
    retries: int = Field(ge=0, le=999)
    quality: float = Field(ge=0.0, le=1.0)
    human_override: Literal["approved", "rejected", "reverted"] | None = None
    dominant_failure: str | None = Field(default=None, pattern=CRITIQUE_CODE_PATTERN)
    failed: tuple[FailedAttempt, ...] = ()
    tools: tuple[str, ...] = ()
    started_at: str
    finished_at: str

    @model_validator(mode="after")
    def _consistent(self) -> OutcomeRecord:
        if self.retries != self.attempts - 1:
            raise ValueError(f"retries {self.retries} != attempts {self.attempts} - 1")
        if any(f.attempt > self.attempts for f in self.failed):
            raise ValueError("a failed attempt after the run's last attempt")
        return self

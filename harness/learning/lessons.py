"""Lessons (DESIGN.md §8): durable, scoped, human-readable advice learned from finished
runs, proposed by a reviewer, gated, stored, injected into the proposer's context and scored
by what happens next.

This module is the boundary: the proposal schema (untrusted: a reviewer may be an LLM), the
settings (`LEARNING_*` environment overrides, validated) and the feedback strategy, which only
*interprets* signals; the store (`harness.learning.lesson_store`) owns the confidence math.

* A **proposal**: target (`proposer_context`: advice in the proposer's prompt;
  `value_alias` / `value_axiom`: a change to the pack's ontology, which never applies itself),
  operation (`add`; `retire`), scope (pack, `table.column`, row class, proposer), text,
  evidence (run ids), score in [0, 1]; and for advice the proposer can act on, a structured
  `advice` (prefer a value for a column in rows of a class; check references when repairing a
  table; redraft the prose in the same attempt as value repairs).
* **Signals** (`BayesianStrategy`, the numbers are the spec): explicit feedback (a person's
  approve / reject of a run that used the lesson) is positive / negative with magnitude 0.8;
  an implicit timeout (committed with the lesson in context and not reverted within the undo
  window) is positive, 1.0; an undo (`membrane revert`, or a review note with an undo keyword)
  is negative, 1.0; an ignore (in context, and the proposer still drew the critique the lesson
  addresses) is neutral twice in a row and negative (1.0) at the third.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import unicodedata
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from harness.errors import ConfigError
from harness.learning.outcomes import PROPOSER_PATTERN
from harness.models import CRITIQUE_CODE_PATTERN

__all__ = [
    "STRATEGIES",
    "Advice",
    "BayesianStrategy",
    "LearningSettings",
    "LearningStrategy",
    "LessonProposal",
    "Scope",
    "Signal",
    "load_settings",
    "make_strategy",
    "normalise_text",
]

_COLUMN = r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$"
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$"
_NO_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def normalise_text(text: str) -> str:
    """NFKC, casefolded, whitespace collapsed: what dedup compares."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


class Scope(_Strict):
    """Where a lesson applies; every field it leaves None matches anything."""

    pack: str = Field(pattern=_NAME)
    column: str | None = Field(default=None, pattern=_COLUMN)  # "table.column"
    row_class: str | None = Field(default=None, min_length=1, max_length=200)
    proposer: str | None = Field(default=None, pattern=PROPOSER_PATTERN)

    def key(self) -> str:
        return "|".join(
            (
                self.pack,
                self.column or "*",
                normalise_text(self.row_class or "*"),
                self.proposer or "*",
            )
        )


class Advice(_Strict):
    """Advice a deterministic proposer can act on (an LLM reads the text).

    * `prefer_value`: in `column`, for rows whose `when_column` is `when_value` (or any row),
      try `value` first;
    * `check_references`: when repairing rows of `column`'s table, repair its dangling
      references in the same attempt (a cascade the RI gate would otherwise reveal next);
    * `redraft_prose`: redraft the prose in the same attempt as any value repair (a cascade
      the prose gate would otherwise reveal next).
    """

    kind: Literal["prefer_value", "check_references", "redraft_prose"]
    column: str | None = Field(default=None, pattern=_COLUMN)
    value: str | int | float | None = None
    when_column: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    when_value: str | int | float | None = None
    codes: tuple[Annotated[str, Field(pattern=CRITIQUE_CODE_PATTERN)], ...] = ()  # it addresses

    @model_validator(mode="after")
    def _complete(self) -> Advice:
        if self.kind == "prefer_value" and (self.column is None or self.value is None):
            raise ValueError("prefer_value needs a column and a value")
        if self.kind == "check_references" and self.column is None:
            raise ValueError("check_references needs a column (table.column)")
        if (self.when_column is None) != (self.when_value is None):
            raise ValueError("when_column and when_value come together")
        return self


class LessonProposal(_Strict):
    """One lesson write a reviewer proposes; validated before any gate sees it."""

    target: Literal["proposer_context", "value_alias", "value_axiom"]
    operation: Literal["add", "retire"] = "add"
    scope: Scope
    text: str = Field(min_length=1, max_length=600)
    evidence: tuple[str, ...] = Field(default=(), max_length=200)
    score: float = Field(ge=0.0, le=1.0)
    advice: Advice | None = None
    # value_alias: {"alias": ..., "individual": ...}; value_axiom: {"axiom": ...}
    payload: dict[str, str] = Field(default_factory=dict, max_length=8)

    @field_validator("text")
    @classmethod
    def _plain(cls, v: str) -> str:
        if _NO_CONTROL.search(v):
            raise ValueError("control characters in a lesson's text")
        return v.strip()

    @field_validator("evidence")
    @classmethod
    def _run_ids(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for rid in v:
            if not re.match(r"^[^\s/\\]{1,200}$", rid):
                raise ValueError(f"{rid[:40]!r} is not a run id")
        return v

    @model_validator(mode="after")
    def _payload_fits(self) -> LessonProposal:
        need = {"value_alias": {"alias", "individual"}, "value_axiom": {"axiom"}}.get(
            self.target, set()
        )
        missing = need - set(self.payload)
        if missing:
            raise ValueError(f"{self.target} needs payload {sorted(missing)}")
        if self.target != "proposer_context" and self.advice is not None:
            raise ValueError("advice is for proposer_context lessons")
        return self

    def key(self) -> str:
        """A stable key of the normalised lesson: re-proposing it reinforces the same row.
        What the lesson *says* identifies it: its target, scope and structured advice (the
        codes it addresses aside) or payload; its wording only when it has neither (a
        reviewer re-counting its evidence is the same lesson)."""
        advice = (
            self.advice.model_dump(mode="json", exclude={"codes"}) if self.advice else None
        )
        body = {
            "target": self.target,
            "scope": self.scope.key(),
            "text": None if (advice or self.payload) else normalise_text(self.text),
            "advice": advice,
            "payload": {k: normalise_text(v) for k, v in sorted(self.payload.items())},
        }
        return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


# -- settings ------------------------------------------------------------------------------

DEFAULT_UNDO_KEYWORDS = ("undo", "revert", "cancel", "rollback", "nevermind", "never mind")


class LearningSettings(BaseSettings):
    """The feedback strategy's knobs; each has a `LEARNING_*` environment override."""

    model_config = SettingsConfigDict(env_prefix="LEARNING_", extra="ignore", frozen=True)

    strategy: str = "bayesian"
    # committed with a lesson in context and not reverted within this many seconds: a
    # positive signal. A day by default: batch work is reviewed the next working day.
    undo_window_sec: float = Field(default=86_400.0, ge=0.0, le=365 * 86_400.0)
    ignored_threshold: int = Field(default=3, ge=1, le=100)
    undo_keywords: Annotated[tuple[str, ...], NoDecode] = DEFAULT_UNDO_KEYWORDS
    implicit_magnitude: float = Field(default=1.0, ge=0.0, le=100.0)
    explicit_magnitude: float = Field(default=0.8, ge=0.0, le=100.0)

    @field_validator("undo_keywords", mode="before")
    @classmethod
    def _keywords(cls, v: Any) -> Any:
        if isinstance(v, str):  # LEARNING_UNDO_KEYWORDS="undo, scrap that" or a JSON list
            text = v.strip()
            if text.startswith("["):
                try:
                    v = orjson.loads(text)
                except orjson.JSONDecodeError as exc:
                    raise ValueError(f"not a JSON list: {exc}") from exc
                if not isinstance(v, list):
                    raise ValueError("a JSON list of keywords")
            else:
                v = text.split(",")
        words = tuple(normalise_text(str(k)) for k in v)
        if not words or not all(words):
            raise ValueError("at least one non-empty keyword")
        return words

    @field_validator("strategy")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in STRATEGIES:
            raise ValueError(f"unknown strategy {v!r}; known: {', '.join(sorted(STRATEGIES))}")
        return v


def load_settings(**overrides: Any) -> LearningSettings:
    """The settings from the environment (and `overrides`); a bad value is a ConfigError
    that names the environment variable."""
    try:
        return LearningSettings(**overrides)
    except SettingsError as exc:  # a value the environment source could not decode
        raise ConfigError(
            f"a LEARNING_* environment variable does not parse: {exc}",
            hint="fix or unset it (see docs/explanation/lessons.md)",
        ) from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "?"
        raise ConfigError(
            f"LEARNING_{field.upper()}: {err['msg']}",
            hint="fix or unset the environment variable (see docs/explanation/lessons.md)",
        ) from exc


# -- the strategy ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Signal:
    kind: Literal["explicit", "implicit", "undo", "ignored"]
    polarity: Literal["positive", "negative", "neutral"]
    magnitude: float


class LearningStrategy(Protocol):
    """Interprets what happened to a run that had a lesson in context as a signal."""

    name: str

    def explicit(self, approved: bool) -> Signal: ...

    def implicit(self) -> Signal: ...

    def undo(self) -> Signal: ...

    def ignored(self, streak: int) -> Signal: ...

    def is_undo(self, note: str) -> bool: ...


_INFLECTIONS = ("", "s", "es", "d", "ed", "ing", "ne", "led", "ling", "ation", "lation")


class BayesianStrategy:
    """The default: magnitudes from the settings; the store turns them into a Beta posterior."""

    name = "bayesian"

    def __init__(self, settings: LearningSettings | None = None) -> None:
        self.s = settings or LearningSettings()
        self._undo = [k.replace(" ", "") for k in self.s.undo_keywords]

    def explicit(self, approved: bool) -> Signal:
        return Signal("explicit", "positive" if approved else "negative", self.s.explicit_magnitude)

    def implicit(self) -> Signal:
        return Signal("implicit", "positive", self.s.implicit_magnitude)

    def undo(self) -> Signal:
        return Signal("undo", "negative", 1.0)

    def ignored(self, streak: int) -> Signal:
        """`streak`: consecutive ignores, this one included."""
        if streak >= self.s.ignored_threshold:
            return Signal("ignored", "negative", 1.0)
        return Signal("ignored", "neutral", 0.0)

    def is_undo(self, note: str) -> bool:
        """A keyword as a word or two adjacent words, with a plain inflection (reverted,
        cancelled, undone, rolled-back is not: say "roll back"); case and punctuation are
        ignored."""
        words = re.findall(r"[a-z]+", normalise_text(note))
        candidates = set(words) | {a + b for a, b in itertools.pairwise(words)}
        return any(
            c == k + suffix for c in candidates for k in self._undo for suffix in _INFLECTIONS
        )


STRATEGIES: dict[str, type[BayesianStrategy]] = {"bayesian": BayesianStrategy}


def make_strategy(settings: LearningSettings | None = None) -> LearningStrategy:
    s = settings or load_settings()
    return STRATEGIES[s.strategy](s)

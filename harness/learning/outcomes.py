"""The outcome record: what a finished run teaches (DESIGN.md §8). Untrusted on the way in
(it may come back from a file a person edited): strict pydantic, a record that does not
validate is refused and never learned from.

Validation is rust-side wherever pydantic can say the rule (patterns, ranges, lengths,
literals); what it cannot (the cross-field checks) stays a small python validator.
`parse_records` validates a whole outcome log in one call and gives exactly what
`parse_record` gives for each line (see `_FAST`).

`read_records` is the fast way in (the learning cycle and `membrane learn rebuild`): each
line decoded by msgspec into a frozen view (`RunView`, `OverrideView`, `RelaxView`) under
the same rules, written a second time in msgspec's terms and never looser (see `_VIEWS`);
a line the views refuse goes to `parse_record`, which decides and says why. The fold
(`harness.learning.state`) takes the views and the models alike."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Json,
    StringConstraints,
    Tag,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from harness.models import CRITIQUE_CODE_PATTERN

__all__ = [
    "PROPOSER_PATTERN",
    "FailedAttempt",
    "FailedView",
    "LogRecord",
    "LogView",
    "OutcomeRecord",
    "OverrideRecord",
    "OverrideView",
    "RelaxRecord",
    "RelaxView",
    "RunView",
    "parse_record",
    "parse_records",
    "read_records",
]

# `offline`, `openai:<model>`, `hermes:<model>`: a name, then optionally ':' and a model id
PROPOSER_PATTERN = r"^[a-z][a-z0-9_-]{0,63}(:[^\s:][^\s]{0,199})?$"

# A failed attempt's codes follow the critique code pattern, whole (pydantic's rust regex:
# `$` is the end of the text; python's `re.match` let one final newline through, issue 17).
_ATTEMPT_CODE_PATTERN = CRITIQUE_CODE_PATTERN
_AttemptCode = Annotated[str, StringConstraints(pattern=_ATTEMPT_CODE_PATTERN)]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FailedAttempt(_Strict):
    """One attempt the proposer made that a gate (or the harness) refused: the codes it drew
    (errors only) and the first fix hint given for each."""

    attempt: int = Field(ge=2)  # attempt 1 is the input, not the proposer's work
    codes: tuple[_AttemptCode, ...] = Field(min_length=1)
    fix_hints: dict[_AttemptCode, str] = Field(default_factory=dict)


class OutcomeRecord(_Strict):
    """One finished run.

    * `result`: `success` (COMMITTED, or approved after HELD), `failure` (EXHAUSTED, FAILED,
      or rejected by a person), `partial` (HELD, waiting for a person).
    * `quality` in [0, 1]: the share of the cells the proposer proposed (changed) over the
      run that the committed or final candidate kept admitted; 1.0 when it proposed none.
    * `dominant_failure`: the critique code raised in the most attempts (None: none).
    """

    kind: Literal["run"] = "run"
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
        attempts = self.attempts
        if self.retries != attempts - 1:
            raise ValueError(f"retries {self.retries} != attempts {attempts} - 1")
        for f in self.failed:
            if f.attempt > attempts:
                raise ValueError("a failed attempt after the run's last attempt")
        return self


# what each review act does to a run's result: (previous, result)
_OVERRIDES = {
    "approved": ("partial", "success"),
    "rejected": ("partial", "failure"),
    "reverted": ("success", "failure"),
}


class OverrideRecord(_Strict):
    """A person's review act on a finished run (`membrane review approve|reject`,
    `membrane revert`): it changes that run's result in the learned numbers. It carries the
    run's previous result, so the fold needs no memory of individual runs."""

    kind: Literal["override"] = "override"
    run_id: str = Field(min_length=1, max_length=200)
    artifact_id: str = Field(min_length=1, max_length=200)
    pack: str = Field(min_length=1, max_length=200)
    proposer: str = Field(pattern=PROPOSER_PATTERN)
    human_override: Literal["approved", "rejected", "reverted"]
    previous: Literal["success", "partial"]
    result: Literal["success", "failure"]
    note: str = Field(default="", max_length=2000)
    run_finished_at: str  # when the run itself ended (is it before the proposer's relax?)
    at: str

    @model_validator(mode="after")
    def _consistent(self) -> OverrideRecord:
        want = _OVERRIDES[self.human_override]
        if (self.previous, self.result) != want:
            raise ValueError(
                f"{self.human_override} takes a {want[0]} run to {want[1]},"
                f" not {self.previous} to {self.result}"
            )
        return self


class RelaxRecord(_Strict):
    """A person relaxed a proposer's overlay (`membrane learn relax`): its overlay is
    dropped and its numbers start again from here (a new epoch), so the next cycle does
    not tighten it straight back from the history that was just judged."""

    kind: Literal["relax"] = "relax"
    proposer: str = Field(pattern=PROPOSER_PATTERN)
    reason: str = Field(min_length=1, max_length=2000)
    at: str


def _kind(v: Any) -> str:
    if isinstance(v, dict):
        return str(v.get("kind", "run"))
    return str(getattr(v, "kind", "run"))


LogRecord = Annotated[
    Annotated[OutcomeRecord, Tag("run")]
    | Annotated[OverrideRecord, Tag("override")]
    | Annotated[RelaxRecord, Tag("relax")],
    Discriminator(_kind),
]
_ADAPTER: TypeAdapter[OutcomeRecord | OverrideRecord | RelaxRecord] = TypeAdapter(LogRecord)

# The same choice of model, made rust-side (no python call per record): a record whose
# "kind" names a model is that model; a record without "kind" is a run (the second
# branch; records written before the log had kinds have none). `_kind` makes the same
# choice, and the chosen model validates the same input either way, so a record `_FAST`
# accepts is the record `parse_record` returns; one it refuses is handed to `parse_record`,
# which decides (and says why).
_FAST = Annotated[
    Annotated[
        OutcomeRecord | OverrideRecord | RelaxRecord,
        Field(discriminator="kind"),
    ]
    | OutcomeRecord,
    Field(union_mode="left_to_right"),
]
# Each line parsed on its own (`Json`): a line is one record whatever it holds. A line
# that does not validate comes back as the line itself (the `str` branch).
_BATCH: TypeAdapter[list[Any]] = TypeAdapter(
    list[Annotated[Json[_FAST] | str, Field(union_mode="left_to_right")]]
)


def parse_record(raw: str | bytes) -> OutcomeRecord | OverrideRecord | RelaxRecord:
    """One outcome-log line, validated (raises pydantic.ValidationError)."""
    return _ADAPTER.validate_json(raw)


def parse_records(
    raws: Sequence[str],
) -> tuple[list[OutcomeRecord | OverrideRecord | RelaxRecord], list[tuple[int, ValidationError]]]:
    """Outcome-log lines validated in one call, each as `parse_record` would: the records
    of the lines that validate, in order, and (index, error) for each line that does not."""
    out = _BATCH.validate_python(raws)
    refused: list[tuple[int, ValidationError]] = []
    for i in [i for i, v in enumerate(out) if isinstance(v, str)]:
        try:  # refused by the batch: `parse_record` decides, and says why
            out[i] = parse_record(raws[i])
        except ValidationError as exc:
            refused.append((i, exc.with_traceback(None)))  # no frame, no cycle
    if refused:
        out = [v for v in out if not isinstance(v, str)]
    return out, refused


# -- the fast way in: the same rules in msgspec's terms ------------------------------------
#
# Each rule of the models above, again, as msgspec constraints (checked in C) and the same
# cross-field checks in `__post_init__`. Where the two libraries could differ, the views are
# the stricter, so a line they accept is one `parse_record` accepts, with the same values
# (a test holds them to it): a line they refuse is only handed to `parse_record`.
# * patterns: python's `re` (`$` becomes `\Z`: the end of the text, as in pydantic's rust
#   regex); python's `\s` is a superset of rust's, so `[^\s]` admits no more. Checked in
#   `__post_init__` with a memory of the values that passed (a log names a few proposers
#   and codes many times over), so a `FailedView`'s codes are checked by its run;
# * ints are JSON integers only and floats JSON numbers only (pydantic also takes "2",
#   2.0 or true, in lax mode): those lines go the slow way and come back as models;
# * a key given twice: the last counts in both; `kind` twice is refused by msgspec;
# * a record without `kind` is a run (records written before the log had kinds): the
#   untagged `RunView`, tried when the tagged union refuses (it refuses any `kind`).


def _whole(pattern: str) -> str:
    """A pydantic (rust regex) pattern anchored with `$` in python's `re` terms."""
    if not pattern.endswith("$"):
        raise ValueError(f"not anchored at the end: {pattern!r}")
    return pattern[:-1] + r"\Z"


class _Pattern:
    """`pattern` matched against values, remembering those that passed (a pure test, so
    the memory changes nothing but its speed; bounded, so no log can grow it far)."""

    __slots__ = ("_re", "passed")

    def __init__(self, pattern: str) -> None:
        self._re = re.compile(_whole(pattern))
        self.passed: set[str] = set()

    def check(self, value: str) -> None:
        """Raises ValueError when `value` does not match."""
        if self._re.search(value) is None:
            raise ValueError(f"{value!r} does not match {self._re.pattern!r}")
        if len(self.passed) < 4096:
            self.passed.add(value)


_PROPOSER, _CODE = _Pattern(PROPOSER_PATTERN), _Pattern(CRITIQUE_CODE_PATTERN)
_VName = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
_VText = Annotated[str, msgspec.Meta(max_length=2000)]
_VOverride = Literal["approved", "rejected", "reverted"]


class FailedView(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`FailedAttempt`, read from the log."""

    attempt: Annotated[int, msgspec.Meta(ge=2)]
    codes: Annotated[tuple[str, ...], msgspec.Meta(min_length=1)]  # checked by the run
    fix_hints: dict[str, str] = {}  # (the keys too)


class RunView(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`OutcomeRecord`, read from the log."""

    run_id: _VName
    artifact_id: _VName
    pack: _VName
    pack_version: Annotated[str, msgspec.Meta(max_length=100)]
    proposer: str  # PROPOSER_PATTERN (`__post_init__`)
    result: Literal["success", "failure", "partial"]
    attempts: Annotated[int, msgspec.Meta(ge=1, le=1000)]
    retries: Annotated[int, msgspec.Meta(ge=0, le=999)]
    quality: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
    started_at: str
    finished_at: str
    human_override: _VOverride | None = None
    dominant_failure: str | None = None  # CRITIQUE_CODE_PATTERN
    failed: tuple[FailedView, ...] = ()
    tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:  # the patterns, and OutcomeRecord._consistent
        if self.proposer not in _PROPOSER.passed:
            _PROPOSER.check(self.proposer)
        codes = _CODE.passed
        if self.dominant_failure is not None and self.dominant_failure not in codes:
            _CODE.check(self.dominant_failure)
        attempts = self.attempts
        if self.retries != attempts - 1:
            raise ValueError(f"retries {self.retries} != attempts {attempts} - 1")
        for f in self.failed:
            if f.attempt > attempts:
                raise ValueError("a failed attempt after the run's last attempt")
            for code in (*f.codes, *f.fix_hints) if f.fix_hints else f.codes:
                if code not in codes:
                    _CODE.check(code)


class _TaggedRunView(RunView, frozen=True, tag_field="kind", tag="run"):
    """A `RunView` whose line says `"kind": "run"`."""


class OverrideView(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind", tag="override"
):
    """`OverrideRecord`, read from the log."""

    run_id: _VName
    artifact_id: _VName
    pack: _VName
    proposer: str  # PROPOSER_PATTERN (`__post_init__`)
    human_override: _VOverride
    previous: Literal["success", "partial"]
    result: Literal["success", "failure"]
    run_finished_at: str
    at: str
    note: _VText = ""

    def __post_init__(self) -> None:  # the pattern, and OverrideRecord._consistent
        _PROPOSER.check(self.proposer)
        if (self.previous, self.result) != _OVERRIDES[self.human_override]:
            raise ValueError(
                f"{self.human_override} does not take {self.previous} to {self.result}"
            )


class RelaxView(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind", tag="relax"
):
    """`RelaxRecord`, read from the log."""

    proposer: str  # PROPOSER_PATTERN (`__post_init__`)
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    at: str

    def __post_init__(self) -> None:
        _PROPOSER.check(self.proposer)


LogView = RunView | OverrideView | RelaxView
_VIEWS = msgspec.json.Decoder(_TaggedRunView | OverrideView | RelaxView)
_UNTAGGED = msgspec.json.Decoder(RunView)


def read_records(
    raws: Sequence[str],
) -> tuple[
    list[LogView | OutcomeRecord | OverrideRecord | RelaxRecord], list[tuple[int, ValidationError]]
]:
    """Outcome-log lines validated as `parse_records` validates them, fast: the records of
    the lines that validate, in order (views; a model where only `parse_record` accepts the
    line), and (index, `parse_record`'s error) for each line that does not."""
    decode, untagged, Error = _VIEWS.decode, _UNTAGGED.decode, msgspec.DecodeError
    out: list[LogView | OutcomeRecord | OverrideRecord | RelaxRecord] = []
    refused: list[tuple[int, ValidationError]] = []
    for i, raw in enumerate(raws):
        try:
            out.append(decode(raw))
        except Error:
            try:
                out.append(untagged(raw))
            except Error:
                try:  # refused by the views: `parse_record` decides, and says why
                    out.append(parse_record(raw))
                except ValidationError as exc:
                    refused.append((i, exc.with_traceback(None)))  # no frame, no cycle
    return out, refused

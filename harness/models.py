"""The data that flows through the loop: frozen pydantic models, validated at the boundary.

Artifacts, proposals and corrections are untrusted input; everything here is
`frozen=True, extra="forbid"` so a stray field is an error, not a silent pass.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

__all__ = [
    "ARTIFACT_ID_PATTERN",
    "PROSE_FIELD",
    "PROSE_FIELD_PATTERN",
    "Artifact",
    "CallUsage",
    "CanonicalCell",
    "Cell",
    "CellRef",
    "Critique",
    "CritiqueReport",
    "Decision",
    "Effector",
    "Location",
    "Outcome",
    "Proposal",
    "ProposalRequest",
    "RunState",
    "Severity",
    "Spine",
    "StepOutcome",
    "Trigger",
    "Verdict",
]

# Ids become file names: a strict allowlist, no path characters, no leading dot.
ARTIFACT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
_ID_RE = re.compile(ARTIFACT_ID_PATTERN)
# Windows device names: `CON.md`, `nul.r1.jsonl` name a device there, whatever follows the dot
RESERVED_ID_STEMS = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{d}{i}" for d in ("com", "lpt") for i in range(1, 10)]
)
_CELL_REF = re.compile(r"^(?P<table>.+)\[(?P<row>\d+)\]\.(?P<column>[^.\[\]]+)$", re.S)
CRITIQUE_CODE_PATTERN = r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+$"
MAX_PROSE_CHARS = 200_000
# Prose fields (registers) beyond the default `prose`: `{"prose_fields": {"summary": "..."}}`.
PROSE_FIELD = "prose"  # the default field, the artifact's top-level `prose`
PROSE_FIELD_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
_PROSE_FIELD_RE = re.compile(PROSE_FIELD_PATTERN)
MAX_PROSE_FIELDS = 16
MAX_ROWS_PER_TABLE = 10_000
# what the commit's serialiser (orjson) can write: 64-bit signed, or unsigned up to 2**64 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**64 - 1

Cell = str | int | float | bool | None


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _omit_empty(
    model: BaseModel, handler: SerializerFunctionWrapHandler, names: tuple[str, ...]
) -> dict[str, Any]:
    """`handler(model)` without the keys in `names` whose value is empty (None, {}, ""):
    fields added after data was first written leave the bytes of old data unchanged (content
    hashes, trace records, transcripts' request keys)."""
    out: dict[str, Any] = handler(model)
    for name in names:
        if name in out and not out[name]:
            del out[name]
    return out


class RunState(StrEnum):
    PROPOSE = "PROPOSE"
    VALUE_GATE = "VALUE_GATE"
    RI_GATE = "RI_GATE"
    PROSE_GATE = "PROSE_GATE"
    CRITIQUE = "CRITIQUE"
    COMMIT = "COMMIT"
    COMMITTED = "COMMITTED"
    EXHAUSTED = "EXHAUSTED"
    FAILED = "FAILED"
    HELD = "HELD"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = {RunState.COMMITTED, RunState.EXHAUSTED, RunState.FAILED, RunState.HELD}


class Trigger(StrEnum):
    """Past-tense facts that move the FSM."""

    PROPOSED = "proposed"
    PROPOSAL_REJECTED = "proposal_rejected"
    VALUES_PASSED = "values_passed"
    VALUES_FAILED = "values_failed"
    RELATIONS_PASSED = "relations_passed"
    RELATIONS_FAILED = "relations_failed"
    PROSE_SKIPPED = "prose_skipped"
    PROSE_PASSED = "prose_passed"
    PROSE_FAILED = "prose_failed"
    CRITIQUED = "critiqued"
    BUDGET_SPENT = "budget_spent"
    PUBLISHED = "published"
    HELD = "held"
    CRASHED = "crashed"
    HALTED = "halted"  # the agenda stopped the run (an endpoint is down, a batch budget spent)


class StepOutcome(StrEnum):
    """What the last effector did: the `outcome` fact the agenda decides on."""

    NONE = "none"
    PROPOSED = "proposed"
    REJECTED = "rejected"
    PASSED = "passed"
    FAILED = "failed"
    CRITIQUED = "critiqued"
    COMMITTED = "committed"
    HELD = "held"
    CRASHED = "crashed"


class Effector(StrEnum):
    SEED = "seed"  # the input artifact is the first (single-shot) proposal
    PROPOSER = "proposer"
    VALUE_GATE = "value_gate"
    RI_GATE = "ri_gate"
    PROSE_GATE = "prose_gate"
    CRITIQUE = "critique"
    COMMIT = "commit"
    HOLD = "hold"


# the fields an artifact's bytes leave out when empty (added after data was first written)
ARTIFACT_OMITTED_WHEN_EMPTY = ("prose_fields",)


class Artifact(Frozen):
    """One unit of refinement: named tables of rows plus optional prose."""

    id: str
    tables: dict[str, list[dict[str, Cell]]]
    prose: str = ""
    # further prose fields (registers) a pack declares (`[prose.fields.<name>]`), by name
    prose_fields: dict[str, str] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _omit_empty(self, handler, ARTIFACT_OMITTED_WHEN_EMPTY)

    @field_validator("id")
    @classmethod
    def _id_is_safe(cls, v: str) -> str:
        if not _ID_RE.fullmatch(v):  # not .match: `$` also matches before a final newline
            raise ValueError(
                f"artifact id {v!r} must match {ARTIFACT_ID_PATTERN} "
                "(letters, digits, '_', '.', '-'; no path characters)"
            )
        if v.partition(".")[0].lower() in RESERVED_ID_STEMS:
            raise ValueError(
                f"artifact id {v!r} starts with a device name Windows reserves "
                f"({v.partition('.')[0]!r}): its files could not be written there; rename it"
            )
        return v

    @field_validator("tables")
    @classmethod
    def _tables_bounded(
        cls, v: dict[str, list[dict[str, Cell]]]
    ) -> dict[str, list[dict[str, Cell]]]:
        for name, rows in v.items():
            if len(rows) > MAX_ROWS_PER_TABLE:
                raise ValueError(f"table {name!r} has {len(rows)} rows (max {MAX_ROWS_PER_TABLE})")
            for i, row in enumerate(rows):
                for column, cell in row.items():
                    # an int past 64 bits: JSON may hold it, but the commit's serialiser
                    # cannot (it was refused only at commit, a crash)
                    if type(cell) is int and not _INT64_MIN <= cell <= _INT64_MAX:
                        raise ValueError(
                            f"table {name!r} row {i} column {column!r}: an integer of "
                            f"{cell.bit_length()} bits does not fit in 64 (store it as text)"
                        )
        return v

    @field_validator("prose")
    @classmethod
    def _prose_bounded(cls, v: str) -> str:
        if len(v) > MAX_PROSE_CHARS:
            raise ValueError(f"prose has {len(v)} characters (max {MAX_PROSE_CHARS})")
        return v

    @field_validator("prose_fields")
    @classmethod
    def _fields_bounded(cls, v: dict[str, str]) -> dict[str, str]:
        if len(v) > MAX_PROSE_FIELDS:
            raise ValueError(f"{len(v)} prose fields (max {MAX_PROSE_FIELDS})")
        for name, text in v.items():
            if name == PROSE_FIELD or not _PROSE_FIELD_RE.fullmatch(name):
                raise ValueError(
                    f"prose field name {name[:40]!r} must match {PROSE_FIELD_PATTERN} and not "
                    f"be {PROSE_FIELD!r} (that one is the artifact's top-level `prose`)"
                )
            if len(text) > MAX_PROSE_CHARS:
                raise ValueError(
                    f"prose field {name!r} has {len(text)} characters (max {MAX_PROSE_CHARS})"
                )
        return v

    def text(self, field: str = PROSE_FIELD) -> str:
        """The text of one prose field ("" when the artifact does not carry it)."""
        return self.prose if field == PROSE_FIELD else self.prose_fields.get(field, "")

    def texts(self) -> dict[str, str]:
        """Every prose field the artifact carries, `prose` first."""
        return {PROSE_FIELD: self.prose, **self.prose_fields}

    def with_texts(self, texts: dict[str, str]) -> Artifact:
        """A copy with these prose fields replaced (validated like any artifact)."""
        fields = dict(self.prose_fields)
        prose = self.prose
        for name, text in texts.items():
            if name == PROSE_FIELD:
                prose = text
            else:
                fields[name] = text
        return Artifact.model_validate(
            {"id": self.id, "tables": self.tables, "prose": prose, "prose_fields": fields,
             "meta": self.meta}
        )

    def cells(self) -> list[CellRef]:
        return [
            CellRef(table=t, row=i, column=c)
            for t, rows in self.tables.items()
            for i, row in enumerate(rows)
            for c in row
        ]

    def cell_values(self) -> dict[str, Cell]:
        """`str(ref)` -> value for every cell, in `cells()` order (no `CellRef` is built:
        the loop asks this of every candidate)."""
        return {
            f"{t}[{i}].{c}": v
            for t, rows in self.tables.items()
            for i, row in enumerate(rows)
            for c, v in row.items()
        }

    def value(self, ref: CellRef) -> Cell:
        return self.tables[ref.table][ref.row][ref.column]


class CellRef(Frozen):
    """A cell by table, row index (0-based) and column."""

    table: str
    row: int = Field(ge=0)
    column: str

    def __str__(self) -> str:
        return f"{self.table}[{self.row}].{self.column}"

    @classmethod
    def parse(cls, text: str) -> CellRef:
        """The inverse of `str(ref)`: 'equipment[2].standard' -> CellRef. The table is
        everything before the last `[N].`, so a table name may hold any character; a column
        may not hold '.', '[' or ']' (pack columns are SQL identifiers). ValueError else."""
        m = _CELL_REF.match(text)
        if m is None:
            raise ValueError(f"{text[:200]!r} is not a cell reference like 'table[0].column'")
        return cls(table=m["table"], row=int(m["row"]), column=m["column"])


class Location(Frozen):
    """Where a critique points: a cell, a row, a table, or a span of the prose."""

    table: str | None = None
    row: int | None = None
    key: str | None = None  # the row's key value(s), human-readable, e.g. "EQ-003"
    column: str | None = None
    span: tuple[int, int] | None = None  # character offsets into the prose field
    field: str | None = None  # the prose field a prose critique is about ("prose", "summary")

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _omit_empty(self, handler, ("field",))

    def cell(self) -> CellRef | None:
        if self.table is None or self.row is None or self.column is None:
            return None
        return CellRef(table=self.table, row=self.row, column=self.column)


Severity = Literal["error", "warn", "info"]


class Critique(Frozen):
    """One typed finding. Codes are stable API (dotted, namespaced); tests match codes."""

    # Each dotted part starts with a letter; digits may follow (ri.pd1_outside_oncology).
    code: str = Field(pattern=CRITIQUE_CODE_PATTERN)
    severity: Severity = "error"
    gate: str
    location: Location = Field(default_factory=Location)
    observed: str | None = None
    expected: str | None = None
    evidence: tuple[str, ...] = ()  # axioms, SQL, sentence text ...
    fix_hint: str | None = None
    message: str = ""


class CanonicalCell(Frozen):
    """One bound cell the value gate resolved to an entity, in the artifact's canonical table.

    `raw` is what the proposer wrote, `value` the canonical form the pack chose (the entity's
    preferred label, or its IRI fragment) and the value every later gate judges and COMMIT
    writes. `via` says what decided it: "iri" (the cell was the IRI or its fragment), "label"
    (the preferred label), "alt_label" (an skos:altLabel), "alias" (a pack-declared alias)."""

    cell: str  # str(CellRef)
    raw: Cell
    value: Cell
    iri: str | None = None
    via: str


class Verdict(Frozen):
    """A gate's judgement of one candidate."""

    gate: str
    artifact_id: str
    critiques: tuple[Critique, ...] = ()
    metrics: dict[str, float] = Field(default_factory=dict)
    rejected: tuple[CellRef, ...] = ()  # cells NOT admitted; every other cell is admitted
    crashed: bool = False
    # VALUE_GATE only: resolved cells whose canonical form differs from the raw text.
    canonical: tuple[CanonicalCell, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.crashed and not any(c.severity == "error" for c in self.critiques)


class Spine(Frozen):
    """Cells admitted so far: immutable context for the next proposal."""

    locked: dict[str, Cell] = Field(default_factory=dict)  # str(CellRef) -> value
    # prose fields PROSE_GATE admitted while it failed another: field -> text, kept verbatim
    prose: dict[str, str] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _omit_empty(self, handler, ("prose",))

    @staticmethod
    def of(
        artifact: Artifact, rejected: set[CellRef], prose: dict[str, str] | None = None
    ) -> Spine:
        skip = {str(ref) for ref in rejected}
        locked = {k: v for k, v in artifact.cell_values().items() if k not in skip}
        return Spine(locked=locked, prose=prose or {})


class CritiqueReport(Frozen):
    """What the critique effector hands to the proposer: failed gate, findings, spine."""

    gate: str
    attempt: int
    critiques: tuple[Critique, ...]
    spine: Spine


class LessonHint(Frozen):
    """A learned lesson in a proposer's context: advice, not instruction. `advice` is the
    structured form a deterministic proposer can act on (`harness.learning.lessons.Advice`
    as JSON); an LLM reads `text`."""

    key: str
    text: str
    confidence: float = Field(ge=0.0, le=1.0)
    advice: dict[str, Any] | None = None
    # "lesson": learned from runs; "preference": promoted from reviewers' corrections
    source: Literal["lesson", "preference"] = "lesson"


class ProposalRequest(Frozen):
    run_id: str
    attempt: int
    candidate: Artifact
    critique: CritiqueReport
    lessons: tuple[LessonHint, ...] = ()
    tokens_left: int | None = None  # what the token budgets still allow (None: no budget)


class CallUsage(Frozen):
    """The cost of one model call (an LLM proposer makes one or more per proposal)."""

    tokens_prompt: int = Field(default=0, ge=0)
    tokens_completion: int = Field(default=0, ge=0)
    seconds: float = Field(default=0.0, ge=0)  # wall time of the call (0 when replayed)
    cached: bool = False  # answered from the transcript cache, no network
    request: str = ""  # sha256 of the canonical request: the transcript's key
    # the server reported no usable token counts (missing, negative, implausibly low): the
    # counts are estimated from the text (4 characters a token), never taken as 0
    estimated: bool = False


class Proposal(Frozen):
    """What a proposer returns for one attempt. Untrusted."""

    artifact: Artifact
    proposer: str
    notes: tuple[str, ...] = ()
    tool_calls: tuple[str, ...] = ()
    tokens_prompt: int = 0
    tokens_completion: int = 0
    usage: tuple[CallUsage, ...] = ()  # one entry per model call


class Decision(Frozen):
    """The agenda's one decision for one cycle of one run."""

    rule: str
    trigger: Trigger | None
    effector: Effector | None


class Outcome(Frozen):
    """Summary of a finished run."""

    run_id: str
    artifact_id: str
    state: RunState
    attempts: int
    cycles: int
    critique_codes: dict[str, int] = Field(default_factory=dict)
    proposer: str
    content_hash: str | None = None
    error: str | None = None


NonEmptyStr = Annotated[str, Field(min_length=1)]

"""Domain packs: `pack.toml` and the files it names, validated before anything runs.

A pack is untrusted input. Every problem is a `PackError` naming the file (and line,
when the parser gives one) and what to do.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from harness.errors import PackError
from harness.models import MAX_PROSE_FIELDS, PROSE_FIELD, PROSE_FIELD_PATTERN
from harness.saferegex import compile_safe
from harness.tomllines import key_lines, locate
from rules import RULESETS

__all__ = [
    "SKIP_IMPORT",
    "UNIT_SYMBOLS",
    "AggregateBound",
    "Bounds",
    "ColumnBinding",
    "FieldSpec",
    "Pack",
    "PackConfig",
    "ProseField",
    "ProseQuantity",
    "ProseRelation",
    "ProseSettings",
    "RowBound",
    "TableBinding",
    "load_pack",
]

_IDENT = r"^[A-Za-z_][A-Za-z0-9_]*$"
SKIP_IMPORT = "skip"  # an [ontology.imports] value: go on without that import


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PackMeta(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    version: str
    description: str = ""
    license: str = ""  # the corpus's licence (an SPDX id), shown in the export's dataset card


class PackFiles(_Strict):
    ontology: str
    spine: str = "spine.sql"
    assertions: str = "assertions"
    references: str = "references"
    prompts: str = "prompts"
    chapter: str | None = None  # a Jinja2 chapter template (sandboxed); None: the default


class OntologySettings(_Strict):
    """`[ontology]`: the namespace, and how cells are matched to entities and written back.

    matching:  "standard" (harness.normalize: NFKC, casefold, whitespace, trademark signs,
               trailing punctuation) or "loose" (also accents and inner punctuation)
    canonical: "label" (the entity's preferred label, the default) or "iri" (its IRI
               fragment): the form every resolved cell is rewritten to (canonical cells)
    aliases:   extra spellings -> individual (IRI fragment), e.g. brand names
    prefixes:  prefix -> namespace IRI, so that cells and `root`s may say `brick:Pump`
    deprecated: "warn" or "error": a cell naming an `owl:deprecated` entity (issue 27)
    shapes:    true: VALUE_GATE checks the SHACL shapes that come with the ontology files
    shape_files: SHACL files of the pack's own (relative to the pack folder), checked too
    """

    namespace: str  # IRI namespace of the pack's classes, properties and individuals
    matching: Literal["standard", "loose"] = "standard"
    canonical: Literal["label", "iri"] = "label"
    aliases: dict[str, str] = Field(default_factory=dict)
    # how long one HermiT call may take (the first classification of a large ontology, or
    # one cohort's check); past it: a setup error at classification, a FAILED run later
    reasoner_timeout_s: float = Field(default=300.0, ge=0.01, le=86_400.0)
    # owl:imports IRI -> local file (relative to the pack folder), instead of the naming rule;
    # "skip": go on without that import (logged, with what is lost)
    imports: dict[str, str] = Field(default_factory=dict)
    prefixes: dict[str, str] = Field(default_factory=dict)
    deprecated: Literal["warn", "error"] = "warn"
    shapes: bool = False  # SHACL shapes over the rows, in VALUE_GATE (issue 27)
    shape_files: list[str] = Field(default_factory=list)

    @field_validator("aliases")
    @classmethod
    def _aliases_named(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [a for a, ind in v.items() if not a.strip() or not re.match(_IDENT, ind)]
        if bad:
            raise ValueError(f"aliases {bad} need a spelling and an individual's IRI fragment")
        return v


class ColumnBinding(_Strict):
    """How one column maps to the ontology.

    kind = "id":     an identifier or foreign key; not an ontology value (RI_GATE checks it)
    kind = "object": value must be a pool individual (IRI fragment or label) via `property`
    kind = "data":   a literal checked against the datatype facets of `property`
    kind = "text":   free text (a title) bound to an xsd:string data property; checked only
                     for placeholders and length (`max_length`), never matched to entities;
                     without `property` it is not in the ontology at all (unchecked text:
                     a third-party ontology need not declare a property for it)
    kind = "class":  the cell names an ontology class (prefixed name, IRI fragment or label)
                     under `root`; the row is typed by that class (issue 27)
    """

    kind: Literal["id", "object", "data", "text", "class"]
    max_length: int | None = Field(default=None, ge=1)  # kind = "text" only
    property: str | None = Field(default=None, pattern=_IDENT)
    root: str | None = Field(default=None, min_length=1)  # kind = "class" only

    @model_validator(mode="after")
    def _property_needed(self) -> ColumnBinding:
        if self.kind not in ("id", "text", "class") and not self.property:
            raise ValueError(f"a column of kind {self.kind!r} needs a `property`")
        if self.max_length is not None and self.kind != "text":
            raise ValueError('`max_length` is for columns of kind "text"')
        if (self.root is None) != (self.kind != "class"):
            raise ValueError('a column of kind "class" needs a `root` (and only it has one)')
        if self.kind == "class" and self.property is not None:
            raise ValueError('a column of kind "class" types its row: it takes no `property`')
        return self


class TableBinding(_Strict):
    row_class: str = Field(pattern=_IDENT)
    key: list[str] = Field(min_length=1)
    columns: dict[str, ColumnBinding]

    @model_validator(mode="after")
    def _key_in_columns(self) -> TableBinding:
        missing = [k for k in self.key if k not in self.columns]
        if missing:
            raise ValueError(f"key column(s) {missing} are not among the table's columns")
        return self


# units the prose matcher reads although they start with no letter or digit ("12.5%",
# "12.5 %"); "°"-units ("°C", "°F") too. Any other such unit would match nothing.
UNIT_SYMBOLS = ("%", "‰", "‱")


def _unit_readable(unit: str) -> bool:
    u = unicodedata.normalize("NFKC", unit.strip())
    return u[:1].isalnum() or u in UNIT_SYMBOLS or (u[:1] == "°" and u[1:].isalpha())


def _words_readable(words: list[str], what: str) -> list[str]:
    bad = [w for w in words if not any(c.isalnum() for c in unicodedata.normalize("NFKC", w))]
    if bad:
        raise ValueError(f"the prose matcher cannot read {what} {bad}: they need a letter or a "
                         "digit (it matches words)")
    return words


class ProseQuantity(_Strict):
    """A number with a unit the prose may state about a row of `column` ("table.column").

    `units`: unit words after the number -> factor to the column's unit ("MW" = 1000.0 for a
    kW column); `prefixes`: words before it ("floor" in "floor 3", "the 3rd floor");
    `phrases`: words that state a value on their own ("annually" = 12.0, "ground floor" = 0.0).
    """

    column: str
    units: dict[str, float] = Field(default_factory=dict)
    prefixes: list[str] = Field(default_factory=list)
    phrases: dict[str, float] = Field(default_factory=dict)
    # id columns ("equipment.room_id") through which a claim about another table's row
    # reaches this column's row: "EQ-001 is on floor 3" states the floor of EQ-001's room
    through: list[str] = Field(default_factory=list)
    # words right before a prefix that make its number negative ("basement level 2" = -2)
    negate: list[str] = Field(default_factory=list)
    # relative tolerance; else value_tolerance, or 0 for an integer spine column (issue 27)
    tolerance: float | None = Field(default=None, ge=0.0, le=1.0)
    abs_tolerance: float | None = Field(default=None, ge=0.0)  # in the column's unit

    @field_validator("units")
    @classmethod
    def _units_readable(cls, v: dict[str, float]) -> dict[str, float]:
        bad = [u for u in v if u.strip() and not _unit_readable(u)]
        if bad:
            raise ValueError(
                f"the prose matcher cannot read unit(s) {bad}: a unit starts with a letter or "
                f"a digit, or is one of {' '.join(UNIT_SYMBOLS)} or a °-unit (°C); write it "
                "as a word (e.g. 'percent')"
            )
        return v

    @field_validator("prefixes")
    @classmethod
    def _prefixes_readable(cls, v: list[str]) -> list[str]:
        return _words_readable(v, "prefix(es)")

    @field_validator("phrases")
    @classmethod
    def _phrases_readable(cls, v: dict[str, float]) -> dict[str, float]:
        _words_readable(list(v), "phrase(s)")
        return v

    @model_validator(mode="after")
    def _has_a_unit(self) -> ProseQuantity:
        if not self.units and not self.prefixes and not self.phrases:
            raise ValueError(f"quantity {self.column!r} needs `units`, `prefixes` or `phrases`")
        if any(not u.strip() or f <= 0 for u, f in self.units.items()):
            raise ValueError(f"quantity {self.column!r}: units need a name and a factor > 0")
        return self


class ProseRelation(_Strict):
    """A relation the prose may state ("X complies with Y"): Y must be the row's `column` value."""

    column: str
    phrases: list[str] = Field(min_length=1)
    through: list[str] = Field(default_factory=list)  # as for quantities


class ProseAggregate(_Strict):
    """A claim about several rows (`[[prose.aggregates]]`; see `effectors.prose.aggregate`):
    `count` of `table`'s rows ("five assets": `nouns`), `sum` or `range` of a quantity
    `column` ("together ... 350 kW"), `compare` of two rows' `column` ("more power than")."""

    kind: Literal["count", "sum", "range", "compare"]
    table: str | None = None  # count: whose rows
    column: str | None = None  # sum, range, compare: "table.column", a [[prose.quantities]] one
    nouns: list[str] = Field(default_factory=list)  # count: what the rows are called
    cues: list[str] = Field(default_factory=list)  # words that make a sentence about all rows
    more: list[str] = Field(default_factory=list)  # compare: "more power than"
    less: list[str] = Field(default_factory=list)  # compare: "less power than"

    @model_validator(mode="after")
    def _complete(self) -> ProseAggregate:
        need = {"count": ("table", "nouns", "cues"), "sum": ("column", "cues"),
                "range": ("column", "cues"), "compare": ("column",)}[self.kind]
        missing = [f for f in need if not getattr(self, f)]
        if self.kind == "compare" and not (self.more or self.less):
            missing.append("more or less")
        if missing:
            raise ValueError(f"aggregate {self.kind!r} needs {', '.join(missing)}")
        return self


class ProseField(_Strict):
    """`[prose.fields.<name>]`: one prose field (register) of the artifact besides, or
    instead of, the default `prose` (`[prose.fields.prose]` sets that one's switches). Keys
    left out take `[prose]`'s value; the entities, quantities, relations and aggregates the
    prose may state are `[prose]`'s, shared by every field."""

    enabled: bool = True
    # a folder of reference samples (*.txt) for this field's length band, inside the pack;
    # unset: `[files] references` for `prose`, no length check for the others
    references: str | None = None
    length_band: tuple[float, float] | None = None
    min_coverage: float | None = Field(default=None, ge=0.0, le=1.0)
    entities: bool = True  # prose.unknown_entity and prose.missing_entity
    values: bool = True  # prose.value_mismatch (quantities, relations, aggregates)
    truncation: bool = True  # prose.truncated
    injection: Literal["warn", "error", "off"] | None = None

    @model_validator(mode="after")
    def _band_ordered(self) -> ProseField:
        if self.length_band is not None:
            lo, hi = self.length_band
            if not 0.0 <= lo <= hi <= 1.0:
                raise ValueError("length_band must be two percentiles 0 <= low <= high <= 1")
        if self.references is not None and not _inside(self.references):
            raise ValueError(
                f"references {self.references!r} must be a folder inside the pack "
                "(a relative path without '..')"
            )
        return self


def _inside(path: str) -> bool:
    """A relative path that cannot leave the folder it is relative to (lexically)."""
    p = Path(path)
    return bool(path) and not p.is_absolute() and ".." not in p.parts and "\\" not in path


@dataclass(frozen=True)
class FieldSpec:
    """One prose field as PROSE_GATE judges it: `[prose]` overlaid with its own table."""

    name: str
    enabled: bool
    references: Path | None
    length_band: tuple[float, float]
    min_coverage: float
    entities: bool
    values: bool
    truncation: bool
    injection: Literal["warn", "error", "off"]


class ProseSettings(_Strict):
    enabled: bool = True
    # "table.column" whose values are the entity keys the prose must talk about
    entity_columns: list[str] = Field(default_factory=list)
    min_coverage: float = Field(default=1.0, ge=0.0, le=1.0)
    length_band: tuple[float, float] = (0.0, 1.0)  # percentile band of reference lengths
    value_tolerance: float = Field(default=0.01, ge=0.0, le=1.0)  # relative, for quantities
    quantities: list[ProseQuantity] = Field(default_factory=list)
    relations: list[ProseRelation] = Field(default_factory=list)
    # short word -> the word of a label it abbreviates ("Std" = "Standard"): mentions only
    abbreviations: dict[str, str] = Field(default_factory=dict)
    aggregates: list[ProseAggregate] = Field(default_factory=list)
    # left out of prose matching (effectors.prose.exclude): every member of these classes,
    # and these spellings (labels, IRI fragments, aliases that are ordinary words: "white")
    exclude_classes: list[str] = Field(default_factory=list)
    exclude_labels: list[str] = Field(default_factory=list)
    entailment: Literal["auto", "off"] = "auto"  # "auto": on when the embeddings extra is there
    entailment_threshold: float = Field(default=0.35, ge=-1.0, le=1.0)  # min cosine to a fact
    # instruction-like text addressed to a machine (`prose.injection`): "warn" records it in
    # the trace and commits; "error" blocks the commit; "off" does not look
    injection: Literal["warn", "error", "off"] = "warn"
    # prose fields (registers) by name; `prose`, the default, is always one of them
    fields: dict[str, ProseField] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _band_ordered(self) -> ProseSettings:
        lo, hi = self.length_band
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError("length_band must be two percentiles 0 <= low <= high <= 1")
        bad = [n for n in self.fields if not re.fullmatch(PROSE_FIELD_PATTERN, n)]
        if bad:
            raise ValueError(
                f"prose.fields: {', '.join(repr(b[:40]) for b in bad)}: a field name is lower "
                f"case letters, digits and '_' ({PROSE_FIELD_PATTERN})"
            )
        if len(self.fields) > MAX_PROSE_FIELDS:
            raise ValueError(f"prose.fields: {len(self.fields)} fields (max {MAX_PROSE_FIELDS})")
        return self


class RowBound(_Strict):
    """`[bounds.rows.<table>]`: how many rows one artifact's table may have (`ri.row_count`)."""

    min: int = Field(default=0, ge=0)
    max: int | None = Field(default=None, ge=0)
    severity: Literal["error", "warn"] = "error"

    @model_validator(mode="after")
    def _ordered(self) -> RowBound:
        if self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is greater than max {self.max}")
        return self


class AggregateBound(_Strict):
    """`[[bounds.aggregate]]`: `function(column)` over one artifact's `table` (per group of
    `group_by` columns, if any) must lie in [min, max] (`ri.aggregate`)."""

    table: str = Field(pattern=_IDENT)
    function: Literal["sum", "count", "count_distinct", "min", "max", "avg"]
    column: str = Field(pattern=_IDENT)
    group_by: list[str] = Field(default_factory=list)
    min: float | None = None
    max: float | None = None
    severity: Literal["error", "warn"] = "error"

    @model_validator(mode="after")
    def _range(self) -> AggregateBound:
        if self.min is None and self.max is None:
            raise ValueError("an aggregate bound needs `min`, `max` or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is greater than max {self.max}")
        bad = [g for g in self.group_by if not re.match(_IDENT, g)]
        if bad:
            raise ValueError(f"group_by names {bad}, which are not column names")
        return self


class Bounds(_Strict):
    """`[bounds]`: row-count and aggregate bounds RI_GATE checks per artifact."""

    rows: dict[str, RowBound] = Field(default_factory=dict)
    aggregate: list[AggregateBound] = Field(default_factory=list)


class Policy(_Strict):
    max_attempts: int = Field(default=4, ge=1, le=50)  # the seed counts as attempt 1
    require_approval: bool = False
    # the share of passing runs held for a person's spot-check; a learned overlay's risk
    # multiplier scales it (1.4 for an unreliable proposer, 0.9 for a reliable one)
    spot_check: float = Field(default=0.0, ge=0.0, le=1.0)
    # a committed run's lessons get a positive signal once this long passes with no undo
    # (None: LEARNING_UNDO_WINDOW_SEC, a day by default)
    undo_window_sec: float | None = Field(default=None, ge=0.0, le=365 * 86_400.0)
    rules: str = "agenda_v1"  # the agenda's ruleset, by name (rules.RULESETS)
    placeholders: list[str] = Field(default_factory=list)  # exact, case-insensitive

    @field_validator("rules")
    @classmethod
    def _known_ruleset(cls, v: str) -> str:
        if v not in RULESETS:
            raise ValueError(f"unknown ruleset {v!r}; shipped: {', '.join(sorted(RULESETS))}")
        return v

    placeholder_patterns: list[str] = Field(default_factory=list)  # regexes
    # RI_GATE's DuckDB (a pack's SQL is untrusted): an assertion query running longer than
    # this is interrupted (`ri.assertion_error`); the database may use this much memory
    # (spilling past it to a private temporary folder of the same size, removed at close)
    assertion_timeout_s: float = Field(default=30.0, gt=0.0, le=86_400.0)
    sql_memory_mb: int = Field(default=1024, ge=64, le=1_048_576)


class PackConfig(_Strict):
    pack: PackMeta
    files: PackFiles
    ontology: OntologySettings
    tables: dict[str, TableBinding] = Field(min_length=1)
    prose: ProseSettings = Field(default_factory=ProseSettings)
    policy: Policy = Field(default_factory=Policy)
    bounds: Bounds = Field(default_factory=Bounds)

    @model_validator(mode="after")
    def _prose_columns_exist(self) -> PackConfig:
        kinds = {"quantities": ("data",), "relations": ("object", "id")}
        for field, refs in (
            ("quantities", [q.column for q in self.prose.quantities]),
            ("relations", [r.column for r in self.prose.relations]),
        ):
            for ref in refs:
                table, _, column = ref.partition(".")
                binding = self.tables.get(table)
                col = binding.columns.get(column) if binding else None
                if col is None or col.kind not in kinds[field]:
                    raise ValueError(
                        f"prose.{field} names {ref!r}, which is not a bound "
                        f"{' or '.join(kinds[field])} column"
                    )
        units = {q.column for q in self.prose.quantities if q.units}
        for a in self.prose.aggregates:
            if a.table is not None and a.table not in self.tables:
                raise ValueError(f"prose.aggregates: table {a.table!r} is not a bound table")
            ref = a.column or f"{a.table}."
            table, _, column = ref.partition(".")
            ok = table in self.tables and (
                not column or (column in self.tables[table].columns
                               and (a.kind == "compare" or ref in units)))
            if not ok:
                raise ValueError(f"prose.aggregates: {ref.rstrip('.')!r} is not a bound table "
                                 "or a [[prose.quantities]] column with units")
        joined: list[ProseQuantity | ProseRelation] = [*self.prose.quantities,
                                                        *self.prose.relations]
        for src in joined:
            for ref in src.through:
                table, _, column = ref.partition(".")
                binding = self.tables.get(table)
                col = binding.columns.get(column) if binding else None
                if col is None or col.kind != "id" or table == src.column.partition(".")[0]:
                    raise ValueError(
                        f"prose: {src.column!r} through {ref!r}: not an id column of another table"
                    )
        return self

    @model_validator(mode="after")
    def _entity_columns_exist(self) -> PackConfig:
        for ref in self.prose.entity_columns:
            table, _, column = ref.partition(".")
            if table not in self.tables or column not in self.tables[table].columns:
                raise ValueError(f"prose.entity_columns names {ref!r}, which no table binds")
        for pat in self.policy.placeholder_patterns:
            try:
                compile_safe(pat)
            except ValueError as exc:
                raise ValueError(f"policy.placeholder_patterns: {exc}") from exc
        return self


@dataclass(frozen=True)
class Pack:
    """A loaded, validated pack. Paths are absolute; file contents are read lazily by gates."""

    root: Path
    config: PackConfig

    @property
    def name(self) -> str:
        return self.config.pack.name

    @property
    def ontology_path(self) -> Path:
        return self.root / self.config.files.ontology

    @property
    def ontology_imports(self) -> dict[str, Path | None]:
        """`[ontology.imports]`: owl:imports IRI -> the local file that stands for it, or
        None for an import the pack marks "skip"."""
        return {iri: None if f == SKIP_IMPORT else self.root / f
                for iri, f in self.config.ontology.imports.items()}

    @property
    def spine_path(self) -> Path:
        return self.root / self.config.files.spine

    @property
    def assertions_dir(self) -> Path:
        return self.root / self.config.files.assertions

    @property
    def references_dir(self) -> Path:
        return self.root / self.config.files.references

    @property
    def prompts_dir(self) -> Path:
        return self.root / self.config.files.prompts

    @property
    def tables(self) -> dict[str, TableBinding]:
        return self.config.tables

    def row_key(self, table: str, row: dict[str, object]) -> str:
        """Human-readable key of a row, e.g. 'EQ-003' or 'R1/EQ-003' for composite keys."""
        return "/".join(str(row.get(k)) for k in self.config.tables[table].key)

    def assertion_files(self) -> list[Path]:
        d = self.assertions_dir
        return sorted(d.glob("*.sql")) if d.is_dir() else []

    def reference_texts(self, d: Path | None = None) -> list[str]:
        """The reference samples (`*.txt`) of `d`, by default `[files] references`."""
        d = self.references_dir if d is None else d
        return (
            [p.read_text(encoding="utf-8") for p in sorted(d.glob("*.txt"))] if d.is_dir() else []
        )

    def prose_fields(self) -> list[FieldSpec]:
        """The prose fields PROSE_GATE judges, `prose` first, then the others by name."""
        prose = self.config.prose
        out: list[FieldSpec] = []
        names = [PROSE_FIELD, *sorted(n for n in prose.fields if n != PROSE_FIELD)]
        for name in names:
            own = prose.fields.get(name, ProseField())
            if own.references is not None:
                refs: Path | None = self.root / own.references
            else:
                refs = self.references_dir if name == PROSE_FIELD else None
            out.append(
                FieldSpec(
                    name=name,
                    enabled=prose.enabled and own.enabled,
                    references=refs,
                    length_band=own.length_band or prose.length_band,
                    min_coverage=prose.min_coverage if own.min_coverage is None
                    else own.min_coverage,
                    entities=own.entities,
                    values=own.values,
                    truncation=own.truncation,
                    injection=own.injection or prose.injection,
                )
            )
        return out


# words of parser messages, kept when the parsed file happens to contain them too
_PARSER_WORDS = frozenset({
    "a", "after", "an", "and", "at", "before", "between", "by", "character", "characters",
    "column", "columns", "document", "element", "end", "error", "event", "expected", "file",
    "found", "graph", "in", "invalid", "is", "line", "literal", "missing", "name", "near",
    "not", "object", "of", "or", "parser", "predicate", "statement", "subject", "syntax",
    "text", "the", "to", "token", "unexpected", "valid", "value", "when", "with", "within",
})
_EXCERPT = re.compile(r"""(["'`])(.*?)\1|[^\s"'`:;,()<>\[\]]+""")


def redact_excerpts(message: str, source: str, keep: frozenset[str] = frozenset()) -> str:
    """A parser's message without the file's content: every quoted part or word of
    `message` (3 characters or more, not a number) that occurs in `source` becomes `…`,
    unless it is a word of parser messages or in `keep` (case-insensitive). A pack file
    that does not parse may be a link to a file that is no pack file at all (a key, a
    password file): its error names the file and line, and echoes none of it."""

    def hide(m: re.Match[str]) -> str:
        word = m.group(2) if m.group(1) else m.group(0)
        plain = word.strip().strip(".")
        if (len(plain) < 3 or plain.isdigit() or plain not in source
                or plain.lower() in _PARSER_WORDS or plain.lower() in keep):
            return m.group(0)
        return f"{m.group(1)}…{m.group(1)}" if m.group(1) else "…"

    return _EXCERPT.sub(hide, message)


def _toml_line(exc: tomllib.TOMLDecodeError) -> int | None:
    m = re.search(r"line (\d+)", str(exc))
    return int(m.group(1)) if m else None


def path_outside(root: Path, rel: str) -> str | None:
    """Why `rel`, a path pack.toml names, would leave the pack folder `root` (resolved), or
    None when it stays inside: absolute, a `..` segment, or a symbolic link (the file, or
    a folder on the way) whose target is outside."""
    if "\0" in rel:
        return "contains a NUL character"
    parts = re.split(r"[\\/]", rel)
    if rel.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", rel) or Path(rel).is_absolute():
        return "is an absolute path"
    if ".." in parts:
        return "has a '..' segment"
    try:
        inside = (root / rel).resolve().is_relative_to(root)
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a name too long
        return "cannot be resolved"
    return None if inside else "is a symbolic link (or passes through one) to outside the pack folder"


def _confine(pack: Pack, toml_path: Path, text: str) -> None:
    """Every path pack.toml names, and every entry of the folders it names, stays inside
    the pack folder (a third-party pack must not make membrane read other files)."""
    files = pack.config.files
    named: list[tuple[tuple[str, ...], str]] = [
        (("files", label), value) for label in
        ("ontology", "spine", "assertions", "references", "prompts", "chapter")
        if isinstance(value := getattr(files, label), str)
    ]
    named += [(("ontology", "imports", iri), f) for iri, f in
              pack.config.ontology.imports.items() if f != SKIP_IMPORT]
    fields = pack.config.prose.fields
    named += [(("prose", "fields", name, "references"), f.references)
              for name, f in fields.items() if f.references is not None]
    for loc, value in named:
        why = path_outside(pack.root, value)
        if why is not None:
            what = f"maps {loc[-1]!r} to {value!r}, which" if loc[1] == "imports" else loc[-1]
            raise PackError(
                f"[{'.'.join(loc[:-1])}] {what} {why}: no such file in the pack folder (a "
                "pack reads only its own files)",
                file=toml_path, line=locate(key_lines(text), loc),
                hint="name a file or folder inside the pack folder, relative to it (copy "
                "the file in rather than linking to it)",
            )
    folders = [pack.assertions_dir, pack.references_dir, pack.prompts_dir]
    folders += [pack.root / f.references for f in fields.values() if f.references is not None]
    for folder in folders:
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            if path_outside(pack.root, str(entry.relative_to(pack.root))) is not None:
                raise PackError(
                    "a symbolic link to outside the pack folder: a pack reads only its own "
                    "files", file=entry,
                    hint="replace the link with a copy of the file",
                )


def load_pack(path: Path | str) -> Pack:
    """Load and validate a pack folder (or its pack.toml). Raises `PackError`."""
    root = Path(path)
    if root.is_file() and root.name == "pack.toml":
        root = root.parent
    toml_path = root / "pack.toml"
    if not toml_path.is_file():
        raise PackError(
            "no pack.toml here",
            file=toml_path,
            hint="--pack takes a pack folder, e.g. packs/facility",
        )
    try:
        text = toml_path.read_text(encoding="utf-8")
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PackError(
            f"pack.toml does not parse: {exc}",
            file=toml_path,
            line=_toml_line(exc),
            hint="fix the TOML syntax at that line",
        ) from exc
    except UnicodeDecodeError as exc:
        raise PackError("pack.toml is not UTF-8 text", file=toml_path) from exc
    try:
        config = PackConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PackError(
            f"pack.toml is invalid at `{where}`: {first['msg']}",
            file=toml_path,
            hint=f"{len(exc.errors())} problem(s) in all; see the pack format in docs/reference/pack-toml.md",
        ) from exc
    pack = Pack(root=root.resolve(), config=config)
    _confine(pack, toml_path, text)
    for label, p in (("ontology", pack.ontology_path), ("spine", pack.spine_path)):
        if not p.is_file():
            raise PackError(
                f"the {label} file named in pack.toml does not exist",
                file=p,
                hint=f"fix [files].{label} in {toml_path}",
            )
    for iri, file in config.ontology.imports.items():
        target = (pack.root / file).resolve()
        usable = file == SKIP_IMPORT or (target.is_relative_to(pack.root) and target.is_file())
        if ":" not in iri or not usable:
            raise PackError(
                f"[ontology.imports] maps {iri!r} to {file!r}: "
                + ("not an IRI" if ":" not in iri else "no such file in the pack folder"),
                file=toml_path,
                hint="map each owl:imports IRI to an ontology file inside the pack folder",
            )
    chapter = config.files.chapter
    if chapter is not None and not (pack.root / chapter).resolve().is_relative_to(pack.root):
        raise PackError(
            "the chapter template must be inside the pack folder",
            file=toml_path,
            hint="fix [files].chapter",
        )
    if chapter is not None and not (pack.root / chapter).is_file():
        raise PackError(
            "the chapter template named in pack.toml does not exist",
            file=pack.root / chapter,
            hint=f"fix [files].chapter in {toml_path}",
        )
    return pack

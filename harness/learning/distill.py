"""Distilling a scrubbed correction into strict, enum-validated envelopes.

An `Envelope` is what the corrections ledger keeps of a note (never the note itself):

* `kind`: `preference` (a taste the proposer can follow), `infra_gap` (the pack lacks a
  label, an alias, an axiom, an assertion), `policy` (asks to relax a gate, a check or a
  review: a person decides), `noise` (nothing to learn);
* `lesson`: one neutral line; `scope` (pack, table, column); an optional `violation`
  pattern (an RE2 regex and/or keywords) a proposal contradicting the preference would
  match; optional structured `advice` (`prefer_value`) a deterministic proposer acts on;
  `confidence`: the distiller's own guess, advisory only (never admits anything).

Two distillers share the `Distiller` protocol: an LLM one (`effectors/correction_distiller.py`,
the note framed as untrusted data) and `FallbackDistiller`, deterministic, used when no model
is configured. The fallback knows a lexicon of concepts (plain wording, concision, detail,
placeholders, units, date format, abbreviations, voice) and the pack's own vocabulary (tables,
columns, pool labels); its lessons are built from templates and that vocabulary only, so no
words of the note reach the ledger. What it does not recognise is `noise`.

`echoes(lesson, note)` is the verbatim guard applied to a model's lessons: a lesson that
copies five consecutive words of the note, or an unusual token of it (digits mixed with
letters, underscores, 15+ characters) that is not pack vocabulary, is refused and the
fallback's distillation is kept instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.learning.detect import Detection, classify
from harness.learning.lessons import Advice

__all__ = [
    "Distillation",
    "Distiller",
    "DistillerThrottled",
    "Envelope",
    "FallbackDistiller",
    "NoteScope",
    "Violation",
    "Vocabulary",
    "as_envelopes",
    "distill_offline",
    "echoes",
    "guard",
]

_COLUMN: Final = r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$"
_NAME: Final = r"^[A-Za-z_][A-Za-z0-9_]*$"
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class NoteScope(_Strict):
    pack: str | None = Field(default=None, max_length=120)
    table: str | None = Field(default=None, pattern=_NAME, max_length=120)
    column: str | None = Field(default=None, pattern=_COLUMN, max_length=240)

    def key(self) -> str:
        return f"{self.pack or '*'}|{self.table or '*'}|{self.column or '*'}"


class Violation(_Strict):
    """What a proposal contradicting a preference would contain. An RE2 pattern that does not
    compile is kept but checks nothing (a no-check, never an error)."""

    regex: str | None = Field(default=None, max_length=200)
    keywords: tuple[Annotated[str, Field(min_length=1, max_length=40)], ...] = Field(
        default=(), max_length=12
    )


class Envelope(_Strict):
    kind: Literal["preference", "infra_gap", "policy", "noise"]
    lesson: str = Field(min_length=3, max_length=240)
    scope: NoteScope = Field(default_factory=NoteScope)
    violation: Violation | None = None
    advice: Advice | None = None
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)  # advisory only

    @field_validator("lesson")
    @classmethod
    def _one_line(cls, v: str) -> str:
        v = " ".join(v.split())
        if _CONTROL.search(v):
            raise ValueError("a lesson is one line of text")
        return v


class Distillation(_Strict):
    envelopes: tuple[Envelope, ...] = Field(min_length=1, max_length=3)
    method: Literal["model", "fallback"]
    echo_refused: bool = False  # a model lesson copied the note and was replaced


class DistillerThrottled(Exception):
    """The model cannot be asked now (breaker open, budget spent): back-log the capture."""


class Distiller(Protocol):
    name: str

    def distill(self, text: str, detection: Detection, vocab: Vocabulary) -> Distillation: ...


@dataclass(frozen=True)
class Vocabulary:
    """What the pack names: `table -> columns` and `table.column -> pool labels`."""

    pack: str | None = None
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def words(self) -> frozenset[str]:
        out: set[str] = set()
        for table, cols in self.columns.items():
            out.add(table.lower())
            out.update(c.lower() for c in cols)
        for labels in self.labels.values():
            for label in labels:
                out.update(_words(label))
        return frozenset(out)


# -- the verbatim guard --------------------------------------------------------------------
_WORD: Final = re.compile(r"[\w°²³/.+-]+", re.U)


def _words(text: str) -> list[str]:
    return [w.strip(".-+/").lower() for w in _WORD.findall(text) if w.strip(".-+/")]


def _unusual(token: str) -> bool:
    has_digit = any(c.isdigit() for c in token)
    has_alpha = any(c.isalpha() for c in token)
    return (has_digit and has_alpha) or "_" in token or len(token) >= 15


def echoes(lesson: str, note: str, vocab: Vocabulary | None = None) -> bool:
    """The lesson copies the note: five consecutive words, or an unusual token not in the
    pack's vocabulary."""
    lw, nw = _words(lesson), _words(note)
    grams = {tuple(nw[i : i + 5]) for i in range(len(nw) - 4)}
    if any(tuple(lw[i : i + 5]) in grams for i in range(len(lw) - 4)):
        return True
    known = vocab.words() if vocab is not None else frozenset()
    lesson_tokens = set(lw)
    return any(_unusual(t) and t in lesson_tokens and t not in known for t in set(nw))


# -- the deterministic fallback ---------------------------------------------------------------
_PROMO: Final = (
    "state-of-the-art",
    "cutting-edge",
    "world-class",
    "best-in-class",
    "revolutionary",
    "seamless",
    "unparalleled",
    "unrivalled",
    "unrivaled",
    "premier",
    "stunning",
    "game-changing",
    "next-generation",
    "industry-leading",
    "exceptional",
)
_PLACEHOLDER_RE: Final = r"(?i)\b(?:TBD|TBC|TBA|N/A|unknown|placeholder|lorem ipsum|XXX)\b"

_CONCEPTS: Final[tuple[tuple[str, re.Pattern[str], str], ...]] = (
    (
        "plain",
        re.compile(
            r"(?i)\b(?:plain(?:er|ly)?|simpl(?:er|e|y)|dry|drier|salesy|sales[- ]?pitch|"
            r"sales[- ]?talk|marketing|markety|promotional|advert\w*|flowery|florid|hype[dy]?|"
            r"fluff[y]?|purple prose|spec[- ]?sheet|factual|matter[- ]of[- ]fact|brochure|"
            r"buzzwords?|superlatives?|adjectives|over[- ]the[- ]top|sober|neutral (?:tone|wording|"
            r"language)|less (?:fancy|enthusiastic|excited|breathless|gushing)|gush\w*|"
            r"breathless|no (?:adjectives|superlatives|hype|fluff))\b"
        ),
        "Write prose in plain, factual wording, without promotional language.",
    ),
    (
        "concise",
        re.compile(
            r"(?i)\b(?:concise|shorter|too long|long[- ]winded|wordy|verbose|brief(?:er)?|"
            r"tighter|trim (?:it|the prose|down)|rambl\w*|padding|padded|waffl\w*|cut (?:it )?down|"
            r"fewer words|get to the point|to the point)\b"
        ),
        "Keep prose concise.",
    ),
    (
        "detail",
        re.compile(
            r"(?i)\b(?:more detail(?:s|ed)?|too short|too brief|too terse|too thin|elaborate|"
            r"expand on|flesh (?:it |this )?out|say more|more context|more specific)\b"
        ),
        "Give more detail in prose.",
    ),
    (
        "iso_dates",
        re.compile(r"(?i)\b(?:iso[- ]?8601|iso dates?|yyyy-mm-dd|date format)\b"),
        "Write dates as ISO 8601 (YYYY-MM-DD).",
    ),
    (
        "abbreviations",
        re.compile(
            r"(?i)\b(?:spell (?:it |them |these |acronyms |abbreviations )?out|no abbreviations|"
            r"expand (?:the )?(?:acronyms|abbreviations)|(?:full|long) names?)\b"
        ),
        "Spell out abbreviations and acronyms on first use.",
    ),
    (
        "active_voice",
        re.compile(r"(?i)\b(?:passive voice|active voice|passive)\b"),
        "Prefer the active voice.",
    ),
)
_NO: Final = re.compile(r"(?i)\b(?:stop|don'?t|do not|never|no more|avoid|without|quit|not)\b")
_PLACEHOLDER_TALK: Final = re.compile(
    r"(?i)\b(?:tbd|tbc|tba|n/a|placeholders?|lorem|xxx|todo|unknowns?|blanks?|empty (?:cells?|"
    r"values?))\b|\?{2,}"
)
_UNITS: Final = (
    "kW",
    "W",
    "MW",
    "kWh",
    "MWh",
    "BTU/h",
    "BTU/hr",
    "BTU",
    "hp",
    "tons",
    "ton",
    "°C",
    "°F",
    "K",
    "mm",
    "cm",
    "m",
    "km",
    "ft",
    "in",
    "inches",
    "feet",
    "m²",
    "m2",
    "ft²",
    "sq ft",
    "kg",
    "lb",
    "lbs",
    "L",
    "gal",
    "gallons",
    "psi",
    "bar",
    "kPa",
    "Pa",
    "V",
    "kV",
    "A",
    "Hz",
    "kVA",
    "cfm",
    "CFM",
    "m³/h",
    "m3/h",
    "l/s",
    "L/s",
    "dB",
    "lux",
    "lm",
)
_UNIT_ALT: Final = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
_UNIT_SWAP: Final = (
    re.compile(
        rf"(?<![\w/])(?:use|prefer|in|want|give me)\s+(?P<good>{_UNIT_ALT})(?![\w/])[^.;!?\n]{{0,24}}?"
        rf"\b(?:not|instead of|rather than|over|than)\s+(?P<bad>{_UNIT_ALT})(?![\w/])"
    ),
    re.compile(
        rf"(?<![\w/])(?:no|not|stop (?:using|with)|don'?t use|never use|avoid)\s+(?P<bad>{_UNIT_ALT})"
        rf"(?![\w/])[^.;!?\n]{{0,16}}?\b(?:use|prefer|want|but|,)\s*(?P<good>{_UNIT_ALT})(?![\w/])"
    ),
    re.compile(
        rf"(?<![\w/])(?P<bad>{_UNIT_ALT})(?![\w/])\s*(?:->|→|=>|should be|should read|to)\s*"
        rf"(?P<good>{_UNIT_ALT})(?![\w/])"
    ),
)
_INFRA: Final = (
    re.compile(
        r"(?i)\b(?:pool|ontology|list|options|choices|vocabulary|catalog(?:ue)?|dropdown|pack|"
        r"taxonomy)\b[^.;!?\n]{0,40}?\b(?:has no|have no|lacks?|is missing|are missing|doesn'?t "
        r"(?:have|include|know|list)|does not (?:have|include|know|list)|without)\b"
    ),
    re.compile(
        r"(?i)\b(?:add|include|support|register)\b[^.;!?\n]{0,60}?\b(?:to|in|into)\s+(?:the\s+)?(?:[\w-]+\s+){0,3}"
        r"(?:pool|ontology|list|options|vocabulary|catalog(?:ue)?|pack|taxonomy)\b"
    ),
    re.compile(
        r"(?i)\b(?:is|are)\s+(?:an?\s+|the\s+)?(?:alias|synonym|abbreviation|short form|another "
        r"name|same thing)\s+(?:of|for|as)\b|\b(?:is|are)n'?t\s+(?:in|on)\s+the\s+(?:list|pool)\b|"
        r"\bnot\s+(?:in|on)\s+the\s+(?:list|pool|ontology)\b|\bno such (?:option|label|value)\b"
    ),
)
_PREFER_VALUE: Final = re.compile(
    r"(?i)\b(?:use|prefer|should be|must be|always|set (?:it |them )?to|choose|pick|put|make "
    r"(?:it|them))\b"
)
_STOP: Final = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "it",
        "its",
        "is",
        "are",
        "be",
        "this",
        "that",
        "these",
        "those",
        "please",
        "we",
        "you",
        "they",
        "them",
        "there",
        "here",
        "not",
        "no",
        "any",
        "some",
        "all",
        "our",
        "their",
        "add",
        "include",
    ]
)


def _phrase(text: str, phrase: str) -> re.Match[str] | None:
    return re.search(rf"(?i)(?<![\w-]){re.escape(phrase)}(?![\w-])", text)


class FallbackDistiller:
    """Deterministic distillation from a concept lexicon and the pack's vocabulary."""

    name = "fallback"

    def distill(self, text: str, detection: Detection, vocab: Vocabulary) -> Distillation:
        return Distillation(
            envelopes=tuple(self.envelopes(text, detection, vocab))[:3], method="fallback"
        )

    def envelopes(self, text: str, detection: Detection, vocab: Vocabulary) -> list[Envelope]:
        scope = self._scope(text, vocab)
        if detection.policy:
            what = (
                "an instruction addressed to the machine"
                if detection.injection
                else ("a request to relax a gate, a check, a policy or a review")
            )
            return [
                Envelope(
                    kind="policy",
                    lesson=f"A reviewer note contains {what}; a person decides.",
                    scope=scope,
                    confidence=0.9,
                )
            ]
        out: list[Envelope] = []
        if any(p.search(text) for p in _INFRA):
            out.append(self._infra(text, scope, vocab))
        for swap in _UNIT_SWAP:
            if (m := swap.search(text)) is not None and m.group("good") != m.group("bad"):
                good, bad = m.group("good"), m.group("bad")
                out.append(
                    Envelope(
                        kind="preference",
                        lesson=f"Use {good} rather than {bad}.",
                        scope=scope,
                        violation=Violation(keywords=(bad,)),
                        advice=self._unit_advice(good, vocab),
                        confidence=0.7,
                    )
                )
                break
        if _PLACEHOLDER_TALK.search(text) and _NO.search(text):
            where = f"in {scope.column}" if scope.column else "in any column or the prose"
            out.append(
                Envelope(
                    kind="preference",
                    lesson=f"Never leave placeholder values (TBD, N/A, unknown) {where}.",
                    scope=scope,
                    violation=Violation(regex=_PLACEHOLDER_RE),
                    confidence=0.7,
                )
            )
        for name, pattern, lesson in _CONCEPTS:
            if pattern.search(text):
                violation = Violation(keywords=_PROMO[:12]) if name == "plain" else None
                out.append(
                    Envelope(
                        kind="preference",
                        lesson=lesson,
                        scope=NoteScope(pack=scope.pack),
                        violation=violation,
                        confidence=0.6,
                    )
                )
        if (value := self._value(text, vocab, scope)) is not None:
            out.append(value)
        return self._dedupe(out) or [self._noise(scope)]

    @staticmethod
    def _dedupe(envs: Iterable[Envelope]) -> list[Envelope]:
        seen: set[str] = set()
        out = []
        for e in envs:
            if e.lesson not in seen:
                seen.add(e.lesson)
                out.append(e)
        return out

    @staticmethod
    def _noise(scope: NoteScope) -> Envelope:
        return Envelope(
            kind="noise",
            lesson="A reviewer note with no lesson the deterministic distiller recognises.",
            scope=scope,
            confidence=0.0,
        )

    @staticmethod
    def _scope(text: str, vocab: Vocabulary) -> NoteScope:
        """The one column the note names (by its name, `table.column`, or its words), else
        the one table, else the pack."""
        cols: list[str] = []
        for table, columns in vocab.columns.items():
            for col in columns:
                spoken = col.replace("_", " ")
                if _phrase(text, f"{table}.{col}") or (
                    len(col) > 2 and (_phrase(text, col) or _phrase(text, spoken))
                ):
                    cols.append(f"{table}.{col}")
        if len(cols) == 1:
            return NoteScope(pack=vocab.pack, table=cols[0].split(".")[0], column=cols[0])
        tables = [t for t in vocab.columns if _phrase(text, t) or _phrase(text, t.rstrip("s"))]
        if len(tables) == 1:
            return NoteScope(pack=vocab.pack, table=tables[0])
        return NoteScope(pack=vocab.pack)

    @staticmethod
    def _unit_advice(unit: str, vocab: Vocabulary) -> Advice | None:
        hits = [c for c, labels in vocab.labels.items() if unit in labels]
        if len(hits) != 1:
            return None
        return Advice(kind="prefer_value", column=hits[0], value=unit)

    def _value(self, text: str, vocab: Vocabulary, scope: NoteScope) -> Envelope | None:
        """ "use/prefer/should be <label>" with a pool label of one column -> prefer_value,
        with "for/on/in <label of another column of that table>" as its condition."""
        if _PREFER_VALUE.search(text) is None:
            return None
        found: list[tuple[str, str, re.Match[str]]] = []
        for column, labels in vocab.labels.items():
            for label in labels:
                if len(label) >= 2 and (m := _phrase(text, label)) is not None:
                    found.append((column, label, m))
        if not found:
            return None
        verb = _PREFER_VALUE.search(text)
        assert verb is not None
        after = [f for f in found if f[2].start() >= verb.start()]
        cands = [f for f in after if scope.column is None or f[0] == scope.column] or after
        if not cands:
            return None
        column, label, m = min(cands, key=lambda f: f[2].start())
        before = text[max(0, m.start() - 30) : m.start()]
        if _NO.search(before):
            return None
        table = column.split(".")[0]
        when = [
            f
            for f in found
            if f[0] != column
            and f[0].split(".")[0] == table
            and f[2].start() != m.start()
            and re.search(
                r"(?i)\b(?:for|on|in|when|where|with)\b[^.;!?\n]{0,20}$",
                text[max(0, f[2].start() - 30) : f[2].start()],
            )
        ]
        advice_kw: dict[str, str] = {}
        lesson = f"Prefer '{label}' in {column}"
        if len(when) == 1:
            wc, wv, _ = when[0]
            advice_kw = {"when_column": wc.split(".")[1], "when_value": wv}
            lesson += f" for rows whose {wc} is '{wv}'"
        avoid = [
            f[1]
            for f in found
            if f[0] == column
            and f[1] != label
            and _NO.search(text[max(0, f[2].start() - 16) : f[2].start()])
        ]
        return Envelope(
            kind="preference",
            lesson=lesson + ".",
            scope=NoteScope(pack=vocab.pack, table=table, column=column),
            violation=Violation(keywords=tuple(avoid[:12])) if avoid else None,
            advice=Advice(kind="prefer_value", column=column, value=label, **advice_kw),
            confidence=0.7,
        )

    def _infra(self, text: str, scope: NoteScope, vocab: Vocabulary) -> Envelope:
        terms: list[str] = []
        for w in re.findall(r"[A-Za-z][A-Za-z'-]{2,19}", text):
            lw = w.lower()
            if lw in _STOP or w in terms:
                continue
            if w.isupper() and len(w) > 4:
                continue  # an all-caps word longer than an acronym: not a name we repeat
            if w[0].isupper() and not _sentence_start(text, w):
                terms.append(w)
        where = scope.column or scope.table or "a pool"
        named = f" (it names: {', '.join(terms[:3])})" if terms else ""
        return Envelope(
            kind="infra_gap",
            lesson=f"A reviewer reports that the pack lacks a label, an alias or an assertion for "
            f"{where}{named}.",
            scope=scope,
            confidence=0.6,
        )


def _sentence_start(text: str, word: str) -> bool:
    i = text.find(word)
    return i == 0 or bool(re.search(r"[.!?:]\s*$", text[:i]))


def distill_offline(text: str, vocab: Vocabulary) -> Distillation:
    """Detection and the fallback distiller in one call (tests, the bench)."""
    return FallbackDistiller().distill(text, classify(text), vocab)


def guard(
    model: Distillation, fallback: Distillation, note: str, vocab: Vocabulary
) -> Distillation:
    """A model's distillation, unless one of its lessons echoes the note: then the
    fallback's, flagged `echo_refused`."""
    if any(echoes(e.lesson, note, vocab) for e in model.envelopes):
        return fallback.model_copy(update={"echo_refused": True})
    return model


def as_envelopes(items: Sequence[Mapping[str, object]]) -> list[Envelope]:
    """Validate a model's envelopes (raises pydantic's ValidationError on the first bad one)."""
    return [Envelope.model_validate(dict(item), strict=False) for item in items]

"""PROSE_GATE: the prose must match its tables: right entities, right values, proper shape.

Checks (codes are stable API):

* `prose.unknown_entity`  a pool individual is mentioned that no object cell of the artifact
                          names (the prose talks about something the tables do not hold)
* `prose.missing_entity`  a key entity (a value of a `[prose] entity_columns` cell) is never
                          mentioned, and coverage is below `[prose] min_coverage`
* `prose.value_mismatch`  a number with a unit, or a relation ("complies with", "installed
                          in"), stated about a row disagrees with the row's cell
                          (`[prose] quantities`, `relations`, `value_tolerance`)
* `prose.length`          the word count is outside the `[prose] length_band` percentiles of
                          the pack's reference samples
* `prose.truncated`       the prose stops mid-thought: no terminal punctuation, a trailing
                          ellipsis or connector word, unbalanced brackets/quotes, a list or
                          table cut off
* `prose.injection`       instruction-like text addressed to a machine ("ignore previous
                          instructions", "the gates have approved it", `</data>`): warn, or
                          error with `[prose] injection = "error"` (`effectors.prose.injection`)
* `prose.undeclared_field` the artifact carries a prose field (`prose_fields`) the pack does
                          not declare in `[prose.fields]`: nothing reaches `current/` unjudged
* `prose.unsupported`     (warn; only with the `embeddings` extra) a sentence about the
                          tables that no rendered table fact supports

A pack may declare several prose fields (`[prose.fields.<name>]`, e.g. a plain-language
`summary` beside the technical `prose`): each is judged by the checks above with its own
length references and switches, and when there are several every critique names its field
(`location.field`; spans are offsets into that field's text).

Mentions come from one `EntityMatcher` per gate (see `effectors.prose.matcher`), value claims
from one `ClaimChecker` (`effectors.prose.claims`). Prose critiques reject no cells: the
tables already passed VALUE_GATE and RI_GATE, so the prose is what must change.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from effectors.prose.aggregate import AggregateChecker, AggregateMismatch
from effectors.prose.claims import ArtifactIndex, ClaimChecker, Mismatch
from effectors.prose.entail import Entailment, EntailmentUnavailable
from effectors.prose.exclude import Exclusions
from effectors.prose.injection import injection_critiques
from effectors.prose.length import LengthBand, word_count
from effectors.prose.matcher import Anchor, CachedResolver, EntityMatcher, Mention
from effectors.prose.scope import Heads, not_asserted
from effectors.prose.text import Sentences, truncation_rules
from effectors.prose.workers import ProsePool, chunks
from harness.models import PROSE_FIELD, Artifact, Cell, Critique, Location, Verdict
from harness.pack import FieldSpec, Pack
from harness.pools import Pools, normalize_label

__all__ = ["ProseGate", "field_band", "length_band", "worker_gate"]

_log = logging.getLogger(__name__)
_MAX_ROWS_IN_EVIDENCE = 5
_MIN_PARALLEL = 64  # smaller cohorts are judged in-process (sending them costs more)


def length_band(pack: Pack) -> LengthBand | None:
    """The admissible word counts of the pack's prose (None: the pack has no references)."""
    return LengthBand.from_references(pack.reference_texts(), pack.config.prose.length_band)


def field_band(pack: Pack, spec: FieldSpec) -> LengthBand | None:
    """The admissible word counts of one prose field (None: it has no references)."""
    if spec.references is None:
        return None
    return LengthBand.from_references(pack.reference_texts(spec.references), spec.length_band)


def _what(field: str) -> str:
    """How a message names a prose field: "the prose", "the summary"."""
    return "the prose" if field == PROSE_FIELD else f"the {field.replace('_', ' ')}"


def _in_field(c: Critique, field: str) -> Critique:
    return c.model_copy(update={"location": c.location.model_copy(update={"field": field})})


def _format(value: Cell) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "(empty)" if value is None else str(value)


class ProseGate:
    """Judges prose against the artifact's tables (see the module docstring)."""

    name = "prose_gate"

    def __init__(
        self, pack: Pack, pools: Pools, workers: int = 1, min_parallel: int = _MIN_PARALLEL
    ) -> None:
        """`workers` > 1: cohorts of at least `min_parallel` artifacts are split across this
        process and `workers` - 1 worker processes (`effectors.prose.workers`); call
        `close` to stop them. Only the deterministic checks run in workers: with the
        entailment check on, everything is judged in-process."""
        if workers < 1:
            raise ValueError(f"workers must be >= 1, not {workers}")
        self.pack = pack
        self.pools = pools
        skip = Exclusions.of(pack, pools)  # [prose] exclude_classes, exclude_labels
        self.matcher = EntityMatcher(pools, abbreviations=pack.config.prose.abbreviations,
                                     keep=skip.keeps)
        self.heads = Heads({ind: label for ind in pools.individuals
                            if skip.keeps(ind, normalize_label(label := pools.label(ind)).split())})
        self.resolve = CachedResolver(pools)
        self.claims = ClaimChecker(pack, pools, self.resolve)
        self.aggregates = AggregateChecker(pack)
        self.band = length_band(pack)
        # the prose fields judged, each with its length band; `prose` first
        self.declared = tuple(f.name for f in pack.prose_fields())
        self.fields: list[tuple[FieldSpec, LengthBand | None]] = [
            (f, self.band if f.name == PROSE_FIELD and f.references == pack.references_dir
             and f.length_band == pack.config.prose.length_band else field_band(pack, f))
            for f in pack.prose_fields() if f.enabled
        ]
        # critiques name their field only when the pack has several (one: as before)
        self.name_fields = len(self.declared) > 1
        self.entailment: Entailment | None = None
        self.notes: tuple[str, ...] = ()
        if pack.config.prose.enabled and pack.config.prose.entailment == "auto":
            try:
                self.entailment = Entailment.load(pack, pools)
            except EntailmentUnavailable as exc:
                self.notes = (f"prose entailment check skipped: {exc}",)
                _note_once(self.notes[0])
        self.workers = workers if self.entailment is None and pack.config.prose.enabled else 1
        self.min_parallel = max(2, min_parallel)
        self._pool: ProsePool | None = None
        if self.workers > 1:
            self._pool = ProsePool(worker_gate, pack, pools, self.workers - 1)

    def judge(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        pool = self._pool
        if pool is not None and pool.alive and len(candidates) >= self.min_parallel:
            return pool.judge(chunks(candidates, self.workers), self)
        return self.judge_here(candidates)

    def judge_here(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        """The verdicts, judged in this process."""
        return [self._judge_one(a) for a in candidates]

    def wait_ready(self) -> bool:
        """Block until the worker processes are up (True), or report that there are none
        working (False)."""
        return self._pool is not None and self._pool.wait_ready()

    def close(self) -> None:
        """Stop the worker processes, if any (idempotent); the gate still judges after."""
        if self._pool is not None:
            self._pool.close()

    def _judge_one(self, artifact: Artifact) -> Verdict:
        critiques = self._undeclared(artifact)
        if not self.fields:  # [prose] enabled = false, or every field switched off
            return Verdict(gate=self.name, artifact_id=artifact.id, critiques=tuple(critiques))
        index = self.claims.index(artifact)  # the rows, resolved once for every check
        metrics: dict[str, float] = {}
        for spec, band in self.fields:
            found, got = self._judge_text(artifact, artifact.text(spec.name), spec, band, index)
            if self.name_fields:
                found = [_in_field(c, spec.name) for c in found]
            critiques += found
            prefix = "" if spec.name == PROSE_FIELD else f"{spec.name}."
            metrics |= {prefix + k: v for k, v in got.items()}
        return Verdict(
            gate=self.name, artifact_id=artifact.id, critiques=tuple(critiques), metrics=metrics
        )

    def _undeclared(self, artifact: Artifact) -> list[Critique]:
        """`prose.undeclared_field` for each prose field the pack does not declare: no
        text reaches `current/` unjudged."""
        return [
            Critique(
                code="prose.undeclared_field",
                gate=self.name,
                location=Location(field=name),
                observed=name,
                expected=", ".join(self.declared),
                fix_hint=f"drop the field {name!r}, or declare [prose.fields.{name}] in pack.toml",
                message=f"the artifact carries the prose field {name!r}, which the pack does "
                f"not declare (declared: {', '.join(self.declared)})",
            )
            for name in artifact.prose_fields
            if name not in self.declared
        ]

    def _judge_text(
        self,
        artifact: Artifact,
        prose: str,
        spec: FieldSpec,
        band: LengthBand | None,
        index: ArtifactIndex,
    ) -> tuple[list[Critique], dict[str, float]]:
        """The critiques and metrics of one prose field."""
        what = _what(spec.name)
        cues = self.claims.cues
        if cues is not None:
            mentions, hits = self.matcher.anchors(prose, cues)
        else:
            mentions, hits = [(m[1], m[2], m[0], False) for m in self.matcher.find(prose)], []
        sentences = Sentences(prose)
        # "the chiller": an entity of the tables by its head word
        mentioned = {m[2] for m in mentions}
        heads = self.heads.find(prose, index.view, mentions, mentioned)
        if heads:
            mentions = sorted([*mentions, *((s, e, ind, False) for s, e, ind in heads)])
            mentioned |= {ind for _, _, ind in heads}
        critiques, metrics = self._entities(
            prose, mentions, sentences, index, spec, what, mentioned
        )
        if not spec.entities:
            critiques = []
        judged, mismatches, skipped = 0, list[Mismatch](), tuple[str, ...]()
        if spec.values:
            judged, mismatches = self.claims.check(
                artifact, prose, mentions, hits, sentences, index
            )
            skipped = tuple(f"not checked (ambiguous subject): {t!r}" for t in self.claims.skipped)
            critiques += [self._mismatch(prose, m, skipped, what) for m in mismatches]
            hit = self.aggregates.sentences_hit(prose, sentences)
            if hit:
                anchors, starts = self.claims.anchors_and_starts(mentions, index, prose)
                found = self.aggregates.check(
                    artifact, prose, sentences, anchors, index.lookup, hit, starts
                )
                critiques += [self._aggregate(prose, m, what) for m in found]
        words = word_count(prose)
        if band is not None and not band.admits(words):
            critiques.append(self._length(words, band, what))
        if spec.truncation:
            critiques += self._truncation(prose, what)
        critiques += injection_critiques(self.name, prose, spec.injection)
        if self.entailment is not None:
            critiques += self.entailment.check(
                self.name, artifact, prose, [Mention(i, s, e) for s, e, i, _ in mentions], sentences
            )
        metrics |= {
            "words": float(words),
            "claims": float(judged),
            "claims_skipped": float(len(skipped)),
            "value_mismatches": float(len(mismatches)),
        }
        return critiques, metrics

    def _entities(
        self,
        prose: str,
        mentions: list[Anchor],
        sentences: Sentences,
        index: ArtifactIndex,
        spec: FieldSpec,
        what: str,
        mentioned: set[str],
    ) -> tuple[list[Critique], dict[str, float]]:
        """`mentioned`: the individuals of `mentions`."""
        view = index.view
        keys = index.key_entities(self.pack.config.prose.entity_columns)
        first: dict[str, Mention] = {}
        if not mentioned <= view:
            for s, e, individual, _ in mentions:
                if individual not in view and individual not in first \
                        and not not_asserted(prose, s, e, sentences.span(s)):
                    first[individual] = Mention(individual, s, e)
        critiques: list[Critique] = []
        unknown = sorted(first.values(), key=lambda m: m.start)
        for m in unknown:
            critiques.append(
                Critique(
                    code="prose.unknown_entity",
                    gate=self.name,
                    location=Location(span=(m.start, m.end)),
                    observed=m.individual,
                    evidence=(sentences.at(m.start),),
                    fix_hint="mention only entities the tables hold, or add them to the tables",
                    message=f"{what} mentions {prose[m.start : m.end]!r}, "
                    "which no cell of the artifact names",
                )
            )
        missing = [k for k in keys if k not in mentioned]
        coverage = (len(keys) - len(missing)) / len(keys) if keys else 1.0
        min_coverage = spec.min_coverage
        if missing and coverage < min_coverage:
            columns = ", ".join(self.pack.config.prose.entity_columns)
            for k in missing:
                critiques.append(
                    Critique(
                        code="prose.missing_entity",
                        gate=self.name,
                        observed=k,
                        expected=self.pools.label(k),
                        fix_hint=f"mention every entity of {columns} by its label",
                        message=f"{what} never mentions {self.pools.label(k)!r} "
                        f"(coverage {coverage:.2f} < {min_coverage:.2f})",
                    )
                )
        metrics = {
            "mentions": float(len(mentions)),
            "unknown_entities": float(len(unknown)),
            "missing_entities": float(len(missing)),
            "coverage": coverage,
        }
        return critiques, metrics

    def _mismatch(
        self, prose: str, m: Mismatch, skipped: tuple[str, ...] = (), what: str = "the prose"
    ) -> Critique:
        c = m.claim
        rows = m.rows[:_MAX_ROWS_IN_EVIDENCE]
        held = "; ".join(f"{key}: {_format(v)}" for _, key, v in rows)
        subject = rows[0][1] if len(m.rows) == 1 else None
        return Critique(
            code="prose.value_mismatch",
            gate=self.name,
            location=Location(table=c.table, column=c.column, key=subject, span=(c.start, c.end)),
            observed=c.text,
            expected=held,
            evidence=(
                prose[m.sentence[0] : m.sentence[1]].strip(),
                *(f"{c.table}[{r}].{c.column} = {_format(v)} ({key})" for r, key, v in rows),
                *skipped,
            ),
            fix_hint=f"state the {c.column.replace('_', ' ')} the {c.table} table holds",
            message=f"{what} says {c.text!r}, but {c.table}.{c.column} holds {held}",
        )

    def _aggregate(self, prose: str, m: AggregateMismatch, what: str = "the prose") -> Critique:
        return Critique(
            code="prose.value_mismatch",
            gate=self.name,
            location=Location(table=m.table, column=m.column, span=m.span),
            observed=m.text,
            expected=m.held,
            evidence=(prose[m.sentence[0] : m.sentence[1]].strip(), *m.rows),
            fix_hint=f"state what the {m.table} table holds ({m.kind} over its rows)",
            message=f"{what} says {m.text!r}, but the {m.table} rows hold {m.held}",
        )

    def _length(self, words: int, band: LengthBand, what: str = "the prose") -> Critique:
        side = "short" if words < band.low else "long"
        return Critique(
            code="prose.length",
            gate=self.name,
            observed=f"{words} words",
            expected=band.describe(),
            evidence=(f"{words} words; admitted {band.describe()}",),
            fix_hint=f"shorten {what}" if side == "long" else "say more about the tables",
            message=f"{what} is too {side}: {words} words, admitted {band.describe()}",
        )

    def _truncation(self, prose: str, what: str = "the prose") -> list[Critique]:
        fired = truncation_rules(prose)
        if not fired:
            return []
        text = prose.rstrip()
        return [
            Critique(
                code="prose.truncated",
                gate=self.name,
                location=Location(span=(max(0, len(text) - 40), len(text))),
                observed=text[-40:],
                evidence=tuple(fired),
                fix_hint=f"end {what} with a complete sentence",
                message=f"{what} looks cut off: " + "; ".join(fired),
            )
        ]


def worker_gate(pack: Pack, pools: Pools) -> ProseGate:
    """A worker process's gate (`effectors.prose.workers` receives this factory)."""
    return ProseGate(pack, pools)


_NOTED: set[str] = set()


def _note_once(message: str) -> None:
    """Log a setup note once per process (the library never prints)."""
    if message not in _NOTED:
        _NOTED.add(message)
        _log.info(message)

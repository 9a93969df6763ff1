"""VALUE_GATE: are the cell values admissible members of the pack's value ontology?

Per object cell (column bound to an object property):

* `value.placeholder` — the pack's `[policy] placeholders` / `placeholder_patterns`, or empty;
* `value.unknown`     — not a pool individual (by IRI fragment or any label); "did you mean";
* `value.disjoint`    — HermiT says the value cannot be what the row requires (a ∀
  restriction on the row's — possibly inferred — class, or the property's range), e.g.
  `ASHRAE 62.1` (an HVACStandard) as the standard of a CT scanner row;
* `value.cardinality` — the row, as a closed record, has more or fewer values of a property
  (modulo owl:sameAs, in the qualifying class) than a `≥n`/`≤n`/`=n` restriction or a
  functional property allows;
* `value.unsat`       — any other inconsistency, isolated to a minimal set of rows;
* `value.timeout`     — HermiT could not judge the row (alone) within the pack's
  `reasoner_timeout_s`: its object cells are not admitted, the cohort's other rows are
  judged (reasoner calls are chunked and a timed-out call bisected, `ontology.bounded`);
* `value.not_entailed`— consistent, but the value is not entailed to be in the required
  class (open world: e.g. a manufacturer only known as HVAC in an imaging row);
* `value.same_as`, `value.equivalent_class` (info) — a value admitted under another name;
* `value.ambiguous`   — the cell's fragment or label names more than one entity (two IRIs
  share a fragment, none in the pack's namespace): the candidates and their prefixed names;
* `value.deprecated`  — the entity is `owl:deprecated` (or has a `deprecatedInVersion`): a
  warning, or an error under `[ontology] deprecated = "error"`, naming the replacement
  (`isReplacedBy`) when the ontology gives one.

Per class cell (`kind = "class"`, issue 27), from the cached classification, no reasoner:
`value.placeholder`, `value.unknown` (no such class), `value.ambiguous`,
`value.unsatisfiable` (the class is equivalent to owl:Nothing), `value.outside_root` (not
the column's `root` or under it), `value.deprecated`; hints name the nearest valid classes
under the root (label similarity). An admitted class types the row (`row rdf:type C`), so
the reasoner applies the class's restrictions and disjointness to the row's other cells
(`value.unsat`).

Per data cell: `value.placeholder`, `value.range` (XSD type and facets, checked in Python).
Per text cell (`kind = "text"`): `value.placeholder`, `value.length` (`max_length`).

Canonical cells: every object cell that resolves (IRI fragment, preferred or alternative
label, pack alias, under `harness.normalize`) and whose canonical form (the pack's
`[ontology] canonical`: preferred label or IRI fragment) differs from its raw text is listed
in `Verdict.canonical` (also when another finding rejects it: it still names that entity).
The loop writes them back (`harness.canonical.apply_canonical`), so every later gate and
COMMIT see one value per entity. A cell that does not resolve stays as written.

Speed (DESIGN §6, bench `value_gate`): the index is the classification cached by content
hash; cell and row decisions the cached classification can make are memoised per distinct
cell and row; the reasoner sees only rows it has not seen before (`ontology.localise`,
one warm HermiT call for a clean cohort). `naive=True` is the reference path: each
candidate alone, every row realised, owlready2's own HermiT call (`ontology.naive`);
both paths give the same verdicts (`tests/effectors/test_value_gate_paths.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from effectors.close_labels import CloseLabels
from effectors.value_findings import Check as _Check
from effectors.value_findings import FindingsMixin
from effectors.value_findings import Row as _Row
from effectors.value_shapes import ValueShapes
from harness.models import (
    Artifact,
    CanonicalCell,
    Cell,
    CellRef,
    Critique,
    Location,
    Severity,
    Verdict,
)
from harness.pack import Pack
from harness.pools import Pools, normalize_label
from harness.saferegex import compile_safe
from ontology import HermitRunner, OntologyIndex, RowFacts, load_index, localise
from ontology.axioms import fragment
from ontology.bounded import ChunkSizer
from ontology.decided import surely_inconsistent
from ontology.facets import data_problem, describe
from ontology.localise import RowStatus, Signature, row_signature
from ontology.naive import OwlreadyReasoner
from ontology.pools import class_roots
from ontology.reason import BaseOntology, Reasoner, java_executable
from ontology.render import RDF_TYPE
from ontology.rows import RowPlan, plan_row
from ontology.warm import default_reasoner

__all__ = ["ValueGate"]

K = TypeVar("K")


class _Cell(NamedTuple):
    """The reasoner-free verdict on one cell value (memoised per table, column, value)."""

    status: str  # "ok", "placeholder", "unknown", "ambiguous", "range", "length",
    # and for class cells "outside_root", "unsatisfiable"
    individual: str | None = None
    problem: str | None = None
    via: str | None = None  # how an object cell resolved (Pools.resolve_via)
    klass: str | None = None  # the class a class cell names (its pool key)
    candidates: tuple[str, ...] = ()  # the entities an ambiguous cell may name


class _Planned(NamedTuple):
    plan: RowPlan
    facts: tuple[tuple[str, str], ...]
    quiet: bool
    suspect: bool  # the cached classification predicts a ∀/range violation


def _drop_oldest(memo: dict[K, Any], n: int, keep: set[K]) -> None:
    """Remove up to `n` of `memo`'s oldest entries (insertion order) whose key is not in
    `keep`."""
    doomed = list(islice((k for k in memo if k not in keep), n))
    for k in doomed:
        del memo[k]


class ValueGate(FindingsMixin):
    """Judges cohorts of candidates against the pack's value ontology (HermiT)."""

    name = "value_gate"

    def __init__(
        self, pack: Pack, index: OntologyIndex, base_nt: str, violation_nt: str,
        runner: Reasoner | None = None, *, naive: bool = False,
    ) -> None:
        self.pack = pack
        self.index = index
        self.pools: Pools = index.pools
        self.naive = naive
        timeout = pack.config.ontology.reasoner_timeout_s
        # the default reasoner is made on first use (`runner`): starting its JVM costs
        # ~0.4 s, which a session that judges nothing (a rerun) need not pay
        self._runner: Reasoner | None = runner
        self._timeout_s = timeout
        self._base = BaseOntology.of(base_nt)
        self._violation = BaseOntology.of(violation_nt)
        policy = pack.config.policy
        self._placeholders = {p.strip().lower() for p in policy.placeholders}
        self._patterns = [compile_safe(p) for p in policy.placeholder_patterns]  # RE2: linear
        self._violations = {v.iri: v for v in index.violations}
        self._prop_iris = {v.iri: self._prop_iri(v.property) for v in index.violations}
        individuals = self.pools.individuals.values()
        loose: dict[str, str] = {}
        for i in individuals:
            for t in (i.name, *i.labels):
                loose.setdefault(normalize_label(t), i.name)
        self._loose = loose
        self._labels = sorted(loose)
        self._close = CloseLabels(self._labels)  # "did you mean": difflib's, but indexed
        self._max_length = {(t, n): col.max_length for t, b in pack.tables.items()
                            for n, col in b.columns.items() if col.max_length is not None}
        self._cell_memo: dict[tuple[str, str, type, Cell], _Cell] = {}
        self._canon_memo: dict[tuple[str | None, str | None], tuple[str, str | None]] = {}
        # bounded (`_bound_memos`): at most `memo_rows` entries each after a cohort
        self._plan_memo: dict[tuple[str, tuple[str | None, ...]], _Planned] = {}
        self._row_memo: dict[Signature, RowStatus] = {}
        # the runner's own bound, when it has one (the default reasoner's is `timeout`)
        bound = getattr(runner, "timeout_s", None)
        self._sizer = ChunkSizer(timeout_s=float(bound) if isinstance(bound, int | float)
                                 else float(timeout))
        self._hint = lru_cache(maxsize=4096)(self._members_hint)
        self._roots = class_roots(pack, self.pools)
        self._class_hint = lru_cache(maxsize=4096)(self._nearest_hint)
        self._deprecated_severity: Severity = (
            "error" if pack.config.ontology.deprecated == "error" else "warn")
        self._shapes = ValueShapes.from_pack(pack, index)  # SHACL shapes (effectors/value_shapes)

    @property
    def runner(self) -> Reasoner:
        """The reasoner: the one given, else the default one, made on first use (the warm
        in-process HermiT when a JVM starts, else the cold subprocess one)."""
        if self._runner is None:
            self._runner = (OwlreadyReasoner() if self.naive
                            else default_reasoner(timeout_s=self._timeout_s))
        return self._runner

    @runner.setter
    def runner(self, runner: Reasoner) -> None:
        self._runner = runner

    @classmethod
    def from_pack(
        cls, pack: Pack, cache_dir: Path, runner: Reasoner | None = None, *, naive: bool = False
    ) -> ValueGate:
        """Load (or build and cache) the classified ontology; setup errors are `PackError`s.
        No `java` on PATH is an `InfrastructureError` here, not at the first judge; the
        classifier (warm when it can be, issue 27) is made only when the cache misses."""
        builder = runner if isinstance(runner, HermitRunner) else None
        if builder is None:
            java_executable()
        index, base_nt, violation_nt = load_index(pack, cache_dir, builder)
        return cls(pack, index, base_nt, violation_nt, runner, naive=naive)

    def warm_up(self) -> None:
        """Start the reasoner's JVM and parse the ontologies now, if it is a warm one."""
        prepare = getattr(self.runner, "prepare", None)
        if callable(prepare):
            prepare(self._base, self._violation)

    def _prop_iri(self, name: str) -> str:
        return self.index.property_iris.get(name, name)

    # -- the gate ---------------------------------------------------------------------------
    def judge(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        checks = [self._check_cells(i, a) for i, a in enumerate(candidates)]
        if self.naive:  # the reference: one candidate at a time, every row realised
            for c in checks:
                self._findings([c])
        else:
            self._findings(checks)
        for f in self._shapes.check(candidates) if self._shapes else ():  # SHACL (issue 27)
            self._add(checks[f.index], f.ref, "value.shape", observed=f.observed,
                      expected=f.expected, evidence=f.evidence, hint=f.hint, message=f.message,
                      severity=f.severity)
        for c in checks:
            self._closing(c)
        self._bound_memos(checks)
        return [self._verdict(c) for c in checks]

    def _findings(self, checks: list[_Check]) -> None:
        rows = [r.facts for c in checks for r in c.rows]
        memo = self._row_memo if self.index.rows_independent and not self.naive else None
        suspects = None if self.naive else {
            r.facts.iri for c in checks for r in c.rows if r.suspect
        }
        found = localise(rows, self._base, self._violation, self._prop_iris, self.runner,
                         suspects=suspects, memo=memo, sizer=self._sizer,
                         certain=set() if self.naive else {
                             row_signature(r.facts) for c in checks for r in c.rows
                             if r.suspect and self._surely_inconsistent(r)})
        by_owner = {c.index: c for c in checks}
        for owner, timed_out in found.timeouts.items():
            for facts in timed_out:
                self._timeout(by_owner[owner], facts, self._sizer.timeout_s)
        for c in checks:
            for r in c.rows:
                for v in sorted(found.violations.get(r.facts.iri, ()), key=self._specificity):
                    self._disjoint(c, r, v)
        for owner, conflicts in found.unsat.items():
            for conflict in conflicts:
                self._unsat(by_owner[owner], conflict)

    def _surely_inconsistent(self, r: _Row) -> bool:
        """The classification decides the row is inconsistent alone (`ontology.decided`):
        `localise` counts it guilty without bisecting for it (issue 21)."""
        return not r.plan.dropped and surely_inconsistent(
            self.pools, r.plan.required,
            [(p, v) for _, p, v in r.objects if v in self.index.individual_iris])

    def _specificity(self, v_iri: str) -> tuple[int, str]:
        """Sort key: violations with the most specific required class first."""
        info = self.pools.classes.get(self._violations[v_iri].required)
        return (-len(info.superclasses) if info else 0, v_iri)

    def _verdict(self, c: _Check) -> Verdict:
        order = {t: i for i, t in enumerate(self.pack.tables)}
        crits = sorted(
            c.critiques,
            key=lambda k: (order.get(k.location.table or "", -1), k.location.row or 0,
                           k.location.column or "", k.code),
        )
        errors = sum(1 for k in crits if k.severity == "error")
        admitted = c.cells - len(c.rejected)
        return Verdict(
            gate=self.name, artifact_id=c.artifact.id, critiques=tuple(crits),
            rejected=tuple(
                sorted(c.rejected, key=lambda r: (order.get(r.table, -1), r.row, r.column))
            ),
            metrics={
                "cells": float(c.cells), "object_cells": float(c.object_cells),
                "admitted": float(admitted), "placeholders": float(c.placeholders),
                "value_errors": float(errors),
                "admission_rate": admitted / c.cells if c.cells else 1.0,
                "canonicalised": float(len(c.canonical)),
            },
            canonical=tuple(c.canonical),
        )

    # -- cell-level checks (no reasoner) ------------------------------------------------------
    def is_placeholder(self, value: Cell) -> bool:
        if value is None:
            return True
        if not isinstance(value, str):
            return False
        if value.strip().lower() in self._placeholders or not value.strip():
            return True
        return any(p.search(value) for p in self._patterns)

    def _judge_cell(self, table: str, column: str, kind: str, prop: str, raw: Cell) -> _Cell:
        key = (table, column, type(raw), raw)
        hit = self._cell_memo.get(key)
        if hit is None:
            if self.is_placeholder(raw):
                hit = _Cell("placeholder")
            elif kind == "object":
                found = self.pools.resolve_via(raw)
                if found is not None:
                    hit = _Cell("ok", found[0], via=found[1])
                else:
                    hit = _Cell("ambiguous" if (c := self.pools.ambiguous(raw)) else "unknown",
                                candidates=c)
            elif kind == "class":
                hit = self._judge_class(raw, self._roots.get((table, column)))
            elif kind == "text":
                limit = self._max_length.get((table, column))
                hit = (_Cell("length", problem=f"{len(str(raw))} characters, more than {limit}")
                       if limit is not None and len(str(raw)) > limit else _Cell("ok"))
            elif prop in self.index.data_rules and (
                problem := data_problem(raw, self.index.data_rules[prop])
            ):
                hit = _Cell("range", problem=problem)
            else:
                hit = _Cell("ok")
            if len(self._cell_memo) < 200_000:
                self._cell_memo[key] = hit
        return hit

    def _judge_class(self, raw: Cell, root: str | None) -> _Cell:
        """A class cell, from the cached classification: exists, satisfiable, under root."""
        cls = self.pools.resolve_class(raw)
        if cls is None:
            c = self.pools.ambiguous_class(raw)
            return _Cell("ambiguous" if c else "unknown", candidates=c)
        info = self.pools.classes[cls]
        via = "iri" if raw in (cls, info.iri) or raw == fragment(info.iri) else "label"
        if info.unsatisfiable:
            return _Cell("unsatisfiable", klass=cls, via=via)
        if root is not None and not self.pools.is_under(cls, root):
            return _Cell("outside_root", klass=cls, via=via)
        return _Cell("ok", klass=cls, via=via)

    def _check_cells(self, index: int, artifact: Artifact) -> _Check:
        c = _Check(index=index, artifact=artifact)
        for t_index, (table, binding) in enumerate(self.pack.tables.items()):
            base = self.index.row_class_iris[table]
            bound = [(n, col.kind, col.property or "") for n, col in binding.columns.items()
                     if col.kind != "id" and (col.property or col.kind in ("text", "class"))]
            for row_i, row in enumerate(artifact.tables.get(table, [])):
                c.cells += len(row)
                judged = [(n, kind, p, self._judge_cell(table, n, kind, p, row.get(n)))
                          for n, kind, p in bound]
                objects = tuple((n, p, j.individual) for n, kind, p, j in judged
                                if kind == "object")
                c.object_cells += len(objects)
                plan, facts, quiet, suspect = self._plan(table, base, objects)
                typed = tuple((RDF_TYPE, self.pools.classes[j.klass].iri)
                              for _, kind, _, j in judged if j.klass and j.status == "ok")
                facts += typed  # the row is typed by its class cells' classes
                for n, kind, p, j in judged:
                    # most cells are fine and already canonical: a CellRef is built only
                    # for a cell the verdict lists (profiled: 154k refs on 2,000 artifacts)
                    raw = row.get(n)
                    canon = self._canonical_of(j)
                    notable = j.status != "ok" or self._is_deprecated(j)
                    if not notable and (canon is None or canon[0] == raw):
                        continue
                    ref = CellRef(table=table, row=row_i, column=n)
                    if canon is not None and canon[0] != raw:
                        c.canonical.append(CanonicalCell(cell=str(ref), raw=raw, value=canon[0],
                                                         iri=canon[1], via=j.via or "label"))
                    if j.status != "ok":
                        self._cell(c, ref, row, kind, p, j, plan)
                    else:
                        self._deprecated(c, ref, raw, j)
                r = _Row(table, row_i, RowFacts(index, table, t_index, row_i, base, facts),
                         plan, objects, quiet, suspect)
                c.rows.append(r)
                if plan.breaches:
                    self._too_many(c, r)
        return c

    def _canonical_of(self, j: _Cell) -> tuple[str, str | None] | None:
        """(canonical form, IRI) of the entity a resolved cell names, else None; a cell
        whose text differs from that form is listed in the verdict (`CanonicalCell`).
        Memoised per entity (bounded by the ontology's size)."""
        if j.individual is None and j.klass is None:
            return None
        key = (j.individual, j.klass)
        hit = self._canon_memo.get(key)
        if hit is None:
            if j.individual is not None:
                hit = (self.pools.canonical(j.individual),
                       self.index.individual_iris.get(j.individual))
            else:
                assert j.klass is not None
                info = self.pools.classes[j.klass]
                value = info.label if self.pools.canonical_form == "label" else j.klass
                hit = (value, info.iri or None)
            self._canon_memo[key] = hit
        return hit

    def _is_deprecated(self, j: _Cell) -> bool:
        if j.individual is not None:
            return self.pools.individuals[j.individual].deprecated
        return j.klass is not None and self.pools.classes[j.klass].deprecated

    def _deprecated(self, c: _Check, ref: CellRef, raw: Cell, j: _Cell) -> None:
        """`value.deprecated`: the cell names an entity the ontology deprecates."""
        if j.individual is not None:
            info = self.pools.individuals[j.individual]
            name, deprecated, repl = info.name, info.deprecated, info.replaced_by
            label: Callable[[str], str] = self.pools.label
        elif j.klass is not None:
            cinfo = self.pools.classes[j.klass]
            name, deprecated, repl = cinfo.name, cinfo.deprecated, cinfo.replaced_by
            label = self.pools.class_label
        else:
            return
        if not deprecated:
            return
        hint = ("use " + " or ".join(f"{label(r)!r} ({self.pools.short(r)})" for r in repl)
                + " instead (isReplacedBy)") if repl else "use an entity that is not deprecated"
        self._add(c, ref, "value.deprecated", observed=raw, expected=repl[0] if repl else None,
                  evidence=(f"{name} owl:deprecated true",
                            *(f"{name} isReplacedBy {r}" for r in repl)),
                  hint=hint, severity=self._deprecated_severity,
                  message=f"{raw!r} ({self.pools.short(name)}) is deprecated by the ontology")

    def _plan(self, table: str, base: str, objects: tuple[tuple[str, str, str | None], ...]
              ) -> _Planned:
        """The row plan, the row's facts for the reasoner and whether `_closing` can skip it
        (memoised per table and resolved values)."""
        key = (table, tuple(v for _, _, v in objects))
        hit = self._plan_memo.get(key)
        if hit is None:
            plan = plan_row(self.index, fragment(base), tuple((p, v) for _, p, v in objects))
            dropped = plan.dropped
            facts = tuple(
                (self._prop_iri(p), self.index.individual_iris[v])
                for i, (_, p, v) in enumerate(objects)
                if v is not None and i not in dropped and v in self.index.individual_iris
            )
            quiet = not plan.breaches and all(
                v is None or (
                    v not in self.index.same_as
                    and ((need := plan.required.get(p)) is None
                         or (self.pools.is_member(v, need) and need not in self.index.equivalents))
                )
                for _, p, v in objects
            )
            suspect = any(v is not None and (need := plan.required.get(p)) is not None
                          and not self.pools.is_member(v, need) for _, p, v in objects)
            hit = _Planned(plan, facts, quiet, suspect)
            self._plan_memo[key] = hit
        return hit

    memo_rows = 50_000  # entries the row memo and the plan memo each keep between cohorts

    def _bound_memos(self, checks: Sequence[_Check]) -> None:
        """Keep the per-row memos bounded (issue 22): each holds about 1 KB per distinct row,
        and a corpus whose rows never repeat would grow them without end. After a cohort, a
        memo past `memo_rows` entries drops its oldest entries (insertion order) that this
        cohort did not use, down to half the bound; the cohort's own rows are kept (they are
        the likeliest to come back, and a cohort larger than the bound keeps them all until
        the next one). Dropping an entry costs only its recomputation: the memos cache
        functions of the row (rows are independent when the row memo is used), so the
        verdicts are the same. The cell memo is bounded where it is filled (200,000)."""
        cap = self.memo_rows
        if len(self._row_memo) > cap:
            used = {row_signature(r.facts) for c in checks for r in c.rows}
            _drop_oldest(self._row_memo, len(self._row_memo) - cap // 2, used)
        if len(self._plan_memo) > cap:
            used_plans = {(r.table, tuple(v for _, _, v in r.objects))
                          for c in checks for r in c.rows}
            _drop_oldest(self._plan_memo, len(self._plan_memo) - cap // 2, used_plans)

    def _cell(self, c: _Check, ref: CellRef, row: dict[str, Cell], kind: str, prop: str,
              j: _Cell, plan: RowPlan) -> None:
        raw = row.get(ref.column)
        if kind == "class":
            self._class_cell(c, ref, raw, j)
            return
        expected = plan.required.get(prop) or self._range(prop)
        if j.status == "placeholder":
            c.placeholders += 1
            hint = self._hint(expected) if kind == "object" else self._data_hint(prop)
            self._add(c, ref, "value.placeholder", observed=raw, expected=expected, hint=hint,
                      message=f"{raw!r} is a placeholder, not a value")
        elif j.status == "unknown":
            self._add(c, ref, "value.unknown", observed=raw, expected=expected,
                      hint=self._did_you_mean(raw, expected),
                      message=f"{raw!r} is not an individual of the ontology")
        elif j.status == "ambiguous":
            iris = [self.index.individual_iris.get(n, n) for n in j.candidates]
            self._add(c, ref, "value.ambiguous", observed=raw, expected=expected,
                      evidence=tuple(f"<{i}>" for i in iris),
                      hint="write one of " + ", ".join(self.pools.short(i) for i in iris)
                      + " (a prefixed name or the full IRI)",
                      message=f"{raw!r} names more than one individual: "
                      + ", ".join(f"<{i}>" for i in iris))
        elif j.status == "length":
            self._add(c, ref, "value.length", observed=raw, expected=None,
                      hint="shorten the text", message=j.problem or "too long")
        elif j.status == "range":
            rule = self.index.data_rules[prop]
            self._add(c, ref, "value.range", observed=raw, expected=describe(rule),
                      evidence=rule.axioms, hint=f"give a {describe(rule)}",
                      message=j.problem or "out of range")

    def _class_cell(self, c: _Check, ref: CellRef, raw: Cell, j: _Cell) -> None:
        """The findings of a class cell the cached classification rejects."""
        root = self._roots.get((ref.table, ref.column))
        where = f"under {root}" if root else "of the ontology"
        hint = self._class_hint(str(raw), root)
        if j.status == "placeholder":
            c.placeholders += 1
            self._add(c, ref, "value.placeholder", observed=raw, expected=root, hint=hint,
                      message=f"{raw!r} is a placeholder, not a class")
        elif j.status == "unknown":
            self._add(c, ref, "value.unknown", observed=raw, expected=root, hint=hint,
                      message=f"{raw!r} is not a class {where}")
        elif j.status == "ambiguous":
            iris = [self.pools.classes[n].iri or n for n in j.candidates]
            self._add(c, ref, "value.ambiguous", observed=raw, expected=root,
                      evidence=tuple(f"<{i}>" for i in iris),
                      hint="write one of " + ", ".join(self.pools.short(i) for i in iris)
                      + " (a prefixed name or the full IRI)",
                      message=f"{raw!r} names more than one class: "
                      + ", ".join(f"<{i}>" for i in iris))
        elif j.status == "unsatisfiable" and j.klass:
            self._add(c, ref, "value.unsatisfiable", observed=raw, expected=root,
                      evidence=(f"{j.klass} ⊑ ⊥ (HermiT)",), hint=hint,
                      message=f"{raw!r} ({j.klass}) is unsatisfiable: nothing can be one")
        elif j.status == "outside_root" and j.klass and root:
            supers = self.pools.classes[j.klass].superclasses
            self._add(c, ref, "value.outside_root", observed=raw, expected=root,
                      evidence=(f"{j.klass} ⊑ " + (", ".join(supers) or "⊤"),), hint=hint,
                      message=f"{raw!r} ({j.klass}) is not {root} or a subclass of it")

    def _nearest_hint(self, raw: str, root: str | None) -> str | None:
        """The nearest valid classes under the root (label similarity), as a repair hint."""
        if root is None:
            return None
        near = self.pools.nearest_classes(raw, root)
        if near:
            return "did you mean " + " or ".join(
                f"{self.pools.class_label(n)!r} ({n})" for n in near) + f"? (classes under {root})"
        valid = sorted(self.pools.valid_classes(root),
                       key=lambda n: (len(self.pools.classes[n].superclasses), n))[:6]
        return f"use a class under {root}: " + ", ".join(valid) if valid else None

    def _range(self, prop: str) -> str | None:
        for v in self.index.violations:
            if v.kind == "range" and v.property == prop:
                return v.required
        return None

    def _add(
        self, c: _Check, ref: CellRef, code: str, *, observed: Cell, expected: str | None,
        evidence: Sequence[str] = (), hint: str | None, message: str,
        severity: Severity = "error",
    ) -> None:
        loc = Location(table=ref.table, row=ref.row, key=self._key(c, ref.table, ref.row),
                       column=ref.column)
        c.critiques.append(Critique(
            code=code, gate=self.name, severity=severity,
            location=loc, observed=None if observed is None else str(observed),
            expected=expected, evidence=tuple(evidence), fix_hint=hint,
            message=f"{ref} ({loc.key}): {message}",
        ))
        if severity == "error":
            c.rejected.add(ref)

    def _key(self, c: _Check, table: str, row: int) -> str:
        return self.pack.row_key(table, dict(c.artifact.tables[table][row]))

    def _members_hint(self, cls: str | None, limit: int = 6) -> str | None:
        members = self.pools.members(cls) if cls else ()
        if not members:
            return None
        shown = ", ".join(self.pools.label(m) for m in members[:limit])
        more = f" (+{len(members) - limit} more)" if len(members) > limit else ""
        return f"use a member of {cls}: {shown}{more}"

    def _did_you_mean(self, raw: Cell, expected: str | None) -> str | None:
        close = self._close(normalize_label(str(raw)))
        names = list(dict.fromkeys(self._loose[t] for t in close))
        if expected:
            fitting = [n for n in names if self.pools.is_member(n, expected)]
            names = fitting or names
        if names:
            return "did you mean " + " or ".join(
                f"{self.pools.label(n)!r} ({n})" for n in names[:3]
            ) + "?"
        return self._hint(expected)

    def _data_hint(self, prop: str) -> str | None:
        rule = self.index.data_rules.get(prop)
        return f"give a {describe(rule)}" if rule else None

"""VALUE_GATE: are the cell values admissible members of the pack's value ontology?

Per object cell (column bound to an object property):

* `value.placeholder` — the pack's `[policy] placeholders` / `placeholder_patterns`, or empty;
* `value.unknown`     — not a pool individual (by IRI fragment or any label); "did you mean";
* `value.disjoint`    — HermiT says the value cannot be what the row requires (a ∀
  restriction on the row's — possibly inferred — class, or the property's range), e.g.
  `ASHRAE 62.1` (an HVACStandard) as the standard of a CT scanner row;
* `value.unsat`       — any other inconsistency, isolated to a minimal set of rows;
* `value.not_entailed`— consistent, but the value is not entailed to be in the required
  class (open world: e.g. a manufacturer only known as HVAC in an imaging row).

Per data cell: `value.placeholder`, `value.range` (XSD type and facets, checked in Python).

The whole cohort goes to HermiT in one `ontology.localise` call (1 HermiT call when clean,
3 when every defect is a ∀/range violation; see that module). `rejected` holds every
cell with an error; `expected` is the class the row requires of the cell
(`Pools.required_classes`), else the property's range.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.models import Artifact, Cell, CellRef, Critique, Location, Verdict
from harness.pack import Pack
from harness.pools import Pools, normalize_label
from ontology import HermitRunner, OntologyIndex, RowFacts, load_index, localise
from ontology.axioms import fragment
from ontology.index import DataRule

__all__ = ["ValueGate"]

_INT_RE = re.compile(r"^[+-]?\d+$")
_NUM_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


@dataclass
class _Check:
    """One candidate's cell-level findings and the rows it hands to the reasoner."""

    index: int
    artifact: Artifact
    critiques: list[Critique] = field(default_factory=list)
    rejected: set[CellRef] = field(default_factory=set)
    rows: list[RowFacts] = field(default_factory=list)
    suspects: set[str] = field(default_factory=set)  # row IRIs predicted to break a rule
    values: dict[tuple[str, int], dict[str, str | None]] = field(default_factory=dict)
    cells: int = 0
    object_cells: int = 0
    placeholders: int = 0


class ValueGate:
    """Judges cohorts of candidates against the pack's value ontology (HermiT)."""

    name = "value_gate"

    def __init__(
        self,
        pack: Pack,
        index: OntologyIndex,
        base_nt: str,
        violation_nt: str,
        runner: HermitRunner | None = None,
    ) -> None:
        self.pack = pack
        self.index = index
        self.pools: Pools = index.pools
        self.runner = runner or HermitRunner()
        self._base_nt = base_nt
        self._violation_nt = violation_nt
        policy = pack.config.policy
        self._placeholders = {p.strip().lower() for p in policy.placeholders}
        self._patterns = [re.compile(p) for p in policy.placeholder_patterns]
        self._violations = {v.iri: v for v in index.violations}
        self._prop_iris = {v.iri: self._prop_iri(v.property) for v in index.violations}
        individuals = self.pools.individuals.values()
        self._labels = sorted({normalize_label(t) for i in individuals
                               for t in (i.name, *i.labels)})

    @classmethod
    def from_pack(
        cls, pack: Pack, cache_dir: Path, runner: HermitRunner | None = None
    ) -> ValueGate:
        """Load (or build and cache) the classified ontology; setup errors are `PackError`s."""
        runner = runner or HermitRunner()
        index, base_nt, violation_nt = load_index(pack, cache_dir, runner)
        return cls(pack, index, base_nt, violation_nt, runner)

    def _specificity(self, v_iri: str) -> tuple[int, str]:
        """Sort key: violations with the most specific required class first."""
        info = self.pools.classes.get(self._violations[v_iri].required)
        return (-len(info.superclasses) if info else 0, v_iri)

    def _prop_iri(self, name: str) -> str:
        return self.index.property_iris.get(name, name)

    # -- the gate ---------------------------------------------------------------------------
    def judge(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        checks = [self._check_cells(i, a) for i, a in enumerate(candidates)]
        rows = [r for c in checks for r in c.rows]
        suspects = {s for c in checks for s in c.suspects}
        findings = localise(rows, self._base_nt, self._violation_nt, self._prop_iris, self.runner,
                            suspects=suspects)
        for c in checks:
            for r in c.rows:
                for v in sorted(findings.violations.get(r.iri, ()), key=self._specificity):
                    self._disjoint(c, r, v)
            for conflict in findings.unsat.get(c.index, []):
                self._unsat(c, conflict)
            self._not_entailed(c)
        return [self._verdict(c) for c in checks]

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
            gate=self.name,
            artifact_id=c.artifact.id,
            critiques=tuple(crits),
            rejected=tuple(
                sorted(c.rejected, key=lambda r: (order.get(r.table, -1), r.row, r.column))
            ),
            metrics={
                "cells": float(c.cells),
                "object_cells": float(c.object_cells),
                "admitted": float(admitted),
                "placeholders": float(c.placeholders),
                "value_errors": float(errors),
                "admission_rate": admitted / c.cells if c.cells else 1.0,
            },
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

    def _check_cells(self, index: int, artifact: Artifact) -> _Check:
        c = _Check(index=index, artifact=artifact)
        for t_index, (table, binding) in enumerate(self.pack.tables.items()):
            base = self.index.row_class_iris[table]
            base_name = base.rsplit("#", 1)[-1] if "#" in base else base
            for row_i, row in enumerate(artifact.tables.get(table, [])):
                c.cells += len(row)
                values: dict[str, str | None] = {}
                for column, col in binding.columns.items():
                    if col.kind == "object" and col.property:
                        c.object_cells += 1
                        raw = row.get(column)
                        values[col.property] = (
                            None if self.is_placeholder(raw) else self.pools.resolve(raw)
                        )
                c.values[(table, row_i)] = values
                required = self.pools.required_classes(base_name, values)
                for column, col in binding.columns.items():
                    if col.kind == "id" or not col.property:
                        continue
                    ref = CellRef(table=table, row=row_i, column=column)
                    self._cell(c, ref, row, kind=col.kind, prop=col.property, required=required)
                facts = tuple(
                    (self._prop_iri(p), self.index.individual_iris[v])
                    for p, v in values.items() if v is not None and v in self.index.individual_iris
                )
                facts_row = RowFacts(index, table, t_index, row_i, base, facts)
                c.rows.append(facts_row)
                if any(v is not None and p in required and not self.pools.is_member(v, required[p])
                       for p, v in values.items()):
                    c.suspects.add(facts_row.iri)
        return c

    def _cell(
        self, c: _Check, ref: CellRef, row: dict[str, Cell], *, kind: str, prop: str,
        required: dict[str, str],
    ) -> None:
        raw = row.get(ref.column)
        expected = required.get(prop) or self._range(prop)
        if self.is_placeholder(raw):
            c.placeholders += 1
            hint = self._members_hint(expected) if kind == "object" else self._data_hint(prop)
            self._add(c, ref, "value.placeholder", observed=raw, expected=expected, hint=hint,
                      message=f"{raw!r} is a placeholder, not a value")
        elif kind == "object" and self.pools.resolve(raw) is None:
            self._add(c, ref, "value.unknown", observed=raw, expected=expected,
                      hint=self._did_you_mean(raw, expected),
                      message=f"{raw!r} is not an individual of the ontology")
        elif kind == "data" and prop in self.index.data_rules:
            problem = _data_problem(raw, self.index.data_rules[prop])
            if problem:
                rule = self.index.data_rules[prop]
                self._add(c, ref, "value.range", observed=raw, expected=_describe(rule),
                          evidence=rule.axioms, hint=f"give a {_describe(rule)}", message=problem)

    def _range(self, prop: str) -> str | None:
        for v in self.index.violations:
            if v.kind == "range" and v.property == prop:
                return v.required
        return None

    def _add(
        self, c: _Check, ref: CellRef, code: str, *, observed: Cell, expected: str | None,
        evidence: Sequence[str] = (), hint: str | None, message: str,
    ) -> None:
        loc = Location(table=ref.table, row=ref.row, key=self._key(c, ref.table, ref.row),
                       column=ref.column)
        c.critiques.append(Critique(
            code=code, gate=self.name,
            location=loc, observed=None if observed is None else str(observed),
            expected=expected, evidence=tuple(evidence), fix_hint=hint,
            message=f"{ref} ({loc.key}): {message}",
        ))
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
        close = difflib.get_close_matches(normalize_label(str(raw)), self._labels, n=8, cutoff=0.5)
        names = list(dict.fromkeys(n for t in close if (n := self.pools.resolve(t))))
        if expected:
            fitting = [n for n in names if self.pools.is_member(n, expected)]
            names = fitting or names
        if names:
            return "did you mean " + " or ".join(
                f"{self.pools.label(n)!r} ({n})" for n in names[:3]
            ) + "?"
        return self._members_hint(expected)

    def _data_hint(self, prop: str) -> str | None:
        rule = self.index.data_rules.get(prop)
        return f"give a {_describe(rule)}" if rule else None

    # -- reasoner findings ---------------------------------------------------------------------
    def _columns(self, table: str, prop: str) -> list[str]:
        cols = self.pack.tables[table].columns
        return [name for name, col in cols.items() if col.property == prop and col.kind == "object"]

    def _disjoint(self, c: _Check, r: RowFacts, v_iri: str) -> None:
        v = self._violations[v_iri]
        values = c.values[(r.table, r.row)]
        for column in self._columns(r.table, v.property):
            ref = CellRef(table=r.table, row=r.row, column=column)
            if ref in c.rejected:
                continue  # one critique per cell (the most specific violation comes first)
            value = values.get(v.property)
            raw = c.artifact.value(ref)
            evidence = [v.axiom, *self._why_row_in(v.on_class, values)]
            evidence += self._why_not(value, v.required) if value else []
            who = f"a row of {v.on_class}" if v.kind == "restriction" else f"range({v.property})"
            self._add(c, ref, "value.disjoint", observed=raw, expected=v.required,
                      evidence=evidence,
                      hint=self._members_hint(v.required) if v.required_named else None,
                      message=f"{raw!r} cannot be a member of {v.required}, as {who} requires")

    def _why_row_in(self, cls: str, values: dict[str, str | None]) -> list[str]:
        out: list[str] = []
        for rule in self.pools.row_rules:
            if rule.row_class == cls and rule.when:
                out += list(self.index.definitions.get(cls, ()))
                for p, need in rule.when.items():
                    if (val := values.get(p)) is not None:
                        out.append(f"{val} : {need}")
        return out

    def _why_not(self, value: str, required: str) -> list[str]:
        info = self.pools.individuals.get(value)
        classes = self.pools.classes
        types = [t for t in (info.types if info else ())
                 if t in classes and required in classes[t].disjoint_with]
        if not types:
            return [f"HermiT: {value} ∉ {required}"]
        t = max(types, key=lambda k: (len(self.pools.classes[k].superclasses), k))
        return [f"{value} : {t}", f"{t} ⊓ {required} ⊑ ⊥ (disjoint)"]

    def _unsat(self, c: _Check, conflict: list[RowFacts]) -> None:
        names = [f"{r.table}[{r.row}] ({self._key(c, r.table, r.row)})" for r in conflict]
        evidence = tuple(
            f"{n}: " + ", ".join(f"{fragment(p)} {fragment(i)}" for p, i in r.values)
            for n, r in zip(names, conflict, strict=True)
        )
        for r in conflict:
            row = c.artifact.tables[r.table][r.row]
            key = self._key(c, r.table, r.row)
            loc = Location(table=r.table, row=r.row, key=key)
            c.critiques.append(Critique(
                code="value.unsat", gate=self.name, location=loc,
                evidence=evidence, fix_hint="change one value of these rows",
                message=f"{r.table}[{r.row}] ({key}): these rows together contradict the ontology: "
                + "; ".join(names),
            ))
            for column in self._object_columns(r.table):
                if column in row:
                    c.rejected.add(CellRef(table=r.table, row=r.row, column=column))

    def _object_columns(self, table: str) -> list[str]:
        return [n for n, col in self.pack.tables[table].columns.items() if col.kind == "object"]

    def _not_entailed(self, c: _Check) -> None:
        for (table, row_i), values in c.values.items():
            base = self.index.row_class_iris[table].rsplit("#", 1)[-1]
            required = self.pools.required_classes(base, values)
            for column, col in self.pack.tables[table].columns.items():
                ref = CellRef(table=table, row=row_i, column=column)
                value = values.get(col.property or "") if col.kind == "object" else None
                need = required.get(col.property or "")
                if value is None or need is None or ref in c.rejected:
                    continue
                if not self.pools.is_member(value, need):
                    raw = c.artifact.value(ref)
                    types = ", ".join(self.pools.individuals[value].types)
                    self._add(c, ref, "value.not_entailed", observed=raw, expected=need,
                              evidence=(f"{value} : {types}",), hint=self._members_hint(need),
                              message=f"{raw!r} is not entailed to be a member of {need}")


def _describe(rule: DataRule) -> str:
    bounds = []
    for name, sym in (("min_inclusive", "≥"), ("min_exclusive", ">"),
                      ("max_inclusive", "≤"), ("max_exclusive", "<")):
        value = getattr(rule, name)
        if value is not None:
            bounds.append(f"{sym} {value:g}")
    kind = {"integer": "xsd:integer", "decimal": "number"}.get(rule.datatype, rule.datatype)
    return kind + (f" {' and '.join(bounds)}" if bounds else "")


def _data_problem(raw: Cell, rule: DataRule) -> str | None:
    if rule.datatype in ("string", "any"):
        return None
    if rule.datatype == "boolean":
        return None if isinstance(raw, bool) else f"{raw!r} is not a boolean"
    number: float
    if isinstance(raw, bool) or raw is None:
        return f"{raw!r} is not a number"
    if isinstance(raw, int | float):
        number = float(raw)
        is_int = isinstance(raw, int) or float(raw).is_integer()
    else:
        text = raw.strip()
        if not _NUM_RE.match(text):
            return f"{raw!r} is not a number"
        number, is_int = float(text), bool(_INT_RE.match(text))
    if not math.isfinite(number):
        return f"{raw!r} is not a finite number"
    if rule.datatype == "integer" and not is_int:
        return f"{raw!r} is not an integer"
    outside = (
        (rule.min_inclusive is not None and number < rule.min_inclusive)
        or (rule.max_inclusive is not None and number > rule.max_inclusive)
        or (rule.min_exclusive is not None and number <= rule.min_exclusive)
        or (rule.max_exclusive is not None and number >= rule.max_exclusive)
    )
    if outside:
        return f"{raw!r} is outside the range ({_describe(rule)})"
    return None

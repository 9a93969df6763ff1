"""The value gate's findings that need the row, the reasoner or the row plan:
`value.disjoint`, `value.unsat`, `value.timeout`, `value.cardinality`, `value.not_entailed`
and the info critiques `value.same_as` / `value.equivalent_class` (see `effectors.value_gate`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.models import Artifact, CanonicalCell, Cell, CellRef, Critique, Location, Severity
from harness.pack import Pack
from harness.pools import Pools
from ontology import OntologyIndex, RowFacts, ViolationClass
from ontology.axioms import fragment
from ontology.rows import CardinalityBreach, RowPlan

__all__ = ["Check", "FindingsMixin", "Row"]


@dataclass
class Row:
    table: str
    row: int
    facts: RowFacts
    plan: RowPlan
    objects: tuple[tuple[str, str, str | None], ...]  # (column, property, individual)
    quiet: bool = False  # nothing for `_closing` to say (no breach, entailed, no info)
    suspect: bool = False  # predicted to break a ∀/range requirement: realised by HermiT


@dataclass
class Check:
    """One candidate's findings and the rows it hands to the reasoner."""

    index: int
    artifact: Artifact
    critiques: list[Critique] = field(default_factory=list)
    rejected: set[CellRef] = field(default_factory=set)
    rows: list[Row] = field(default_factory=list)
    cells: int = 0
    object_cells: int = 0
    placeholders: int = 0
    canonical: list[CanonicalCell] = field(default_factory=list)


class FindingsMixin:
    name: str
    pack: Pack
    index: OntologyIndex
    pools: Pools
    _violations: dict[str, ViolationClass]
    _hint: Callable[[str | None], str | None]

    def _add(
        self, c: Check, ref: CellRef, code: str, *, observed: Cell, expected: str | None,
        evidence: Sequence[str] = (), hint: str | None, message: str,
        severity: Severity = "error",
    ) -> None:
        raise NotImplementedError

    def _key(self, c: Check, table: str, row: int) -> str:
        raise NotImplementedError

    # -- ∀ / range violations (HermiT) ----------------------------------------------------------
    def _disjoint(self, c: Check, r: Row, v_iri: str) -> None:
        v = self._violations[v_iri]
        cells = [(col, ind) for col, p, ind in r.objects if p == v.property]
        blamed = [(col, ind) for col, ind in cells
                  if ind is not None and not self.pools.is_member(ind, v.required)]
        for column, value in blamed or cells:
            ref = CellRef(table=r.table, row=r.row, column=column)
            if ref in c.rejected:
                continue  # one critique per cell (the most specific violation comes first)
            raw = c.artifact.value(ref)
            evidence = [v.axiom, *self._why_row_in(v.on_class, r)]
            evidence += self._why_not(value, v.required) if value else []
            who = f"a row of {v.on_class}" if v.kind == "restriction" else f"range({v.property})"
            self._add(c, ref, "value.disjoint", observed=raw, expected=v.required,
                      evidence=evidence, hint=self._hint(v.required) if v.required_named else None,
                      message=f"{raw!r} cannot be a member of {v.required}, as {who} requires")

    def _why_row_in(self, cls: str, r: Row) -> list[str]:
        out: list[str] = []
        for rule in self.pools.row_rules:
            if rule.row_class == cls and rule.when:
                out += list(self.index.definitions.get(cls, ()))
                for p, need in rule.when.items():
                    for _, q, val in r.objects:
                        if q == p and val is not None and self.pools.is_member(val, need):
                            out.append(f"{val} : {need}")
                            break
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

    # -- other inconsistencies (HermiT, bisection) --------------------------------------------
    def _unsat(self, c: Check, conflict: list[RowFacts]) -> None:
        names = [f"{r.table}[{r.row}] ({self._key(c, r.table, r.row)})" for r in conflict]
        evidence = tuple(
            f"{n}: " + ", ".join(f"{fragment(p)} {fragment(i)}" for p, i in r.values)
            for n, r in zip(names, conflict, strict=True)
        )
        for r in conflict:
            row = c.artifact.tables[r.table][r.row]
            key = self._key(c, r.table, r.row)
            c.critiques.append(Critique(
                code="value.unsat", gate=self.name,
                location=Location(table=r.table, row=r.row, key=key),
                evidence=evidence, fix_hint="change one value of these rows",
                message=f"{r.table}[{r.row}] ({key}): these rows together contradict the ontology: "
                + "; ".join(names),
            ))
            for column, col in self.pack.tables[r.table].columns.items():
                if col.kind in ("object", "class") and column in row:
                    c.rejected.add(CellRef(table=r.table, row=r.row, column=column))

    def _timeout(self, c: Check, r: RowFacts, timeout_s: float) -> None:
        """HermiT did not judge the row within the timeout, even alone: fail it closed."""
        row = c.artifact.tables[r.table][r.row]
        key = self._key(c, r.table, r.row)
        c.critiques.append(Critique(
            code="value.timeout", gate=self.name,
            location=Location(table=r.table, row=r.row, key=key),
            evidence=(f"{r.table}[{r.row}] ({key}): "
                      + ", ".join(f"{fragment(p)} {fragment(i)}" for p, i in r.values),),
            fix_hint="change a value of this row, or raise `reasoner_timeout_s` under "
                     "[ontology] in pack.toml",
            message=f"{r.table}[{r.row}] ({key}): HermiT did not judge this row within "
                    f"{timeout_s:g} s; its values are not admitted (the cohort's other rows "
                    "were judged)",
        ))
        for column, col in self.pack.tables[r.table].columns.items():
            if col.kind in ("object", "class") and column in row:
                c.rejected.add(CellRef(table=r.table, row=r.row, column=column))

    # -- cardinality (the row plan, before the reasoner) --------------------------------------
    def _too_many(self, c: Check, r: Row) -> None:
        for b in r.plan.breaches:
            if b.too_many:
                self._cardinality(c, r, b)

    def _cardinality(self, c: Check, r: Row, b: CardinalityBreach) -> None:
        rule = b.rule
        want = rule.axiom.split(" ⊑ ", 1)[-1] if " ⊑ " in rule.axiom else f"≤1 {rule.property}"
        values = [v for col, p, v in r.objects if p in rule.counted and v is not None]
        evidence = [rule.axiom, *self._why_row_in(rule.on_class, r),
                    f"{r.table}[{r.row}] {rule.property}: " + ", ".join(values)]
        groups = {tuple(sorted((v, *self.index.same_as[v]))) for v in values
                  if v in self.index.same_as}
        evidence += [" = ".join(g) + " (owl:sameAs)" for g in sorted(groups)]
        what = "more" if b.too_many else "fewer"
        message = (f"{b.count} distinct value(s) of {rule.property}"
                   + (f" in {rule.qualifier}" if rule.qualifier else "")
                   + f": {what} than {want} allows")
        blamed: list[str | None] = [r.objects[i][0] for i in b.cells] or [None]
        for column in blamed:
            if column is None:
                key = self._key(c, r.table, r.row)
                c.critiques.append(Critique(
                    code="value.cardinality", gate=self.name, expected=want,
                    location=Location(table=r.table, row=r.row, key=key),
                    evidence=tuple(evidence), fix_hint=f"give the row {want}",
                    message=f"{r.table}[{r.row}] ({key}): {message}",
                ))
                continue
            ref = CellRef(table=r.table, row=r.row, column=column)
            if ref not in c.rejected:
                self._add(c, ref, "value.cardinality", observed=c.artifact.value(ref),
                          expected=want, evidence=evidence, hint=f"give the row {want}",
                          message=message)

    # -- after the reasoner: min cardinalities, not entailed, info ----------------------------
    def _closing(self, c: Check) -> None:
        for r in c.rows:
            if r.quiet:
                continue
            refs = {col: CellRef(table=r.table, row=r.row, column=col) for col, _, _ in r.objects}
            for b in r.plan.breaches:
                counted = [col for col, p, _ in r.objects if p in b.rule.counted]
                if not b.too_many and not any(refs[col] in c.rejected for col in counted):
                    self._cardinality(c, r, b)
            for column, p, value in r.objects:
                need = r.plan.required.get(p)
                if value is None or refs[column] in c.rejected:
                    continue
                if need is not None and not self.pools.is_member(value, need):
                    raw = c.artifact.value(refs[column])
                    types = ", ".join(self.pools.individuals[value].types)
                    self._add(c, refs[column], "value.not_entailed", observed=raw,
                              expected=need, evidence=(f"{value} : {types}",),
                              hint=self._hint(need),
                              message=f"{raw!r} is not entailed to be a member of {need}")
                    continue
                self._info(c, refs[column], value, need)

    def _info(self, c: Check, ref: CellRef, value: str, need: str | None) -> None:
        raw = c.artifact.value(ref)
        if value in self.index.same_as:
            same = ", ".join(self.index.same_as[value])
            self._add(c, ref, "value.same_as", observed=raw, expected=need,
                      evidence=(f"{value} = {same} (owl:sameAs)",), hint=None,
                      severity="info", message=f"{raw!r} ({value}) is the same individual as "
                      f"{same}")
        if need is not None and need in self.index.equivalents:
            eq = ", ".join(self.index.equivalents[need])
            self._add(c, ref, "value.equivalent_class", observed=raw, expected=need,
                      evidence=(f"{need} ≡ {eq}",), hint=None, severity="info",
                      message=f"{raw!r} admitted as a member of {need} ≡ {eq}")

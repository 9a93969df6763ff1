"""Reasoning over a whole cohort with few HermiT calls, and localising what is wrong.

Strategy (one `localise` per `ValueGate.judge`):

1. **Consistency** of base ontology + every row of the cohort (one `-k` call). Consistent:
   done, no disjointness finding. *A clean cohort costs one HermiT call.*
2. **Violation classes** (one `-c -I` call): the base ontology with each relevant
   `C ⊑ ∀p.D` / `range(p) = D` replaced by `V ≡ C ⊓ ∃p.¬D` (`ontology.rules`), plus the
   *suspect* rows (those the cached classification predicts to break a requirement;
   realisation is superlinear in the rows), each distinct (class, values) once.
   Realisation puts each offending row into its
   `V` classes: that names the row, the property (hence the cell) and the axiom.
3. **Re-check** (one `-k` call): the original ontology + the rows with the offending
   assertions removed. Consistent: done. *A cohort whose defects are all ∀/range
   violations costs three calls, whatever its size.*
4. Otherwise (an inconsistency the violation classes do not explain): **bisection**.
   Consistency is monotone (a subset of a consistent ABox is consistent), so halving the
   set of candidates finds exactly the candidates that are inconsistent *on their own*
   (this is also where a ∀ violation the prediction missed ends up, as `value.unsat`)
   (a half that is consistent clears all its candidates); within each, QuickXplain
   finds minimal conflicting sets of rows (up to `max_conflicts`) -> `value.unsat`.
   Results of step 4 depend only on the candidate's own rows, so a verdict is the same
   alone or in a cohort. Steps 2-3 rely on rows interacting only through the base
   ontology (no inverse-functional or functional bound properties, no property chains
   from rows): true of value ontologies whose pool individuals are fully typed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ontology.reason import HermitRunner
from ontology.render import RowFacts, render_rows

__all__ = ["Findings", "localise"]


@dataclass
class Findings:
    violations: dict[str, set[str]] = field(default_factory=dict)  # row IRI -> violation IRIs
    unsat: dict[int, list[list[RowFacts]]] = field(default_factory=dict)  # owner -> conflicts
    calls: int = 0


@dataclass
class _Checker:
    runner: HermitRunner
    base_nt: str

    def consistent(self, rows: Sequence[RowFacts]) -> bool:
        return self.runner.is_consistent(self.base_nt + render_rows(rows))


def localise(
    rows: Sequence[RowFacts],
    base_nt: str,
    violation_nt: str,
    violation_props: dict[str, str],
    runner: HermitRunner,
    *,
    suspects: set[str] | None = None,
    max_conflicts: int = 3,
) -> Findings:
    """Find the offending rows of a cohort. `violation_props`: V IRI -> property IRI.

    `suspects` (row IRIs) limits step 2's realisation to the rows the cached classification
    predicts to violate a requirement (realising every row is superlinear: ~47 s for
    3,600 rows); `None` realises every row.
    """
    before = runner.calls
    findings = Findings()
    check = _Checker(runner, base_nt)
    if not rows or check.consistent(rows):
        findings.calls = runner.calls - before
        return findings
    # Rows with the same class and values are realised once (rows interact only through
    # the base ontology, see above): a corpus repeats its defects.
    reps: dict[tuple[str, tuple[tuple[str, str], ...]], RowFacts] = {}
    for r in rows:
        if suspects is None or r.iri in suspects:
            reps.setdefault((r.row_class, tuple(sorted(r.values))), r)
    result = runner.classify(violation_nt + render_rows(reps.values())) if reps else None
    remaining = list(rows)
    if result is not None:
        for i, r in enumerate(rows):
            rep = reps.get((r.row_class, tuple(sorted(r.values))))
            if rep is None:
                continue
            hits = {v for v in result.individual_types(rep.iri) if v in violation_props}
            if hits:
                findings.violations[r.iri] = hits
                remaining[i] = r.without({violation_props[v] for v in hits})
    if findings.violations and check.consistent(remaining):
        findings.calls = runner.calls - before
        return findings
    groups: dict[int, list[RowFacts]] = defaultdict(list)
    for r in remaining:
        groups[r.owner].append(r)
    for owner in _guilty(check, sorted(groups), groups, known_bad=True):  # it just failed
        findings.unsat[owner] = _conflicts(check, groups[owner], max_conflicts)
    findings.calls = runner.calls - before
    return findings


def _guilty(
    check: _Checker, owners: list[int], groups: dict[int, list[RowFacts]], known_bad: bool
) -> list[int]:
    """Owners whose rows are inconsistent on their own (bisection; consistency is monotone)."""
    if not owners:
        return []
    if not known_bad and check.consistent([r for o in owners for r in groups[o]]):
        return []
    if len(owners) == 1:
        return owners
    mid = len(owners) // 2
    return _guilty(check, owners[:mid], groups, False) + _guilty(check, owners[mid:], groups, False)


def _conflicts(check: _Checker, rows: list[RowFacts], limit: int) -> list[list[RowFacts]]:
    """Up to `limit` disjoint minimal conflicting sets of rows (QuickXplain), given `rows`
    is inconsistent."""
    out: list[list[RowFacts]] = []
    pool = list(rows)
    while pool and len(out) < limit:
        if out and check.consistent(pool):
            break
        conflict = _quickxplain(check, [], False, pool)
        if not conflict:
            break
        out.append(conflict)
        ids = {r.iri for r in conflict}
        pool = [r for r in pool if r.iri not in ids]
    return out


def _quickxplain(
    check: _Checker, background: list[RowFacts], added: bool, candidates: list[RowFacts]
) -> list[RowFacts]:
    if added and not check.consistent(background):
        return []
    if len(candidates) == 1:
        return list(candidates)
    mid = len(candidates) // 2
    c1, c2 = candidates[:mid], candidates[mid:]
    d2 = _quickxplain(check, background + c1, True, c2)
    d1 = _quickxplain(check, background + d2, bool(d2), c1)
    return d1 + d2

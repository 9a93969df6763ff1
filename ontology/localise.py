"""Reasoning over a whole cohort with few HermiT calls, and localising what is wrong.

Strategy (one `localise` per `ValueGate.judge`):

1. **Consistency** of base ontology + every row of the cohort (one `-k` call). Consistent:
   done, no disjointness finding. *A clean cohort costs one HermiT call.* Skipped when the
   cached classification predicts suspects (the cohort is then almost surely inconsistent):
   step 3 answers it, since a consistent cohort has no member of a violation class.
2. **Violation classes** (one `-c -I` call): the base ontology with each relevant
   `C ⊑ ∀p.D` / `range(p) = D` replaced by `V ≡ C ⊓ ∃p.¬D` (`ontology.rules`), plus the
   *suspect* rows (those the cached classification predicts to break a requirement;
   realisation is superlinear in the rows), each distinct (class, values) once.
   Realisation puts each offending row into its
   `V` classes: that names the row, the property (hence the cell) and the axiom.
3. **Re-check** (one `-k` call): the original ontology + the rows with the offending
   assertions removed. Consistent: done. *A cohort whose defects are all ∀/range
   violations costs two calls (per chunk, see below).*
4. Otherwise (an inconsistency the violation classes do not explain): **bisection**.
   Consistency is monotone (a subset of a consistent ABox is consistent), so halving the
   set of candidates finds exactly the candidates that are inconsistent *on their own*
   (this is also where a ∀ violation the prediction missed ends up, as `value.unsat`)
   (a half that is consistent clears all its candidates); within each, QuickXplain
   finds minimal conflicting sets of rows (up to `max_conflicts`) -> `value.unsat`.
   Results of step 4 depend only on the candidate's own rows, so a verdict is the same
   alone or in a cohort. Steps 2-3 rely on rows interacting only through the base
   ontology (`ontology.independence`).

**Per distinct row** (`memo` given; only when rows are independent, see
`ontology.independence`): a row's findings are then a function of its class and values,
so steps 1-4 run once over one representative of each *distinct row not seen before*
(each its own candidate; step 2 realises the suspects only), the results are memoised
(`RowStatus`) and every row of the cohort is answered from the memo. A culprit row step 2
did not realise is realised alone before it is called `value.unsat` (`_refine`), so a
missed prediction costs calls, never a different verdict. A corpus repeats its rows heavily: 18,000 rows of the
benchmark are ~1,000 distinct ones, and a later cohort mostly costs no reasoner call at all.
Every conflict is then a single row (the first `max_conflicts` of a candidate, in row
order: what QuickXplain returns on independent rows).

**Bounded calls** (`sizer` given, `ontology.bounded`): the work is cut into chunks of at
most `sizer.rows` suspect rows (distinct rows when `memo` is given, else whole candidates),
each judged by steps 1-4 on its own; a cohort with fewer suspects is one chunk, as above.
A chunk whose reasoner call times out is bisected: only the rows (or, without `memo`, the
candidates) that time out alone are returned in `Findings.timeouts`, the rest are judged
(unless the base ontology alone times out too: then the timeout is too short for anything
and `ReasonerTimeout` fails the cohort closed, as an infrastructure error).

The reasoner is any `ontology.reason.Reasoner`: the warm JVM, the cold subprocess or
owlready2's own call answer the same questions.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace

from ontology.bounded import ChunkSizer, bisect, chunks
from ontology.reason import BaseOntology, Reasoner
from ontology.render import RowFacts

__all__ = ["Findings", "RowStatus", "localise", "row_signature"]

Signature = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class RowStatus:
    """What the reasoner said of one distinct row: violation classes it falls into, and
    whether the row without those assertions is consistent on its own."""

    hits: frozenset[str]
    alone_ok: bool
    timed_out: bool = False  # HermiT did not judge the row alone within the timeout


@dataclass
class Findings:
    violations: dict[str, set[str]] = field(default_factory=dict)  # row IRI -> violation IRIs
    unsat: dict[int, list[list[RowFacts]]] = field(default_factory=dict)  # owner -> conflicts
    timeouts: dict[int, list[RowFacts]] = field(default_factory=dict)  # owner -> rows not judged
    calls: int = 0


@dataclass
class _Checker:
    runner: Reasoner
    base: BaseOntology

    def consistent(self, rows: Sequence[RowFacts]) -> bool:
        return self.runner.consistent(self.base, rows)


def _signature(r: RowFacts) -> Signature:
    return (r.row_class, tuple(sorted(r.values)))


row_signature = _signature  # what `localise(certain=...)` holds


def localise(
    rows: Sequence[RowFacts],
    base: BaseOntology,
    violation: BaseOntology,
    violation_props: dict[str, str],
    runner: Reasoner,
    *,
    suspects: set[str] | None = None,
    memo: dict[Signature, RowStatus] | None = None,
    max_conflicts: int = 3,
    sizer: ChunkSizer | None = None,
    certain: Collection[Signature] = frozenset(),
) -> Findings:
    """Find the offending rows of a cohort. `violation_props`: V IRI -> property IRI.

    `suspects` (row IRIs) limits step 2's realisation to the rows the cached classification
    predicts to violate a requirement (realising every row is superlinear); `None`
    realises every row. `memo`: reason per distinct row (rows must be independent).
    `sizer`: bound the suspect rows per call and bisect a call that times out.
    `certain`: signatures of rows known to be inconsistent on their own
    (`ontology.decided`): the bisection counts them guilty without a call.
    """
    before = runner.calls
    if memo is not None:
        findings = _per_row(rows, base, violation, violation_props, runner, memo, max_conflicts,
                            suspects, sizer, certain)
    else:
        findings = _by_owner(rows, base, violation, violation_props, runner, suspects,
                             max_conflicts, sizer, certain)
    findings.calls = runner.calls - before
    return findings


def _by_owner(
    rows: Sequence[RowFacts], base: BaseOntology, violation: BaseOntology,
    violation_props: dict[str, str], runner: Reasoner, suspects: set[str] | None,
    max_conflicts: int, sizer: ChunkSizer | None, certain: Collection[Signature] = frozenset(),
) -> Findings:
    """`_cohort` over chunks of whole candidates (one chunk when the suspects fit)."""
    groups: dict[int, list[RowFacts]] = defaultdict(list)
    for r in rows:
        groups[r.owner].append(r)
    owners = sorted(groups)
    heavy = {o: sum(1 for r in groups[o] if suspects is None or r.iri in suspects)
             for o in owners}
    if sizer is None or sum(heavy.values()) <= sizer.rows:
        return _cohort(rows, base, violation, violation_props, runner, suspects, max_conflicts,
                       certain)
    findings, bound = Findings(), sizer

    def judge(chunk: list[int]) -> None:
        part = [r for o in chunk for r in groups[o]]
        t0 = time.perf_counter()
        found = _cohort(part, base, violation, violation_props, runner, suspects, max_conflicts,
                        certain)
        bound.observe(sum(heavy[o] for o in chunk), time.perf_counter() - t0)
        findings.violations.update(found.violations)
        findings.unsat.update(found.unsat)

    size = sizer.rows
    cut: list[list[int]] = []
    for o in owners:  # at most `size` suspects a chunk (a candidate is never split)
        if not cut or (sum(heavy[x] for x in cut[-1]) + heavy[o] > size and cut[-1]):
            cut.append([])
        cut[-1].append(o)
    late = [o for chunk in cut for o in bisect(chunk, judge, sizer)]
    if late:
        _blame_rows(runner, base)
    for owner in late:
        findings.timeouts[owner] = list(groups[owner])
    return findings


def _blame_rows(runner: Reasoner, base: BaseOntology) -> None:
    """Some rows timed out alone. If the base ontology alone times out too, the timeout is too
    short for any row: `ReasonerTimeout` propagates (infrastructure, nothing admitted), else
    the rows are to blame (`Findings.timeouts`)."""
    runner.consistent(base, [])


def _per_row(
    rows: Sequence[RowFacts], base: BaseOntology, violation: BaseOntology,
    violation_props: dict[str, str], runner: Reasoner, memo: dict[Signature, RowStatus],
    max_conflicts: int, suspects: set[str] | None, sizer: ChunkSizer | None,
    certain: Collection[Signature] = frozenset(),
) -> Findings:
    fresh: dict[Signature, RowFacts] = {}
    suspect: set[str] = set()  # IRIs of the representatives to realise
    for r in rows:
        sig = _signature(r)
        if sig not in memo and sig not in fresh:
            fresh[sig] = replace(r, owner=len(fresh), table_index=0, row=0)
        if sig in fresh and (suspects is None or r.iri in suspects):
            suspect.add(fresh[sig].iri)

    def judge(reps: list[RowFacts]) -> None:
        heavy = {r.iri for r in reps if r.iri in suspect}
        t0 = time.perf_counter()
        cohort = _cohort(reps, base, violation, violation_props, runner, heavy, 1, certain)
        if sizer is not None:
            sizer.observe(len(heavy), time.perf_counter() - t0)
        for rep in reps:
            memo[_signature(rep)] = RowStatus(frozenset(cohort.violations.get(rep.iri, ())),
                                              rep.owner not in cohort.unsat)

    reps = list(fresh.values())
    size = sizer.rows if sizer is not None else max(1, len(reps))
    late = [rep for chunk in chunks(reps, lambda r: r.iri in suspect, size)
            for rep in bisect(chunk, judge, sizer)]  # timed out alone: not judged
    if late:
        _blame_rows(runner, base)
    for rep in late:
        memo[_signature(rep)] = RowStatus(frozenset(), True, timed_out=True)
    return _answer(rows, memo, violation_props, max_conflicts)


def _answer(rows: Sequence[RowFacts], memo: dict[Signature, RowStatus],
            violation_props: dict[str, str], max_conflicts: int) -> Findings:
    """Every row's findings, from the memo."""
    findings = Findings()
    for r in rows:
        status = memo[_signature(r)]
        if status.timed_out:
            findings.timeouts.setdefault(r.owner, []).append(r)
            continue
        if status.hits:
            findings.violations[r.iri] = set(status.hits)
        if not status.alone_ok:
            conflicts = findings.unsat.setdefault(r.owner, [])
            if len(conflicts) < max_conflicts:
                conflicts.append([r.without({violation_props[v] for v in status.hits})])
    return findings


def _cohort(
    rows: Sequence[RowFacts], base: BaseOntology, violation: BaseOntology,
    violation_props: dict[str, str], runner: Reasoner, suspects: set[str] | None,
    max_conflicts: int, certain: Collection[Signature] = frozenset(),
) -> Findings:
    findings = Findings()
    check = _Checker(runner, base)
    if not rows:
        return findings
    # Rows with the same class and values are realised once (rows interact only through
    # the base ontology, see above): a corpus repeats its defects.
    reps: dict[Signature, RowFacts] = {}
    for r in rows:
        if suspects is None or r.iri in suspects:
            reps.setdefault(_signature(r), r)
    # With predicted suspects the rows are most likely inconsistent: realise first and skip
    # step 1 (step 3 answers it: a consistent cohort has no violation-class member), one call
    # fewer per cohort. Without a prediction, step 1 first (a clean cohort: one call).
    realise_first = suspects is not None and bool(reps)
    if not realise_first and check.consistent(rows):
        return findings
    result = (
        runner.instances(violation, list(reps.values()), sorted(violation_props))
        if reps else None
    )
    remaining = _apply_hits(findings, rows, reps, result, violation_props)
    sure = {r.owner for r in remaining if certain and _signature(r) in certain}
    if (findings.violations or realise_first) and not sure and check.consistent(remaining):
        return findings
    groups: dict[int, list[RowFacts]] = defaultdict(list)
    for r in remaining:
        groups[r.owner].append(r)
    rest = [o for o in sorted(groups) if o not in sure]  # `sure`: guilty, no call to know
    guilty = sorted(sure) + _guilty(check, rest, groups, known_bad=not sure)  # it just failed
    for owner in sorted(guilty):
        findings.unsat[owner] = _conflicts(check, groups[owner], max_conflicts)
    # a culprit row step 2 did not realise (not a suspect, or an inconsistent cohort) may
    # still be a ∀/range violation: realise it alone
    _refine(findings, runner, violation, violation_props, check)
    return findings


def _apply_hits(
    findings: Findings, rows: Sequence[RowFacts], reps: dict[Signature, RowFacts],
    result: dict[str, set[str]] | None, violation_props: dict[str, str],
) -> list[RowFacts]:
    """Record each row's violation classes (those of its representative); the rows
    without the offending assertions."""
    remaining = list(rows)
    if result is None:
        return remaining
    members: dict[str, set[str]] = defaultdict(set)
    for v, found in result.items():
        for iri in found:
            members[iri].add(v)
    for i, r in enumerate(rows):
        rep = reps.get(_signature(r))
        hits = members.get(rep.iri, set()) if rep is not None else set()
        if hits:
            findings.violations[r.iri] = set(hits)
            remaining[i] = r.without({violation_props[v] for v in hits})
    return remaining


def _refine(
    findings: Findings, runner: Reasoner, violation: BaseOntology,
    violation_props: dict[str, str], check: _Checker,
) -> None:
    """A single-row conflict may be a ∀/range violation after all: realise it alone."""
    for owner, conflicts in list(findings.unsat.items()):
        kept: list[list[RowFacts]] = []
        for conflict in conflicts:
            if len(conflict) != 1:
                kept.append(conflict)
                continue
            (r,) = conflict
            if r.iri in findings.violations:  # realised already: its hits are removed
                kept.append(conflict)
                continue
            result = runner.instances(violation, [r], sorted(violation_props))
            hits = {v for v, found in (result or {}).items() if r.iri in found}
            if not hits:
                kept.append(conflict)
                continue
            findings.violations[r.iri] = hits
            rest = r.without({violation_props[v] for v in hits})
            if not check.consistent([rest]):
                kept.append([rest])
        if kept:
            findings.unsat[owner] = kept
        else:
            del findings.unsat[owner]


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

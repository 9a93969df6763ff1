"""The loop: a cohort of runs stepped in lockstep (DESIGN.md §2, §9).

Each cycle the agenda makes one decision per active run (fire a trigger, pick an
effector); runs whose effector is the same gate are judged together in one batched call,
each keeping its own verdict and trace. `refine` is a cohort of one.
"""

from __future__ import annotations

import errno
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from harness.canonical import CanonicalError, apply_canonical
from harness.errors import EndpointUnavailable, InfrastructureError, ProposalFailed
from harness.learning.outcomes import FailedAttempt
from harness.ledger import FinishRow
from harness.models import (
    Artifact,
    CallUsage,
    Critique,
    Decision,
    Outcome,
    Proposal,
    ProposalRequest,
    StepOutcome,
    Trigger,
    Verdict,
)
from harness.models import Effector as E
from harness.ports import Gate, Pending, run_gate
from harness.run import Engines, Run
from harness.storage import from_os_error, is_disk_full
from harness.store import artifact_bytes, content_hash
from harness.trace.events import (
    BudgetEvent,
    CommitEvent,
    CritiqueEvent,
    DecisionEvent,
    ErrorEvent,
    OutcomeEvent,
    ProposalEvent,
    UsageEvent,
    VerdictEvent,
    cell_changes,
)
from harness.trace.figures import Published, shape_of
from harness.workspace import SyncGroup

__all__ = ["start_cohort", "step_cohort"]


_GATES = (E.VALUE_GATE, E.RI_GATE, E.PROSE_GATE)


def step_cohort(runs: Sequence[Run], eng: Engines) -> None:
    """One cycle for every active run: decide and fire; a run's own effector (seed,
    proposer, critique, commit, hold) runs at once, so the next run's decision sees its
    effect (tokens spent, an endpoint down); runs waiting on the same gate are judged
    together at the end of the cycle."""
    plan: dict[E, list[Run]] = defaultdict(list)
    finished: list[FinishRow] = []
    commits: list[Run] = []
    traces = eng.durable()
    for run in runs:
        if run.state.terminal:
            continue
        facts = run.facts(eng)
        decision = eng.agenda.decide(run.run_id, facts)
        _apply(run, decision, eng, facts)
        if decision.effector in _GATES:
            plan[decision.effector].append(run)
        elif decision.effector is E.COMMIT:
            commits.append(run)  # group commit at the end of the cycle
        elif decision.effector is not None:
            _run_one(decision.effector, run, eng)
        elif run.state.terminal:
            finished.append(_finish(run, eng, traces))
    _commit_group(commits, eng)
    if finished:
        traces.sync()  # the ended traces durable, once for all, before their anchors
    eng.ledger.finish_runs(finished)  # one transaction anchors every run that ended and
    # appends its outcome record to the log the learning layer reads
    for gate, group in plan.items():
        _judge(eng.gates[gate], group, eng)


def _apply(run: Run, d: Decision, eng: Engines, facts: dict[str, str | int]) -> None:
    """Fire the decision's trigger and record it with the facts it was decided on."""
    before = run.state
    if d.trigger is not None:
        run.machine.fire(d.trigger)
    run.cycles += 1
    run.outcome = StepOutcome.NONE
    run.trace.append(
        DecisionEvent,
        cycle=run.cycles,
        facts=facts,
        rule=d.rule,
        trigger=d.trigger.value if d.trigger else None,
        effector=d.effector.value if d.effector else None,
        state_before=before.value,
        state_after=run.state.value,
    )
    if d.trigger is Trigger.HALTED:  # the rule says why; the endpoint's own words, if any
        detail = f" ({eng.endpoint_down})" if eng.endpoint_down else ""
        run.error = f"stopped by rule {d.rule}: {eng.agenda.doc(d.rule)}{detail}"


_EFFECTS: dict[E, Callable[[Run, Engines], None]] = {}


def _run_one(effector: E, run: Run, eng: Engines) -> None:
    _guarded(effector, [run], eng, lambda: _EFFECTS[effector](run, eng))


def _guarded(effector: E, runs: Sequence[Run], eng: Engines, effect: Callable[[], None]) -> None:
    """Run an effector for `runs`: an engine or a file that failed crashes them (a full or
    read-only disk stops the batch instead)."""
    try:
        effect()
    except InfrastructureError as exc:
        if isinstance(exc, EndpointUnavailable):
            eng.endpoint_down = eng.endpoint_down or str(exc)
        for run in runs:
            _crash(run, effector.value, str(exc))
    except OSError as exc:
        if is_disk_full(exc) or exc.errno == errno.EROFS:  # the disk refused: stop the batch
            raise from_os_error(exc) from exc
        for run in runs:
            _crash(run, effector.value, f"{type(exc).__name__}: {exc}")


def _crash(run: Run, effector: str | None, message: str) -> None:
    run.outcome = StepOutcome.CRASHED
    run.error = message
    run.trace.append(ErrorEvent, effector=effector, message=message)


def _record_proposal(
    run: Run,
    proposal: Proposal,
    previous: Artifact | None,
    eng: Engines,
    lessons: tuple[str, ...] = (),
) -> None:
    new = proposal.artifact
    data = artifact_bytes(new)
    digest = content_hash(data)
    if eng.scratch is not None and previous is not None:  # attempt 1 is the stored input
        eng.scratch.put(run.run_id, digest, data)
    changes, removed = cell_changes(previous, new)  # plain dicts: no model per cell
    if previous is not None:  # the proposer's own work (attempt 1 is the input)
        run.proposed.update((c["cell"], c["value"]) for c in changes)
        run.prose_touched = run.prose_touched or previous.texts() != new.texts()
        run.tools.update(proposal.tool_calls)
    run.trace.append(
        ProposalEvent,
        attempt=run.attempt,
        proposer=proposal.proposer,
        content_hash=digest,
        changes=changes,
        removed=removed,
        prose_changed=previous is None or previous.texts() != new.texts(),
        notes=proposal.notes,
        tool_calls=proposal.tool_calls,
        tokens_prompt=proposal.tokens_prompt,
        tokens_completion=proposal.tokens_completion,
        lessons=lessons,
    )


def _seed(run: Run, eng: Engines) -> None:
    run.attempt = 1
    run.candidate = run.input
    seed = Proposal(artifact=run.input, proposer="seed", notes=("input artifact",))
    _record_proposal(run, seed, None, eng)
    run.verdicts = []
    run.outcome = StepOutcome.PROPOSED


def _tokens_left(run: Run, eng: Engines) -> int | None:
    left = [
        limit - used
        for limit, used in (
            (eng.max_tokens_per_run, run.tokens),
            (eng.max_tokens_per_batch, eng.batch_tokens),
        )
        if limit is not None
    ]
    return max(0, min(left)) if left else None


def _account(run: Run, eng: Engines, usage: Sequence[CallUsage], tokens: int) -> None:
    """Record each model call and charge the tokens to the run and the batch budgets."""
    for u in usage:
        run.trace.append(
            UsageEvent, attempt=run.attempt, proposer=eng.proposer.name, **u.model_dump()
        )
    before_run, before_batch = run.tokens, eng.batch_tokens
    run.tokens += tokens
    eng.batch_tokens += tokens
    for scope, limit, before, now in (
        ("run", eng.max_tokens_per_run, before_run, run.tokens),
        ("batch", eng.max_tokens_per_batch, before_batch, eng.batch_tokens),
    ):
        if limit is not None and before < limit <= now:
            run.trace.append(BudgetEvent, scope=scope, used=now, limit=limit)


def _propose(run: Run, eng: Engines) -> None:
    """The budgets were checked by the rules that chose this retry."""
    assert run.candidate is not None and run.report is not None
    run.attempt += 1
    run.verdicts = []
    request = ProposalRequest(
        run_id=run.run_id,
        attempt=run.attempt,
        candidate=run.candidate,
        critique=run.report,
        lessons=eng.lessons_for(run.candidate),
        tokens_left=_tokens_left(run, eng),
    )
    try:
        proposal = eng.proposer.propose(request)
    except InfrastructureError:
        raise
    except ProposalFailed as exc:
        _account(run, eng, exc.usage, sum(u.tokens_prompt + u.tokens_completion for u in exc.usage))
        _reject(run, [_failed_critique(exc)])
        return
    except Exception as exc:
        _reject(run, [_harness_critique("proposal.invalid", f"{type(exc).__name__}: {exc}")])
        return
    _account(run, eng, proposal.usage, proposal.tokens_prompt + proposal.tokens_completion)
    problems = list(eng.critic.locked_breaches(run.report.spine, proposal.artifact))
    if proposal.artifact.id != run.input.id:
        problems.append(
            _harness_critique(
                "proposal.invalid", f"artifact id changed to {proposal.artifact.id!r}"
            )
        )
    _record_proposal(run, proposal, run.candidate, eng, tuple(h.key for h in request.lessons))
    if problems:
        _reject(run, problems)
        return
    run.candidate = proposal.artifact
    run.outcome = StepOutcome.PROPOSED


def _harness_critique(code: str, message: str) -> Critique:
    return Critique(code=code, gate="harness", message=message)


def _failed_critique(exc: ProposalFailed) -> Critique:
    try:
        return Critique(code=exc.code, gate="harness", message=exc.message, evidence=exc.evidence)
    except ValueError:  # a third-party proposer's malformed code
        return _harness_critique("proposal.invalid", str(exc))


def _reject(run: Run, critiques: Sequence[Critique]) -> None:
    """A proposal the harness refuses never reaches a gate; it is a failed attempt."""
    run.verdicts = [Verdict(gate="harness", artifact_id=run.input.id, critiques=tuple(critiques))]
    run.outcome = StepOutcome.REJECTED
    _trace_verdicts(run, run.verdicts, 1)


def _trace_verdicts(run: Run, verdicts: Sequence[Verdict], batch_size: int) -> None:
    for v in verdicts:
        run.codes.update(c.code for c in v.critiques if c.severity != "info")
        run.last_gate = v.gate
        run.trace.append(
            VerdictEvent,
            attempt=run.attempt,
            gate=v.gate,
            passed=v.passed,
            crashed=v.crashed,
            critiques=v.critiques,
            metrics=v.metrics,
            rejected=tuple(str(r) for r in v.rejected),
            batch_size=batch_size,
            canonical=v.canonical,
        )


def _judge(gate: Gate, group: list[Run], eng: Engines) -> None:
    candidates = [r.candidate for r in group]
    assert all(c is not None for c in candidates)
    try:
        verdicts = run_gate(gate, [c for c in candidates if c is not None])
    except InfrastructureError as exc:
        for run in group:
            _crash(run, gate.name, str(exc))
        return
    for run, verdict in zip(group, verdicts, strict=True):
        run.verdicts.append(verdict)
        _trace_verdicts(run, [verdict], len(group))
        if verdict.canonical and run.candidate is not None:
            # one canonical value per cell: what the value gate resolved is what every later
            # gate judges, what the spine locks and what COMMIT writes (raw is in the trace)
            try:
                run.candidate = apply_canonical(run.candidate, verdict.canonical)
                for c in verdict.canonical:  # the proposer wrote another spelling of it
                    if c.cell in run.proposed and run.proposed[c.cell] == c.raw:
                        run.proposed[c.cell] = c.value
            except CanonicalError as exc:
                _crash(run, gate.name, f"canonical table does not fit the candidate: {exc}")
                continue
        run.outcome = StepOutcome.PASSED if verdict.passed else StepOutcome.FAILED


def _critique(run: Run, eng: Engines) -> None:
    assert run.candidate is not None
    failed = [v for v in run.verdicts if not v.passed] or run.verdicts
    # the spine is this candidate's cells minus what a gate rejected: a cell a later gate
    # rejects (an FK a value gate admitted) is unlocked again so it can be repaired
    report = eng.critic.report(failed, run.candidate, run.attempt)
    if run.report is not None and all(v.gate == "harness" for v in failed):
        # a rejected proposal never reached a gate: keep what the gates said and the spine,
        # and add why the proposal was refused
        report = run.report.model_copy(
            update={"attempt": run.attempt, "critiques": run.report.critiques + report.critiques}
        )
    run.report = report
    errors = [c for c in report.critiques if c.severity == "error"]
    own = [c for c in errors if _proposers_doing(run, c)] if run.attempt >= 2 else []
    run.repeats.update({c.code for c in errors})
    if own:  # a failed attempt of the proposer's: patterns learn it
        hints: dict[str, str] = {}
        for c in own:
            if c.fix_hint:
                hints.setdefault(c.code, c.fix_hint[:500])
        run.failed.append(
            FailedAttempt(
                attempt=run.attempt,
                codes=tuple(dict.fromkeys(c.code for c in own)),
                fix_hints=hints,
            )
        )
    run.trace.append(
        CritiqueEvent,
        attempt=run.attempt,
        gate=report.gate,
        codes=tuple(c.code for c in report.critiques),
        locked=len(report.spine.locked),
    )
    run.outcome = StepOutcome.CRITIQUED


def _proposers_doing(run: Run, c: Critique) -> bool:
    """Whether an error counts against the proposer (DESIGN.md §8: patterns learn only
    what the proposer did). It does when the harness refused the proposal, when it points
    at a cell the proposer wrote or at prose it rewrote, or when the proposer was already
    told of this code and it is still there. A defect carried over from the input that no
    gate had reported yet (gates run in order: an FK behind a value error) is the input's."""
    if c.gate == "harness" or c.code in run.repeats:
        return True
    loc = c.location
    cell = loc.cell()
    if cell is not None:
        return str(cell) in run.proposed
    if loc.table is not None:
        prefix = f"{loc.table}[{loc.row}]" if loc.row is not None else f"{loc.table}["
        return any(k.startswith(prefix) for k in run.proposed)
    return run.prose_touched


def _metrics(run: Run) -> dict[str, float | int | str]:
    out: dict[str, float | int | str] = {"attempts": run.attempt, "run_id": run.run_id}
    for v in run.verdicts:
        for k, val in v.metrics.items():
            out[f"{v.gate}.{k}"] = val
    return out


def _commit_group(runs: Sequence[Run], eng: Engines) -> None:
    """COMMIT for every run that chose it this cycle: one group commit (their objects
    synced together, one ledger transaction), then each trace's commit record. A failure
    before the ledger transaction commits none of them: each run crashes as one COMMIT
    failing alone did (a full or read-only disk stops the batch)."""
    if not runs:
        return
    pending = []
    for run in runs:
        assert run.candidate is not None
        pending.append(
            Pending(
                run.run_id,
                run.candidate,
                _metrics(run),
                run.trace.seq - 1,
                run.trace.head,
                eng.clock(),
            )
        )
    _guarded(E.COMMIT, runs, eng, lambda: _committed(runs, eng.committer.commit_many(pending)))


def _published(run: Run, content_hash: str, metrics_hash: str) -> None:
    assert run.candidate is not None
    run.content_hash = content_hash
    run.published = Published(content_hash, metrics_hash, run.attempt, shape_of(run.candidate))


def _committed(runs: Sequence[Run], rows: Sequence[Any]) -> None:
    for run, row in zip(runs, rows, strict=True):
        _published(run, row.content_hash, row.metrics_hash)
        run.trace.append(
            CommitEvent,
            artifact_id=row.artifact_id,
            version=row.version,
            content_hash=row.content_hash,
            metrics_hash=row.metrics_hash,
        )
        run.outcome = StepOutcome.COMMITTED


def _hold(run: Run, eng: Engines) -> None:
    """Stored for a human outside current/ (`.membrane/held/`), recorded in the ledger."""
    assert run.candidate is not None
    why = "; ".join(eng.approval_reasons(run.spot_check)) or "the rules held it"
    row = eng.committer.hold(
        run.run_id,
        run.candidate,
        _metrics(run),
        run.trace.seq - 1,
        run.trace.head,
        eng.clock(),
        why,
    )
    _published(run, row.content_hash, row.metrics_hash)
    run.trace.append(
        CommitEvent,
        artifact_id=run.input.id,
        version=0,
        content_hash=row.content_hash,
        metrics_hash=row.metrics_hash,
        held=True,
        why=why,
    )
    run.outcome = StepOutcome.HELD


_EFFECTS.update({E.SEED: _seed, E.PROPOSER: _propose, E.CRITIQUE: _critique, E.HOLD: _hold})


def start_cohort(
    runs: Sequence[Run], eng: Engines, batch_id: str, pack: str, pack_version: str
) -> None:
    """Register runs in the ledger (one transaction) and open their traces."""
    eng.ledger.start_runs(
        [(r.run_id, r.input.id, batch_id, r.input_hash, eng.clock()) for r in runs]
    )
    for r in runs:
        r.start(eng, batch_id, pack, pack_version)


def _finish(run: Run, eng: Engines, group: SyncGroup) -> FinishRow:
    record = run.learning_record(eng, eng.clock())
    outcome = Outcome(
        run_id=run.run_id,
        artifact_id=run.input.id,
        state=run.state,
        attempts=run.attempt,
        cycles=run.cycles,
        critique_codes=dict(run.codes),
        proposer=eng.proposer.name,
        content_hash=run.content_hash,
        error=run.error,
    )
    run.trace.append(OutcomeEvent, outcome=outcome)
    run.trace.close(sync=False)
    group.add(run.trace.path)  # synced with the cycle's other ended traces
    run.machine.release()
    eng.agenda.forget(run.run_id)
    return FinishRow(
        run.run_id,
        run.state.value,
        run.trace.seq,
        run.trace.head,
        outcome.model_dump_json(),
        record.model_dump_json() if record is not None else None,
        run.trace.figures.to_json(shape_of(run.input), run.published),
    )

"""What each CLI command does: one library call, then rendering (rich for people, --json
for scripts). Kept apart from `cli.py` so argument parsing stays one screen."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harness import api, checkpoint, diagram, inspect, retention
from harness.cli_corrections import COMMANDS as CORRECTION_COMMANDS
from harness.cli_pack import COMMANDS as PACK_COMMANDS
from harness.cli_report import guarded, print_report
from harness.errors import ConfigError
from harness.learning.report import markdown as learning_markdown
from harness.output import (
    EXIT_INPUT,
    EXIT_NOT_COMMITTED,
    EXIT_OK,
    EXIT_TRACE,
    EXIT_UNAVAILABLE,
    emit_json,
    jsonable,
)
from harness.workspace import Workspace, resolve_workspace

__all__ = ["dispatch"]

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def dispatch(args: argparse.Namespace) -> int:
    root = resolve_workspace(args.workspace)
    return guarded(root, lambda: _dispatch(args, root))


def _dispatch(args: argparse.Namespace, root: Path) -> int:
    if args.command == "trace":
        handler: Callable[[argparse.Namespace, Path], int] = {
            "list": _trace_list,
            "show": _trace_show,
            "verify": _trace_verify,
            "why": _trace_why,
            "checkpoint": _trace_checkpoint,
        }[args.trace_command]
        return handler(args, root)
    if args.command == "rules":
        return _rules_show(args, root)
    if args.command == "serve":
        from harness.cli_serve import run_serve  # the server stack loads only here

        return run_serve(args, root)
    if args.command in CORRECTION_COMMANDS:
        from harness.cli_corrections import run as run_corrections

        return run_corrections(args, root)
    if args.command in PACK_COMMANDS:
        from harness.cli_pack import run as run_pack

        return run_pack(args, root)
    if args.command == "learn":
        return _learn_dispatch(args, root)
    if args.command == "review":
        return {
            "list": _review_list,
            "show": _review_show,
            "approve": _review_approve,
            "reject": _review_reject,
        }[args.review_command](args, root)
    return {
        "revert": _revert,
        "init": _init,
        "refine": _refine,
        "batch": _batch,
        "report": _report,
        "recover": _recover,
        "export": _export,
        "gc": _gc,
    }[args.command](args, root)


def _learn_dispatch(args: argparse.Namespace, root: Path) -> int:
    sub = args.learn_command
    if sub == "pending":
        args.status = "pending"
        return _learn_lessons(args, root)
    if sub == "accept":
        return _learn_decided(api.learn_accept(root, args.key, args.note, args.pack), args)
    if sub == "decline":
        return _learn_decided(api.learn_decline(root, args.key, args.reason), args)
    handlers: dict[str | None, Callable[[argparse.Namespace, Path], int]] = {
        "report": _learn_report,
        "relax": _learn_relax,
        "lessons": _learn_lessons,
    }
    return handlers.get(sub, _learn)(args, root)


def _init(args: argparse.Namespace, root: Path) -> int:
    made = api.init_workspace(root, args.pack)
    if args.json:
        emit_json({"workspace": str(root), "created": made})
    else:
        out.print(f"workspace {root}: " + (", ".join(made) if made else "already set up"))
    return EXIT_OK


@contextmanager
def _progress(enabled: bool) -> Iterator[api.Progress | None]:
    if not enabled:
        yield None
        return
    bar = Progress(
        TextColumn("refining"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    task = bar.add_task("runs", total=None)
    shown = False

    def update(done: int, total: int) -> None:
        nonlocal shown
        if not shown:  # its refresh thread starts with the batch, after `--workers` forked
            bar.start()
            shown = True
        bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if shown:
            bar.stop()


def _batch(args: argparse.Namespace, root: Path) -> int:
    show = not args.json and not args.no_progress and sys.stderr.isatty()
    with _progress(show) as progress:
        result = api.run_batch(
            root,
            args.input,
            args.pack,
            proposer=args.proposer,
            max_attempts=args.max_attempts,
            cohort_size=args.cohort_size,
            workers=args.workers,
            executor=args.executor,
            ray_address=args.ray_address,
            strict_input=args.strict_input,
            report=not args.no_report,
            replay=args.replay,
            progress=progress,
        )
    # a rerun skips what already settled: --strict reflects those runs' states too
    not_committed = [r.state for r in result.runs if r.state != "COMMITTED"] + [
        st for st in result.skipped_states.values() if st != "COMMITTED"]
    if args.json:
        emit_json(
            {
                "runs": result.runs,
                "skipped": result.skipped,
                "skipped_states": result.skipped_states,
                "errors": result.errors,
                "seconds": round(result.seconds, 3),
                "artifacts_per_s": round(result.artifacts_per_s, 2),
                "recovered": result.recovered,
                "tokens": result.tokens,
                "halted": result.halted,
                "not_started": result.not_started,
                "report": result.report.to_dict() if result.report else None,
                "checkpoint": vars(checkpoint.make_checkpoint(Workspace(root))),
            }
        )
    else:
        for e in result.errors:
            sys.stderr.write(f"membrane: bad input: {e.render()}\n")
        _summary(result)
        if result.report:
            print_report(result.report)
    if result.halted:
        return _halted(result)
    if result.errors:
        return EXIT_INPUT
    return EXIT_NOT_COMMITTED if args.strict and not_committed else EXIT_OK


def _halted(result: api.BatchResult) -> int:
    left = f"; {result.not_started} artifact(s) not started" if result.not_started else ""
    sys.stderr.write(f"membrane: error: the batch stopped early{left}: {result.halted}\n")
    return EXIT_UNAVAILABLE


def _summary(result: api.BatchResult) -> None:
    states: dict[str, int] = {}
    for r in result.runs:
        states[r.state] = states.get(r.state, 0) + 1
    parts = ", ".join(f"{n} {s}" for s, n in sorted(states.items())) or "nothing to do"
    settled: dict[str, int] = {}
    for st in result.skipped_states.values():
        settled[st] = settled.get(st, 0) + 1
    skipped = (f"; {len(result.skipped)} already settled (skipped: "
               + ", ".join(f"{n} {s}" for s, n in sorted(settled.items())) + ")"
               if result.skipped else "")
    bad = f"; {len(result.errors)} bad input line(s)" if result.errors else ""
    tokens = f"; {result.tokens} model tokens" if result.tokens else ""
    out.print(
        f"{len(result.runs)} run(s): {parts}{skipped}{bad} in {result.seconds:.1f}s "
        f"({result.artifacts_per_s:.1f} artifacts/s){tokens}"
    )
    if result.recovered:
        out.print(f"recovered: {result.recovered}")
    for r in result.runs:
        if r.state != "COMMITTED":
            codes = ", ".join(f"{c}x{n}" for c, n in sorted(r.codes.items()))
            out.print(
                f"  {r.artifact_id}: {r.state} after {r.attempts} attempt(s) ({codes})"
                + (f" — {r.error}" if r.error else ""),
                markup=False,  # an error names `[ontology]`, `rooms[0]`: text, not markup
            )


def _refine(args: argparse.Namespace, root: Path) -> int:
    result = api.run_refine(
        root,
        args.input,
        args.pack,
        proposer=args.proposer,
        max_attempts=args.max_attempts,
        replay=args.replay,
    )
    run = result.runs[0] if result.runs else None
    if args.json:
        emit_json(
            {
                "run": run,
                "skipped": result.skipped,
                "seconds": round(result.seconds, 3),
                "tokens": result.tokens,
                "halted": result.halted,
            }
        )
    elif run is None:
        out.print(f"{result.skipped[0]}: already settled for this input (skipped)")
    else:
        codes = ", ".join(f"{c}x{n}" for c, n in sorted(run.codes.items())) or "none"
        out.print(
            f"{run.artifact_id}: {run.state} after {run.attempts} attempt(s); run {run.run_id}; "
            f"critiques: {codes}"
        )
    if result.halted:
        return _halted(result)
    return EXIT_OK if run is None or run.state == "COMMITTED" else EXIT_NOT_COMMITTED


def _report(args: argparse.Namespace, root: Path) -> int:
    rep = api.run_report(root, args.pack, reaudit=args.reaudit)
    if args.json:
        emit_json(rep.to_dict())
    else:
        print_report(rep)
    return EXIT_OK


def _recover(args: argparse.Namespace, root: Path) -> int:
    rec = api.run_recover(root)
    if args.json:
        emit_json(rec)
    else:
        out.print(
            "recovered: " + (", ".join(f"{k}={v}" for k, v in rec.items() if v) or "nothing to do")
        )
    return EXIT_OK


def _export(args: argparse.Namespace, root: Path) -> int:
    from harness.export import export  # duckdb and pyarrow: ~0.1 s, only for this command

    res = export(root, args.format, Path(args.out) if args.out else None, force=args.force)
    if args.json:
        emit_json(res)
        return EXIT_OK
    what = ", ".join(f"{t} {n}" for t, n in res.tables.items())
    out.print(
        f"exported {res.artifacts} committed artifact(s) as {res.format} to {res.out}"
        + (f" (rows: {what})" if what else "")
        + f" in {res.seconds:.2f}s",
        markup=False,
    )
    return EXIT_OK


def _trace_list(args: argparse.Namespace, root: Path) -> int:
    runs = inspect.list_runs(Workspace(root))
    if args.json:
        emit_json([{k: v for k, v in vars(r).items() if k != "outcome"} for r in runs])
        return EXIT_OK
    table = Table()
    for col in ("run", "artifact", "state", "records", "started"):
        table.add_column(col)
    for r in runs:
        table.add_row(r.run_id, r.artifact_id, r.status, str(r.trace_len or 0), r.started_at)
    out.print(table)
    return EXIT_OK


def _learn(args: argparse.Namespace, root: Path) -> int:
    data = api.learn_status(root, rebuild=args.learn_command == "rebuild")
    if args.json:
        emit_json(data)
        return EXIT_OK
    if data["rebuilt_equals_incremental"] is not None:
        same = data["rebuilt_equals_incremental"]
        out.print(
            f"rebuilt from {data['records']} outcome record(s): "
            + (
                "the same state as the incremental one"
                if same
                else "DIFFERENT from the incremental state (the rebuilt one is kept)"
            )
        )
    table = Table(title=f"learned from {data['records']} outcome record(s)")
    for col in (
        "proposer",
        "runs",
        "success",
        "avg retries",
        "quality",
        "reliability",
        "overlay (applied to its next runs)",
    ):
        table.add_column(col)
    for name, p in data["proposers"].items():
        ov = p["overlay"]
        rel = p["reliability"]
        table.add_row(
            name,
            str(p["runs"]),
            _pct(p["success_rate"]),
            _num(p["avg_retries"]),
            _num(p["quality"]),
            _num(rel),
            "none yet"
            if ov is None
            else f"risk x{ov['risk_multiplier']}, retries {ov['max_retries']}"
            + (", approval" if ov["require_approval"] else "")
            + (f" ({ov['reason']})" if ov["reason"] else "")
            + (
                f" STALE: no outcome for {data['stale_days']}+ days (relax or rerun)"
                if p["stale"]
                else ""
            ),
        )
    out.print(table)
    strong = [p for p in data["patterns"] if p["occurrences"] >= 3]
    for p in strong:
        out.print(
            f"pattern {p['key']}: {p['occurrences']} times, confidence "
            f"{p['confidence']:.2f}" + (f"; fix: {p['fix_hint']}" if p["fix_hint"] else ""),
            markup=False,
        )
    return EXIT_OK


def _learn_report(args: argparse.Namespace, root: Path) -> int:
    data = api.learn_report_data(root)
    if args.json:
        emit_json(data)
    else:
        sys.stdout.write(learning_markdown(data) + "\n")
    return EXIT_OK


def _learn_lessons(args: argparse.Namespace, root: Path) -> int:
    lessons = api.learn_lessons(root, args.status)
    if args.json:
        emit_json(lessons)
        return EXIT_OK
    if not lessons:
        out.print("no lessons yet (a pass after each batch learns them)")
        return EXIT_OK
    table = Table(title=f"{len(lessons)} lesson(s), most confident first")
    for col in ("key", "status", "confidence", "support", "scope", "lesson"):
        table.add_column(col)
    for x in lessons:
        scope = ", ".join(f"{k}={v}" for k, v in x["scope"].items())
        table.add_row(
            x["key"][:10],
            x["status"],
            f"{x['confidence']:.2f}",
            str(x["support"]),
            scope,
            x["text"],
        )
    out.print(table)
    return EXIT_OK


def _learn_decided(data: dict[str, Any], args: argparse.Namespace) -> int:
    if args.json:
        emit_json(data)
    elif "edit" in data:
        out.print(
            f"accepted lesson {data['key'][:10]} ({data['check']}); now make this edit:",
            markup=False,
        )
        out.print(data["edit"], markup=False)
        out.print(f"(kept in {data['file']})", markup=False)
    else:
        out.print(f"declined lesson {data['key'][:10]}: {data['reason']}", markup=False)
    return EXIT_OK


def _learn_relax(args: argparse.Namespace, root: Path) -> int:
    data = api.learn_relax(root, args.proposer, args.reason)
    if args.json:
        emit_json(data)
    else:
        out.print(f"relaxed the overlay of {data['proposer']} ({data['reason']})", markup=False)
    return EXIT_OK


def _review_list(args: argparse.Namespace, root: Path) -> int:
    items = api.review_list(root)
    if args.json:
        emit_json(items)
        return EXIT_OK
    if not items:
        out.print("no held runs wait for review")
        return EXIT_OK
    table = Table(title=f"{len(items)} held run(s), oldest first")
    for col in ("run", "artifact", "held at", "proposer", "why"):
        table.add_column(col)
    for h in items:
        table.add_row(h["run_id"], h["artifact_id"], h["held_at"], h["proposer"] or "-", h["why"])
    out.print(table)
    return EXIT_OK


def _review_show(args: argparse.Namespace, root: Path) -> int:
    data = api.review_show(root, args.run)
    if args.json:
        emit_json(data)
        return EXIT_OK
    out.print(
        f"{data['run_id']} ({data['artifact_id']}): {data['status']}, held {data['held_at']}",
        markup=False,
    )
    out.print(f"  why: {data['why']}", markup=False)
    for v in data["verdicts"]:
        state = "passed" if v["passed"] else "FAILED"
        out.print(f"  {v['gate']} {state} attempt {data['attempt']}", markup=False)
    if data["blocked_by"]:
        out.print("  cannot be approved: " + "; ".join(data["blocked_by"]), markup=False)
    d = data["diff"]
    if d is None:
        out.print("  (the input is no longer stored: no diff)")
    else:
        for c in d["changed"]:
            out.print(f"  ~ {c['cell']}: {c['before']!r} -> {c['after']!r}", markup=False)
        for c in d["added"]:
            out.print(f"  + {c['cell']}: {c['after']!r}", markup=False)
        for c in d["removed"]:
            out.print(f"  - {c['cell']}: {c['before']!r}", markup=False)
        if d["prose"]:
            out.print(f"  prose before: {d['prose']['before']}", markup=False)
            out.print(f"  prose after:  {d['prose']['after']}", markup=False)
    return EXIT_OK


def _review_approve(args: argparse.Namespace, root: Path) -> int:
    row = api.review_approve(root, args.run, args.note)
    if args.json:
        emit_json(row)
    else:
        out.print(
            f"approved {args.run}: {row['artifact_id']} version {row['version']} published",
            markup=False,
        )
    return EXIT_OK


def _review_reject(args: argparse.Namespace, root: Path) -> int:
    data = api.review_reject(root, args.run, args.reason, note=args.note)
    if args.json:
        emit_json(data)
    else:
        out.print(f"rejected {args.run}: nothing published", markup=False)
    return EXIT_OK


def _revert(args: argparse.Namespace, root: Path) -> int:
    row = api.revert_artifact(root, args.artifact, args.to, args.note)
    if args.json:
        emit_json(row)
    else:
        out.print(
            f"reverted {row['artifact_id']}: version {row['version']} restores older content "
            f"({row['content_hash'][:12]})",
            markup=False,
        )
    return EXIT_OK


def _gc(args: argparse.Namespace, root: Path) -> int:
    """`membrane gc`: what retention removes (listed; removed with --apply)."""
    if args.keep_archive is None and args.keep_traces_days is None:
        raise ConfigError(
            "say what to remove: --keep-archive N, --keep-traces-days D, or both",
            hint="membrane gc --keep-archive 3 --keep-traces-days 30 (a dry run; add --apply)",
        )
    ws = Workspace(root)
    kw = {"keep_archive": args.keep_archive, "keep_traces_days": args.keep_traces_days}
    if args.apply:
        with ws.lock():  # made and applied under the lock: no batch changes it in between
            plan = retention.plan_gc(ws, **kw)
            removed = retention.apply_plan(ws, plan, api.utc_now())
    else:
        plan, removed = retention.plan_gc(ws, **kw), 0
    if args.json:
        emit_json(plan.as_json(args.apply) | {"removed": removed})
        return EXIT_OK
    for r in plan.removals:
        out.print(f"{'removed' if args.apply else 'would remove'} {r.path}: {r.why}",
                  markup=False)
    for why, n in sorted(plan.kept.items()):
        out.print(f"kept {n} ({why})", markup=False)
    verb = "removed" if args.apply else "would remove (dry run; --apply removes)"
    out.print(f"{verb}: {len(plan.removals)} file(s), {plan.bytes:,} bytes", markup=False)
    return EXIT_OK


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _rules_show(args: argparse.Namespace, root: Path) -> int:
    name = args.ruleset or (api.pack_ruleset(root, args.pack) if args.pack else "agenda_v1")
    if args.json:
        emit_json(diagram.rules_data(name))
    else:
        sys.stdout.write(diagram.mermaid(name) if args.mermaid else diagram.text(name))
    return EXIT_OK


def _trace_show(args: argparse.Namespace, root: Path) -> int:
    if args.attempt is not None:
        attempt = inspect.show_attempt(Workspace(root), args.run, args.attempt)
        if args.json:
            emit_json(attempt)
            return EXIT_OK
        for name, payload in attempt.items():
            out.print(f"== {name}", markup=False)
            out.print_json(data=payload)
        return EXIT_OK
    events = inspect.show_run(Workspace(root), args.run)
    if args.json:
        emit_json(events)
        return EXIT_OK
    for ev in events:
        out.print(f"{ev['seq']:>4} {ev['kind']:<12} {_describe(ev)}", markup=False)
    return EXIT_OK


def _describe(ev: dict[str, Any]) -> str:
    kind = ev["kind"]
    if kind == "decision":
        return f"{ev['state_before']} --{ev['trigger'] or '-'}--> {ev['state_after']} [{ev['rule']}] run {ev['effector'] or '-'}"
    if kind == "proposal":
        return f"attempt {ev['attempt']} by {ev['proposer']}: {len(ev['changes'])} cell(s) changed"
    if kind == "verdict":
        codes = ", ".join(c["code"] for c in ev["critiques"]) or "no critiques"
        return f"{ev['gate']} {'passed' if ev['passed'] else 'FAILED'} (attempt {ev['attempt']}): {codes}"
    if kind == "commit":
        return f"{'held' if ev['held'] else 'committed'} v{ev['version']} {ev['content_hash'][:12]}"
    if kind == "outcome":
        return f"{ev['outcome']['state']} after {ev['outcome']['attempts']} attempt(s)"
    if kind == "run_started":
        return f"{ev['artifact_id']} with {ev['proposer']}, pack {ev['pack']} {ev['pack_version']}"
    if kind == "critique":
        return f"{ev['gate']}: {', '.join(ev['codes'])}; {ev['locked']} cell(s) locked"
    if kind == "usage":
        src = "transcript" if ev["cached"] else f"{ev['seconds']:.2f}s"
        return f"attempt {ev['attempt']} {ev['proposer']}: {ev['tokens_prompt']}+{ev['tokens_completion']} tokens ({src})"
    if kind == "review":
        return (
            f"{ev['action']} by {ev['by']}"
            + (f" -> v{ev['version']}" if ev.get("version") else "")
            + (f": {ev['note']}" if ev.get("note") else "")
        )
    if kind == "budget":
        return f"token budget per {ev['scope']} spent: {ev['used']} of {ev['limit']}"
    return str(ev.get("message", ""))


def _trace_checkpoint(args: argparse.Namespace, root: Path) -> int:
    cp = checkpoint.make_checkpoint(Workspace(root))
    if args.json:
        emit_json({"size": cp.size, "root": cp.root, "text": cp.text()})
    else:
        sys.stdout.write(cp.text() + "\n")  # one line, never wrapped: it is kept and compared
    return EXIT_OK


def _verify_checkpoint(args: argparse.Namespace, root: Path) -> dict[str, Any] | None:
    """`trace verify --checkpoint`: what it found (None when not asked), printed unless
    --json (the caller adds it to its JSON)."""
    if not args.checkpoint:
        return None
    ws = Workspace(root)
    check = checkpoint.verify_against(ws, checkpoint.parse_checkpoint(args.checkpoint))
    problems = check.problems + checkpoint.verify_published_files(ws)
    cp = check.checkpoint
    if not args.json:
        for code, run, problem in problems:
            out.print(f"FAIL {run or 'workspace'}: {problem} ({code})", markup=False)
        if cp is not None:
            out.print(
                f"checkpoint of {cp.size} anchor(s): "
                + ("extended" if not problems else f"{len(problems)} problem(s)")
                + f"; {len(check.new)} run(s) anchored after it",
                markup=False,
            )
    return {
        "checkpoint": {"size": cp.size, "root": cp.root} if cp else None,
        "size_now": check.size_now,
        "problems": [{"code": c, "run_id": r, "problem": p} for c, r, p in problems],
        "new_runs": check.new,
        "pruned_runs": check.pruned,
    }


def _trace_verify(args: argparse.Namespace, root: Path) -> int:
    against = _verify_checkpoint(args, root)
    results = inspect.verify_traces(Workspace(root), args.run)
    broken = [r for r in results if not r.ok]
    commits = inspect.verify_commits(Workspace(root), args.run)  # what is published, hashed
    bad = broken + commits
    chapters = inspect.verify_committed_chapters(Workspace(root), args.run)
    if args.json:
        data: dict[str, Any] = {
            "verified": len(results) - len(broken),
            "failed": bad,
            "chapters": chapters,
        }
        emit_json(data if against is None else {**data, "against_checkpoint": against})
    else:
        for r in bad:
            out.print(f"FAIL {r.run_id}: {r.problem}", markup=False)
        for c in chapters:
            out.print(f"FAIL chapter {c.artifact_id}: {c.problem} ({c.code})", markup=False)
        out.print(f"{len(results) - len(broken)} of {len(results)} trace(s) verify")
        if pruned := sum(1 for r in results if r.code == "trace.pruned"):
            out.print(f"{pruned} of them pruned by `membrane gc` (anchor kept)")
        if commits:
            out.print(f"{len(commits)} committed artifact(s) differ from what was published")
        if chapters:
            out.print(f"{len(chapters)} chapter(s) do not match the committed corpus")
    failed = bool(bad or chapters or (against and against["problems"]))
    return EXIT_TRACE if failed else EXIT_OK


def _trace_why(args: argparse.Namespace, root: Path) -> int:
    prov = inspect.why(Workspace(root), args.artifact, args.table, args.row, args.column)
    if args.json:
        emit_json(jsonable(prov))
        return EXIT_OK
    out.print(f"{prov.artifact_id} {prov.cell} = {prov.value!r}", markup=False)
    out.print(
        f"  proposed: attempt {prov.proposed['attempt']} by {prov.proposed['proposer']} "
        f"(run {prov.run_id}, record {prov.proposed['seq']})",
        markup=False,
    )
    if prov.canonical is not None:
        k = prov.canonical
        out.print(
            f"  canonical: proposed as {k['raw']!r}, resolved by {k['gate']} on attempt "
            f"{k['attempt']} via {k['via']} to {k['value']!r}"
            + (f" <{k['iri']}>" if k.get("iri") else "")
            + f" (record {k['seq']})",
            markup=False,
        )
    for a in prov.admitted:
        out.print(
            f"  admitted: {a['gate']} on attempt {a['attempt']} (record {a['seq']}, "
            f"judged in a batch of {a['batch_size']})",
            markup=False,
        )
    c = prov.committed
    out.print(
        f"  committed: version {c['version']} ({prov.content_hash[:12]}) at {c['at']} (record {c['seq']})",
        markup=False,
    )
    return EXIT_OK

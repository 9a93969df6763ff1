"""The `membrane correct|corrections|preferences|feedback` command lines: argument parsing
(light, imported by `cli.py`) and handlers (the pipeline is imported only when they run)."""

from __future__ import annotations

import argparse
import getpass
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.output import EXIT_OK, emit_json

__all__ = ["COMMANDS", "add_commands", "run"]

COMMANDS = ("correct", "corrections", "preferences", "feedback")

Builder = Callable[..., argparse.ArgumentParser]


def add_commands(sub: Any, common: argparse.ArgumentParser, command: Builder) -> None:
    """Add the commands to the `membrane` parser (`command` is cli's subcommand builder)."""
    c = command(
        sub,
        common,
        "correct",
        "a reviewer's correction of a committed or held artifact, in words "
        "(needs [learning.corrections] enabled = true)",
        'membrane correct fac-0001 "use kW not BTU/h" --reviewer dana',
    )
    c.add_argument("artifact", help="the artifact the note is about")
    c.add_argument("text", help="the note, as the reviewer wrote it (scrubbed of secrets first)")
    c.add_argument(
        "--reviewer", metavar="NAME", help="who wrote it (default: $MEMBRANE_REVIEWER, else you)"
    )
    c.add_argument(
        "--session",
        metavar="ID",
        help="the review session it belongs to (default: $MEMBRANE_SESSION, else this shell)",
    )
    cr = sub.add_parser(
        "corrections",
        help="reviewers' corrections: the distilled ledger, imports, the analysis tick",
        description="reviewers' corrections: the distilled ledger (never the notes' text), "
        "imports, and the analysis that promotes and routes them",
    )
    csub = cr.add_subparsers(dest="corrections_command", required=True, metavar="SUBCOMMAND")
    ls = command(
        csub,
        common,
        "list",
        "distilled correction records, newest first (lesson, kind, support, status)",
        "membrane corrections list --kind preference --json",
    )
    ls.add_argument("--limit", type=int, default=100, metavar="N", help="at most N (default 100)")
    ls.add_argument("--before", metavar="ISO", help="records last seen before this time (paging)")
    ls.add_argument("--since", metavar="ISO", help="records last seen at or after this time")
    ls.add_argument("--kind", choices=["preference", "infra_gap", "policy"], help="only this kind")
    ls.add_argument("--status", metavar="STATUS", help="only this status (e.g. candidate, active)")
    command(
        csub,
        common,
        "show",
        "one record: its lesson, scope, counts and the captures it came from (metadata only)",
        "membrane corrections show 14b1bacf1b81",
    ).add_argument("id")
    im = command(
        csub,
        common,
        "import",
        "import corrections exported from another tool (JSONL; all lines valid or nothing)",
        "membrane corrections import review-notes.jsonl",
    )
    im.add_argument(
        "file",
        type=Path,
        help='one JSON object a line: {"text", "at", "session", '
        '"reviewer"?, "artifact"?, "topic"?}',
    )
    im.add_argument("--reviewer", metavar="NAME", help="for lines that name no reviewer")
    command(
        csub,
        common,
        "analyze",
        "one tick: drain the backlog, promote what recurred, route (at most "
        "max_routes_per_tick), watch",
        "membrane corrections analyze --json",
    )
    command(
        sub,
        common,
        "preferences",
        "the workspace preferences promoted from corrections (what proposers are given)",
        "membrane preferences --json",
    )
    fb = sub.add_parser(
        "feedback",
        help="proposed pack changes and policy requests from corrections (a person decides)",
        description="proposed pack changes (infra gaps) and policy requests from corrections; "
        "membrane never applies them",
    )
    fsub = fb.add_subparsers(dest="feedback_command", required=True, metavar="SUBCOMMAND")
    fl = command(fsub, common, "list", "the feedback queue", "membrane feedback list --status open")
    fl.add_argument("--status", choices=["open", "closed"], help="only this status")
    command(
        fsub, common, "show", "one feedback item and its record", "membrane feedback show 1"
    ).add_argument("id", type=int)


def _reviewer(arg: str | None) -> str:
    return arg or os.environ.get("MEMBRANE_REVIEWER") or getpass.getuser()


def run(args: argparse.Namespace, root: Path) -> int:
    from harness.corrections import api

    if args.command == "correct":
        data: Any = api.correct(
            root, args.artifact, args.text, reviewer=_reviewer(args.reviewer), session=args.session
        )
        return _print(args, data, _said_capture)
    if args.command == "preferences":
        return _print(args, api.preferences(root), _said_preferences)
    if args.command == "feedback":
        if args.feedback_command == "list":
            return _print(args, api.feedback_list(root, args.status), _said_feedback)
        return _print(args, api.feedback_show(root, args.id), _said_item)
    sub = args.corrections_command
    if sub == "list":
        data = api.list_corrections(
            root,
            limit=args.limit,
            before=args.before,
            since=args.since,
            kind=args.kind,
            status=args.status,
        )
        return _print(args, data, _said_list)
    if sub == "show":
        return _print(args, api.show_correction(root, args.id), _said_item)
    if sub == "import":
        return _print(args, api.import_file(root, args.file, args.reviewer), _said_import)
    return _print(args, api.analyze(root), _said_analyze)


def _print(args: argparse.Namespace, data: Any, said: Callable[[Any], str]) -> int:
    if args.json:
        emit_json(data)
    else:
        print(said(data))
    return EXIT_OK


def _said_capture(d: dict[str, Any]) -> str:
    lines = [f"captured {d['capture']} ({d['category']}): {d['status']}"]
    if d["scrubbed"]:
        lines.append(f"  secrets removed before anything was stored: {', '.join(d['scrubbed'])}")
    if d["policy"]:
        lines.append("  it asks to relax a check or addresses the machine: a person decides")
    if d["records"]:
        lines.append(f"  records: {', '.join(d['records'])} (`membrane corrections show ID`)")
    if d["status"] == "backlog":
        lines.append("  the model is unavailable: queued; `membrane corrections analyze` drains it")
    return "\n".join(lines)


def _said_list(d: dict[str, Any]) -> str:
    if not d["items"]:
        return "no correction records"
    lines = []
    for r in d["items"]:
        scope = r["scope"].get("column") or r["scope"].get("table") or r["scope"].get("pack") or "*"
        lines.append(
            f"{r['id']}  {r['kind']:<10} {r['status']:<12} support {r['support']} "
            f"({r['days']} days, {r['sessions']} sessions)  [{scope}]  {r['lesson']}"
        )
    if d["nextBefore"]:
        lines.append(f"more: --before {d['nextBefore']}")
    return "\n".join(lines)


def _said_item(d: dict[str, Any]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in d.items())


def _said_import(d: dict[str, Any]) -> str:
    return (
        f"{d['file']}: {d['lines']} lines, {d['captured']} captured, {d['duplicates']} already "
        f"imported, {d['backlog']} waiting for the model; records: {len(d['records'])}"
    )


def _said_analyze(d: dict[str, Any]) -> str:
    r = d["routed"]
    return (
        f"backlog: {d['backlog']['drained']} drained, {d['backlog']['still_waiting']} waiting, "
        f"{d['backlog']['expired']} expired\n"
        f"promoted: {len(d['promoted'])}; routed: {len(r['preference'])} preference(s), "
        f"{len(r['feedback'])} pack change(s), {len(r['person'])} to a person; "
        f"overflow {r['overflow']}\n"
        f"watcher: {len(d['watcher']['reopened'])} reopened, "
        f"{len(d['watcher']['verified'])} verified, "
        f"{len(d['watcher']['inconclusive'])} inconclusive"
    )


def _said_preferences(d: list[dict[str, Any]]) -> str:
    if not d:
        return "no preferences yet"
    return "\n".join(
        f"{p['id']}  {p['status']:<9} support {p['support']}, violations {p['violations']}: "
        f"{p['lesson']}"
        for p in d
    )


def _said_feedback(d: list[dict[str, Any]]) -> str:
    if not d:
        return "the feedback queue is empty"
    return "\n".join(f"#{f['id']} {f['kind']:<9} {f['status']:<6} {f['proposal']}" for f in d)

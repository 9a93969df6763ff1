"""The `membrane` command. Each command parses its arguments, makes one library call
(`harness.api` / `harness.inspect`) and maps library errors to a message and exit code.

Exit codes:
  0  success
  1  internal error (a bug: please report it); `pack test`: an expectation failed (the
     diff says which)
  2  bad input or setup: a corpus line, an artifact file, a pack file, membrane.toml, an option
  3  `batch --strict` / `refine`: some run did not commit (EXHAUSTED, FAILED or HELD; with
     --strict, a settled run a rerun skipped counts too)
  4  `trace verify`: a trace does not verify (tampered, truncated or unanchored)
  5  `batch` / `refine`: a model endpoint is unavailable (circuit breaker open) or a
     `--replay` found no transcript; the batch stopped early (rerun to resume)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import __version__
from harness.cli_corrections import add_commands as add_correction_commands  # argparse only
from harness.cli_pack import add_commands as add_pack_commands  # argparse only
from harness.cli_serve import add_serve_parser  # argparse only; uvicorn loads on `serve`
from harness.errors import MembraneError, SetupError, TraceError
from harness.output import EXIT_BUG, EXIT_INPUT, EXIT_TRACE, emit_json

__all__ = ["main"]


EPILOG = """\
examples:
  membrane batch packs/facility/corpus/demo.jsonl --pack packs/facility
  membrane refine artifact.json --pack packs/facility --json
  membrane trace verify
  membrane trace why fac-0001 equipment EQ-001 standard
  membrane trace show fac-0001.r1 --attempt 1
  membrane rules show --mermaid
  membrane learn status
  membrane review list
  membrane report
  membrane correct fac-0001 "use kW not BTU/h"
  membrane export --format parquet --out refined-parquet

exit codes: 0 ok, 1 internal error (pack test: an expectation failed), 2 bad input/setup, 3 a run did not commit
(batch --strict, refine), 4 a trace does not verify, 5 a model endpoint is unavailable
or a --replay missed (the batch stopped early).

environment: MEMBRANE_WORKSPACE (the default --workspace); MEMBRANE_CACHE_DIR (classified
ontologies shared by every workspace, default ~/.cache/membrane; off: each workspace
classifies its own); MEMBRANE_WORKER_START=spawn (batch --workers: spawn the workers, never
fork them); MEMBRANE_NATIVE=0 (run the prose gate's modules from their sources, not as
compiled by make; `make native` compiles them again after they change); MEMBRANE_JVM_ARCHIVE=0
(start HermiT's JVM without the archive of its classes make built; rebuild it after a JDK
upgrade with `python scripts/build_jvm_archive.py`).
"""


def _command(
    sub: Any, common: argparse.ArgumentParser, name: str, help_: str, example: str
) -> argparse.ArgumentParser:
    """A subcommand sharing --workspace/--json, with its example in the epilog."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        parents=[common],
        help=help_,
        description=help_,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def _learning_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """`learn status|report|rebuild|relax`, `review list|show|approve|reject`, `revert`."""
    lrn = sub.add_parser(
        "learn",
        help="what finished runs taught: reliability, patterns, overlays",
        description="what finished runs taught: reliability, patterns, overlays",
    )
    lsub = lrn.add_subparsers(dest="learn_command", required=True, metavar="SUBCOMMAND")
    _command(
        lsub,
        common,
        "status",
        "reliability per proposer, its overlay and the failure patterns (from the outcome log)",
        "membrane learn status --json",
    )
    _command(
        lsub,
        common,
        "rebuild",
        "recompute the learned state from the whole outcome log and say whether it equals the "
        "incremental one",
        "membrane learn rebuild",
    )
    _command(
        lsub,
        common,
        "report",
        "strongest and weakest proposers, patterns seen 3+ times, overlays and what the last "
        "cycle changed (Markdown; --json for the same as JSON)",
        "membrane learn report --json",
    )
    ls = _command(
        lsub,
        common,
        "lessons",
        "the lessons learned from finished runs: confidence, support, scope, status, text",
        "membrane learn lessons --status active",
    )
    ls.add_argument(
        "--status",
        choices=("active", "pending", "accepted", "declined", "retired"),
        help="only lessons with this status",
    )
    _command(
        lsub,
        common,
        "pending",
        "ontology lessons (aliases, axioms) the reasoner approved, waiting for a person",
        "membrane learn pending",
    )
    acc = _command(
        lsub,
        common,
        "accept",
        "accept a pending ontology lesson: checked again, recorded, and written out as the "
        "pack edit to make (membrane never edits a pack by itself)",
        "membrane learn accept 3fa2c1 --note \"checked with the domain expert\"",
    )
    acc.add_argument("key", help="the lesson's key or a unique prefix of it")
    acc.add_argument("--note", default="", metavar="TEXT", help="kept with the decision")
    acc.add_argument("--pack", metavar="DIR", help="pack folder (default: the workspace's)")
    dec = _command(
        lsub,
        common,
        "decline",
        "decline a pending ontology lesson",
        "membrane learn decline b71e09 --reason \"too broad\"",
    )
    dec.add_argument("key", help="the lesson's key or a unique prefix of it")
    dec.add_argument("--reason", required=True, metavar="TEXT", help="why (kept)")
    rx = _command(
        lsub,
        common,
        "relax",
        "drop a proposer's overlay (a person's act, logged in the outcome log); its overlay "
        "numbers start again from here",
        'membrane learn relax offline --reason "reviewed its last 50 runs"',
    )
    rx.add_argument("proposer", help="the proposer id, as `membrane learn status` names it")
    rx.add_argument("--reason", required=True, metavar="TEXT", help="why (kept in the log)")

    rv = sub.add_parser(
        "review",
        help="the human review queue: HELD runs wait here",
        description="the human review queue: HELD runs wait here for a person",
    )
    rvsub = rv.add_subparsers(dest="review_command", required=True, metavar="SUBCOMMAND")
    _command(
        rvsub,
        common,
        "list",
        "held runs waiting for a person, oldest first, with why they were held",
        "membrane review list",
    )
    _command(
        rvsub,
        common,
        "show",
        "a held run: the artifact, its verdicts and a diff against its input",
        "membrane review show fac-0001.r2",
    ).add_argument("run")
    ap = _command(
        rvsub,
        common,
        "approve",
        "publish a held artifact (it passed every gate) as the artifact's next version",
        'membrane review approve fac-0001.r2 --note "checked the interval"',
    )
    ap.add_argument("run")
    ap.add_argument("--note", default="", metavar="TEXT", help="kept in the trace and the log")
    rj = _command(
        rvsub,
        common,
        "reject",
        "settle a held run as REJECTED; nothing is published",
        'membrane review reject fac-0002.r2 --reason "wrong interval for this unit"',
    )
    rj.add_argument("run")
    rj.add_argument("--reason", required=True, metavar="TEXT", help="why (kept in the log)")
    rj.add_argument(
        "--note",
        default="",
        metavar="TEXT",
        help="a correction for the proposer (captured with the reason when corrections are on)",
    )
    c = _command(
        sub,
        common,
        "revert",
        "undo a committed artifact: an older version (from archive/) becomes the newest",
        'membrane revert fac-0001 --to 1 --note "v2 changed the interval"',
    )
    c.add_argument("artifact")
    c.add_argument(
        "--to", type=int, metavar="VERSION", help="the version to bring back (default: previous)"
    )
    c.add_argument("--note", default="", metavar="TEXT", help="kept in the trace and the log")


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 0 <= n <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers from 0 to 64")
    return n


def _run_commands(cmd: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    """`refine` and `batch`: the same run options; batch adds its own."""
    for name, what, ex in (
        (
            "refine",
            "refine one artifact (.json) through the full loop",
            "membrane refine artifact.json --pack packs/facility",
        ),
        (
            "batch",
            "refine every artifact of a JSONL corpus; a rerun resumes",
            "membrane batch packs/facility/corpus/demo.jsonl --pack packs/facility",
        ),
    ):
        c = cmd(name, what, ex)
        c.add_argument(
            "input", metavar="ARTIFACT.json" if name == "refine" else "CORPUS.jsonl", type=Path
        )
        c.add_argument(
            "--pack", metavar="DIR", help="pack folder (default: `pack` in membrane.toml)"
        )
        c.add_argument(
            "--proposer",
            metavar="NAME",
            help="proposer: offline, openai, hermes or acp (default: `proposer` in membrane.toml, else offline)",
        )
        c.add_argument(
            "--replay",
            action="store_true",
            help="answer every model request from .membrane/transcripts/ only, no network; "
            "a missing transcript stops the batch (exit 5)",
        )
        c.add_argument(
            "--max-attempts",
            type=int,
            metavar="N",
            help="attempt budget per run (the input is attempt 1)",
        )
        if name == "batch":
            c.add_argument(
                "--cohort-size",
                type=int,
                metavar="N",
                help="runs stepped in lockstep (default 256)",
            )
            c.add_argument(
                "--workers",
                type=_workers,
                default=0,
                metavar="N",
                help="judge cohorts in N worker processes, each with its own warm gates; "
                "this process stays the single commit point (default 0: all in this process)",
            )
            c.add_argument(
                "--executor",
                choices=("process", "ray"),
                default="process",
                help="where --workers run: spawned processes of this machine (default), or "
                "Ray actors (needs the extra membrane[ray]; --workers defaults to 2)",
            )
            c.add_argument(
                "--ray-address",
                metavar="ADDR",
                help="the Ray cluster to join (`auto`: the one `ray start` made here; "
                "default: a local cluster started for the batch)",
            )
            c.add_argument(
                "--strict",
                action="store_true",
                help="exit 3 if any run did not commit, counting the settled runs a rerun skips",
            )
            c.add_argument(
                "--strict-input",
                action="store_true",
                help="stop before running anything if a corpus line is bad",
            )
            c.add_argument("--no-report", action="store_true", help="skip the before/after table")
            c.add_argument("--no-progress", action="store_true", help="no progress bar")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="membrane",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
        description="A gated refinement loop: the agent proposes; the membrane disposes.",
    )
    p.add_argument("--version", action="version", version=f"membrane {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--workspace",
        "-w",
        metavar="DIR",
        help="workspace folder (default: $MEMBRANE_WORKSPACE, else the current folder)",
    )
    common.add_argument("--json", action="store_true", help="print machine-readable JSON on stdout")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cmd(name: str, help_: str, example: str) -> argparse.ArgumentParser:
        return _command(sub, common, name, help_, example)

    c = cmd(
        "init",
        "create a workspace (folders and membrane.toml)",
        "membrane init --pack packs/facility",
    )
    c.add_argument("--pack", metavar="DIR", help="pack folder to record in membrane.toml")

    _run_commands(cmd)

    c = cmd("report", "single-shot baseline vs refined corpus", "membrane report --json")
    c.add_argument("--pack", metavar="DIR", help="pack folder (default: `pack` in membrane.toml)")
    c.add_argument(
        "--reaudit",
        action="store_true",
        help="judge every input and committed artifact again with every gate (slow) "
        "instead of reading the verdicts the runs recorded",
    )
    cmd(
        "recover",
        "settle interrupted runs and rebuild current/ from the ledger",
        "membrane recover",
    )
    x = cmd(
        "export",
        "export the committed corpus: Parquet (+ dataset card), JSONL or Markdown chapters",
        "membrane export --format parquet --out refined-parquet\n"
        "  membrane export --format jsonl --out refined.jsonl --force\n"
        "  membrane export --format markdown --out chapters --json",
    )
    x.add_argument(
        "--format", required=True, choices=["parquet", "jsonl", "markdown"], help="what to write"
    )
    x.add_argument(
        "--out",
        metavar="PATH",
        help="a folder (parquet, markdown) or a file (jsonl); default: export/FORMAT "
        "(export/corpus.jsonl) in the workspace",
    )
    x.add_argument(
        "--force", action="store_true", help="replace --out if it exists (an earlier export)"
    )
    g = cmd(
        "gc",
        "remove superseded archive versions and old traces, keeping verification whole "
        "(a dry run unless --apply)",
        "membrane gc --keep-archive 3 --keep-traces-days 30\n"
        "  membrane gc --keep-archive 3 --keep-traces-days 30 --apply --json",
    )
    g.add_argument(
        "--keep-archive",
        type=int,
        metavar="N",
        help="keep the newest N superseded versions of each artifact in archive/ "
        "(default: leave archive/ alone)",
    )
    g.add_argument(
        "--keep-traces-days",
        type=float,
        metavar="D",
        help="remove the traces of finished runs started more than D days ago, except the "
        "runs that published or hold what is current (default: leave trace/ alone)",
    )
    g.add_argument(
        "--apply", action="store_true", help="remove the files (default: only list them)"
    )

    t = sub.add_parser(
        "trace", help="inspect and verify traces", description="inspect and verify traces"
    )
    tsub = t.add_subparsers(dest="trace_command", required=True, metavar="SUBCOMMAND")

    def tcmd(name: str, help_: str, example: str) -> argparse.ArgumentParser:
        return _command(tsub, common, name, help_, example)

    tcmd("list", "list runs with their final state", "membrane trace list")
    s = tcmd(
        "show",
        "print one run's trace, or with --attempt what that attempt proposed and got back",
        "membrane trace show fac-0001.r1 --attempt 2",
    )
    s.add_argument("run")
    s.add_argument(
        "--attempt",
        type=int,
        metavar="N",
        help="print attempt N's candidate, verdicts and critique (from scratch/)",
    )
    v = tcmd(
        "verify",
        "verify hash chains against the ledger anchors (all runs, or one)",
        "membrane trace verify fac-0001.r1",
    )
    v.add_argument("run", nargs="?")
    v.add_argument(
        "--checkpoint",
        metavar="ROOT|FILE",
        help="also prove the workspace extends this checkpoint (`trace checkpoint`): any "
        "anchor before it removed, edited, reordered or recomputed is a failure",
    )
    tcmd(
        "checkpoint",
        "print the workspace checkpoint (a hash chain over every run's anchor, with its "
        "size) to keep outside the workspace",
        "membrane trace checkpoint --json",
    )
    w = tcmd(
        "why",
        "provenance of one committed cell",
        "membrane trace why fac-0001 equipment EQ-001 standard",
    )
    w.add_argument("artifact")
    w.add_argument("table")
    w.add_argument(
        "row",
        help="the row's key as the pack declares it (composite keys joined by '/', e.g. "
        "T1/A), or its 0-based index",
    )
    w.add_argument("column")
    _learning_commands(sub, common)
    add_serve_parser(sub, common)
    add_correction_commands(sub, common, _command)
    add_pack_commands(sub, common, _command)
    r = sub.add_parser(
        "rules", help="the agenda's rules and the FSM", description="the agenda's rules and the FSM"
    )
    rsub = r.add_subparsers(dest="rules_command", required=True, metavar="SUBCOMMAND")
    rs = _command(
        rsub,
        common,
        "show",
        "print a ruleset (conditions, decision, reason) and the FSM it drives",
        "membrane rules show --ruleset agenda_v2 --mermaid",
    )
    pick = rs.add_mutually_exclusive_group()
    pick.add_argument("--ruleset", metavar="NAME", help="a shipped ruleset (default: agenda_v1)")
    pick.add_argument(
        "--pack", metavar="DIR", help="the ruleset this pack chooses ([policy] rules)"
    )
    rs.add_argument(
        "--mermaid", action="store_true", help="a Mermaid state diagram (docs/explanation/loop.md shows this one)"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "report":  # from the records: not the application's imports
            from harness.cli_report import recorded

            done = recorded(args)
            if done is not None:
                return done
        from harness.commands import dispatch  # heavy (engines, rich): not for --help

        if argv is None and args.command == "batch":  # this process is the command's own
            from harness.lifeline import batch_gc

            batch_gc()
        return dispatch(args)
    except SetupError as exc:
        _err(exc.render(), args)
        return EXIT_INPUT
    except TraceError as exc:
        _err(str(exc), args)
        return EXIT_TRACE
    except MembraneError as exc:
        _err(f"{type(exc).__name__}: {exc}", args)
        return EXIT_BUG
    except KeyboardInterrupt:
        _err("interrupted; rerun the same command to resume", args)
        return 130


def _err(message: str, args: argparse.Namespace) -> None:
    if getattr(args, "json", False):
        emit_json({"error": message})
    sys.stderr.write(f"membrane: error: {message}\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

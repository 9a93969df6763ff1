"""The `membrane pack check|new|test` command lines: argument parsing (light, imported by
`cli.py`) and handlers (the engines are imported only when they run)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.output import EXIT_INPUT, EXIT_OK, emit_json

__all__ = ["COMMANDS", "add_commands", "run"]

COMMANDS = ("pack",)
EXIT_TESTS_FAILED = 1  # `pack test`: an expectation failed (a pack's test, like `dbt test`)

Builder = Callable[..., argparse.ArgumentParser]


def add_commands(sub: Any, common: argparse.ArgumentParser, command: Builder) -> None:
    """Add `pack` and its subcommands to the `membrane` parser (`command` is cli's builder)."""
    p = sub.add_parser(
        "pack",
        help="write a pack: check it, start one, run its own tests",
        description="write a pack: check everything a batch would refuse, start a new one "
        "from a skeleton, run the pack's own examples through the real gates",
    )
    psub = p.add_subparsers(dest="pack_command", required=True, metavar="SUBCOMMAND")
    c = command(
        psub,
        common,
        "check",
        "every problem a batch would refuse, together, each with file:line and a fix; plus "
        "quality warnings (exit 2 on errors, 0 with warnings only)",
        "membrane pack check packs/facility --json",
    )
    c.add_argument("dir", metavar="DIR", type=Path, help="the pack folder")
    n = command(
        psub,
        common,
        "new",
        "write a small, complete pack to start from (commented pack.toml, ontology, spine, "
        "an assertion, references, prompts, tests); refuses a folder that is not empty",
        "membrane pack new my-pack",
    )
    n.add_argument("dir", metavar="DIR", type=Path, help="a new or empty folder")
    n.add_argument(
        "--force",
        action="store_true",
        help="write into a folder that is not empty (the skeleton's files are replaced, "
        "others kept)",
    )
    t = command(
        psub,
        common,
        "test",
        "run the pack's examples (tests/*.jsonl: an artifact and the critiques it must get) "
        "through the real gates; exit 1 with a diff when an expectation fails",
        "membrane pack test packs/facility",
    )
    t.add_argument("dir", metavar="DIR", type=Path, help="the pack folder")


def run(args: argparse.Namespace, root: Path) -> int:
    del root  # a pack command needs no workspace
    if args.pack_command == "check":
        return _check(args)
    if args.pack_command == "test":
        return _test(args)
    if args.pack_command == "new":
        return _new(args)
    raise AssertionError(args.pack_command)  # pragma: no cover


def _check(args: argparse.Namespace) -> int:
    from harness.packcheck import check_pack

    report = check_pack(args.dir)
    if args.json:
        emit_json(report.as_dict())
    else:
        for p in report.problems:
            print(p.render())
        print(f"{report.pack}: {len(report.errors)} errors, {len(report.warnings)} warnings")
    return EXIT_INPUT if report.errors else EXIT_OK


def _test(args: argparse.Namespace) -> int:
    from harness.packtest import run_pack_tests

    report = run_pack_tests(args.dir)
    if args.json:
        emit_json(report.as_dict())
    else:
        for r in report.results:
            print(f"{'ok  ' if r.ok else 'FAIL'} {r.file}:{r.line} {r.name}")
            for line in r.diff():
                print(line)
        passed = len(report.results) - len(report.failed)
        print(f"{report.pack}: {passed} passed, {len(report.failed)} failed")
    return EXIT_TESTS_FAILED if report.failed else EXIT_OK


def _new(args: argparse.Namespace) -> int:
    from harness.packnew import new_pack

    written = new_pack(args.dir, force=args.force)
    if args.json:
        emit_json({"pack": str(args.dir), "files": written})
    else:
        print(f"wrote a new pack in {args.dir}: {', '.join(written)}")
        print(f"next: membrane pack check {args.dir} && membrane pack test {args.dir}")
    return EXIT_OK

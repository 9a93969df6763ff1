"""The `membrane pack check|new|test` command lines: argument parsing (light, imported by
`cli.py`) and handlers (the engines are imported only when they run)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
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
    c.add_argument(
        "--strict-dl",
        action="store_true",
        help="refuse an ontology that needs triples set aside to reach OWL 2 DL (errors, "
        "not warnings)",
    )
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
        "--from-sample",
        type=Path,
        metavar="TABLES.jsonl",
        help="write the pack from good artifacts (the corpus format): their tables, columns "
        "and keys, the spine, pools and the axioms `pack derive` admits, tests from them",
    )
    n.add_argument(
        "--llm",
        action="store_true",
        help="with --from-sample: also ask the model of membrane.toml's [llm] for candidate "
        "axioms, gated like the others (as `pack derive --llm`)",
    )
    n.add_argument(
        "--force",
        action="store_true",
        help="write into a folder that is not empty (the skeleton's files are replaced, "
        "others kept)",
    )
    d = command(
        psub,
        common,
        "derive",
        "bootstrap a value ontology from sample tables under a pack's bindings: pools, and "
        "candidate axioms admitted only if HermiT finds them consistent and every sample "
        "artifact still passes (the rest listed in DIR/derive.json)",
        "membrane pack derive --pack packs/facility --from-sample "
        "packs/facility/corpus/demo.clean.jsonl --limit 20 --out derived-pack",
    )
    d.add_argument(
        "--from-sample",
        required=True,
        type=Path,
        metavar="TABLES.jsonl",
        help="good artifacts (the corpus format) to derive from",
    )
    d.add_argument(
        "--pack",
        required=True,
        metavar="DIR",
        help="the pack whose pack.toml binds the tables (its other files are copied)",
    )
    d.add_argument("--out", required=True, type=Path, metavar="DIR", help="the new pack's folder")
    d.add_argument("--limit", type=int, metavar="N", help="only the sample's first N artifacts")
    d.add_argument("--force", action="store_true", help="write into a folder that is not empty")
    d.add_argument(
        "--llm",
        action="store_true",
        help="also ask the model of membrane.toml's [llm] for candidate axioms (disjoint "
        "pools, only-restrictions); they pass the same HermiT and sample gate",
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
    """`root`: the workspace, read only by `pack derive --llm` (its [llm] settings)."""
    if args.pack_command == "check":
        return _check(args)
    if args.pack_command == "test":
        return _test(args)
    if args.pack_command == "new":
        return _new(args, root)
    if args.pack_command == "derive":
        return _derive(args, root)
    raise AssertionError(args.pack_command)  # pragma: no cover


def _check(args: argparse.Namespace) -> int:
    from harness.packcheck import check_pack

    report = check_pack(args.dir, strict_dl=args.strict_dl)
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


def _new(args: argparse.Namespace, root: Path) -> int:
    from harness.packnew import new_pack

    extra = None
    if args.llm:
        if args.from_sample is None:
            raise ConfigError(
                "--llm needs --from-sample",
                hint="the model proposes axioms for the pools of a sample",
            )
        from harness.packllm import llm_axioms_for

        extra = llm_axioms_for(root)
    try:
        written = new_pack(args.dir, force=args.force, sample=args.from_sample, extra=extra)
    finally:
        if extra is not None:
            extra.client.close()
    derived: dict[str, Any] = {}
    if "derive.json" in written:  # what the sample's axioms came to (and the model's)
        derived = json.loads((args.dir / "derive.json").read_text(encoding="utf-8"))
    if args.json:
        emit_json(
            {"pack": str(args.dir), "files": written, **({"derive": derived} if derived else {})}
        )
        return EXIT_OK
    print(f"wrote a new pack in {args.dir}: {', '.join(written)}")
    if derived:
        print(
            f"  axioms: {len(derived['admitted'])} admitted, {len(derived['rejected'])} "
            "rejected (derive.json says which and why)"
        )
    if derived.get("llm_error"):
        print(f"  the model proposed nothing: {derived['llm_error']}")
    print(f"next: membrane pack check {args.dir} && membrane pack test {args.dir}")
    return EXIT_OK


def _derive(args: argparse.Namespace, root: Path) -> int:
    from harness.packderive import derive_pack

    extra = None
    if args.llm:
        from harness.packllm import llm_axioms_for

        extra = llm_axioms_for(root)
    try:
        report = derive_pack(
            args.pack, args.from_sample, args.out, force=args.force, limit=args.limit, extra=extra
        )
    finally:
        if extra is not None:
            extra.client.close()
    if args.json:
        emit_json(report.as_dict())
        return EXIT_OK
    print(f"wrote {args.out}: pools " + ", ".join(f"{p} ({n})" for p, n in report.pools.items()))
    for c in report.candidates:
        verdict = "admitted" if c.admitted else f"rejected ({c.why})"
        print(f"  {verdict} [{c.source}]: {c.name}: {c.description}")
    if report.llm_error:
        print(f"  the model proposed nothing: {report.llm_error}")
    if report.left_out:
        print(f"  assertions left out (they read the source's _pool): {', '.join(report.left_out)}")
    print(f"next: membrane pack check {args.out}")
    return EXIT_OK

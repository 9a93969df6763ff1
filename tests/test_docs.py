"""The README documents every command, option and critique code the code has."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from harness.cli import _parser

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _walk(p: argparse.ArgumentParser, prefix: str) -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append((f"{prefix} {name}", sub))
                out += _walk(sub, f"{prefix} {name}")
    return out


def test_every_command_and_option_is_in_the_readme() -> None:
    for cmd, sub in _walk(_parser(), "membrane"):
        words = cmd.split()
        assert f"`{cmd}" in README or all(w in README for w in words[1:]), cmd
        for action in sub._actions:
            for opt in action.option_strings:
                if opt.startswith("--") and opt not in ("--help",):
                    assert opt in README, f"{cmd}: {opt} is not documented in README.md"
        assert "example:" in (sub.epilog or "") or sub._subparsers is not None, (
            f"{cmd} has no example"
        )


def test_every_critique_code_in_the_code_is_documented() -> None:
    codes: set[str] = set()
    for path in [
        *ROOT.glob("effectors/**/*.py"),
        *ROOT.glob("harness/*.py"),
        *ROOT.glob("ontology/*.py"),
    ]:
        codes |= set(re.findall(r'"((?:value|ri|prose|proposal|gate)\.[a-z_]+)"', path.read_text()))
    assert codes, "found no codes"
    missing = sorted(c for c in codes if c not in README)
    assert missing == []


def test_the_readme_diagram_is_generated_from_the_fsm_and_rules() -> None:
    from harness.diagram import mermaid

    for match in re.finditer(
        r"<!-- rules:(\w+):begin -->\n```mermaid\n(.*?)```\n<!-- rules:\1:end -->", README, re.S
    ):
        assert match.group(2) == mermaid(match.group(1)), (
            f"README's {match.group(1)} diagram is stale: paste `membrane rules show --mermaid`"
        )
    assert "<!-- rules:agenda_v1:begin -->" in README

"""The docs site (docs/) documents every command, option and critique code the code has.

The reference pages under docs/reference/generated/ are written from the code by
`python scripts/gen_reference.py`; a test here fails when they are stale. The hand-written
pages must still name every command (reference/commands.md) and give every critique code a
meaning (reference/critique-codes.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from harness.cli import _parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REFERENCE = "\n".join(
    p.read_text(encoding="utf-8") for p in sorted((DOCS / "reference").rglob("*.md"))
)
COMMANDS = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
CODES_PAGE = (DOCS / "reference" / "critique-codes.md").read_text(encoding="utf-8")
LOOP = (DOCS / "explanation" / "loop.md").read_text(encoding="utf-8")


def _gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_reference", ROOT / "scripts" / "gen_reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", module)
    spec.loader.exec_module(module)
    return module


def _walk(p: argparse.ArgumentParser, prefix: str) -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append((f"{prefix} {name}", sub))
                out += _walk(sub, f"{prefix} {name}")
    return out


def test_every_command_and_option_is_in_the_reference() -> None:
    for cmd, sub in _walk(_parser(), "membrane"):
        words = cmd.split()
        # the hand-written overview names every command
        assert f"`{cmd}" in COMMANDS or all(w in COMMANDS for w in words[1:]), (
            f"{cmd} is not in docs/reference/commands.md"
        )
        assert f"## `{cmd}`" in REFERENCE, f"{cmd}: no section in the command reference"
        for action in sub._actions:
            for opt in action.option_strings:
                if opt.startswith("--") and opt not in ("--help",):
                    assert opt in REFERENCE, f"{cmd}: {opt} is not documented in docs/reference/"
                    assert action.help, f"{cmd}: {opt} has no help text for the reference"
        assert "example:" in (sub.epilog or "") or sub._subparsers is not None, (
            f"{cmd} has no example"
        )


def test_every_critique_code_in_the_code_has_a_meaning_in_the_docs() -> None:
    codes: set[str] = set()
    for path in [
        *ROOT.glob("effectors/**/*.py"),
        *ROOT.glob("harness/*.py"),
        *ROOT.glob("ontology/*.py"),
    ]:
        codes |= set(re.findall(r'"((?:value|ri|prose|proposal|gate)\.[a-z_]+)"', path.read_text()))
    assert codes, "found no codes"
    missing = sorted(c for c in codes if c not in CODES_PAGE)
    assert missing == [], "no meaning in docs/reference/critique-codes.md"
    # the generator scans at least what this test scans
    assert codes <= set(_gen().code_sources())


def test_the_generated_reference_is_fresh() -> None:
    stale = _gen().stale()
    assert stale == [], f"stale: {stale}; run `python scripts/gen_reference.py`"


def test_the_generated_reference_can_go_stale(tmp_path: Path) -> None:
    """The freshness check is not vacuous: an edited page is reported."""
    gen = _gen()
    for name, text in gen.pages().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert gen.stale(tmp_path) == []
    page = tmp_path / "cli.md"
    page.write_text(page.read_text(encoding="utf-8").replace("--cohort-size", "--cohort"))
    (tmp_path / "critique-codes.md").unlink()
    assert gen.stale(tmp_path) == ["cli.md", "critique-codes.md"]


def test_the_loop_diagram_is_generated_from_the_fsm_and_rules() -> None:
    from harness.diagram import mermaid

    for match in re.finditer(
        r"<!-- rules:(\w+):begin -->\n```mermaid\n(.*?)```\n<!-- rules:\1:end -->", LOOP, re.S
    ):
        assert match.group(2) == mermaid(match.group(1)), (
            f"docs/explanation/loop.md's {match.group(1)} diagram is stale: paste "
            "`membrane rules show --mermaid`"
        )
    assert "<!-- rules:agenda_v1:begin -->" in LOOP


def test_every_docs_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert pages, "no pages"
    assert [p for p in pages if f": {p}" not in nav] == []


def test_the_readme_is_short_and_links_into_the_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 150  # two example packs, a scaling table (issues 16, 27)
    assert "make demo" in readme and "make test" in readme
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link

"""Issue 21: the README says where `membrane` is after `make` and how long `make test` takes."""

from __future__ import annotations

import re

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
QUICKSTART = README[: README.index("## A tour")]


def test_the_quick_start_says_membrane_is_not_on_path_and_how_to_run_it() -> None:
    assert ".venv/bin/membrane" in QUICKSTART
    assert "source .venv/bin/activate" in QUICKSTART
    assert "PATH" in QUICKSTART


def test_the_quick_start_gives_the_expected_make_test_time() -> None:
    assert re.search(r"`make test`[^.]*\d+\s*minutes", QUICKSTART, re.S)

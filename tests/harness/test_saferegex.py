"""A third-party pack's placeholder patterns cannot hang the value gate (issue 17, item 7):
they run on RE2 (linear time); a pattern RE2 cannot run is refused when the pack loads."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from harness.errors import PackError
from harness.pack import load_pack
from harness.saferegex import compile_safe
from tests.conftest import FACILITY


def test_a_catastrophic_pattern_runs_in_linear_time() -> None:
    p = compile_safe(r"^(a+)+$")
    t0 = time.perf_counter()
    assert p.search("a" * 100_000 + "b") is None
    assert time.perf_counter() - t0 < 1.0  # Python's re: effectively forever
    assert compile_safe(r"(?i)^to be (determined|confirmed)$").search("To be confirmed")


@pytest.mark.parametrize("bad", [r"(a)\1", r"foo(?=bar)", r"(?<!x)y", "("])
def test_a_pattern_re2_cannot_run_is_refused_with_the_reason(bad: str) -> None:
    with pytest.raises(ValueError, match="RE2"):
        compile_safe(bad)


def test_a_pack_with_such_a_pattern_fails_to_load_naming_it(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(FACILITY, pack, ignore=shutil.ignore_patterns("corpus"))
    toml = pack / "pack.toml"
    text = toml.read_text()
    toml.write_text(
        text.replace("placeholder_patterns = [", "placeholder_patterns = ['(a)\\1', ", 1)
    )
    with pytest.raises(PackError, match="placeholder_patterns"):
        load_pack(pack)

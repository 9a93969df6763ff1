"""The compiled prose modules (`scripts/build_accel.py`, `effectors.prose.accel`): used only
while they match the sources, and judging exactly as the plain modules do."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import effectors.prose as prose_pkg
from effectors.prose import accel
from effectors.prose_gate import ProseGate
from harness.models import Artifact
from harness.pack import load_pack
from tests.conftest import FACILITY

ROOT = Path(__file__).resolve().parents[2]
_compiled = pytest.mark.skipif(not prose_pkg.ACCELERATED,
                               reason="the prose accelerator is not built (`make accel`)")


def _plain_env() -> dict[str, str]:
    return {**os.environ, accel.PURE_ENV: "1"}


def _build(tmp_path: Path, sources: dict[str, str], python: str = sys.version) -> Path:
    build = tmp_path / "build"
    build.mkdir()
    hashes = {m: hashlib.sha256(text.encode()).hexdigest() for m, text in sources.items()}
    (build / "manifest.json").write_text(json.dumps({"python": python, "sources": hashes}))
    src = tmp_path / "src"
    src.mkdir()
    for m, text in sources.items():
        (src / f"{m}.py").write_text(text)
    return build


def test_a_build_is_used_only_while_it_matches_the_sources(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build = _build(tmp_path, {"claims": "x = 1\n", "text": "y = 2\n"})
    src = tmp_path / "src"
    assert accel.current(build, src)
    (src / "text.py").write_text("y = 3\n")  # an edited module: the build is stale
    assert not accel.current(build, src)
    (src / "text.py").write_text("y = 2\n")
    (src / "claims.py").unlink()
    assert not accel.current(build, src)


@pytest.mark.parametrize("manifest", ["", "{", "[]", '{"python": "2.7", "sources": {}}',
                                      '{"sources": {"claims": "0"}}', '{"python": 1}'])
def test_a_broken_or_foreign_manifest_means_plain_python(tmp_path: Path, manifest: str) -> None:
    (tmp_path / "manifest.json").write_text(manifest)
    assert not accel.current(tmp_path, tmp_path)
    assert not accel.current(tmp_path / "missing", tmp_path)


def test_install_puts_a_current_build_first_unless_told_not_to(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build = _build(tmp_path, {"claims": "x = 1\n"})
    monkeypatch.setattr(accel, "current", lambda b: b == build)
    path = ["pkg"]
    monkeypatch.setenv(accel.PURE_ENV, "1")
    assert not accel.install(path, build) and path == ["pkg"]
    monkeypatch.setenv(accel.PURE_ENV, "0")
    assert accel.install(path, build) and path == [str(build), "pkg"]


def test_plain_python_is_what_the_environment_asks_for() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import effectors.prose as p, effectors.prose.claims as c; "
         "print(p.ACCELERATED, c.__file__.endswith('.py'))"],
        cwd=ROOT, env=_plain_env(), capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


@_compiled
def test_the_compiled_modules_are_the_ones_imported() -> None:
    from effectors.prose import claims, matcher

    assert not claims.__file__.endswith(".py") and not matcher.__file__.endswith(".py")


@_compiled
@pytest.mark.slow
def test_the_prose_unit_tests_pass_in_plain_python_too() -> None:
    """This run uses the compiled modules; the same unit and property tests, run again on
    the plain ones, must pass too (the two must not drift apart)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         "tests/effectors/test_prose_gate.py"],
        cwd=ROOT, env=_plain_env(), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


_JUDGE = """
import json, sys, tempfile
from pathlib import Path
import effectors.prose as p
from effectors.prose_gate import ProseGate
from harness.models import Artifact
from harness.pack import load_pack
from ontology import load_pools
pack = load_pack(Path(sys.argv[1]))
arts = [Artifact.model_validate(json.loads(line)) for line in sys.stdin if line.strip()]
with tempfile.TemporaryDirectory() as d:
    pools = load_pools(pack, Path(d))
verdicts = ProseGate(pack, pools).judge(arts)
print(json.dumps([p.ACCELERATED, [v.model_dump(mode="json") for v in verdicts]]))
"""


@_compiled
@pytest.mark.java
def test_compiled_and_plain_judge_the_labelled_cases_alike(tmp_path: Path) -> None:
    lines = [line for name in ("prose_cases.jsonl", "demo.jsonl")
             for line in (FACILITY / "corpus" / name).read_text().splitlines() if line]
    from ontology import load_pools

    pack = load_pack(FACILITY)
    compiled = ProseGate(pack, load_pools(pack, tmp_path)).judge(
        [Artifact.model_validate_json(line) for line in lines])
    proc = subprocess.run([sys.executable, "-c", _JUDGE, str(FACILITY)], cwd=ROOT,
                          env=_plain_env(), input="\n".join(lines), capture_output=True,
                          text=True, check=True)
    accelerated, plain = json.loads(proc.stdout)
    assert accelerated is False
    assert sum(len(v["critiques"]) for v in plain) > 300
    assert plain == [v.model_dump(mode="json") for v in compiled]

"""The prose gate's compiled modules (issue 20's speed, `make native`): a stale or partial
build is never imported, and the compiled modules give the sources' verdicts."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from effectors.prose import _native
from tests.conftest import ROOT

SUFFIX = ".cpython-311-x86_64-linux-gnu.so" if sys.platform == "linux" else ".so"
MODS = ("alpha", "beta")


def _package(tmp: Path, name: str, *, so: bool = True, manifest: dict[str, object] | None = None
             ) -> Path:
    """A package `name` in `tmp` with sources `alpha` and `beta` (each saying where it came
    from), optionally a garbage extension beside each (importing one fails), and a manifest."""
    folder = tmp / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for m in MODS:
        (folder / f"{m}.py").write_text(f"WHERE = 'source {m}'\n")
        if so:
            (folder / f"{m}{SUFFIX}").write_bytes(b"not an extension")
    if so:
        (folder / f"{_native.SHARED}{SUFFIX}").write_bytes(b"not an extension")
    if manifest is not None:
        (folder / _native.MANIFEST).write_text(json.dumps(manifest))
    return folder


def _hashes(folder: Path) -> dict[str, str]:
    return {m: hashlib.sha256((folder / f"{m}.py").read_bytes()).hexdigest() for m in MODS}


def _good(folder: Path) -> dict[str, object]:
    return {"python": sys.implementation.cache_tag, "sources": _hashes(folder)}


def test_the_extensions_are_used_only_with_a_manifest_that_matches_every_source(
        tmp_path: Path) -> None:
    folder = _package(tmp_path, "p1")
    assert _native.decide(folder, MODS, None).reason.startswith("no readable build manifest")
    (folder / _native.MANIFEST).write_text(json.dumps(_good(folder)))
    assert _native.decide(folder, MODS, None) == _native.Decision(True, "compiled (mypyc)")
    assert _native.decide(folder, MODS, "0").reason == "MEMBRANE_NATIVE=0"
    # one source edited after the build: none of them is compiled (they call each other)
    (folder / "beta.py").write_text("WHERE = 'edited'\n")
    stale = _native.decide(folder, MODS, None)
    assert not stale.compiled and stale.reason.startswith("stale: beta.py changed")
    # another interpreter's build, a partial build, none at all
    (folder / _native.MANIFEST).write_text(json.dumps({**_good(folder), "python": "cpython-99"}))
    assert "another interpreter" in _native.decide(folder, MODS, None).reason
    (folder / _native.MANIFEST).write_text(json.dumps(_good(folder)))
    (folder / f"alpha{SUFFIX}").unlink()
    assert _native.decide(folder, MODS, None).reason.startswith("an incomplete build")
    assert _native.decide(_package(tmp_path, "p2", so=False), MODS, None).reason.startswith(
        "not compiled")


@pytest.mark.parametrize("text", [
    "", "{", "[]", "null", '{"python": 1}', '{"sources": []}', '{"sources": {"alpha": 3}}',
    '{"python": "x", "sources": "y"}', "\udcff".encode("utf-8", "surrogatepass").decode("latin-1"),
])
def test_a_hostile_manifest_means_the_sources(tmp_path: Path, text: str) -> None:
    folder = _package(tmp_path, "p")
    (folder / _native.MANIFEST).write_text(text, encoding="latin-1")
    decision = _native.decide(folder, MODS, None)
    assert not decision.compiled and decision.reason


def test_a_stale_build_imports_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """The guard puts the sources first when the build is stale; with a good manifest the
    (here: garbage) extensions would be imported, which fails: the guard is what decides."""
    monkeypatch.delenv("MEMBRANE_NATIVE", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    stale = _package(tmp_path, "stalepkg", manifest={"python": "x", "sources": {}})
    assert not _native.guard("stalepkg", stale, MODS).compiled
    assert importlib.import_module("stalepkg.alpha").WHERE == "source alpha"
    assert importlib.import_module("stalepkg.beta").WHERE == "source beta"
    good = _package(tmp_path, "goodpkg")
    (good / _native.MANIFEST).write_text(json.dumps(_good(good)))
    assert _native.guard("goodpkg", good, MODS).compiled
    with pytest.raises(ImportError):
        importlib.import_module("goodpkg.alpha")  # the extension: garbage here


def _judge_lines() -> str:
    """The verdicts of the synthetic facility gate on the labelled prose of the unit tests
    and perturbed copies of it, as JSON lines (run in this process and in one forced to
    the sources)."""
    import random

    from effectors.prose_gate import ProseGate
    from tests.effectors.test_prose_gate import GOOD_PROSE, make_artifact, make_pack, make_pools

    gate = ProseGate(make_pack(), make_pools())
    rng = random.Random(5)
    words = GOOD_PROSE.split(" ")
    extra = ["not", "under", "45 kW", "respectively", "It", "draws", "12", "kW.", ";", "but",
             "and", "the", "first", "sixty", "kilowatts", "every", "6", "months", "\n- "]
    texts = [GOOD_PROSE, ""]
    for _ in range(400):
        w = list(words)
        for _ in range(rng.randint(1, 6)):
            if rng.random() < 0.5 and len(w) > 1:
                del w[rng.randrange(len(w))]
            else:
                w.insert(rng.randrange(len(w) + 1), rng.choice(extra + words))
        texts.append(" ".join(w))
    arts = [make_artifact(prose=t) for t in texts]
    return "\n".join(json.dumps(v.model_dump(mode="json"), sort_keys=True)
                     for v in gate.judge(arts))


def test_the_compiled_modules_give_the_sources_verdicts() -> None:
    if _native.status() != "compiled (mypyc)":
        pytest.skip(f"the prose gate runs from its sources here: {_native.status()}")
    here = _judge_lines()
    env = {**os.environ, "MEMBRANE_NATIVE": "0"}
    code = ("from effectors.prose import _native; import effectors.prose.claims as c;"
            " assert c.__file__.endswith('.py'), c.__file__;"
            " from tests.effectors.test_prose_native import _judge_lines; print(_judge_lines())")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.rstrip("\n") == here
    codes = {c["code"] for line in here.splitlines() for c in json.loads(line)["critiques"]}
    assert here.count("\n") == 401 and {"prose.value_mismatch", "prose.truncated"} <= codes


@pytest.mark.slow
@pytest.mark.java
def test_the_compiled_modules_give_the_sources_verdicts_on_every_set(tmp_path: Path) -> None:
    """`bench.prose_verdicts` (the benchmark's artifacts, both labelled sets, the demo
    corpus and perturbed texts) compiled and from the sources: byte for byte."""
    if _native.status() != "compiled (mypyc)":
        pytest.skip(f"the prose gate runs from its sources here: {_native.status()}")
    outs = []
    for setting in ("1", "0"):
        out = tmp_path / f"v{setting}.jsonl"
        subprocess.run([sys.executable, "-m", "bench.prose_verdicts", str(out), "--perturbed",
                        "2000"], cwd=ROOT, env={**os.environ, "MEMBRANE_NATIVE": setting},
                       check=True, capture_output=True)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b"\n") == 2180 + 2000

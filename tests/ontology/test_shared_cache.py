"""The classified ontology shared across workspaces (`ontology.shared`, issue 16): a fresh
workspace copies another's entry instead of classifying; a damaged entry is rebuilt and
replaced; a cache that cannot be written costs only the classification; off means off;
and the committed corpus is the same with or without it. Real HermiT."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness import api
from harness.pack import load_pack
from ontology import check_ontology, load_index, pools, shared
from tests.conftest import FACILITY

pytestmark = pytest.mark.java


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The packs the classifier was run for (each `build_index` call)."""
    seen: list[str] = []
    real = pools.build_index

    def counting(pack: Any, *args: Any, **kw: Any) -> Any:
        seen.append(pack.config.pack.name)
        return real(pack, *args, **kw)

    monkeypatch.setattr(pools, "build_index", counting)
    return seen


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("ontology-*"))}


def test_a_fresh_workspace_copies_what_another_classified(
    tiny_pack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: list[str]
) -> None:
    monkeypatch.setenv(shared.ENV, str(tmp_path / "shared"))
    pack = load_pack(tiny_pack)
    first = load_index(pack, tmp_path / "a")
    assert builds == ["tiny"]
    folder = shared.shared_dir()
    assert folder is not None and folder.is_relative_to(tmp_path / "shared" / "ontology")
    assert _files(folder) == _files(tmp_path / "a") and len(_files(folder)) == 3

    second = load_index(pack, tmp_path / "b")  # another workspace: no classification
    assert builds == ["tiny"]
    assert _files(tmp_path / "b") == _files(tmp_path / "a")
    assert second[0].model_dump() == first[0].model_dump() and second[1:] == first[1:]
    check_ontology(pack, tmp_path / "c")  # a shared entry passed the checks when built
    assert not (tmp_path / "c").exists()

    # a damaged shared entry: rebuilt in the workspace, and the shared one replaced
    index = next(folder.glob("*.json"))
    index.write_text('{"key": "not this one"')
    third = load_index(pack, tmp_path / "d")
    assert builds == ["tiny", "tiny"]
    assert third[1:] == first[1:]
    assert json.loads(index.read_text())["key"] == json.loads(
        next((tmp_path / "a").glob("*.json")).read_text())["key"]


def test_off_means_off_and_an_unwritable_cache_costs_only_the_classification(
    tiny_pack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: list[str]
) -> None:
    pack = load_pack(tiny_pack)
    for value in ("off", "0", ""):
        monkeypatch.setenv(shared.ENV, value)
        assert shared.shared_dir() is None
    load_index(pack, tmp_path / "a")
    load_index(pack, tmp_path / "b")
    assert builds == ["tiny", "tiny"]
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(shared.ENV, str(blocker / "cache"))  # mkdir fails: NotADirectoryError
    assert load_index(pack, tmp_path / "c")[1:] == load_index(pack, tmp_path / "a")[1:]
    assert builds == ["tiny", "tiny", "tiny"]


def test_the_default_folder_follows_xdg_and_the_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(shared.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = shared.shared_dir()
    assert folder is not None and folder.parent == tmp_path / "xdg" / "membrane" / "ontology"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = shared.shared_dir()
    assert folder is not None
    assert folder.parent == tmp_path / "home" / ".cache" / "membrane" / "ontology"
    assert len(folder.name) == 16 and folder.name == shared._code_tag()


@pytest.mark.slow
def test_the_same_corpus_is_committed_with_a_shared_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: list[str]
) -> None:
    monkeypatch.setenv(shared.ENV, str(tmp_path / "shared"))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join((FACILITY / "corpus" / "demo.jsonl").read_text()
                              .splitlines(keepends=True)[:6]))
    api.run_batch(tmp_path / "one", corpus, FACILITY)
    api.run_batch(tmp_path / "two", corpus, FACILITY)
    assert builds == ["facility"]  # the second workspace classified nothing
    for name in ("corpus.jsonl",):
        assert (tmp_path / "one" / "current" / name).read_bytes() == (
            tmp_path / "two" / "current" / name).read_bytes()
    assert os.listdir(tmp_path / "two" / ".membrane" / "cache")

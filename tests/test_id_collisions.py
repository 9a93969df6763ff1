"""Ids become file names (traces, chapters, archive): two ids must never share a file, also
on case-insensitive file systems (macOS, Windows), and no id may name a Windows device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harness import api
from harness.corpus import read_corpus
from harness.models import ARTIFACT_ID_PATTERN, RESERVED_ID_STEMS, Artifact
from harness.pack import load_pack
from tests.conftest import FACILITY

DEMO = FACILITY / "corpus" / "demo.jsonl"
PACK = load_pack(FACILITY)


def _line(artifact_id: str, n: int = 0) -> str:
    raw = json.loads(DEMO.read_text().splitlines()[n])
    raw["id"] = artifact_id
    return json.dumps(raw)


@pytest.mark.parametrize("bad", ["CON", "con", "nul.1", "Com3", "lpt9.draft", "AUX.r1", "prn"])
def test_a_windows_device_name_is_refused(bad: str) -> None:
    raw = json.loads(_line(bad))
    with pytest.raises(ValidationError, match="device name"):
        Artifact.model_validate(raw)


@pytest.mark.parametrize("ok", ["console", "con-1", "com10", "null", "auxiliary.1", "lpt", "nul_"])
def test_names_near_a_device_name_are_fine(ok: str) -> None:
    assert Artifact.model_validate(json.loads(_line(ok))).id == ok


def test_ids_that_differ_only_in_case_are_one_bad_line(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join([_line("fac-1"), _line("other", 1), _line("FAC-1", 2)]) + "\n")
    read = read_corpus(corpus, load_pack(FACILITY))
    assert [a.id for a in read.artifacts] == ["fac-1", "other"]
    assert read.lines == [1, 2]
    (err,) = read.errors
    assert err.line == 3 and "differs only in case from 'fac-1'" in str(err)


ids = st.from_regex(ARTIFACT_ID_PATTERN.replace("{0,127}", "{0,6}"), fullmatch=True)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(ids | st.sampled_from(["con", "CON.1", "Fac", "fac", "FAC"]), max_size=8))
def test_the_ids_a_corpus_admits_never_share_a_file_name(
    tmp_path: Path, drawn: list[str]
) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(_line(i) + "\n" for i in drawn))
    read = read_corpus(corpus, PACK)
    admitted = [a.id for a in read.artifacts]
    # one file name per id, whatever the file system folds: case, and no device names
    assert len({a.lower() for a in admitted}) == len(admitted)
    assert not any(a.partition(".")[0].lower() in RESERVED_ID_STEMS for a in admitted)
    assert len(admitted) + len(read.errors) == len(drawn)


@pytest.mark.java
def test_an_id_that_differs_only_in_case_from_one_in_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    first = tmp_path / "first.jsonl"
    first.write_text(_line("fac-0001") + "\n")
    api.run_batch(ws, first, FACILITY)
    second = tmp_path / "second.jsonl"
    second.write_text(_line("FAC-0001") + "\n" + _line("fac-0002", 1) + "\n")
    result = api.run_batch(ws, second, FACILITY)
    (err,) = result.errors
    assert err.line == 1 and "differs only in case from 'fac-0001'" in str(err)
    assert not [p for p in ws.rglob("*") if "FAC-0001" in p.name]
    assert (ws / "trace" / "fac-0002.r1.jsonl").is_file()  # the rest of the corpus ran

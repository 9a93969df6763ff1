"""A batch does not hold its corpus in memory (issue 22): the corpus is read as a stream
and the driver keeps the canonical bytes of what is left to do, rebuilding each artifact
when its cohort starts. Measured with tracemalloc (allocations, not time)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from bench.corpus import artifacts
from effectors.testing import ScriptedProposer
from harness.corpus import CorpusStream, _deeper_than, read_corpus
from harness.driver import BatchRun
from harness.pack import Pack
from harness.store import artifact_bytes

from .helpers import fake_gates, make_engines

N = 300


def _corpus(tmp_path: Path) -> Path:
    path = tmp_path / "c.jsonl"
    arts = artifacts(N, defect_rate=0.5, seed=3)
    path.write_bytes(b"".join(orjson.dumps(a.model_dump(mode="json")) + b"\n" for a in arts))
    return path


def test_the_corpus_stream_reads_lazily_and_collects_errors(
    tmp_path: Path, facility_pack: Pack
) -> None:
    path = _corpus(tmp_path)
    lines = path.read_bytes().splitlines()
    lines.insert(2, b"{not json")
    path.write_bytes(b"\n".join(lines) + b"\n")
    stream = CorpusStream(path, facility_pack, known={"BENCH-00002"})
    it = iter(stream)
    first = next(it)
    assert first.id == "bench-00001" and stream.errors == [] and stream.count == 1
    rest = list(it)
    assert stream.count == 1 + len(rest) == N - 1  # bench-00002 collides in case
    assert [e.line for e in stream.errors] == [2, 3]
    read = read_corpus(path, facility_pack)  # the list reader reads the same lines
    assert [a.id for a in read.artifacts] == ["bench-00001", "bench-00002"] + [a.id for a in rest]


def test_a_streamed_batch_keeps_bytes_not_models(tmp_path: Path, facility_pack: Pack) -> None:
    path = _corpus(tmp_path)
    ws, eng = make_engines(tmp_path / "ws", fake_gates(), ScriptedProposer("p", []))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        batch = BatchRun(ws, eng, CorpusStream(path, facility_pack), cohort_size=64)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    corpus_bytes = sum(len(artifact_bytes(a)) for a in read_corpus(path, facility_pack).artifacts)
    # the models take ~3x their canonical bytes (and orjson's bytes ~4x: it overallocates);
    # what is kept is the compressed bytes and a list slot
    assert held < 0.6 * corpus_bytes, (held, corpus_bytes)  # measured ~0.38
    result = batch.run()
    assert len(result.runs) == N and all(r.state == "COMMITTED" for r in result.runs)


def _depth(node: object) -> int:
    if isinstance(node, dict):
        return 1 + max((_depth(v) for v in node.values()), default=0)
    if isinstance(node, list):
        return 1 + max((_depth(v) for v in node), default=0)
    return 0


_JSON = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=30,
)


@given(value=_JSON, limit=st.integers(0, 10))
def test_the_depth_check_says_what_a_full_walk_says(value: object, limit: int) -> None:
    assert _deeper_than(value, limit) == (_depth(value) > limit)

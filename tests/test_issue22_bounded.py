"""Issue 22, "a cohort can fail whole": the value gate's reasoner calls are chunked by a cost
model and a call that times out is bisected, so a timeout fails only the rows that cause it
(`value.timeout`) and the rest of the cohort is judged as usual."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from bench.corpus import adversarial
from effectors.value_gate import ValueGate
from harness.models import Artifact, Verdict
from harness.pack import Pack, load_pack
from ontology import HermitRunner, RowFacts
from ontology.bounded import ChunkSizer, bisect, chunks
from ontology.reason import BaseOntology, ReasonerTimeout
from ontology.warm import WarmHermit
from tests.conftest import FACILITY

# -- the pieces, without a reasoner ------------------------------------------------------------


def test_chunks_hold_at_most_size_heavy_items_in_order() -> None:
    items = list(range(20))
    cut = chunks(items, lambda i: i % 2 == 0, 3)
    assert [i for c in cut for i in c] == items
    assert all(sum(1 for i in c if i % 2 == 0) <= 3 for c in cut)
    assert len(cut) == 4  # 10 heavy items, 3 a chunk
    assert chunks(items, lambda i: False, 3) == [items]  # light items never cut a chunk


def test_bisect_narrows_a_timeout_to_the_items_that_time_out_alone() -> None:
    done: list[int] = []

    def work(chunk: list[int]) -> None:
        if 13 in chunk or 2 in chunk:
            raise ReasonerTimeout(1.0)
        done.extend(chunk)

    sizer = ChunkSizer(timeout_s=10.0)
    before = sizer.rows
    assert bisect(list(range(16)), work, sizer) == [2, 13]
    assert sorted(done) == [i for i in range(16) if i not in (2, 13)]
    assert sizer.rows < before  # the next chunks are planned smaller


def test_the_sizer_bounds_a_call_by_the_timeout_and_follows_what_it_measures() -> None:
    assert ChunkSizer(timeout_s=300.0).rows == 64  # the measured optimum, far from 300 s
    small = ChunkSizer(timeout_s=2.0)
    assert 1 <= small.rows < 64  # 0.5 s planned: fewer rows
    small.observe(small.rows, 1.9)  # much slower per row than planned
    assert small.rows <= 2
    assert ChunkSizer(timeout_s=0.1).rows == 1  # never zero


# -- the gate, with HermiT ----------------------------------------------------------------------


class _Counting(WarmHermit):
    """The warm HermiT, the rows of each realisation call kept."""

    def __init__(self) -> None:
        super().__init__()
        self.realised: list[int] = []

    def instances(self, base: BaseOntology, rows: Sequence[RowFacts], classes: Sequence[str]
                  ) -> dict[str, set[str]] | None:
        self.realised.append(len(rows))
        return super().instances(base, rows, classes)


@pytest.mark.java
def test_chunked_realisation_gives_the_verdicts_of_one_call(tmp_path: Path) -> None:
    pack = load_pack(FACILITY)
    corpus = adversarial(10, rows=5)
    whole_runner, chunked_runner = _Counting(), _Counting()
    whole = ValueGate.from_pack(pack, tmp_path, whole_runner)
    whole._sizer.max_rows = 10_000
    chunked = ValueGate.from_pack(pack, tmp_path, chunked_runner)
    chunked._sizer.max_rows = 8
    expected = whole.judge(corpus)
    assert chunked.judge(corpus) == expected
    assert max(whole_runner.realised) > 30  # one call realised every suspect row
    assert max(chunked_runner.realised) <= 8 and len(chunked_runner.realised) >= 4
    assert sum(1 for v in expected if not v.passed) == len(corpus)  # mostly wrong rows
    assert not any(c.code == "value.timeout" for v in expected for c in v.critiques)


# A row that makes HermiT slow on its own: its standard is a `PigeonStandard`, and a row with
# one must have 9 distinct `hasPigeon` values in 8 holes of at most one each — the pigeonhole
# principle, exponential for a tableau (one row ~16 s on the 2-core VM). The base ontology
# classifies as fast as before: no class or individual has a `hasStandard` value.
_NNI = "http://www.w3.org/2001/XMLSchema#nonNegativeInteger"
_HOLES = 8


def _pigeonhole_axioms() -> str:
    holes = "".join(f'<owl:Class rdf:about="#Hole{i}"/>' for i in range(_HOLES))
    at_most_one = "".join(
        f'<owl:Restriction><owl:onProperty rdf:resource="#hasPigeon"/><owl:maxQualifiedCardinality'
        f' rdf:datatype="{_NNI}">1</owl:maxQualifiedCardinality><owl:onClass rdf:resource='
        f'"#Hole{i}"/></owl:Restriction>' for i in range(_HOLES))
    return "\n".join([
        '<owl:Class rdf:about="#PigeonStandard">'
        '<rdfs:subClassOf rdf:resource="#ImagingStandard"/></owl:Class>',
        '<owl:NamedIndividual rdf:about="#pigeonhole_standard">'
        '<rdf:type rdf:resource="#PigeonStandard"/><rdfs:label>PH 1</rdfs:label>'
        "</owl:NamedIndividual>",
        *(f'<owl:Class rdf:about="#Hole{i}"/>' for i in range(_HOLES)),
        '<owl:ObjectProperty rdf:about="#hasPigeon"><rdfs:range><owl:Class>'
        f'<owl:unionOf rdf:parseType="Collection">{holes}</owl:unionOf>'
        "</owl:Class></rdfs:range></owl:ObjectProperty>",
        '<owl:Restriction><owl:onProperty rdf:resource="#hasStandard"/>'
        '<owl:someValuesFrom rdf:resource="#PigeonStandard"/><rdfs:subClassOf><owl:Class>'
        '<owl:intersectionOf rdf:parseType="Collection"><owl:Restriction>'
        f'<owl:onProperty rdf:resource="#hasPigeon"/><owl:minCardinality rdf:datatype="{_NNI}">'
        f"{_HOLES + 1}</owl:minCardinality></owl:Restriction>{at_most_one}"
        "</owl:intersectionOf></owl:Class></rdfs:subClassOf></owl:Restriction>",
    ]) + "\n"


def _pigeonhole_packs(tmp_path: Path, timeout: float) -> tuple[Pack, Pack]:
    """The facility pack with the pigeonhole axioms: as shipped, and with a reduced
    `[ontology] reasoner_timeout_s` (same ontology, so one cached classification)."""
    d = tmp_path / "pack"
    shutil.copytree(FACILITY, d, ignore=shutil.ignore_patterns("corpus", "__pycache__"))
    owl = d / "ontology" / "facility.owl"
    owl.write_text(owl.read_text(encoding="utf-8").replace(
        "</rdf:RDF>", _pigeonhole_axioms() + "</rdf:RDF>"), encoding="utf-8")
    shipped = load_pack(d)
    toml = d / "pack.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        "[ontology]\n", f"[ontology]\nreasoner_timeout_s = {timeout}\n", 1), encoding="utf-8")
    return shipped, load_pack(d)


def _with_pigeon(corpus: list[Artifact], at: int) -> list[Artifact]:
    """`corpus` with a last equipment row citing the pigeonhole standard in artifact `at`."""
    out = list(corpus)
    a = out[at]
    rows = [dict(r) for r in a.tables["equipment"]]
    rows.append({**rows[0], "equipment_id": "EQ-PH1", "equipment_type": "CT scanner",
                 "standard": "PH 1"})
    out[at] = a.model_copy(update={"tables": {**a.tables, "equipment": rows}})
    return out


def _errors(v: Verdict) -> list[tuple[str, str | None, int | None, str | None]]:
    return [(c.code, c.location.table, c.location.row, c.location.column)
            for c in v.critiques]


@pytest.mark.java
@pytest.mark.slow
def test_a_timeout_fails_only_the_row_that_causes_it(tmp_path: Path) -> None:
    """Adversarial cohort + one row HermiT cannot judge in 5 s: before, the cohort's call timed
    out and the gate raised for every artifact; now that row gets `value.timeout` (its object
    cells rejected) and every other row has the verdict the default timeout gives it."""
    shipped, reduced = _pigeonhole_packs(tmp_path, 5.0)
    cache = tmp_path / "cache"
    reference = ValueGate.from_pack(shipped, cache, HermitRunner())  # classified once, cached
    corpus = adversarial(3, rows=3)
    expected = reference.judge(corpus)
    gate = ValueGate.from_pack(reduced, cache)
    assert gate._sizer.timeout_s == 5.0  # the pack's setting
    gate.warm_up()
    verdicts = gate.judge(_with_pigeon(corpus, 1))
    assert [v.artifact_id for v in verdicts] == [a.id for a in corpus]
    assert verdicts[0] == expected[0] and verdicts[2] == expected[2]
    slow_row = len(corpus[1].tables["equipment"])
    timed_out = [c for c in verdicts[1].critiques if c.code == "value.timeout"]
    assert [(c.location.table, c.location.row) for c in timed_out] == [("equipment", slow_row)]
    assert {(r.table, r.row) for r in verdicts[1].rejected if r.row == slow_row} == {
        ("equipment", slow_row)}
    assert {r.column for r in verdicts[1].rejected if r.row == slow_row} == {
        "equipment_type", "standard", "manufacturer"}
    assert [e for e in _errors(verdicts[1]) if e[2] != slow_row or e[1] != "equipment"] == \
        _errors(expected[1])

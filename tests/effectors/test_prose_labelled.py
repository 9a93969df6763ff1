"""PROSE_GATE measured on the generator's labelled prose cases (`corpus/prose_cases.jsonl`,
labels in `corpus/prose_labels.jsonl`): precision and recall per critique code, >= 0.95 each.

A finding matches a label of the same code on the same entity (unknown/missing entity), an
overlapping span (value mismatch), or the same sample (length, truncation). Warnings and
notes do not count. The table is printed for the record."""

from __future__ import annotations

import json
from typing import Any

import pytest

from effectors.prose_gate import ProseGate
from harness.models import Artifact
from harness.pack import load_pack
from harness.pools import Pools
from tests.conftest import FACILITY
from tests.effectors.prose_scoring import CODES, generated_set, judge, score, table

pytestmark = pytest.mark.java


def _jsonl(name: str) -> list[dict[str, Any]]:
    text = (FACILITY / "corpus" / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


@pytest.fixture(scope="module")
def real_pools(tmp_path_factory: pytest.TempPathFactory) -> Pools:
    from ontology import load_pools

    return load_pools(load_pack(FACILITY), tmp_path_factory.mktemp("pools"))


def test_precision_and_recall_per_code_on_labelled_cases(
    real_pools: Pools, capsys: pytest.CaptureFixture[str]
) -> None:
    samples, labels = generated_set()
    assert len(samples) == len(labels) >= 300
    assert [s.id for s in samples] == [x["id"] for x in labels]
    assert {x["kind"] for x in labels} == {"clean", *CODES}
    found = judge(ProseGate(load_pack(FACILITY), real_pools), samples)
    rows, misses = score(found, labels)
    clean = sum(x["kind"] == "clean" for x in labels)
    with capsys.disabled():
        print("\n" + table(f"prose gate on {len(samples)} labelled samples ({clean} clean)", rows))
    assert {c.code for cs in found for c in cs} <= set(CODES)
    for code, t, _f, _n, p, r in rows:
        assert t > 0 and p >= 0.95 and r >= 0.95, (code, p, r, misses[:10])


def test_clean_samples_raise_nothing(real_pools: Pools) -> None:
    samples = [Artifact.model_validate(a) for a in _jsonl("prose_cases.jsonl")]
    kinds = {x["id"]: x["kind"] for x in _jsonl("prose_labels.jsonl")}
    clean = [s for s in samples if kinds[s.id] == "clean"]
    verdicts = ProseGate(load_pack(FACILITY), real_pools).judge(clean)
    assert len(clean) >= 50
    assert [(v.artifact_id, c.code) for v in verdicts for c in v.critiques] == []
    assert sum(v.metrics["claims"] for v in verdicts) > 10 * len(clean)  # claims were judged


def test_labelled_spans_point_at_the_defect(real_pools: Pools) -> None:
    samples = {a["id"]: a for a in _jsonl("prose_cases.jsonl")}
    checked = 0
    for label in _jsonl("prose_labels.jsonl"):
        prose = samples[label["id"]]["prose"]
        for x in label["findings"]:
            if "span" not in x:
                continue
            s, e = x["span"]
            if x["code"] == "prose.value_mismatch":
                assert prose[s:e] == x["claim"]
            else:
                assert real_pools.resolve(prose[s:e]) == x["entity"]
            checked += 1
    assert checked >= 100

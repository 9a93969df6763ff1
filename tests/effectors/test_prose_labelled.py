"""PROSE_GATE measured on the generator's labelled prose cases (`corpus/prose_cases.jsonl`,
labels in `corpus/prose_labels.jsonl`): precision and recall per critique code, >= 0.95 each.

A finding matches a label of the same code on the same entity (unknown/missing entity), an
overlapping span (value mismatch), or the same sample (length, truncation). Warnings and
notes do not count. The table is printed for the record."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from effectors.prose_gate import ProseGate
from harness.models import Artifact, Critique
from harness.pack import load_pack
from harness.pools import Pools
from tests.conftest import FACILITY

CODES = ("prose.unknown_entity", "prose.missing_entity", "prose.value_mismatch",
         "prose.length", "prose.truncated")
pytestmark = pytest.mark.java


def _jsonl(name: str) -> list[dict[str, Any]]:
    text = (FACILITY / "corpus" / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


@pytest.fixture(scope="module")
def real_pools(tmp_path_factory: pytest.TempPathFactory) -> Pools:
    from ontology import load_pools

    return load_pools(load_pack(FACILITY), tmp_path_factory.mktemp("pools"))


def _matches(c: Critique, label: dict[str, Any]) -> bool:
    if c.code != label["code"]:
        return False
    if "entity" in label:
        return c.observed == label["entity"]
    if c.code == "prose.value_mismatch":
        assert c.location.span is not None
        (s, e), (ls, le) = c.location.span, label["span"]
        return s < le and ls < e
    return True


def score(verdict_critiques: list[list[Critique]], labels: list[dict[str, Any]]
          ) -> tuple[Counter[str], Counter[str], Counter[str], list[tuple[str, str, str]]]:
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    misses: list[tuple[str, str, str]] = []
    for critiques, label in zip(verdict_critiques, labels, strict=True):
        open_labels = list(label["findings"])
        for c in critiques:
            hit = next((x for x in open_labels if _matches(c, x)), None)
            if hit is None:
                fp[c.code] += 1
                misses.append((label["id"], "false positive", f"{c.code} {c.observed}"))
            else:
                open_labels.remove(hit)
                tp[c.code] += 1
        for x in open_labels:
            fn[str(x["code"])] += 1
            misses.append((label["id"], "missed", json.dumps(x)))
    return tp, fp, fn, misses


def test_precision_and_recall_per_code_on_labelled_cases(
    real_pools: Pools, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = [Artifact.model_validate(a) for a in _jsonl("prose_cases.jsonl")]
    labels = _jsonl("prose_labels.jsonl")
    assert len(samples) == len(labels) >= 300
    assert [s.id for s in samples] == [x["id"] for x in labels]
    assert {x["kind"] for x in labels} == {"clean", *CODES}
    gate = ProseGate(load_pack(FACILITY), real_pools)
    found = [[c for c in v.critiques if c.severity == "error"] for v in gate.judge(samples)]
    tp, fp, fn, misses = score(found, labels)
    rows = []
    for code in CODES:
        precision = tp[code] / (tp[code] + fp[code]) if tp[code] + fp[code] else 0.0
        recall = tp[code] / (tp[code] + fn[code]) if tp[code] + fn[code] else 0.0
        rows.append((code, tp[code], fp[code], fn[code], precision, recall))
    with capsys.disabled():
        print(f"\nprose gate on {len(samples)} labelled samples "
              f"({sum(x['kind'] == 'clean' for x in labels)} clean)")
        print(f"{'code':24} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>9} {'recall':>7}")
        for code, t, f, n, p, r in rows:
            print(f"{code:24} {t:4d} {f:4d} {n:4d} {p:9.3f} {r:7.3f}")
    assert fp.keys() <= set(CODES), fp
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

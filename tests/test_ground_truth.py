"""Against the generator's ground truth on the shipped demo corpus: every injected defect
is caught by the gate that owns it (recall 100%), nothing else is raised (precision 100%),
and the clean originals get no critique at all (0 false positives)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from effectors.base import Gate
from harness.corpus import read_corpus
from harness.pack import Pack
from harness.report import audit

CORPUS = Path(__file__).resolve().parent.parent / "packs" / "facility" / "corpus"
pytestmark = pytest.mark.java


def _key(gate: str, code: str, d: dict[str, object]) -> tuple[object, ...]:
    if code.startswith("prose."):
        return (gate, code, d.get("observed") if code != "prose.truncated" else None)
    return (gate, code, d.get("table"), d.get("row"), d.get("column"))


def test_every_injected_defect_is_caught_by_its_gate_and_nothing_else(
    facility_pack: Pack, facility_gates: dict[str, Gate]
) -> None:
    corpus = read_corpus(CORPUS / "demo.jsonl", facility_pack)
    assert not corpus.errors and len(corpus.artifacts) >= 200
    truth: dict[str, Counter[tuple[object, ...]]] = {a.id: Counter() for a in corpus.artifacts}
    for line in (CORPUS / "demo.truth.jsonl").read_text().splitlines():
        t = json.loads(line)
        obs = t.get("entity", t.get("observed"))
        truth[t["artifact_id"]][_key(t["gate"], t["code"], {**t, "observed": obs})] += 1
    verdicts = audit(list(facility_gates.values()), corpus.artifacts)
    missed, spurious = [], []
    for art, vs in zip(corpus.artifacts, verdicts, strict=True):
        got: Counter[tuple[object, ...]] = Counter()
        for gate, v in vs.items():
            assert not v.crashed, (art.id, gate, v.critiques)
            for c in v.critiques:
                if c.severity == "info":
                    continue
                loc = c.location
                got[
                    _key(
                        gate,
                        c.code,
                        {
                            "table": loc.table,
                            "row": loc.row,
                            "column": loc.column,
                            "observed": c.observed,
                        },
                    )
                ] += 1
        missed += [(art.id, k) for k in (truth[art.id] - got)]
        spurious += [(art.id, k) for k in (got - truth[art.id])]
    total = sum(sum(c.values()) for c in truth.values())
    assert total > 800
    assert missed == [], f"recall < 100%: {len(missed)} of {total} missed, e.g. {missed[:5]}"
    assert spurious == [], f"precision < 100%: {len(spurious)} spurious, e.g. {spurious[:5]}"


def test_clean_originals_raise_no_critique(
    facility_pack: Pack, facility_gates: dict[str, Gate]
) -> None:
    clean = read_corpus(CORPUS / "demo.clean.jsonl", facility_pack)
    assert not clean.errors
    verdicts = audit(list(facility_gates.values()), clean.artifacts)
    raised = [
        (a.id, g, c.code)
        for a, vs in zip(clean.artifacts, verdicts, strict=True)
        for g, v in vs.items()
        for c in v.critiques
        if c.severity != "info"
    ]
    assert raised == []

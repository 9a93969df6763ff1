"""Per-code precision and recall of PROSE_GATE on the two labelled sets of the facility pack.

    .venv/bin/python -m tests.effectors.prose_scoring

prints the table for the generated set (`corpus/prose_cases.jsonl` + `prose_labels.jsonl`,
written by `prose_cases.py`) and for the natural-style set (`corpus/prose_natural.jsonl`,
written by `prose_natural.py`). A finding matches an open label of the same code: on the same
entity (unknown/missing entity), on an overlapping span (value mismatch), or on the same
sample (length, truncation). Only errors count (warnings and notes do not).
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from effectors.prose_gate import ProseGate
from harness.models import Artifact, Critique
from harness.pack import load_pack
from harness.pools import Pools

FACILITY = Path(__file__).resolve().parents[2] / "packs" / "facility"
CODES = (
    "prose.unknown_entity",
    "prose.missing_entity",
    "prose.value_mismatch",
    "prose.length",
    "prose.truncated",
)
Label = dict[str, Any]
Row = tuple[str, int, int, int, float, float]  # code, tp, fp, fn, precision, recall


def _jsonl(name: str) -> list[dict[str, Any]]:
    text = (FACILITY / "corpus" / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


def generated_set() -> tuple[list[Artifact], list[Label]]:
    samples = [Artifact.model_validate(a) for a in _jsonl("prose_cases.jsonl")]
    return samples, _jsonl("prose_labels.jsonl")


def natural_set() -> tuple[list[Artifact], list[Label]]:
    lines = _jsonl("prose_natural.jsonl")
    return [Artifact.model_validate(x["artifact"]) for x in lines], [x["label"] for x in lines]


def matches(c: Critique, label: Label) -> bool:
    if c.code != label["code"]:
        return False
    if "entity" in label:
        return c.observed == label["entity"]
    if c.code == "prose.value_mismatch":
        if c.location.span is None:
            return False
        (s, e), (ls, le) = c.location.span, label["span"]
        return s < le and ls < e
    return True


def score(
    found: Sequence[Sequence[Critique]], labels: Sequence[Label]
) -> tuple[list[Row], list[tuple[str, str, str]]]:
    """The per-code rows, and every miss and false alarm (sample id, kind, what)."""
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    misses: list[tuple[str, str, str]] = []
    for critiques, label in zip(found, labels, strict=True):
        open_labels = list(label["findings"])
        for c in critiques:
            hit = next((x for x in open_labels if matches(c, x)), None)
            if hit is None:
                fp[c.code] += 1
                misses.append((label["id"], "false alarm", f"{c.code} {c.observed}"))
            else:
                open_labels.remove(hit)
                tp[c.code] += 1
        for x in open_labels:
            fn[str(x["code"])] += 1
            misses.append((label["id"], "missed", json.dumps(x)))
    rows: list[Row] = []
    for code in CODES:
        t, f, n = tp[code], fp[code], fn[code]
        rows.append((code, t, f, n, t / (t + f) if t + f else 1.0, t / (t + n) if t + n else 1.0))
    return rows, misses


def judge(gate: ProseGate, samples: Sequence[Artifact]) -> list[list[Critique]]:
    return [[c for c in v.critiques if c.severity == "error"] for v in gate.judge(samples)]


def table(title: str, rows: Sequence[Row]) -> str:
    out = [title, f"{'code':24} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>9} {'recall':>7}"]
    out += [f"{c:24} {t:4d} {f:4d} {n:4d} {p:9.3f} {r:7.3f}" for c, t, f, n, p, r in rows]
    return "\n".join(out)


def main() -> int:
    from ontology import load_pools

    pack = load_pack(FACILITY)
    with tempfile.TemporaryDirectory() as tmp:
        pools: Pools = load_pools(pack, Path(tmp))
    gate = ProseGate(pack, pools)
    for title, (samples, labels) in (("generated", generated_set()), ("natural", natural_set())):
        rows, _ = score(judge(gate, samples), labels)
        print(table(f"\n{title} set: {len(samples)} samples", rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Every PROSE_GATE verdict on the sets a speed change must leave unchanged, written out so two
checkouts can be compared byte for byte (issue 20):

    .venv/bin/python -m bench.prose_verdicts OUT.jsonl [--perturbed N]
    PYTHONPATH=/path/to/old/checkout .venv/bin/python -m bench.prose_verdicts OLD.jsonl
    cmp OUT.jsonl OLD.jsonl

The sets: the 1,000 benchmark artifacts (`bench.prose_gate`), the generated labelled set
(`corpus/prose_cases.jsonl`), the natural-style set (`corpus/prose_natural.jsonl`), the
facility demo corpus (`demo.jsonl`, `demo.clean.jsonl`), and N (default 5,000) perturbed
copies of those, seeded: numbers scaled, words dropped, clause breaks, coordinated keys,
pronouns, "respectively", negations, bounds, units respelled and entity names moved between
sentences inserted, rows re-pointed. One line per artifact: the set, the id and the verdict's
JSON (critiques with their evidence, metrics). A summary (lines and a sha256 per set) goes to
stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.prose_gate import PACK, deterministic_pack, long_artifacts
from effectors.prose_gate import ProseGate
from harness.models import Artifact

_INSERTS = (
    " respectively",
    "; while",
    ", while the unit",
    ": ",
    " It draws 45 kW.",
    " Its rating is 12 kW.",
    " This unit draws 3 kW.",
    " 45kW",
    " EQ-001 and EQ-002",
    " EQ-003, EQ-004",
    " EQ-002 or EQ-005",
    " not",
    " no",
    " under",
    " at least",
    " about",
    " between 2 and",
    " which draws 40 kW",
    " whereas",
    " but",
    " the first",
    " and",
    ", ",
    ". ",
    "\n- ",
    " sixty kilowatts",
    " every 6 months",
    " on floor 3",
    " installed in room R-101",
    " made by Carrier Corporation",
)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def base_sets() -> dict[str, list[Artifact]]:
    corpus = PACK / "corpus"
    return {
        "bench": long_artifacts(1000),
        "generated": [Artifact.model_validate(a) for a in _jsonl(corpus / "prose_cases.jsonl")],
        "natural": [
            Artifact.model_validate(x["artifact"]) for x in _jsonl(corpus / "prose_natural.jsonl")
        ],
        "demo": [Artifact.model_validate(a) for a in _jsonl(corpus / "demo.jsonl")],
        "demo_clean": [Artifact.model_validate(a) for a in _jsonl(corpus / "demo.clean.jsonl")],
    }


def perturbed(rng: random.Random, a: Artifact) -> Artifact:
    """`a` with its prose (and maybe one cell) changed in 1-4 ways."""
    d = a.model_dump(mode="json")
    p: str = d["prose"]
    names = re.findall(r"\b[A-Z]+-[A-Z]?\d+\b|\b[A-Z][a-z]+ [A-Z][a-z]+\b", p)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if op == 0 and (nums := list(re.finditer(r"\d+(?:\.\d+)?", p))):
            m = rng.choice(nums)
            factor = rng.choice([0.5, 1.01, 2, 10])
            p = p[: m.start()] + str(round(float(m.group()) * factor, 1)) + p[m.end() :]
        elif op == 1 and " " in p:
            words = p.split(" ")
            del words[rng.randrange(len(words))]
            p = " ".join(words)
        elif op in (2, 3):
            at = rng.choice([m.start() for m in re.finditer(" ", p)] or [0])
            p = p[:at] + rng.choice(_INSERTS) + p[at:]
        elif op == 4:
            unit = rng.choice(["KW", "MW", "kilowatts", "kw", "W"])
            p = p.replace("kW", unit, rng.randint(1, 3))
        elif op == 5 and names:
            at = rng.choice([m.start() for m in re.finditer(" ", p)] or [0])
            p = p[:at] + " " + rng.choice(names) + p[at:]
        else:
            tables = [t for t, rows in d["tables"].items() if rows]
            if tables:
                rows = d["tables"][rng.choice(tables)]
                row = rows[rng.randrange(len(rows))]
                col = rng.choice(sorted(row))
                others = [r[col] for r in rows if r.get(col) is not None]
                if others:
                    row[col] = rng.choice(others)
    d["prose"] = p
    d["id"] = f"{d['id'][:100]}.p{rng.randrange(10**9)}"
    return Artifact.model_validate(d)


def all_sets(n_perturbed: int, seed: int = 20) -> dict[str, list[Artifact]]:
    sets = base_sets()
    rng = random.Random(seed)
    pool = [a for arts in sets.values() for a in arts]
    sets["perturbed"] = [perturbed(rng, rng.choice(pool)) for _ in range(n_perturbed)]
    return sets


def verdict_lines(gate: ProseGate, sets: dict[str, list[Artifact]]) -> Iterator[tuple[str, str]]:
    for name, arts in sets.items():
        for a, v in zip(arts, gate.judge_here(arts), strict=True):
            yield name, json.dumps([name, a.id, v.model_dump(mode="json")], sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    from ontology import load_pools

    p = argparse.ArgumentParser(
        prog="python -m bench.prose_verdicts",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("out", type=Path, help="where to write the verdicts (JSON lines)")
    p.add_argument("--perturbed", type=int, default=5000, metavar="N")
    args = p.parse_args(argv)
    pack = deterministic_pack()
    with tempfile.TemporaryDirectory() as cache_dir:
        pools = load_pools(pack, Path(cache_dir))
    gate = ProseGate(pack, pools)
    sums: dict[str, Any] = {}
    with open(args.out, "w", encoding="utf-8") as fh:
        for name, line in verdict_lines(gate, all_sets(args.perturbed)):
            fh.write(line + "\n")
            h = sums.setdefault(name, [0, hashlib.sha256()])
            h[0] += 1
            h[1].update(line.encode() + b"\n")
    for name, (count, h) in sums.items():
        print(f"{name:>10}: {count:>5} verdicts  sha256 {h.hexdigest()[:16]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

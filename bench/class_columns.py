"""VALUE_GATE on class-valued columns over Brick Schema 1.4 (issue 27): a register whose cells
name Brick classes (`kind = "class"` under `brick:Location`, `brick:Equipment`,
`brick:Point`), with no per-class row layer.

The pack is written to a temporary folder next to `Brick.ttl` (`bench.brick`: the pinned,
hash-checked wheel; the benchmark is skipped when it cannot be had). Each artifact has 3
locations, 5 equipment and 10 points; each cell is a class drawn from its root's classes
(Brick 1.4 deprecates every Location class: those draw from all of them, so they are
`value.deprecated` warnings), written as its label, IRI fragment or prefixed name; 5% are
wrong (a class under another root, or a misspelt name).

* `setup_cpu_s`: the gate built from a cold cache (parse, normalise, classify, cache);
* `first_per_s_cpu`: artifacts/s on the first contact (every distinct row reasoned once:
  the row is typed by its class, a warm HermiT consistency call per cohort);
* `memo_per_s_cpu`: a second pass over the same corpus (cells and rows from the memo).

CPU time of this process (the warm JVM runs in it), with the 1-min load average next to it:
the machine's cores are shared. Not a test.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.brick import BRICK_IMPORTS, brick_ttl
from effectors.value_gate import ValueGate
from harness.models import Artifact
from harness.pack import load_pack

__all__ = ["run"]

_ROOTS = {"locations": ("brick:Location", 3), "equipment": ("brick:Equipment", 5),
          "points": ("brick:Point", 10)}


def _pack_toml() -> str:
    imports = "\n".join(f'"{iri}" = "skip"' for iri in BRICK_IMPORTS)
    tables = "\n".join(
        f'[tables.{t}]\nrow_class = "Entity"\nkey = ["id"]\n[tables.{t}.columns]\n'
        f'id = {{ kind = "id" }}\ntype = {{ kind = "class", root = "{root}" }}'
        for t, (root, _) in _ROOTS.items())
    return f"""[pack]
name = "brick-classes"
version = "0.1.0"
[files]
ontology = "Brick.ttl"
spine = "spine.sql"
[ontology]
namespace = "https://brickschema.org/schema/Brick#"
prefixes = {{ brick = "https://brickschema.org/schema/Brick#", rec = "https://w3id.org/rec#" }}
reasoner_timeout_s = 600
[ontology.imports]
{imports}
{tables}
[prose]
enabled = false
"""


def _corpus(gate: ValueGate, n: int, seed: int = 7) -> list[Artifact]:
    pools = gate.pools
    rng = random.Random(seed)
    roots = {t: gate._roots[(t, "type")] for t in _ROOTS}
    draw = {t: sorted(n for n, c in pools.classes.items()
                      if pools.is_under(n, r) and not c.unsatisfiable
                      and (t == "locations" or not c.deprecated))
            for t, r in roots.items()}

    def spell(c: str) -> str:
        info = pools.classes[c]
        r = rng.random()
        if r < 0.4 and info.labels:
            return info.labels[0]
        return c if r < 0.7 else pools.short(info.iri)

    def wrong(t: str) -> str:
        if rng.random() < 0.5:
            return spell(rng.choice(draw[rng.choice([x for x in draw if x != t])]))
        return rng.choice(draw[t])[:-1] + "x"

    out = []
    for i in range(n):
        tables = {t: [{"id": f"{t[0]}{i}-{j}",
                       "type": wrong(t) if rng.random() < 0.05 else spell(rng.choice(draw[t]))}
                      for j in range(k)] for t, (_, k) in _ROOTS.items()}
        out.append(Artifact(id=f"a{i}", tables=tables))
    return out


def _judge(gate: ValueGate, corpus: list[Artifact], cohort: int) -> dict[str, Any]:
    t0, c0, calls = time.perf_counter(), time.process_time(), gate.runner.calls
    verdicts = []
    for k in range(0, len(corpus), cohort):
        verdicts += gate.judge(corpus[k:k + cohort])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    codes = Counter(c.code for v in verdicts for c in v.critiques)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "per_s_cpu": round(len(corpus) / cpu, 1), "per_s_wall": round(len(corpus) / wall, 1),
            "reasoner_calls": gate.runner.calls - calls,
            "passed": sum(v.passed for v in verdicts), "codes": dict(sorted(codes.items())),
            "load": round(os.getloadavg()[0], 1)}


def run(quick: bool = False) -> dict[str, Any]:
    ttl = brick_ttl()
    if ttl is None:
        return {"skipped": "Brick.ttl is not in the bench cache: python -c "
                "'from bench.brick import brick_ttl; brick_ttl(fetch=True)'"}
    n = 100 if quick else 1000
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "pack"
        root.mkdir()
        shutil.copy(ttl, root / "Brick.ttl")  # a pack reads only its own files
        (root / "pack.toml").write_text(_pack_toml(), encoding="utf-8")
        (root / "spine.sql").write_text("\n".join(
            f"CREATE TABLE {t} (id VARCHAR PRIMARY KEY, type VARCHAR);" for t in _ROOTS))
        pack = load_pack(root)
        t0, c0 = time.perf_counter(), time.process_time()
        gate = ValueGate.from_pack(pack, Path(d) / "cache")
        gate.warm_up()
        setup = {"setup_s": round(time.perf_counter() - t0, 2),
                 "setup_cpu_s": round(time.process_time() - c0, 2),
                 "setup_load": round(os.getloadavg()[0], 1)}
        corpus = _corpus(gate, n)
        first = _judge(gate, corpus, 250)
        memo = _judge(gate, corpus, 250)
    pools = gate.pools
    return {
        **setup,
        "artifacts": n,
        "class_cells": n * sum(k for _, k in _ROOTS.values()),
        "classes": len(pools.classes),
        "classes_under_roots": {t: len(pools.valid_classes(gate._roots[(t, "type")]))
                                for t in _ROOTS},
        "deprecated_classes": sum(c.deprecated for c in pools.classes.values()),
        "fragment_collisions": len(pools.collisions),
        "first_per_s_cpu": first["per_s_cpu"],
        "memo_per_s_cpu": memo["per_s_cpu"],
        "first": first,
        "memo": memo,
    }

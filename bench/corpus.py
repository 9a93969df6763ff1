"""The benchmark corpus shared by the gate benchmarks: N facility artifacts (≈20 rows each:
2–4 rooms, 4–8 equipment, 5–12 maintenance tasks), a given share defective.

Built with the pack's own deterministic generator, so a figure measured today can be
measured again on the same bytes tomorrow. Defective artifacts carry one injected defect
each, cycling through the generator's kinds (value.disjoint, value.unknown, placeholders,
ri.fk_orphan, prose.unknown_entity, prose.truncated)."""

from __future__ import annotations

import importlib.util
import random
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.models import Artifact

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "packs" / "facility"
KINDS = ("value.disjoint", "value.unknown", "placeholders", "ri.fk_orphan",
         "prose.unknown_entity", "prose.truncated")


@cache
def generator() -> ModuleType:
    """The pack's generator module (`packs/facility/generate.py`), imported by path."""
    path = PACK / "generate.py"
    spec = importlib.util.spec_from_file_location("facility_generate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _plans(n: int, defect_rate: float) -> list[object]:
    """One generator plan per artifact: every `round(1/defect_rate)`-th one defective, its
    one defect kind cycling through `KINDS`; the others clean."""
    gen = generator()
    every = max(1, round(1 / defect_rate)) if defect_rate > 0 else 0
    plans: list[object] = []
    k = 0
    for i in range(n):
        plan = gen.Plan()
        if every and i % every == every - 1:
            kind = KINDS[k % len(KINDS)]
            k += 1
            if kind == "placeholders":
                plan.placeholders = True
            else:
                plan.kinds.add(kind)
        else:
            plan.clean = True
        plans.append(plan)
    return plans


def _built(n: int, defect_rate: float, seed: int) -> list[tuple[dict[str, Any], list[Any]]]:
    gen = generator()
    out = []
    for i, plan in enumerate(_plans(n, defect_rate)):
        flawed, _clean, truth = gen.build_artifact(seed, i, plan, False)
        out.append((flawed, truth))
    return out


def _bench_id(i: int) -> str:
    return f"bench-{i + 1:05d}"


def artifacts(n: int = 1000, defect_rate: float = 0.05, seed: int = 11) -> list[Artifact]:
    """`n` artifacts, every `round(1/defect_rate)`-th one defective (deterministic)."""
    return [Artifact.model_validate({**flawed, "id": _bench_id(i)})
            for i, (flawed, _truth) in enumerate(_built(n, defect_rate, seed))]


def truth(n: int = 1000, defect_rate: float = 0.05, seed: int = 11) -> list[dict[str, object]]:
    """The injected defects of `artifacts(n, defect_rate, seed)` (artifact ids as there)."""
    return [{**entry, "artifact_id": _bench_id(i)}
            for i, (_flawed, found) in enumerate(_built(n, defect_rate, seed))
            for entry in found]


def adversarial(n: int = 256, rows: int = 6, wrong: float = 0.8, seed: int = 22
                ) -> list[Artifact]:
    """The worst case for the value gate's reasoner (issue 22): `n` artifacts of `rows`
    equipment rows each, every row distinct across the corpus (its type, standard and
    manufacturer never repeat, so no memo helps), a share `wrong` of them with a standard
    or a manufacturer of another domain than the equipment type (each a suspect row HermiT
    must realise). Rooms and prose come from the benchmark corpus; no maintenance rows.
    Deterministic; the pack has ~5,400 wrong and ~650 right distinct combinations."""
    d = generator().d
    rng = random.Random(seed)
    pools: dict[tuple[str, str], list[Any]] = {}
    for ind in d.INDIVIDUALS:
        if ind.domain:
            pools.setdefault((ind.cls, ind.domain), []).append(ind)

    def of(kind: str, domain: str) -> list[Any]:
        return list(pools[(d.DOMAIN_SUBCLASSES[kind][domain], domain)])

    bad: list[tuple[str, str, str]] = []
    good: list[tuple[str, str, str]] = []
    for dom in d.DOMAINS:
        for t in of("EquipmentType", dom):
            for sd in d.DOMAINS:
                for md in d.DOMAINS:
                    for s in of("Standard", sd):
                        for m in of("Manufacturer", md):
                            combo = (t.label, s.label, m.label)
                            (bad if dom != sd or dom != md else good).append(combo)
    rng.shuffle(bad)
    rng.shuffle(good)
    out = []
    for i, base in enumerate(artifacts(n, 0.0)):
        room = base.tables["rooms"][0]["room_id"]
        equipment = []
        for j in range(rows):
            t, s, m = bad.pop() if rng.random() < wrong else good.pop()
            equipment.append({"equipment_id": f"EQ-{j + 1:03d}", "room_id": room,
                              "equipment_type": t, "standard": s, "manufacturer": m,
                              "rated_power_kw": 1.0})
        out.append(Artifact.model_validate({
            "id": f"adversarial-{i + 1:05d}", "prose": base.prose,
            "tables": {"rooms": base.tables["rooms"], "equipment": equipment, "maintenance": []},
        }))
    return out

"""Published ontologies (issue 27): Brick 1.4 through the intake, its classification, and the
value gate on a Brick-bound register with Brick's SHACL shapes off and on.

Brick 1.4 comes from the pinned `brickschema==0.8.0` wheel in the bench cache
(`bench.brick`: pip download once, hash-checked); without it every Brick figure is None and
`notes` says why. Figures (wall seconds, with the process CPU seconds beside the speed ones,
because the machine's cores are shared):

* `parse_s`, `normalise_s`, `set_aside_triples`: pyoxigraph's parse of Brick.ttl, the OWL 2 DL
  normalisation, the triples it sets aside (SHACL, property typings ...);
* `brick_classify_s`: the first `load_index` of a Brick pack (parse, normalise, owlready2,
  HermiT classification and realisation in the warm JVM, the index) into an empty cache;
  `brick_classify_cached_s`: `load_index` from that cache in a fresh process;
* `brick_value_gate_per_s` / `brick_value_gate_shapes_per_s`: artifacts/s of VALUE_GATE on
  a generated register bound to Brick (equipment and points named by Brick classes, rooms
  and substances as individuals, ~10% defective) as one cohort, shapes off / on;
* `shapes_sql_per_s`: the shapes step alone (compiled to SQL over DuckDB);
  `shapes_pyshacl_per_s`: pySHACL 0.40 on the same rows (Brick.ttl as the shapes graph, no
  ontology mixed into the data: the rows' types materialised; one call per cohort), when
  pySHACL is installed;
  `shapes_pyshacl_whole_ontology_per_s`: pySHACL handed the whole ontology with each group,
  as the issue measured it (a small sample); `shapes_agree`: both engines find the same
  (row, path) violations on the paths the pack binds;
* `wine_batch_start_s`: None: no package on PyPI that ships the W3C wine/food files was found
  (see `notes`).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from bench.brick import BRICK_IMPORTS, BrickUnavailable, brick_ttl
from effectors.value_gate import ValueGate
from effectors.value_shapes import ValueShapes
from harness.models import Artifact
from harness.pack import load_pack
from ontology import load_index
from ontology.normalise import normalise
from ontology.rdf import parse_file
from ontology.shapes import RowNode

BRICK = "https://brickschema.org/schema/Brick#"
SITE = "http://example.org/site#"
_ROOMS = 40


def _site_ttl() -> str:
    rooms = "\n".join(
        f":room_{i:03d} a brick:{'Mechanical_Room' if i % 5 == 0 else 'Room'} ."
        for i in range(_ROOMS)
    )
    return f"""@prefix : <{SITE}> .
@prefix brick: <{BRICK}> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
<http://example.org/site> a owl:Ontology ;
    owl:imports <https://brickschema.org/schema/1.4/Brick> .
{rooms}
"""


def _pack_toml(shapes: bool) -> str:
    skips = "\n".join(f'"{iri}" = "skip"' for iri in BRICK_IMPORTS)
    return f"""
[pack]
name = "brick-register"
version = "0.1.0"
[files]
ontology = "site.ttl"
spine = "spine.sql"
[ontology]
namespace = "{BRICK}"
shapes = {"true" if shapes else "false"}
[ontology.imports]
"https://brickschema.org/schema/1.4/Brick" = "Brick.ttl"
{skips}
[tables.equipment]
row_class = "Equipment"
key = ["equipment_id"]
[tables.equipment.columns]
equipment_id = {{ kind = "id" }}
equipment_type = {{ kind = "class", root = "Equipment" }}
location = {{ kind = "object", property = "hasLocation" }}
[tables.points]
row_class = "Point"
key = ["point_id"]
[tables.points.columns]
point_id = {{ kind = "id" }}
equipment_id = {{ kind = "id" }}
point_type = {{ kind = "class", root = "Point" }}
substance = {{ kind = "object", property = "hasSubstance" }}
[prose]
enabled = false
"""


def _pack(root: Path, ttl: Path, shapes: bool) -> Path:
    d = root / ("brick-shapes" if shapes else "brick")
    d.mkdir()
    (d / "Brick.ttl").write_bytes(ttl.read_bytes())
    (d / "site.ttl").write_text(_site_ttl(), encoding="utf-8")
    (d / "pack.toml").write_text(_pack_toml(shapes), encoding="utf-8")
    (d / "spine.sql").write_text(
        "CREATE TABLE equipment (equipment_id VARCHAR PRIMARY KEY, equipment_type VARCHAR, "
        "location VARCHAR);\nCREATE TABLE points (point_id VARCHAR PRIMARY KEY, "
        "equipment_id VARCHAR, point_type VARCHAR, substance VARCHAR);\n",
        encoding="utf-8",
    )
    return d


def _corpus(
    n: int, equipment: list[str], points: list[str], substances: list[str], seed: int = 27
) -> list[Artifact]:
    """n registers: 3 equipment (a room each), 6 points (a substance each); ~10% defective
    (a substance as a location, a room as a substance, a point class as equipment)."""
    rng = random.Random(seed)
    out: list[Artifact] = []
    for a in range(n):
        eq = [
            {
                "equipment_id": f"E{a}-{i}",
                "equipment_type": rng.choice(equipment),
                "location": f"room_{rng.randrange(_ROOMS):03d}",
            }
            for i in range(3)
        ]
        pts = [
            {
                "point_id": f"P{a}-{i}",
                "equipment_id": f"E{a}-{i % 3}",
                "point_type": rng.choice(points),
                "substance": rng.choice(substances),
            }
            for i in range(6)
        ]
        if rng.random() < 0.10:
            kind = rng.randrange(3)
            if kind == 0:
                eq[0]["location"] = rng.choice(substances)
            elif kind == 1:
                pts[0]["substance"] = f"room_{rng.randrange(_ROOMS):03d}"
            else:
                eq[1]["equipment_type"] = rng.choice(points)
        out.append(Artifact(id=f"reg-{a:05d}", tables={"equipment": eq, "points": pts}))
    return out


def _rid(key: object) -> str:
    i, table, row = cast(tuple[int, str, int], key)
    return f"urn:membrane:row#{i}.{table}.{row}"


def _timed(fn: Any) -> tuple[Any, float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - t0, time.process_time() - c0


def _cached_in_fresh_process(pack: Path, cache: Path) -> dict[str, float]:
    code = (
        "import json, time\nfrom pathlib import Path\nfrom harness.pack import load_pack\n"
        "from ontology import load_index\n"
        f"p = load_pack(Path({str(pack)!r}))\n"
        "t0, c0 = time.perf_counter(), time.process_time()\n"
        f"load_index(p, Path({str(cache)!r}))\n"
        "print(json.dumps([time.perf_counter() - t0, time.process_time() - c0]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    wall, cpu = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"wall": wall, "cpu": cpu}


def _pyshacl(
    rows: Sequence[RowNode], ttl: Path, shapes: ValueShapes, sample: int
) -> dict[str, Any]:
    """pySHACL on the same rows: shapes graph alone, one call; and the whole ontology with
    each group (the issue's way) on a small sample. {} when pySHACL is not installed."""
    try:
        import pyshacl
        import rdflib
    except ImportError:
        return {}
    full = rdflib.Graph()
    full.parse(ttl, format="turtle")

    def data(group: Sequence[RowNode]) -> rdflib.Graph:
        g = rdflib.Graph()
        rdf_type = rdflib.RDF.type
        for r in group:
            node = rdflib.URIRef(_rid(r.key))
            for t in r.types:
                g.add((node, rdf_type, rdflib.URIRef(t)))
            for p, v, is_iri, dt in r.values:
                g.add(
                    (
                        node,
                        rdflib.URIRef(p),
                        rdflib.URIRef(v)
                        if is_iri
                        else rdflib.Literal(v, datatype=rdflib.URIRef(dt) if dt else None),
                    )
                )
            for v, t in r.value_types:
                g.add((rdflib.URIRef(v), rdf_type, rdflib.URIRef(t)))
        return g

    t0, c0 = time.perf_counter(), time.process_time()
    _conforms, report, _text = pyshacl.validate(
        data(rows), shacl_graph=full, inference="none", advanced=False
    )
    one_s, one_cpu = time.perf_counter() - t0, time.process_time() - c0
    found = {
        (str(f), str(p))
        for f, p in report.query(
            "PREFIX sh: <http://www.w3.org/ns/shacl#> SELECT ?f ?p WHERE { "
            "?r sh:focusNode ?f ; sh:resultPath ?p }"
        )
    }
    groups = [rows[i : i + 9] for i in range(0, min(len(rows), 9 * sample), 9)]
    t0 = time.perf_counter()
    for group in groups:
        pyshacl.validate(
            data(group), shacl_graph=full, ont_graph=full, inference="none", advanced=False
        )
    whole_s = time.perf_counter() - t0
    return {
        "one_s": one_s,
        "one_cpu": one_cpu,
        "found": found,
        "whole_s": whole_s,
        "whole_groups": len(groups),
    }


def run(quick: bool = False) -> dict[str, Any]:
    n = 128 if quick else 512
    figures: dict[str, Any] = {
        k: None
        for k in (
            "parse_s",
            "normalise_s",
            "set_aside_triples",
            "brick_classify_s",
            "brick_classify_cpu_s",
            "brick_classify_cached_s",
            "brick_classify_cached_cpu_s",
            "brick_value_gate_per_s",
            "brick_value_gate_cpu_s",
            "brick_value_gate_shapes_per_s",
            "brick_value_gate_shapes_cpu_s",
            "shape_critiques",
            "shapes_sql_per_s",
            "shapes_pyshacl_per_s",
            "shapes_pyshacl_whole_ontology_per_s",
            "shapes_agree",
            "wine_batch_start_s",
        )
    }
    notes = [
        "wine_batch_start_s: the W3C wine/food ontologies are not in any package this "
        "machine can install offline that we found (PyPI packages name the ontology, "
        "none ships wine.rdf/food.rdf); not measured"
    ]
    try:
        ttl = brick_ttl(fetch=True)
    except (BrickUnavailable, OSError, subprocess.SubprocessError) as exc:
        ttl, notes = None, [*notes, f"Brick 1.4 not obtainable: {exc}"]
    if ttl is None:
        return {"name": "ontology", "params": {"artifacts": n}, "figures": figures, "notes": notes}
    parsed, figures["parse_s"], _ = _timed(lambda: parse_file(ttl))
    (_, report), figures["normalise_s"], _ = _timed(lambda: normalise([parsed]))
    figures["set_aside_triples"] = report.set_aside_triples
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        plain, shaped = _pack(root, ttl, False), _pack(root, ttl, True)
        cache = root / "cache"
        (index, _, _), figures["brick_classify_s"], figures["brick_classify_cpu_s"] = _timed(
            lambda: load_index(load_pack(plain), cache)
        )
        cached = _cached_in_fresh_process(plain, cache)
        figures["brick_classify_cached_s"] = cached["wall"]
        figures["brick_classify_cached_cpu_s"] = cached["cpu"]
        pools = index.pools
        equipment = pools.valid_classes(pools.root_class("Equipment", BRICK) or "Equipment")
        points = pools.valid_classes(pools.root_class("Point", BRICK) or "Point")
        substances = sorted(pools.members("Substance")) or ["Air"]
        corpus = _corpus(n, sorted(equipment), sorted(points), substances)
        for name, pack_dir in (("brick_value_gate", plain), ("brick_value_gate_shapes", shaped)):
            gate = ValueGate.from_pack(load_pack(pack_dir), cache)
            gate.warm_up()
            verdicts, wall, cpu = _timed(lambda g=gate: g.judge(corpus))
            figures[f"{name}_per_s"] = n / wall
            figures[f"{name}_cpu_s"] = cpu
            if name.endswith("shapes"):
                figures["shape_critiques"] = sum(
                    1 for v in verdicts for c in v.critiques if c.code == "value.shape"
                )
                shapes = gate._shapes
        if shapes is not None:
            rows = [
                shapes._node((i, t, r), t, row)
                for i, a in enumerate(corpus)
                for t in shapes.pack.tables
                for r, row in enumerate(a.tables.get(t, []))
            ]
            sql, wall, _ = _timed(lambda: shapes.shapes.validate(rows))
            figures["shapes_sql_per_s"] = n / wall
            other = _pyshacl(rows, ttl, shapes, 4 if quick else 16)
            if other:
                figures["shapes_pyshacl_per_s"] = n / other["one_s"]
                figures["shapes_pyshacl_whole_ontology_per_s"] = (
                    other["whole_groups"] / other["whole_s"]
                )
                bound = {c.path for c in shapes.shapes.constraints}
                theirs = {(f, p) for f, p in other["found"] if p in bound}
                ours = {(_rid(v.key), v.constraint.path) for v in sql}
                figures["shapes_agree"] = theirs == ours
                if theirs != ours:
                    notes.append(
                        f"shapes: pySHACL only {sorted(theirs - ours)[:3]}, "
                        f"SQL only {sorted(ours - theirs)[:3]}"
                    )
            else:
                notes.append("pySHACL is not installed: pip install pyshacl==0.40.1 to compare")
    return {
        "name": "ontology",
        "params": {"artifacts": n, "quick": quick},
        "figures": figures,
        "notes": notes,
    }

"""Generate the facility pack's OWL ontology and its flawed demo corpus.

    python packs/facility/generate.py owl --out packs/facility/ontology/facility.owl
    python packs/facility/generate.py corpus --seed 7 --count 240 --out packs/facility/corpus
    python packs/facility/generate.py references --out packs/facility/references

Standalone: stdlib plus `harness.pools.normalize_label`; the domain spec is `domain.py`.
Output is deterministic (a seeded `random.Random`, sorted iteration, no hash order).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

sys.path.insert(0, str(Path(__file__).resolve().parent))

import domain as d

_XSD = "http://www.w3.org/2001/XMLSchema#"


def _all_disjoint(classes: list[str] | tuple[str, ...]) -> list[str]:
    out = ["  <owl:AllDisjointClasses>", '    <owl:members rdf:parseType="Collection">']
    out += [f'      <owl:Class rdf:about="#{c}"/>' for c in classes]
    out += ["    </owl:members>", "  </owl:AllDisjointClasses>"]
    return out


def _all_values(prop: str, cls: str) -> list[str]:
    return [
        "    <rdfs:subClassOf>",
        "      <owl:Restriction>",
        f'        <owl:onProperty rdf:resource="#{prop}"/>',
        f'        <owl:allValuesFrom rdf:resource="#{cls}"/>',
        "      </owl:Restriction>",
        "    </rdfs:subClassOf>",
    ]


def _class(name: str, comment: str, parent: str | None = None) -> list[str]:
    out = [
        f'  <owl:Class rdf:about="#{name}">',
        f"    <rdfs:comment>{escape(comment)}</rdfs:comment>",
    ]
    if parent:
        out.append(f'    <rdfs:subClassOf rdf:resource="#{parent}"/>')
    if name in d.ROW_CLASSES:
        for prop, (row_cls, range_cls) in sorted(d.OBJECT_PROPERTIES.items()):
            if row_cls == name:
                out += _all_values(prop, range_cls)
    out.append("  </owl:Class>")
    return out


def _defined_row_class(domain: str) -> list[str]:
    row = d.DOMAIN_ROW_CLASSES[domain]
    etype = d.DOMAIN_SUBCLASSES["EquipmentType"][domain]
    out = [
        f'  <owl:Class rdf:about="#{row}">',
        f"    <rdfs:comment>An equipment row whose equipment type is a {domain} equipment "
        "type; its standard and manufacturer must be of the same domain.</rdfs:comment>",
        "    <owl:equivalentClass>",
        "      <owl:Class>",
        '        <owl:intersectionOf rdf:parseType="Collection">',
        '          <owl:Class rdf:about="#EquipmentRow"/>',
        "          <owl:Restriction>",
        '            <owl:onProperty rdf:resource="#hasEquipmentType"/>',
        f'            <owl:someValuesFrom rdf:resource="#{etype}"/>',
        "          </owl:Restriction>",
        "        </owl:intersectionOf>",
        "      </owl:Class>",
        "    </owl:equivalentClass>",
    ]
    out += _all_values("hasStandard", d.DOMAIN_SUBCLASSES["Standard"][domain])
    out += _all_values("hasManufacturer", d.DOMAIN_SUBCLASSES["Manufacturer"][domain])
    out.append("  </owl:Class>")
    return out


def _data_property(name: str, row_cls: str, dtype: str, facets: list[tuple[str, str]]) -> list[str]:
    out = [
        f'  <owl:DatatypeProperty rdf:about="#{name}">',
        f'    <rdf:type rdf:resource="{d.OWL}FunctionalProperty"/>',
        f'    <rdfs:domain rdf:resource="#{row_cls}"/>',
        "    <rdfs:range>",
        "      <rdfs:Datatype>",
        f'        <owl:onDatatype rdf:resource="{_XSD}{dtype}"/>',
        '        <owl:withRestrictions rdf:parseType="Collection">',
    ]
    for facet, value in facets:
        out += [
            "          <rdf:Description>",
            f'            <xsd:{facet} rdf:datatype="{_XSD}{dtype}">{value}</xsd:{facet}>',
            "          </rdf:Description>",
        ]
    out += ["        </owl:withRestrictions>", "      </rdfs:Datatype>", "    </rdfs:range>"]
    out.append("  </owl:DatatypeProperty>")
    return out


def _individual(ind: d.Individual) -> list[str]:
    out = [
        f'  <owl:NamedIndividual rdf:about="#{ind.name}">',
        f'    <rdf:type rdf:resource="#{ind.cls}"/>',
        f"    <rdfs:label>{escape(ind.label)}</rdfs:label>",
    ]
    out += [f"    <skos:altLabel>{escape(alt)}</skos:altLabel>" for alt in ind.alt]
    out.append("  </owl:NamedIndividual>")
    return out


def render_owl() -> str:
    """The ontology as RDF/XML; the same spec always gives the same bytes."""
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        "<rdf:RDF",
        f'    xmlns="{d.NAMESPACE}"',
        f'    xml:base="{d.ONTOLOGY_IRI}"',
        '    xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"',
        '    xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"',
        f'    xmlns:owl="{d.OWL}"',
        f'    xmlns:xsd="{_XSD}"',
        f'    xmlns:skos="{d.SKOS}">',
        f'  <owl:Ontology rdf:about="{d.ONTOLOGY_IRI}">',
        "    <rdfs:comment>Facility equipment register (membrane example pack): rooms, "
        "equipment and maintenance rows, and the pools of their values. Generated by "
        "packs/facility/generate.py; do not edit by hand.</rdfs:comment>",
        "  </owl:Ontology>",
        f'  <owl:AnnotationProperty rdf:about="{d.SKOS}altLabel"/>',
    ]
    for cls in d.ROW_CLASSES:
        out += _class(cls, f"A row of the {cls.removesuffix('Row').lower()} table.")
    for cls in d.VALUE_CLASSES:
        out += _class(cls, f"The pool of {cls} values.")
    for parent, subs in d.DOMAIN_SUBCLASSES.items():
        for domain, sub in subs.items():
            out += _class(sub, f"A {parent} of the {domain} domain.", parent)
    for domain in d.DOMAINS:
        out += _defined_row_class(domain)
    out += _all_disjoint(d.ROW_CLASSES + d.VALUE_CLASSES)
    for subs in d.DOMAIN_SUBCLASSES.values():
        out += _all_disjoint([subs[x] for x in d.DOMAINS])
    for prop, (row_cls, range_cls) in d.OBJECT_PROPERTIES.items():
        out += [
            f'  <owl:ObjectProperty rdf:about="#{prop}">',
            f'    <rdf:type rdf:resource="{d.OWL}FunctionalProperty"/>',
            f'    <rdfs:domain rdf:resource="#{row_cls}"/>',
            f'    <rdfs:range rdf:resource="#{range_cls}"/>',
            "  </owl:ObjectProperty>",
        ]
    for prop, (row_cls, dtype, facets) in d.DATA_PROPERTIES.items():
        out += _data_property(prop, row_cls, dtype, facets)
    for ind in d.INDIVIDUALS:
        out += _individual(ind)
    out += ["  <owl:AllDifferent>", '    <owl:distinctMembers rdf:parseType="Collection">']
    out += [f'      <owl:NamedIndividual rdf:about="#{i.name}"/>' for i in d.INDIVIDUALS]
    out += ["    </owl:distinctMembers>", "  </owl:AllDifferent>", "</rdf:RDF>", ""]
    return "\n".join(out)


# --- corpus ---

Row = dict[str, str | int | float]
Tables = dict[str, list[Row]]
Truth = dict[str, object]
CellAt = tuple[str, int, str]  # table, row, column

CLEAN_SHARE = 0.25
PLACEHOLDER_ARTIFACT_SHARE = 0.50  # of all artifacts; the rest of the flawed get other kinds
PLACEHOLDER_CELL_RATE = 0.18  # within a placeholder artifact: ~9% of all object cells
KIND_SHARES = {  # share of all artifacts that get exactly one defect of this kind
    "value.disjoint": 0.08,
    "value.unknown": 0.05,
    "ri.fk_orphan": 0.08,
    "prose.unknown_entity": 0.10,
    "prose.truncated": 0.08,
}
GATES = {"value": "value_gate", "ri": "ri_gate", "prose": "prose_gate"}
CLOSINGS = (
    "The facilities team will review this register at the next quarterly planning meeting "
    "and update it whenever an asset is replaced or moved.",
    "Any change to these assets should be logged through the estates helpdesk before "
    "contractors begin work on site.",
    "Spare parts and service contracts are tracked separately in the procurement system, "
    "so they are not repeated in this summary.",
    "Outstanding actions from the last audit have been closed, and no open notices apply "
    "to the assets listed here.",
    "Access to each area is coordinated with the ward managers so that scheduled work "
    "causes as little disruption to patients as possible.",
)


def _label(name: str) -> str:
    return d.BY_NAME[name].label


def _article(label: str) -> str:
    vowel = label[0].lower() in "aeiou" or label.startswith(("MRI", "X-ray", "NFPA"))
    return "an" if vowel else "a"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _room_id(rng: random.Random, floor: int, used: set[str]) -> str:
    prefix = f"B{-floor}" if floor < 0 else ("G" if floor == 0 else str(floor))
    while True:
        rid = f"R-{prefix}{rng.randint(1, 40):02d}"
        if rid not in used:
            used.add(rid)
            return rid


def clean_tables(rng: random.Random, n_rooms: int, n_eq: int, n_tasks: int) -> Tables:
    """A coherent register: plausible rooms, same-domain equipment cells, a power budget
    per room, and at least one maintenance task per equipment row."""
    kinds = rng.sample(sorted(d.ROOMS), n_rooms)
    used: set[str] = set()
    rooms: list[Row] = []
    for kind in kinds:
        spec = d.ROOMS[kind]
        floor = rng.randint(*spec.floors)
        rooms.append({"room_id": _room_id(rng, floor, used), "room_type": _label(kind),
                      "department": _label(rng.choice(spec.departments)), "floor": floor})
    placement = sorted([*range(n_rooms), *(rng.randrange(n_rooms) for _ in range(n_eq - n_rooms))])
    load = [0.0] * n_rooms
    equipment: list[Row] = []
    for i, ri in enumerate(placement):
        for _ in range(100):
            es = d.EQUIPMENT[rng.choice(d.ROOMS[kinds[ri]].equipment)]
            power = round(rng.uniform(*es.power_kw), 1)
            if load[ri] + power <= d.ROOM_POWER_BUDGET_KW:
                break
        else:  # pragma: no cover - the budget leaves room for small equipment
            raise RuntimeError("no equipment fits the room's power budget")
        load[ri] += power
        domain = d.BY_NAME[es.name].domain
        makers = es.manufacturers or tuple(
            m.name for m in d.INDIVIDUALS if m.cls == d.DOMAIN_SUBCLASSES["Manufacturer"][domain]
            and m.name not in d.SPECIALIST_MANUFACTURERS)
        equipment.append({"equipment_id": f"EQ-{i + 1:03d}", "room_id": rooms[ri]["room_id"],
                          "equipment_type": _label(es.name),
                          "standard": _label(rng.choice(es.standards)),
                          "manufacturer": _label(rng.choice(makers)), "rated_power_kw": power})
    owners = sorted([*range(n_eq), *(rng.randrange(n_eq) for _ in range(n_tasks - n_eq))])
    tasks: list[Row] = []
    done: set[tuple[int, str]] = set()
    for ei in owners:
        acts = d.EQUIPMENT[str(d.resolve(equipment[ei]["equipment_type"]))].activities
        fresh = [a for a in acts if (ei, a) not in done] or list(acts)
        act = rng.choice(fresh)
        done.add((ei, act))
        tasks.append({"task_id": f"MT-{len(tasks) + 1:03d}",
                      "equipment_id": equipment[ei]["equipment_id"], "activity": _label(act),
                      "interval_months": rng.choice(d.ACTIVITIES[act].intervals)})
    return {"rooms": rooms, "equipment": equipment, "maintenance": tasks}


# --- prose, written from the (possibly flawed) tables ---


def _as(value: object, top: str) -> str | None:
    """The preferred label of the cell's individual if it is of top-level class `top`."""
    name = d.resolve(value)
    return _label(name) if name and (top == "*" or d.top_class(name) == top) else None


def _equipment_sentence(rng: random.Random, row: Row) -> str:
    eid, kw = row["equipment_id"], f"{float(row['rated_power_kw']):g}"
    etype = _as(row["equipment_type"], "*")
    text = f"{eid} is {_article(etype)} {etype}" if etype else f"{eid} is an item of equipment"
    maker = _as(row["manufacturer"], "Manufacturer")
    if maker:
        text += rng.choice((" from ", " supplied by ", " made by ")) + maker
    text += rng.choice((f", rated at {kw} kW", f" drawing {kw} kW", f" with a rating of {kw} kW"))
    std = _as(row["standard"], "*")
    if std:
        return text + rng.choice((" and maintained to ", " and documented against ", " under ")) \
            + std + "."
    return text + ", with no governing standard recorded."


def body_sentences(rng: random.Random, tables: Tables, site: str) -> list[str]:
    rooms, equipment, tasks = tables["rooms"], tables["equipment"], tables["maintenance"]
    depts = list(dict.fromkeys(x for r in rooms if (x := _as(r["department"], "Department"))))
    serving = f", serving the {_join(depts)}" if depts else ""
    out = [rng.choice((
        f"This register covers {_n(len(rooms), 'room')} and {_n(len(equipment), 'item')} of "
        f"equipment at {site}{serving}.",
        f"At {site}, the register lists {_n(len(equipment), 'item')} of equipment in "
        f"{_n(len(rooms), 'room')}{serving}.",
    ))]
    known = {r["room_id"] for r in rooms}
    for room in rooms:
        rtype = _as(room["room_type"], "RoomType")
        where = f"{_article(rtype)} {rtype} on floor {room['floor']}" if rtype else \
            f"on floor {room['floor']}"
        out.append(f"Room {room['room_id']} is {where}.")
        out += [_equipment_sentence(rng, e) for e in equipment if e["room_id"] == room["room_id"]]
    for e in equipment:
        if e["room_id"] not in known:
            out.append(f"The register places {e['equipment_id']} in room {e['room_id']}.")
            out.append(_equipment_sentence(rng, e))
    months = sorted(int(t["interval_months"]) for t in tasks)
    span = f"every {months[0]} months" if months[0] == months[-1] else \
        f"at intervals between {months[0]} and {months[-1]} months"
    out.append(f"The maintenance schedule holds {_n(len(tasks), 'task')}, {span}.")
    return out


def expected_mentions(tables: Tables) -> set[str]:
    """The individuals the prose of these tables mentions (before prose defects)."""
    found: set[str] = set()
    for table, col, top in (("rooms", "room_type", "RoomType"), ("rooms", "department",
                            "Department"), ("equipment", "equipment_type", "*"),
                            ("equipment", "standard", "*"),
                            ("equipment", "manufacturer", "Manufacturer")):
        for row in tables[table]:
            name = d.resolve(row[col])
            if name and (top == "*" or d.top_class(name) == top):
                found.add(name)
    return found


def cell_entities(tables: Tables) -> set[str]:
    return {n for rows in tables.values() for row in rows for v in row.values()
            if (n := d.resolve(v))}


def words(text: str) -> int:
    return len(text.split())


def _closing(rng: random.Random, n: int) -> list[str]:
    return rng.sample(CLOSINGS, n)


# --- defects ---


def _truth(aid: str, code: str, cell: CellAt, tables: Tables) -> Truth:
    table, row, column = cell
    return {"artifact_id": aid, "gate": GATES[code.split(".", maxsplit=1)[0]], "code": code,
            "table": table, "row": row, "column": column, "observed": tables[table][row][column]}


def _inject_disjoint(rng: random.Random, t: Tables, canonical: bool) -> CellAt:
    eq = t["equipment"]
    if canonical:
        i = next(i for i, r in enumerate(eq) if r["equipment_type"] == _label("ct_scanner"))
        eq[i]["standard"] = _label("ASHRAE_62_1")
        return ("equipment", i, "standard")
    roll = rng.random()
    if roll < 0.75:
        i = rng.randrange(len(eq))
        column = "standard" if roll < 0.5 else "manufacturer"
        own = d.BY_NAME[str(d.resolve(eq[i]["equipment_type"]))].domain
        parent = "Standard" if column == "standard" else "Manufacturer"
        other = rng.choice([x for x in d.DOMAINS if x != own])
        pool = [x.name for x in d.INDIVIDUALS if x.cls == d.DOMAIN_SUBCLASSES[parent][other]]
        eq[i][column] = _label(rng.choice(pool))
        return ("equipment", i, column)
    table, column, top = rng.choice((("maintenance", "activity", "Standard"),
                                     ("rooms", "room_type", "Department"),
                                     ("rooms", "department", "RoomType")))
    i = rng.randrange(len(t[table]))
    pool = [x.name for x in d.INDIVIDUALS if d.top_class(x.name) == top]
    t[table][i][column] = _label(rng.choice(pool))
    return (table, i, column)


def _object_cells(t: Tables) -> list[CellAt]:
    return [(table, i, col) for table, cols in d.OBJECT_COLUMNS.items()
            for i in range(len(t[table])) for col in cols]


def _inject_unknown(rng: random.Random, t: Tables, protected: set[CellAt]) -> CellAt:
    cells = [c for c in _object_cells(t) if c not in protected]
    weights = [3 if c[2] in ("standard", "manufacturer", "equipment_type") else 1 for c in cells]
    table, i, col = rng.choices(cells, weights=weights)[0]
    t[table][i][col] = rng.choice(d.UNKNOWN_VALUES[col])
    return (table, i, col)


def _inject_orphan(rng: random.Random, t: Tables) -> CellAt:
    eq, tasks = t["equipment"], t["maintenance"]
    per_eq = {e["equipment_id"]: sum(x["equipment_id"] == e["equipment_id"] for x in tasks)
              for e in eq}
    movable = [i for i, x in enumerate(tasks) if per_eq[str(x["equipment_id"])] >= 2]
    if movable and rng.random() < 0.5:
        i = rng.choice(movable)
        taken = {e["equipment_id"] for e in eq}
        tasks[i]["equipment_id"] = next(v for n in rng.sample(range(9, 99), 90)
                                        if (v := f"EQ-{n:03d}") not in taken)
        return ("maintenance", i, "equipment_id")
    i = rng.randrange(len(eq))
    eq[i]["room_id"] = _room_id(rng, rng.randint(-3, 9), {str(r["room_id"]) for r in t["rooms"]})
    return ("equipment", i, "room_id")


_HALLUCINATION = {
    "EquipmentType": "The walk-through also noted {a} {label}, which is not yet in the tables.",
    "Standard": "The commissioning notes for this area also cite {label}.",
    "Manufacturer": "Some service visits in this area are also booked with {label}.",
}


def _inject_unknown_entity(rng: random.Random, aid: str, t: Tables, body: list[str],
                           closing: list[str]) -> tuple[list[str], Truth]:
    present = cell_entities(t)
    prose = " ".join(body + closing)
    pool = [x.name for x in d.INDIVIDUALS
            if d.top_class(x.name) in _HALLUCINATION and x.name not in present
            and d.count_term(prose, x.label) == 0
            and all(d.count_term(x.label, _label(p)) == 0 for p in present)]
    name = rng.choice(pool)
    label = _label(name)
    sentence = _HALLUCINATION[d.top_class(name)].format(a=_article(label).capitalize(),
                                                        label=label)
    at = rng.randint(1, len(body))
    body = [*body[:at], sentence, *body[at:]]
    start = sum(len(s) + 1 for s in body[:at]) + sentence.index(label)
    return body, {"artifact_id": aid, "gate": "prose_gate", "code": "prose.unknown_entity",
                  "entity": name, "observed": name, "span": [start, start + len(label)]}


def _truncate(rng: random.Random, prose: str, last: str) -> str:
    ws = last.split()
    cut = " ".join(ws[: rng.randint(3, len(ws) - 3)]).rstrip(",;:")
    return prose[: len(prose) - len(last)] + cut


@dataclass
class Plan:
    clean: bool = False
    placeholders: bool = False
    kinds: set[str] = field(default_factory=set)


def plan_defects(rng: random.Random, count: int) -> list[Plan]:
    """Exact numbers of artifacts per defect kind; every flawed artifact gets >= 1 kind."""
    plans = [Plan() for _ in range(count)]
    order = rng.sample(range(count), count)
    n_clean = round(CLEAN_SHARE * count)
    flawed = order[n_clean:]
    for i in order[:n_clean]:
        plans[i].clean = True
    n_ph = round(PLACEHOLDER_ARTIFACT_SHARE * count)
    for i in flawed[:n_ph]:
        plans[i].placeholders = True
    tokens = [k for k, share in sorted(KIND_SHARES.items()) for _ in range(round(share * count))]
    rng.shuffle(tokens)
    needy = flawed[n_ph:]
    for i, kind in zip(needy, tokens, strict=False):
        plans[i].kinds.add(kind)
    for kind in tokens[len(needy):]:
        i = rng.choice([j for j in flawed if kind not in plans[j].kinds])
        plans[i].kinds.add(kind)
    return plans


def build_artifact(seed: int, index: int, plan: Plan, canonical: bool
                   ) -> tuple[dict[str, object], dict[str, object], list[Truth]]:
    rng = random.Random(f"facility:{seed}:{index}")
    aid = f"fac-{index + 1:04d}"
    n_rooms, n_eq = rng.randint(2, 4), rng.randint(4, 8)
    clean = clean_tables(rng, n_rooms, n_eq, rng.randint(max(5, n_eq), 12))
    site = f"{rng.choice(d.SITES)}, {rng.choice(d.WINGS)}"
    body = body_sentences(random.Random(f"prose:{seed}:{index}"), clean, site)
    closing = _closing(rng, 1 if words(" ".join(body)) > 250 else 2)
    clean_prose = " ".join(body + closing)
    flawed = copy.deepcopy(clean)
    truth: list[Truth] = []
    protected: set[CellAt] = set()
    if "value.disjoint" in plan.kinds:
        cell = _inject_disjoint(rng, flawed, canonical)
        truth.append(_truth(aid, "value.disjoint", cell, flawed))
        protected |= {cell, (cell[0], cell[1], "equipment_type")}  # the row stays classifiable
    if "value.unknown" in plan.kinds:
        cell = _inject_unknown(rng, flawed, protected)
        truth.append(_truth(aid, "value.unknown", cell, flawed))
        protected.add(cell)
    if plan.placeholders:
        cells = [c for c in _object_cells(flawed) if c not in protected]
        hits = [c for c in cells if rng.random() < PLACEHOLDER_CELL_RATE] or [rng.choice(cells)]
        for table, i, col in hits:
            flawed[table][i][col] = rng.choice(d.PLACEHOLDERS)
            truth.append(_truth(aid, "value.placeholder", (table, i, col), flawed))
    if "ri.fk_orphan" in plan.kinds:
        truth.append(_truth(aid, "ri.fk_orphan", _inject_orphan(rng, flawed), flawed))
    body = body_sentences(random.Random(f"prose:{seed}:{index}"), flawed, site)
    if "prose.unknown_entity" in plan.kinds:
        body, entry = _inject_unknown_entity(rng, aid, flawed, body, closing)
        truth.append(entry)
    prose = " ".join(body + closing)
    if "prose.truncated" in plan.kinds:
        prose = _truncate(rng, prose, closing[-1])
        truth.append({"artifact_id": aid, "gate": "prose_gate", "code": "prose.truncated",
                      "observed": prose[-40:]})
    extra = {str(x["entity"]) for x in truth if x["code"] == "prose.unknown_entity"}
    _self_check(aid, clean_prose, expected_mentions(clean))
    _self_check(aid, prose, expected_mentions(flawed) | extra)
    meta = {"seed": seed, "site": site}
    return ({"id": aid, "tables": flawed, "prose": prose, "meta": meta},
            {"id": aid, "tables": clean, "prose": clean_prose, "meta": meta}, truth)


def _self_check(aid: str, prose: str, expected: set[str]) -> None:
    found = d.find_entities(prose)
    if set(found) != expected or not 100 <= words(prose) <= 300:
        raise AssertionError(f"{aid}: prose mentions {sorted(found)}, expected {sorted(expected)}"
                             f" ({words(prose)} words)")


def _line(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def build_corpus(seed: int, count: int) -> dict[str, str]:
    plans = plan_defects(random.Random(seed), count)
    flawed, clean, truth = [], [], []
    canonical_pending = True
    for index, plan in enumerate(plans):
        canonical = False
        if canonical_pending and "value.disjoint" in plan.kinds:
            probe = random.Random(f"facility:{seed}:{index}")
            n_rooms, n_eq = probe.randint(2, 4), probe.randint(4, 8)
            tables = clean_tables(probe, n_rooms, n_eq, probe.randint(max(5, n_eq), 12))
            ct = _label("ct_scanner")
            canonical = any(r["equipment_type"] == ct for r in tables["equipment"])
            canonical_pending = not canonical
        f, c, t = build_artifact(seed, index, plan, canonical)
        flawed.append(_line(f))
        clean.append(_line(c))
        truth += [_line(x) for x in t]
    return {"demo.jsonl": "".join(flawed), "demo.clean.jsonl": "".join(clean),
            "demo.truth.jsonl": "".join(truth)}


REFERENCE_SIZES = ((1, 1, 1, 0), (2, 2, 2, 0), (2, 3, 4, 1), (2, 4, 5, 1), (3, 5, 6, 2),
                   (3, 6, 8, 2), (4, 8, 10, 2), (5, 10, 12, 2), (6, 12, 14, 2), (7, 14, 16, 2),
                   (7, 18, 20, 2), (7, 22, 24, 2), (7, 26, 28, 2), (7, 30, 32, 2),
                   (7, 36, 38, 2), (7, 42, 44, 2))


def build_references(seed: int) -> dict[str, str]:
    """Sixteen clean narratives in the corpus style, from ~50 to ~900 words (registers from
    one room to seven rooms with 42 items): the prose gate's length distribution."""
    out: dict[str, str] = {}
    for k, (n_rooms, n_eq, n_tasks, n_close) in enumerate(REFERENCE_SIZES):
        rng = random.Random(f"reference:{seed}:{k}")
        tables = clean_tables(rng, n_rooms, n_eq, n_tasks)
        site = f"{rng.choice(d.SITES)}, {rng.choice(d.WINGS)}"
        text = " ".join(body_sentences(rng, tables, site) + _closing(rng, n_close))
        out[f"reference-{k + 1:02d}.txt"] = text + "\n"
    return out


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    p_owl = sub.add_parser("owl", help="write the OWL ontology (RDF/XML)")
    p_owl.add_argument("--out", type=Path, required=True)
    p_corpus = sub.add_parser("corpus", help="write demo.jsonl, demo.clean.jsonl, demo.truth.jsonl")
    p_corpus.add_argument("--seed", type=int, default=7)
    p_corpus.add_argument("--count", type=int, default=240)
    p_corpus.add_argument("--out", type=Path, required=True)
    p_refs = sub.add_parser("references", help="write the reference prose samples")
    p_refs.add_argument("--seed", type=int, default=1013)
    p_refs.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "owl":
        _write(args.out, render_owl())
    elif args.command == "corpus":
        for name, text in build_corpus(args.seed, args.count).items():
            _write(args.out / name, text)
    else:
        for name, text in build_references(args.seed).items():
            _write(args.out / name, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Labelled prose cases for the prose gate, and long narratives for its benchmark.

    python packs/facility/prose_cases.py --seed 5 --per-kind 60 --out packs/facility/corpus

writes `prose_cases.jsonl` (artifacts: clean tables, prose with at most one injected defect
kind) and `prose_labels.jsonl` (one line per sample: its kind and the findings a correct
gate must report). Kinds: clean, `prose.unknown_entity`, `prose.missing_entity`,
`prose.value_mismatch`, `prose.length`, `prose.truncated`.

The labels come from the generator's own knowledge of what it wrote, not from the gate:
the defect is placed at a known span; entity labels are re-derived with the generator's
independent matcher (`domain.find_entities`), and the admitted length band with its own
percentile computation over `references/`. Deterministic: seeded `random.Random`.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import domain as d
import generate as g

Row = g.Row
Tables = g.Tables
Finding = dict[str, object]
KINDS = ("clean", "prose.unknown_entity", "prose.missing_entity", "prose.value_mismatch",
         "prose.length", "prose.truncated")
REFERENCES = Path(__file__).resolve().parent / "references"
KEY_COLUMNS = ("equipment_type", "standard")  # pack.toml [prose] entity_columns
TOLERANCE = 0.01  # pack.toml [prose] value_tolerance

NEUTRAL = (
    "The register was reviewed with the site team during the last inspection round.",
    "Access arrangements are agreed with the ward managers before any work begins.",
    "Permits to work are issued by the duty engineer and closed out on completion.",
    "Records of each visit are kept with the asset history on the estates system.",
    "Any defect found during a visit is reported to the helpdesk the same day.",
    "Contractors sign in at the main reception and are escorted where required.",
    "Isolation procedures follow the local safety rules for each area.",
    "Spare parts are ordered through the usual purchasing route.",
)


# --- rendering: varied sentences that state values the pack's claim rules can check ---


def _lab(value: object) -> str | None:
    name = d.resolve(value)
    return d.BY_NAME[name].label if name else None


def _kw(value: float, rng: random.Random) -> str:
    if value >= 100 and rng.random() < 0.2:
        return f"{value / 1000:g} MW"
    return f"{value:g} " + rng.choice(("kW", "kW", "kilowatts"))


def equipment_sentence(rng: random.Random, row: Row, hide: frozenset[str] = frozenset()) -> str:
    """One sentence about an equipment row; entities in `hide` are left out."""
    eid = str(row["equipment_id"])
    etype = _lab(row["equipment_type"])
    std = _lab(row["standard"])
    maker = _lab(row["manufacturer"])
    etype = None if d.resolve(row["equipment_type"]) in hide else etype
    std = None if d.resolve(row["standard"]) in hide else std
    kw = _kw(float(row["rated_power_kw"]), rng)
    what = f"{g._article(etype)} {etype}" if etype else "an item of equipment"
    style = rng.randrange(4)
    if style == 0:
        text = f"{eid} is {what}"
        text += f" made by {maker}" if maker else ""
        text += f", rated at {kw}"
        return text + (f", and complies with {std}." if std else ", with no standard recorded.")
    if style == 1:
        text = f"{eid}, {what} supplied by {maker}," if maker else f"{eid}, {what},"
        text += f" is installed in room {row['room_id']} and draws {kw}"
        return text + (f" under {std}." if std else ".")
    if style == 2:
        head = f"The {etype} {eid}" if etype else f"Equipment {eid}"
        power = float(row["rated_power_kw"])
        # rounded to whole kilowatts, as people write it, where that stays within the pack's
        # 1% tolerance (48.3 -> 48; 0.6 stays 0.6: "1 kW" would be a wrong claim)
        if rng.random() < 0.5 and abs(round(power) - power) <= 0.01 * power:
            kw = f"{round(power)} kW"
        text = head + (f" from {maker}" if maker else "") + f" has a rating of {kw}"
        return text + (f" and is certified to {std}." if std else ".")
    text = f"Installed in room {row['room_id']}, {eid} is {what}"
    text += f" manufactured by {maker}" if maker else ""
    return text + f" ({kw})" + (f" that conforms to {std}." if std else ".")


def room_sentence(rng: random.Random, room: Row) -> str:
    rtype = _lab(room["room_type"])
    dept = _lab(room["department"])
    where = f"{g._article(rtype)} {rtype}" if rtype else "a room"
    if rng.random() < 0.5:
        return f"Room {room['room_id']} is {where} on floor {room['floor']}" + (
            f", run by the {dept}." if dept else ".")
    return f"On floor {room['floor']}, room {room['room_id']} serves as {where}."


def task_sentence(rng: random.Random, task: Row) -> str:
    act = _lab(task["activity"])
    every = int(task["interval_months"])
    period = rng.choice((f"every {every} months", f"at an interval of {every} months"))
    if every % 12 == 0 and rng.random() < 0.3:
        period = f"every {every // 12} years" if every > 12 else "every 1 year"
    if act:
        return f"Task {task['task_id']}, the {act}, is performed on {task['equipment_id']} {period}."
    return f"Task {task['task_id']} is carried out on {task['equipment_id']} {period}."


def render(rng: random.Random, tables: Tables, site: str, hide: frozenset[str] = frozenset(),
           tasks: int = 3) -> list[str]:
    rooms, equipment = tables["rooms"], tables["equipment"]
    out = [f"This register covers {g._n(len(rooms), 'room')} and "
           f"{g._n(len(equipment), 'item')} of equipment at {site}."]
    for room in rooms:
        out.append(room_sentence(rng, room))
        out += [equipment_sentence(rng, e, hide) for e in equipment
                if e["room_id"] == room["room_id"]]
    out += [task_sentence(rng, t) for t in tables["maintenance"][:tasks]]
    return out


# --- what a correct gate must report, derived independently ---


def length_band() -> tuple[float, float]:
    """Percentiles 0 and 1 (pack.toml length_band) of the references' word counts."""
    counts = sorted(len(p.read_text(encoding="utf-8").split()) for p in REFERENCES.glob("*.txt"))
    return float(counts[0]), float(counts[-1])


def entity_findings(tables: Tables, prose: str) -> list[Finding]:
    """unknown/missing entity findings of `prose` against `tables` (coverage 1.0)."""
    found = d.find_entities(prose)
    cells = g.cell_entities(tables)
    keys = {n for e in tables["equipment"] for c in KEY_COLUMNS if (n := d.resolve(e[c]))}
    out: list[Finding] = [{"code": "prose.unknown_entity", "entity": n}
                          for n in dict.fromkeys(found) if n not in cells]
    out += [{"code": "prose.missing_entity", "entity": n} for n in sorted(keys - set(found))]
    return out


def _tables(rng: random.Random, n_rooms: int, n_eq: int) -> Tables:
    return g.clean_tables(rng, n_rooms, n_eq, rng.randint(max(5, n_eq), n_eq + 4))


def _site(rng: random.Random) -> str:
    return f"{rng.choice(d.SITES)}, {rng.choice(d.WINGS)}"


# --- the defect kinds ---


def _ending(rng: random.Random) -> str:
    """A proper ending: a sentence, a complete list or a complete table."""
    roll = rng.random()
    if roll < 0.7:
        return rng.choice(NEUTRAL)
    if roll < 0.85:
        return "Follow-up actions:\n- confirm access dates;\n- update the asset history."
    return "| action | owner |\n|---|---|\n| review access | site team |"


def case_clean(rng: random.Random, tables: Tables, site: str) -> tuple[str, list[Finding]]:
    return " ".join(render(rng, tables, site)) + " " + _ending(rng), []


_UNKNOWN_TEMPLATES = {
    "EquipmentType": "{a} {label} is being considered for the next phase of works.",
    "Standard": "The design notes for this area also cite {label}.",
    "Manufacturer": "A separate quotation was requested from {label} last year.",
    "RoomType": "A new {label} is proposed for the adjacent block.",
    "Department": "The {label} has asked to share this space next year.",
    "MaintenanceActivity": "{a} {label} was discussed but is not yet scheduled.",
}


def case_unknown(rng: random.Random, tables: Tables, site: str) -> tuple[str, list[Finding]]:
    body = render(rng, tables, site)
    prose = " ".join(body)
    present = g.cell_entities(tables)
    pool = [x.name for x in d.INDIVIDUALS if x.name not in present
            and d.top_class(x.name) in _UNKNOWN_TEMPLATES
            and d.count_term(prose, x.label) == 0
            and all(d.count_term(x.label, d.BY_NAME[p].label) == 0 for p in present)
            and all(d.count_term(d.BY_NAME[p].label, x.label) == 0 for p in present)]
    name = rng.choice(pool)
    label = d.BY_NAME[name].label
    sentence = _UNKNOWN_TEMPLATES[d.top_class(name)].format(
        label=label, a=g._article(label).capitalize())
    at = rng.randint(1, len(body))
    body = [*body[:at], sentence, *body[at:]]
    prose = " ".join(body) + " " + rng.choice(NEUTRAL)
    start = sum(len(s) + 1 for s in body[:at]) + sentence.index(label)
    return prose, [{"code": "prose.unknown_entity", "entity": name,
                    "span": [start, start + len(label)]}]


def case_missing(rng: random.Random, tables: Tables, site: str) -> tuple[str, list[Finding]]:
    keys = sorted({n for e in tables["equipment"] for c in KEY_COLUMNS if (n := d.resolve(e[c]))})
    hidden = rng.choice(keys)
    prose = " ".join(render(rng, tables, site, frozenset({hidden}))) + " " + rng.choice(NEUTRAL)
    return prose, [{"code": "prose.missing_entity", "entity": hidden}]


def _wrong_number(rng: random.Random, value: float, integer: bool) -> float:
    while True:
        wrong = value * rng.choice((0.5, 0.7, 1.4, 2.0, 3.0)) + rng.choice((0, 1, 5))
        wrong = float(round(wrong)) if integer else round(wrong, 1)
        if abs(wrong - value) > max(TOLERANCE * abs(value), 0.5) and wrong > 0:
            return wrong


def _mismatch_variants(rng: random.Random, t: Tables) -> list[Callable[[], tuple[str, str, str]]]:
    """Each variant returns (sentence, the wrong statement in it, the table value)."""
    eq = rng.choice(t["equipment"])
    room = next(r for r in t["rooms"] if r["room_id"] == eq["room_id"])
    others = [r for r in t["rooms"] if r["room_id"] != eq["room_id"]]
    stds = sorted({str(e["standard"]) for e in t["equipment"]} - {str(eq["standard"])})
    makers = sorted({str(e["manufacturer"]) for e in t["equipment"]} - {str(eq["manufacturer"])})
    eid, etype = eq["equipment_id"], _lab(eq["equipment_type"])

    def power() -> tuple[str, str, str]:
        wrong = f"{_wrong_number(rng, float(eq['rated_power_kw']), False):g} kW"
        return f"{eid} is {g._article(str(etype))} {etype} rated at {wrong}.", wrong, \
            f"{eq['rated_power_kw']}"

    def standard() -> tuple[str, str, str]:
        claim = f"complies with {rng.choice(stds)}"
        return f"The {etype} {eid} {claim}.", claim, str(eq["standard"])

    def maker() -> tuple[str, str, str]:
        claim = f"made by {rng.choice(makers)}"
        return f"{eid} is {g._article(str(etype))} {etype} {claim}.", claim, str(eq["manufacturer"])

    def placed() -> tuple[str, str, str]:
        claim = f"installed in room {rng.choice(others)['room_id']}"
        return f"{eid} is {claim}.", claim, str(eq["room_id"])

    def placed_type() -> tuple[str, str, str]:
        other = next(r for r in others if r["room_type"] != room["room_type"])
        claim = f"installed in the {_lab(other['room_type'])}"
        return f"{eid} is {claim}.", claim, f"{eq['room_id']} ({room['room_type']})"

    def floor() -> tuple[str, str, str]:
        wrong = int(room["floor"]) + rng.choice((-2, -1, 1, 2, 3))
        claim = f"floor {wrong}"
        return f"Room {room['room_id']} is on {claim}.", claim, str(room["floor"])

    def interval() -> tuple[str, str, str]:
        task = rng.choice(t["maintenance"])
        wrong = f"{int(_wrong_number(rng, float(task['interval_months']), True))} months"
        return f"Task {task['task_id']} recurs every {wrong}.", wrong, \
            str(task["interval_months"])

    out: list[Callable[[], tuple[str, str, str]]] = [power, floor, interval]
    out += [standard] if stds else []
    out += [maker] if makers else []
    out += [placed] if others else []
    out += [placed_type] if any(r["room_type"] != room["room_type"] for r in others) else []
    return out


def case_mismatch(rng: random.Random, tables: Tables, site: str) -> tuple[str, list[Finding]]:
    body = render(rng, tables, site)
    sentence, claim, held = rng.choice(_mismatch_variants(rng, tables))()
    at = rng.randint(1, len(body))
    body = [*body[:at], sentence, *body[at:]]
    prose = " ".join(body) + " " + rng.choice(NEUTRAL)
    start = sum(len(s) + 1 for s in body[:at]) + sentence.index(claim)
    return prose, [{"code": "prose.value_mismatch", "span": [start, start + len(claim)],
                    "claim": claim, "table_value": held}]


def case_length(rng: random.Random, tables: Tables, site: str) -> tuple[str, list[Finding]]:
    low, high = length_band()
    if rng.random() < 0.5:  # a one-line summary of a one-room register
        small = _tables(rng, 1, 1)
        tables.clear()
        tables.update(small)
        prose = equipment_sentence(rng, small["equipment"][0])
        observed = len(prose.split())
        assert observed < low
        return prose, [{"code": "prose.length", "observed": observed}]
    big = _tables(rng, 7, rng.randint(40, 48))
    tables.clear()
    tables.update(big)
    prose = " ".join(render(rng, big, site, tasks=len(big["maintenance"])))
    prose += " " + " ".join(NEUTRAL)
    observed = len(prose.split())
    assert observed > high, (observed, high)
    return prose, [{"code": "prose.length", "observed": observed}]


_CUTS = ("mid-sentence", "connector", "ellipsis", "bracket", "quote", "list", "table", "colon")


def _cut(rng: random.Random, kind: str) -> str:
    """A tail that stops mid-thought (no entities, no values in it)."""
    if kind == "mid-sentence":
        words = rng.choice(NEUTRAL).split()
        return " ".join(words[: rng.randint(3, len(words) - 2)]).rstrip(",;.")
    if kind == "connector":
        return rng.choice(("Access is agreed with the ward managers and",
                           "Permits are issued by the duty engineer with",
                           "Records of each visit are kept with the"))
    if kind == "ellipsis":
        return rng.choice(("Further checks are planned for the coming months...",
                           "Other items will follow in the next issue…"))
    if kind == "bracket":
        return "Isolation procedures (see the local safety rules for each area apply to all visits."
    if kind == "quote":
        return 'The duty engineer noted "access was restricted during the visit.'
    if kind == "list":
        return "Follow-up actions:\n- confirm access dates;\n- update the asset his"
    if kind == "table":
        return "| action | owner |\n|---|---|\n| review access | site team |\n| update rec"
    return "The following actions remain open:"


def case_truncated(rng: random.Random, tables: Tables, site: str) -> tuple[str, list[Finding]]:
    kind = rng.choice(_CUTS)
    prose = " ".join(render(rng, tables, site)) + " " + _cut(rng, kind)
    return prose, [{"code": "prose.truncated", "cut": kind}]


CASES: dict[str, Callable[[random.Random, Tables, str], tuple[str, list[Finding]]]] = {
    "clean": case_clean,
    "prose.unknown_entity": case_unknown,
    "prose.missing_entity": case_missing,
    "prose.value_mismatch": case_mismatch,
    "prose.length": case_length,
    "prose.truncated": case_truncated,
}


def build_case(seed: int, kind: str, index: int) -> tuple[dict[str, object], dict[str, object]]:
    rng = random.Random(f"prose-case:{seed}:{kind}:{index}")
    tables = _tables(rng, rng.randint(2, 4), rng.randint(4, 8))
    site = _site(rng)
    prose, findings = CASES[kind](rng, tables, site)
    cid = f"pc-{KINDS.index(kind)}-{index + 1:03d}"
    extra = [f for f in entity_findings(tables, prose)
             if not any(f.get("entity") == x.get("entity") and f["code"] == x["code"]
                        for x in findings)]
    if extra:  # the injection must be the only defect: the generator checks itself
        raise AssertionError(f"{cid}: unplanned findings {extra}")
    words = len(prose.split())
    low, high = length_band()
    if kind != "prose.length" and not low <= words <= high:
        raise AssertionError(f"{cid}: {words} words outside {low}-{high}")
    artifact = {"id": cid, "tables": tables, "prose": prose, "meta": {"seed": seed, "site": site}}
    return artifact, {"id": cid, "kind": kind, "findings": findings}


def build_cases(seed: int, per_kind: int) -> dict[str, str]:
    samples, labels = [], []
    for kind in KINDS:
        for i in range(per_kind):
            artifact, label = build_case(seed, kind, i)
            samples.append(g._line(artifact))
            labels.append(g._line(label))
    return {"prose_cases.jsonl": "".join(samples), "prose_labels.jsonl": "".join(labels)}


# --- long narratives for the benchmark ---


def long_artifact(seed: int, index: int, words: tuple[int, int] = (200, 800)
                  ) -> dict[str, object]:
    """A clean artifact whose prose has a length drawn from `words` (approximately uniform)."""
    rng = random.Random(f"long-prose:{seed}:{index}")
    target = rng.randint(*words)
    n_eq = max(2, min(48, (target - 60) // 27))
    for _ in range(40):
        try:
            tables = _tables(rng, min(7, max(2, n_eq // 3)), n_eq)
        except RuntimeError:  # the rooms drawn cannot take that much equipment: draw again
            continue
        site = _site(rng)
        prose = " ".join(render(rng, tables, site))
        for extra in rng.sample(NEUTRAL, len(NEUTRAL)):
            if len(prose.split()) + len(extra.split()) > target:
                break
            prose += " " + extra
        n = len(prose.split())
        if abs(n - target) <= 40 and words[0] <= n <= words[1]:
            return {"id": f"long-{index + 1:05d}", "tables": tables, "prose": prose,
                    "meta": {"seed": seed, "site": site}}
        n_eq = max(1, n_eq + (1 if n < target else -1))
    raise AssertionError(f"no {words[0]}-{words[1]}-word narrative for index {index}")


def main(seed: int, per_kind: int, out: Path) -> None:
    for name, text in build_cases(seed, per_kind).items():
        g._write(out / name, text)


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write prose_cases.jsonl, prose_labels.jsonl")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--per-kind", type=int, default=60)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    main(args.seed, args.per_kind, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())

"""A natural-style labelled prose set for the prose gate, written by templates, not by the gate.

    python packs/facility/prose_natural.py --out packs/facility/corpus

writes `prose_natural.jsonl`: one line per sample, `{"artifact": {...}, "label": {...}}`.

The paragraphs are written the way engineers and language models write about a register:
abbreviations and short forms ("AHU", "the chiller", "genset"), `-es` plurals, lists,
headings, key/value blocks, pipe tables, number words ("sixty kilowatts"), ordinals ("the
sixth floor"), frequency words ("twice a year"), other unit spellings ("KW", "800 W"),
bounds ("under 10 kW"), negation, contrast and history ("there is no MRI scanner here",
"replaced the old boiler"), two rows in one sentence, "respectively", "It ..." after a
sentence about one row, joined facts (a room's department stated about equipment in it) and
aggregate claims (counts, sums, comparisons, ranges).

The labels come from how each paragraph was written, never from running the gate: every
entity the template writes is recorded with its surface form and whether the sentence asserts
it (a negated, contrasted, historical or out-of-scope mention is not an assertion); every
claim the template writes records its row, column and whether the template stated the
table's value or a wrong one; truncation and length are decided by how the text was cut or
how long it was made (the length band is read from `references/` by this script's own
percentile computation). What a correct gate must report:

* `prose.unknown_entity`: an asserted mention of a pool entity no cell of the tables names;
* `prose.missing_entity`: an equipment type or standard of the tables (the pack's
  `entity_columns`) the text never names, by any surface form a reader would accept;
* `prose.value_mismatch`: a claim the template wrote wrong (span, table, column, row key);
* `prose.truncated`: the text stops mid-thought (cut mid-sentence or mid-item, or ends with
  a heading or a label line after punctuated prose);
* `prose.length`: fewer words than the shortest reference sample or more than the longest.

Deterministic: seeded `random.Random`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import domain as d
import generate as g

Row = dict[str, object]
Tables = dict[str, list[Row]]
REFERENCES = Path(__file__).resolve().parent / "references"

# --- surface forms a reader accepts as the entity (short forms need a unique referent) ---

# individual -> forms; a form starting with "~" is a bare head noun ("chiller"): written only
# when no other row of the artifact could be meant, and only after "the"
FORMS: dict[str, tuple[str, ...]] = {
    "ct_scanner": ("CT scanner", "CT scanner", "computed tomography scanner", "~CT"),
    "mri_scanner": ("MRI scanner", "MRI", "MR scanner", "MRI system"),
    "xray_unit": ("X-ray unit", "X-ray machine", "x-ray unit"),
    "ultrasound_system": ("ultrasound system", "ultrasound scanner", "~ultrasound"),
    "pet_ct_scanner": ("PET-CT scanner", "PET/CT scanner", "PET CT system"),
    "mammography_unit": ("mammography unit", "mammography system", "mammography machine"),
    "fluoroscopy_system": ("fluoroscopy system", "fluoroscopy unit", "C-arm fluoroscope"),
    "linear_accelerator": ("linear accelerator", "linac", "LINAC", "medical linear accelerator"),
    "air_handling_unit": ("air handling unit", "AHU", "air handler", "air-handling unit"),
    "water_cooled_chiller": (
        "water-cooled chiller",
        "water cooled chiller",
        "~chiller",
        "centrifugal chiller",
    ),
    "cooling_tower": ("cooling tower", "evaporative cooling tower"),
    "hot_water_boiler": ("hot water boiler", "LTHW boiler", "~boiler", "heating boiler"),
    "fan_coil_unit": ("fan coil unit", "FCU", "fan coil", "fan-coil unit"),
    "exhaust_fan": ("exhaust fan", "extract fan", "exhaust fan"),
    "vav_box": ("VAV box", "VAV terminal", "variable air volume box"),
    "heat_recovery_ventilator": ("heat recovery ventilator", "HRV", "heat-recovery ventilator"),
    "medium_voltage_switchgear": ("medium-voltage switchgear", "MV switchgear", "~switchgear"),
    "uninterruptible_power_supply": ("uninterruptible power supply", "UPS", "UPS system"),
    "diesel_generator": (
        "diesel generator",
        "genset",
        "standby generator",
        "~generator",
        "diesel genset",
    ),
    "dry_type_transformer": (
        "dry-type transformer",
        "~transformer",
        "cast resin transformer",
        "dry type transformer",
    ),
    "automatic_transfer_switch": ("automatic transfer switch", "ATS", "transfer switch"),
    "distribution_panelboard": ("distribution panelboard", "distribution board", "~panelboard"),
    "isolated_power_panel": ("isolated power panel", "isolated power system", "IPS panel"),
    "battery_bank": ("battery bank", "battery string", "UPS battery bank"),
    # standards
    "IEC_60601_1": ("IEC 60601-1", "IEC 60601-1:2005", "EN 60601-1"),
    "IEC_60601_2_44": ("IEC 60601-2-44", "IEC 60601-2-44:2016"),
    "IEC_60601_2_33": ("IEC 60601-2-33", "IEC 60601-2-33:2022"),
    "IEC_60601_2_54": ("IEC 60601-2-54", "IEC 60601-2-54:2022"),
    "IEC_60601_2_37": ("IEC 60601-2-37", "EN 60601-2-37"),
    "IEC_60601_2_45": ("IEC 60601-2-45", "IEC 60601-2-45:2011"),
    "IEC_60601_2_1": ("IEC 60601-2-1", "EN 60601-2-1"),
    "NEMA_XR_29": ("NEMA XR 29", "NEMA XR-29", "XR-29"),
    "IEC_61223_3_5": ("IEC 61223-3-5", "EN 61223-3-5"),
    "ASHRAE_62_1": ("ASHRAE 62.1", "ASHRAE Standard 62.1", "ANSI/ASHRAE 62.1", "ASHRAE Std 62.1"),
    "ASHRAE_170": ("ASHRAE 170", "ASHRAE Standard 170", "ASHRAE Std 170"),
    "ASHRAE_90_1": ("ASHRAE 90.1", "ASHRAE Standard 90.1", "ASHRAE Std. 90.1"),
    "ASHRAE_52_2": ("ASHRAE 52.2", "ASHRAE Standard 52.2"),
    "ASHRAE_15": ("ASHRAE 15", "ASHRAE Standard 15", "ASHRAE Std 15"),
    "SMACNA_HVAC": (
        "SMACNA duct construction standard",
        "SMACNA duct standard",
        "the SMACNA HVAC Duct Construction Standards",
    ),
    "NFPA_70": ("NFPA 70", "NFPA 70 (the NEC)", "NFPA 70"),
    "NFPA_99": ("NFPA 99", "NFPA 99 (Health Care Facilities Code)", "NFPA-99"),
    "NFPA_110": ("NFPA 110", "NFPA-110", "NFPA 110"),
    "IEC_60364_7_710": ("IEC 60364-7-710", "HD 60364-7-710"),
    "IEEE_C57_12_00": ("IEEE C57.12.00", "ANSI C57.12.00"),
    "IEC_62040_3": ("IEC 62040-3", "EN 62040-3", "IEC 62040-3:2021"),
    # manufacturers
    "siemens_healthineers": ("Siemens Healthineers", "Siemens Healthineers"),
    "ge_healthcare": ("GE HealthCare", "GE Healthcare"),
    "philips_healthcare": ("Philips Healthcare", "Philips Healthcare"),
    "canon_medical": ("Canon Medical Systems", "Canon Medical"),
    "carrier_corporation": ("Carrier Corporation", "Carrier Global"),
    "trane_technologies": ("Trane Technologies", "Trane Technologies"),
    "daikin_applied": ("Daikin Applied", "Daikin Applied"),
    "johnson_controls": ("Johnson Controls", "Johnson Controls"),
    "schneider_electric": ("Schneider Electric", "Schneider Electric"),
    "abb_electrification": ("ABB Electrification", "ABB Electrification"),
    "eaton_corporation": ("Eaton Corporation", "Eaton"),
    "cummins_power_generation": ("Cummins Power Generation", "Cummins Power"),
}
PLURAL = {"box": "boxes", "switch": "switches", "switchgear": "switchgear", "CT": "CTs"}

# Sentences that mention nothing a reader would take for a pool entity.
FILLER = (
    "The register was last reviewed with the estates team in the spring.",
    "Access is arranged through the duty manager, and permits to work are closed out on completion.",
    "All readings come from the nameplates and the commissioning records held on site.",
    "Any defect found on a visit is logged with the helpdesk the same day.",
    "Contractors sign in at reception and are escorted where the area requires it.",
    "The figures below are taken from the asset list as issued to the project team.",
    "Isolation follows the site's safety rules, and the authorised person signs off each visit.",
    "Spares are held centrally and ordered through the normal purchasing route.",
    "Where a reading was missing, the manufacturer's data sheet was used instead.",
    "This note summarises the assets for the handover pack.",
    "Out-of-hours call-outs go through the on-call engineer.",
    "Asset tags were checked against the list during the walk-round.",
    "Nothing in this summary changes the agreed service levels.",
    "The summary was prepared from the register export of last week.",
    "Routine consumables are stocked on site: belts, lamps, fuses, etc.",
    "Small works (e.g. relabelling) are booked through the helpdesk.",
)

# --- the writer: text with the facts of what was written ---


@dataclass
class Writer:
    parts: list[str] = field(default_factory=list)
    pos: int = 0
    mentions: list[tuple[str, int, bool]] = field(default_factory=list)  # (ind, end, asserted)
    wrong: list[dict[str, object]] = field(default_factory=list)
    claims: int = 0

    def t(self, s: str) -> Writer:
        self.parts.append(s)
        self.pos += len(s)
        return self

    def ent(self, ind: str, form: str, asserted: bool = True) -> Writer:
        name = form.split(" (", maxsplit=1)[0]  # "NFPA 70 (the NEC)": no gloss
        self.mentions.append((ind, self.pos + len(name), asserted))
        return self.t(form)

    def mark(self, text: str, table: str, column: str, key: str | None) -> Writer:
        self.wrong.append(
            {
                "code": "prose.value_mismatch",
                "span": [self.pos, self.pos + len(text)],
                "claim": text,
                "table": table,
                "column": column,
                "key": key,
            }
        )
        return self.t(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


class Ctx:
    """What a style gets: the tables, a random source, the writer, and which claim (by the
    order the style states them) to write wrong (-1: none)."""

    def __init__(self, rng: random.Random, tables: Tables, wrong_at: int, hide: set[str]) -> None:
        self.rng = rng
        self.tables = tables
        self.w = Writer()
        self.wrong_at = wrong_at
        self.hide = hide  # key entities the style must not name (a missing_entity case)
        self.view = {
            n
            for rows in tables.values()
            for row in rows
            for v in row.values()
            if (n := d.resolve(v))
        }
        self.heads: dict[str, int] = {}
        for ind in self.view:
            for f in FORMS.get(ind, ()):
                if f.startswith("~"):
                    self.heads[f[1:]] = self.heads.get(f[1:], 0) + 1
        types = [d.resolve(e["equipment_type"]) for e in tables["equipment"]]
        self.type_count = {t: types.count(t) for t in types if t}

    # entities
    def form(self, ind: str, short: bool = True) -> str:
        forms = [f for f in FORMS.get(ind, (d.BY_NAME[ind].label,)) if short or f == FORMS[ind][0]]
        ok = [f for f in forms if not f.startswith("~")]
        heads = [
            f[1:]
            for f in forms
            if f.startswith("~")
            and self.heads.get(f[1:], 0) <= 1
            and self.type_count.get(ind, 0) <= 1
            and ind in self.view
        ]
        return (
            self.rng.choice(ok + heads)
            if heads and self.rng.random() < 0.5
            else self.rng.choice(ok)
        )

    def named(
        self,
        ind: str,
        article: str = "",
        asserted: bool = True,
        plural: bool = False,
        short: bool = True,
    ) -> Writer:
        """Write an entity (with "the"/"a"/"" before it); a bare head always gets "the"."""
        f = self.form(ind, short)
        bare = f not in FORMS.get(ind, ()) and "~" + f in FORMS.get(ind, ())
        if plural:
            last = f.split()[-1]
            f = f[: len(f) - len(last)] + PLURAL.get(last, last + "s")
        if bare:
            article = "the"
        elif article == "a":
            article = g._article(f)
        if article:
            self.w.t(article + " ")
        return self.w.ent(ind, f, asserted)

    def key_ent(self, row: Row, column: str, article: str = "", plural: bool = False) -> bool:
        """Name the row's entity unless it is hidden; False when hidden (nothing written)."""
        ind = d.resolve(row[column])
        assert ind is not None
        if ind in self.hide:
            return False
        self.named(ind, article, plural=plural)
        return True

    # claims
    def _next_wrong(self) -> bool:
        k = self.w.claims
        self.w.claims += 1
        return k == self.wrong_at

    def claim(
        self, right: str, wrong: Callable[[], str], table: str, column: str, key: str | None
    ) -> Writer:
        if self._next_wrong():
            return self.w.mark(wrong(), table, column, key)
        return self.w.t(right)

    def kw(self, row: Row, style: str = "") -> Writer:
        v = float(row["rated_power_kw"])  # type: ignore[arg-type]
        rng = self.rng
        bad = _off(rng, v)
        return self.claim(
            _kw_text(rng, v, style),
            lambda: _kw_text(rng, bad, style),
            "equipment",
            "rated_power_kw",
            str(row["equipment_id"]),
        )

    def bound(self, row: Row) -> Writer:
        """A bound on the power ("under 10 kW"), true or (wrong) false."""
        v = float(row["rated_power_kw"])  # type: ignore[arg-type]
        rng = self.rng
        kind = rng.choice(("below", "above", "between"))

        def text(ok: bool) -> str:
            if kind == "below":
                b = _nice(v * (rng.uniform(1.3, 2.0) if ok else rng.uniform(0.4, 0.75)))
                return f"{rng.choice(('under', 'below', 'less than', 'no more than'))} {b:g} kW"
            if kind == "above":
                b = _nice(v * (rng.uniform(0.4, 0.75) if ok else rng.uniform(1.3, 2.0)))
                return f"{rng.choice(('over', 'above', 'more than', 'at least'))} {b:g} kW"
            lo, hi = (v * 0.7, v * 1.3) if ok else (v * 1.4, v * 2.0)
            return f"between {_nice(lo):g} and {_nice(hi):g} kW"

        return self.claim(
            text(True), lambda: text(False), "equipment", "rated_power_kw", str(row["equipment_id"])
        )

    def every(self, task: Row) -> Writer:
        m = int(task["interval_months"])  # type: ignore[call-overload]
        rng = self.rng
        bad = rng.choice([x for x in (1, 3, 6, 12, 24, 36) if x != m])
        return self.claim(
            _interval(rng, m),
            lambda: _interval(rng, bad),
            "maintenance",
            "interval_months",
            str(task["task_id"]),
        )

    def floor(self, room: Row, lead: bool = True) -> Writer:
        f = int(room["floor"])  # type: ignore[call-overload]
        rng = self.rng
        bad = f + rng.choice((-2, -1, 1, 2, 3))
        return self.claim(
            _floor(rng, f, lead),
            lambda: _floor(rng, bad, lead),
            "rooms",
            "floor",
            str(room["room_id"]),
        )

    def rel(self, row: Row, column: str, lead: str) -> Writer:
        """A relation ("complies with X"), right or with another row's / same-class value."""
        ind = d.resolve(row[column])
        assert ind is not None
        key = str(row["equipment_id"])
        if self._next_wrong():
            others = [
                x
                for r in self.tables["equipment"]
                if (x := d.resolve(r[column]))
                and x != ind
                and d.BY_NAME[x].cls == d.BY_NAME[ind].cls
            ]
            if not others:
                others = [
                    i.name for i in d.INDIVIDUALS if i.cls == d.BY_NAME[ind].cls and i.name != ind
                ]
            bad = self.rng.choice(sorted(set(others)))
            form = self.form(bad, short=False)
            self.w.t(lead + " ")
            self.w.wrong.append(
                {
                    "code": "prose.value_mismatch",
                    "span": [self.w.pos, self.w.pos + len(form)],
                    "claim": form,
                    "table": "equipment",
                    "column": column,
                    "key": key,
                }
            )
            return self.w.ent(bad, form)
        self.w.t(lead + " ")
        return self.named(ind)


def _nice(x: float) -> float:
    if x >= 100:
        return float(round(x / 10) * 10)
    if x >= 10:
        return float(round(x))
    return round(x, 1) if x >= 1 else round(x, 2)


def _off(rng: random.Random, v: float) -> float:
    f = rng.choice((0.5, 0.6, 0.7, 1.3, 1.5, 1.8))
    out = round(v * f, 1)
    return out if abs(out - v) > 0.1 * v and out > 0 else round(v * 2 + 1, 1)


ONES = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
ORD = {
    1: "first",
    2: "second",
    3: "third",
    4: "fourth",
    5: "fifth",
    6: "sixth",
    7: "seventh",
    8: "eighth",
    9: "ninth",
    10: "tenth",
    11: "eleventh",
    12: "twelfth",
    13: "thirteenth",
    14: "fourteenth",
    15: "fifteenth",
    16: "sixteenth",
    17: "seventeenth",
    18: "eighteenth",
    19: "nineteenth",
    20: "twentieth",
}


def words(n: int) -> str:
    """English words for 0 <= n < 1000 ("one hundred and thirty")."""
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else "-" + ONES[n % 10])
    rest = n % 100
    return ONES[n // 100] + " hundred" + ("" if rest == 0 else " and " + words(rest))


def _kw_text(rng: random.Random, v: float, style: str = "") -> str:
    choice = style or rng.choice(
        ("plain", "plain", "nospace", "KW", "words", "word_unit", "MW", "W", "kilowatt", "about")
    )
    if choice == "words" and v.is_integer() and v < 1000:
        return f"{words(int(v))} {rng.choice(('kilowatts', 'kW'))}"
    if choice == "word_unit":
        return f"{v:g} kilowatts"
    if choice == "nospace":
        return f"{v:g}kW"
    if choice == "KW":
        return f"{v:g} {rng.choice(('KW', 'kw'))}"
    if choice == "MW" and v >= 200:
        return f"{v / 1000:g} MW"
    if choice == "W" and v < 2:
        return f"{v * 1000:g} W"
    if choice == "kilowatt":
        return f"{v:g}-kilowatt" if rng.random() < 0.5 else f"{v:g} kilowatt"
    if choice == "about" and v >= 20:
        return f"about {round(v)} kW" if abs(round(v) - v) <= 0.005 * v else f"{v:g} kW"
    return f"{v:g} kW"


def _interval(rng: random.Random, m: int) -> str:
    named = {
        1: ("monthly", "every month", "once a month"),
        3: ("quarterly", "every three months", "every quarter", "four times a year"),
        6: ("twice a year", "every six months", "every 6 months", "six-monthly"),
        12: ("annually", "once a year", "every year", "every twelve months", "yearly"),
        24: ("every two years", "every 24 months", "biennially", "every second year"),
        36: ("every three years", "every 36 months"),
        60: ("every five years", "every 60 months"),
    }
    forms = named.get(m, (f"every {m} months", f"every {words(m)} months"))
    if rng.random() < 0.25:
        return f"every {m} months"
    return rng.choice(forms)


def _floor(rng: random.Random, f: int, lead: bool) -> str:
    if f == 0:
        return rng.choice(("on the ground floor", "at ground level", "on floor 0", "on level 0"))
    if f < 0:
        return rng.choice((f"on level {f}", f"on basement level {-f}", f"on floor {f}"))
    return rng.choice(
        (
            f"on floor {f}",
            f"on level {f}",
            f"on the {ORD.get(f, str(f) + 'th')} floor",
            f"on the {_ordinal(f)} floor",
        )
    )


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


# --- styles: each writes one paragraph (or small document) about the tables ---


def _eq(ctx: Ctx) -> list[Row]:
    return ctx.tables["equipment"]


def _room_of(ctx: Ctx, e: Row) -> Row:
    return next(r for r in ctx.tables["rooms"] if r["room_id"] == e["room_id"])


def _tasks_of(ctx: Ctx, e: Row) -> list[Row]:
    return [t for t in ctx.tables["maintenance"] if t["equipment_id"] == e["equipment_id"]]


def s_narrative(ctx: Ctx) -> None:
    """Plain sentences, one or two per row, abbreviations where an engineer would use them."""
    w, rng = ctx.w, ctx.rng
    w.t(
        rng.choice(
            (
                "This summary covers the plant listed in the register. ",
                "The assets below were surveyed this quarter. ",
            )
        )
    )
    for e in _eq(ctx):
        w.t(f"{e['equipment_id']} is ")
        if not ctx.key_ent(e, "equipment_type", "a"):
            w.t("an item of plant")
        w.t(rng.choice((" rated at ", " drawing ", " with a rating of ")))
        ctx.kw(e)
        if d.resolve(e["standard"]) not in ctx.hide:
            ctx.rel(
                e,
                "standard",
                rng.choice((", and it complies with", ", maintained to", " and certified to")),
            )
        w.t(". ")
    w.t(rng.choice(FILLER))


def s_two_per_sentence(ctx: Ctx) -> None:
    """Two rows per sentence ("..., while ...")."""
    w, rng = ctx.w, ctx.rng
    eq = _eq(ctx)
    w.t(rng.choice(FILLER) + " ")
    for i in range(0, len(eq), 2):
        a = eq[i]
        w.t("The ")
        if not ctx.key_ent(a, "equipment_type"):
            w.t("first item")
        w.t(f" ({a['equipment_id']}) draws ")
        ctx.kw(a)
        if i + 1 < len(eq):
            b = eq[i + 1]
            w.t(rng.choice((", while the ", ", whereas the ", "; the ")))
            if not ctx.key_ent(b, "equipment_type"):
                w.t("next item")
            w.t(f" ({b['equipment_id']}) draws ")
            ctx.kw(b)
        w.t(". ")
    for e in eq:
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(f"{e['equipment_id']} is documented against ")
            ctx.named(str(d.resolve(e["standard"])))
            w.t(". ")
    w.t(rng.choice(FILLER))


def s_respectively(ctx: Ctx) -> None:
    """ "X and Y are rated at A and B, respectively."""
    w, rng = ctx.w, ctx.rng
    eq = _eq(ctx)
    w.t(rng.choice(FILLER) + " ")
    for i in range(0, len(eq) - 1, 2):
        a, b = eq[i], eq[i + 1]
        w.t(f"{a['equipment_id']} and {b['equipment_id']} are rated at ")
        ctx.kw(a, "plain")
        w.t(" and ")
        ctx.kw(b, "plain")
        w.t(rng.choice((", respectively. ", " respectively. ")))
    if len(eq) % 2:
        e = eq[-1]
        w.t(f"{e['equipment_id']} is rated at ")
        ctx.kw(e)
        w.t(". ")
    for e in eq:
        w.t(f"{e['equipment_id']} is ")
        if not ctx.key_ent(e, "equipment_type", "a"):
            w.t("listed")
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(" under ")
            ctx.named(str(d.resolve(e["standard"])))
        w.t(". ")


def s_bullets(ctx: Ctx) -> None:
    """A heading and a bullet list, one bullet per row, unpunctuated items."""
    w, rng = ctx.w, ctx.rng
    room = ctx.tables["rooms"][0]
    w.t(rng.choice(("Plant summary\n\n", "## Equipment\n\n", "Asset list\n")))
    w.t(rng.choice(FILLER) + "\n\n")
    for e in _eq(ctx):
        w.t(rng.choice(("- ", "* ", "• ")) + f"{e['equipment_id']}: ")
        if not ctx.key_ent(e, "equipment_type"):
            w.t("plant item")
        w.t(", ")
        ctx.kw(e)
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(", ")
            ctx.named(str(d.resolve(e["standard"])))
        w.t("\n")
    if rng.random() < 0.5:
        return  # the list ends the text (a complete list in the no-punctuation style)
    w.t(f"\nRoom {room['room_id']} is ")
    ctx.floor(room)
    w.t(". " + rng.choice(FILLER))


def s_table(ctx: Ctx) -> None:
    """A pipe table in the text, with a sentence before and after."""
    w, rng = ctx.w, ctx.rng
    w.t("The register lists the following equipment. " + rng.choice(FILLER) + "\n\n")
    w.t("| ID | Type | Rating | Standard |\n|---|---|---|---|\n")
    for e in _eq(ctx):
        w.t(f"| {e['equipment_id']} | ")
        if not ctx.key_ent(e, "equipment_type"):
            w.t("-")
        w.t(" | ")
        ctx.kw(e, "plain")
        w.t(" | ")
        if d.resolve(e["standard"]) not in ctx.hide:
            ctx.named(str(d.resolve(e["standard"])))
        else:
            w.t("-")
        w.t(" |\n")
    w.t("\n" + rng.choice(FILLER) + " " + rng.choice(FILLER))


def s_fields(ctx: Ctx) -> None:
    """Key/value blocks per row (no final punctuation, consistently)."""
    w, rng = ctx.w, ctx.rng
    w.t(rng.choice(FILLER) + " " + rng.choice(FILLER) + "\n\n")
    for e in _eq(ctx):
        w.t(f"Asset: {e['equipment_id']}\nType: ")
        if not ctx.key_ent(e, "equipment_type"):
            w.t("see register")
        w.t("\nRating: ")
        ctx.kw(e, "plain")
        w.t("\nStandard: ")
        if d.resolve(e["standard"]) not in ctx.hide:
            ctx.named(str(d.resolve(e["standard"])))
        else:
            w.t("see register")
        w.t("\n\n")


def s_number_words(ctx: Ctx) -> None:
    """Numbers written as words; powers rounded to whole kilowatts in the tables."""
    w, rng = ctx.w, ctx.rng
    w.t(rng.choice(FILLER) + " ")
    for e in _eq(ctx):
        w.t("The ")
        if not ctx.key_ent(e, "equipment_type"):
            w.t("unit")
        w.t(f" ({e['equipment_id']}) is rated at ")
        ctx.kw(e, "words")
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(" and conforms to ")
            ctx.named(str(d.resolve(e["standard"])))
        w.t(". ")
        for t in _tasks_of(ctx, e)[:1]:
            w.t("Its ")
            ctx.named(str(d.resolve(t["activity"])), asserted=True)
            w.t(f" ({t['task_id']}) is done ")
            ctx.every(t)
            w.t(". ")
    w.t(rng.choice(FILLER))


def s_schedule(ctx: Ctx) -> None:
    """Maintenance described with frequency words."""
    w, rng = ctx.w, ctx.rng
    for e in _eq(ctx):
        w.t(f"{e['equipment_id']}, ")
        if not ctx.key_ent(e, "equipment_type", "a"):
            w.t("one of the assets")
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(" covered by ")
            ctx.named(str(d.resolve(e["standard"])))
        w.t(", draws ")
        ctx.kw(e)
        w.t(". ")
        for t in _tasks_of(ctx, e)[:2]:
            w.t(f"Task {t['task_id']} ({rng.choice(('the', 'a'))} ")
            ctx.named(str(d.resolve(t["activity"])))
            w.t(") is carried out on it ")
            ctx.every(t)
            w.t(". ")
    w.t(rng.choice(FILLER))


def s_rooms(ctx: Ctx) -> None:
    """Room by room, with ordinals and floors."""
    w, rng = ctx.w, ctx.rng
    for room in ctx.tables["rooms"]:
        w.t(f"Room {room['room_id']}, ")
        ctx.named(str(d.resolve(room["room_type"])), "the")
        w.t(", is ")
        ctx.floor(room)
        w.t(" and belongs to the ")
        ctx.named(str(d.resolve(room["department"])))
        w.t(". ")
        for e in _eq(ctx):
            if e["room_id"] != room["room_id"]:
                continue
            w.t(rng.choice(("It houses ", "In it sits ", "It contains ")))
            if not ctx.key_ent(e, "equipment_type", "a"):
                w.t("an asset")
            w.t(f" ({e['equipment_id']}, ")
            ctx.kw(e)
            w.t(")")
            if d.resolve(e["standard"]) not in ctx.hide:
                w.t(" built to ")
                ctx.named(str(d.resolve(e["standard"])))
            w.t(". ")
    w.t(rng.choice(FILLER))


def s_coref(ctx: Ctx) -> None:
    """ "EQ-001 is a diesel generator. It draws 450 kW." """
    w, rng = ctx.w, ctx.rng
    w.t(rng.choice(FILLER) + " ")
    for e in _eq(ctx):
        w.t(f"{e['equipment_id']} is ")
        if not ctx.key_ent(e, "equipment_type", "a"):
            w.t("on the list")
        w.t(". ")
        w.t(rng.choice(("It draws ", "It is rated at ", "It has a rating of ")))
        ctx.kw(e)
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(" and complies with ")
            ctx.named(str(d.resolve(e["standard"])))
        w.t(". ")
    w.t(rng.choice(FILLER))


def s_bounds(ctx: Ctx) -> None:
    """Bounds rather than values: "under 10 kW", "at least 250 kW"."""
    w, rng = ctx.w, ctx.rng
    w.t(rng.choice(FILLER) + " ")
    for e in _eq(ctx):
        w.t("The ")
        if not ctx.key_ent(e, "equipment_type"):
            w.t("item")
        w.t(f" {e['equipment_id']} draws ")
        ctx.bound(e)
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(" and is maintained to ")
            ctx.named(str(d.resolve(e["standard"])))
        w.t(". ")
    w.t(rng.choice(FILLER))


def s_negation(ctx: Ctx) -> None:
    """Narrative with negated, contrasted, historical and out-of-scope mentions of entities
    the tables do not hold (none of them is a claim that the entity is there)."""
    w, rng = ctx.w, ctx.rng
    absent = sorted({i.name for i in d.INDIVIDUALS if i.cls in (d._IET, d._HET, d._EET)} - ctx.view)
    pick = rng.sample(absent, 2)
    for e in _eq(ctx):
        w.t(f"{e['equipment_id']} is ")
        if not ctx.key_ent(e, "equipment_type", "a"):
            w.t("an asset")
        w.t(" rated at ")
        ctx.kw(e)
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(" under ")
            ctx.named(str(d.resolve(e["standard"])))
        w.t(". ")
    for ind in pick:
        k = rng.randrange(6)
        if k == 0:
            w.t("There is no ")
            ctx.named(ind, asserted=False, short=False)
            w.t(" on this site. ")
        elif k == 1:
            w.t("Unlike ")
            ctx.named(ind, "a", asserted=False, short=False)
            w.t(", none of these assets needs a dedicated supply. ")
        elif k == 2:
            w.t("The old ")
            ctx.named(ind, asserted=False, short=False)
            w.t(" was removed in 2019 and has not been replaced. ")
        elif k == 3:
            w.t("The register does not include ")
            ctx.named(ind, "a", asserted=False, short=False)
            w.t(". ")
        elif k == 4:
            w.t("(The ")
            ctx.named(ind, asserted=False, short=False)
            w.t(" in the east wing is outside the scope of this register.) ")
        else:
            w.t("No ")
            ctx.named(ind, asserted=False, short=False, plural=True)
            w.t(" are installed here. ")
    w.t(rng.choice(FILLER))


def s_joined(ctx: Ctx) -> None:
    """Facts reached through the room: department and floor stated about equipment."""
    w, rng = ctx.w, ctx.rng
    for e in _eq(ctx):
        room = _room_of(ctx, e)
        w.t(f"{e['equipment_id']}, ")
        if not ctx.key_ent(e, "equipment_type", "a"):
            w.t("an asset")
        w.t(", serves the ")
        dept = str(d.resolve(room["department"]))
        if ctx._next_wrong():
            others = sorted(
                {x for r in ctx.tables["rooms"] if (x := d.resolve(r["department"])) and x != dept}
            )
            bad = (
                rng.choice(others)
                if others
                else rng.choice(
                    sorted(
                        i.name for i in d.INDIVIDUALS if i.cls == "Department" and i.name != dept
                    )
                )
            )
            form = d.BY_NAME[bad].label
            w.wrong.append(
                {
                    "code": "prose.value_mismatch",
                    "span": [w.pos, w.pos + len(form)],
                    "claim": form,
                    "table": "rooms",
                    "column": "department",
                    "key": str(e["equipment_id"]),
                }
            )
            w.ent(bad, form)
        else:
            ctx.named(dept)
        w.t(" and sits ")
        ctx.floor(room)
        w.t(". ")
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t("It follows ")
            ctx.named(str(d.resolve(e["standard"])))
            w.t(". ")
    w.t(rng.choice(FILLER))


def s_aggregate(ctx: Ctx) -> None:
    """Counts, sums, comparisons and ranges over rows."""
    w, rng = ctx.w, ctx.rng
    eq, rooms, tasks = _eq(ctx), ctx.tables["rooms"], ctx.tables["maintenance"]
    n, r = len(eq), len(rooms)
    count_text = (
        f"{words(n) if rng.random() < 0.5 else n} assets in {words(r)} room{'s' if r != 1 else ''}"
    )
    bad_n = n + rng.choice((1, 2)) if n > 1 else n + 1
    bad_text = f"{words(bad_n)} assets in {words(r)} room{'s' if r != 1 else ''}"
    w.t("The register holds ")
    ctx.claim(count_text, lambda: bad_text, "equipment", "equipment_id", None)
    w.t(". ")
    total = sum(float(e["rated_power_kw"]) for e in eq)  # type: ignore[arg-type]
    w.t("Together they draw ")
    ctx.claim(
        f"{total:.1f} kW".replace(".0 kW", " kW"),
        lambda: f"{_off(rng, total):.1f} kW".replace(".0 kW", " kW"),
        "equipment",
        "rated_power_kw",
        None,
    )
    w.t(". ")
    if n >= 2:
        a, b = eq[0], eq[1]
        va, vb = float(a["rated_power_kw"]), float(b["rated_power_kw"])  # type: ignore[arg-type]
        if va != vb:
            more = "more" if va > vb else "less"
            other = "less" if more == "more" else "more"
            w.t(f"{a['equipment_id']} draws ")
            ctx.claim(
                f"{more} power than",
                lambda: f"{other} power than",
                "equipment",
                "rated_power_kw",
                str(a["equipment_id"]),
            )
            w.t(f" {b['equipment_id']}. ")
    if tasks:
        ms = sorted(int(t["interval_months"]) for t in tasks)  # type: ignore[call-overload]
        if ms[0] != ms[-1]:
            w.t("Maintenance intervals run ")
            ctx.claim(
                f"from {ms[0]} to {ms[-1]} months",
                lambda: f"from {ms[0] + 1} to {ms[-1] * 2} months",
                "maintenance",
                "interval_months",
                None,
            )
            w.t(". ")
    for e in eq:
        w.t(f"{e['equipment_id']} is ")
        if not ctx.key_ent(e, "equipment_type", "a"):
            w.t("listed")
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(" to ")
            ctx.named(str(d.resolve(e["standard"])))
        w.t(". ")
    w.t(rng.choice(FILLER))


def s_plurals(ctx: Ctx) -> None:
    """Grouped by type with plurals ("two VAV boxes, EQ-001 and EQ-002")."""
    w, rng = ctx.w, ctx.rng
    groups: dict[str, list[Row]] = {}
    for e in _eq(ctx):
        groups.setdefault(str(d.resolve(e["equipment_type"])), []).append(e)
    w.t(rng.choice(FILLER) + " ")
    for ind, rows in groups.items():
        ids = " and ".join(str(e["equipment_id"]) for e in rows)
        if ind in ctx.hide:
            w.t(f"{ids} {'are' if len(rows) > 1 else 'is'} also listed. ")
        else:
            w.t(f"{'There are' if len(rows) > 1 else 'There is'} {words(len(rows))} ")
            ctx.named(ind, plural=len(rows) > 1)
            w.t(f": {ids}. ")
        for e in rows:
            w.t(f"{e['equipment_id']} draws ")
            ctx.kw(e)
            if d.resolve(e["standard"]) not in ctx.hide:
                w.t(" and meets ")
                ctx.named(str(d.resolve(e["standard"])))
            w.t(". ")
    w.t(rng.choice(FILLER))


def s_makers(ctx: Ctx) -> None:
    """Manufacturers and rooms as relations."""
    w, rng = ctx.w, ctx.rng
    for e in _eq(ctx):
        w.t(f"{e['equipment_id']} (")
        if not ctx.key_ent(e, "equipment_type"):
            w.t("asset")
        w.t(") is ")
        ctx.rel(e, "manufacturer", rng.choice(("made by", "supplied by", "manufactured by")))
        w.t(f", installed in room {e['room_id']}")
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(", and complies with ")
            ctx.named(str(d.resolve(e["standard"])))
        w.t(". ")
    w.t(rng.choice(FILLER) + " " + rng.choice(FILLER))


def s_llm(ctx: Ctx) -> None:
    """An LLM-style summary: a heading, a lead sentence, bold-ish labels, a closing line."""
    w, rng = ctx.w, ctx.rng
    room = ctx.tables["rooms"][0]
    w.t(rng.choice(("# Facility overview\n\n", "**Summary**\n\n", "Overview\n\n")))
    w.t("Here is a summary of the equipment recorded for this site. ")
    w.t(f"The main room, {room['room_id']}, is ")
    ctx.floor(room)
    w.t(".\n\n")
    for i, e in enumerate(_eq(ctx), 1):
        w.t(f"{i}. **{e['equipment_id']}** - ")
        if not ctx.key_ent(e, "equipment_type", "a"):
            w.t("an asset")
        w.t(" rated at ")
        ctx.kw(e)
        if d.resolve(e["standard"]) not in ctx.hide:
            w.t(", compliant with ")
            ctx.named(str(d.resolve(e["standard"])))
        w.t(".\n")
    w.t(
        "\n"
        + rng.choice(
            (
                "Overall, the register is complete and consistent.",
                "Let me know if you need further detail on any asset.",
                "In summary, all assets are accounted for.",
            )
        )
    )


STYLES: tuple[Callable[[Ctx], None], ...] = (
    s_narrative,
    s_two_per_sentence,
    s_respectively,
    s_bullets,
    s_table,
    s_fields,
    s_number_words,
    s_schedule,
    s_rooms,
    s_coref,
    s_bounds,
    s_negation,
    s_joined,
    s_aggregate,
    s_plurals,
    s_makers,
    s_llm,
)

# --- defects placed after writing: unknown entities, truncation, length ---

UNKNOWN_SENTENCES: tuple[tuple[str, str], ...] = (
    ("The room also houses ", "a"),
    ("A new ", ""),
    ("Next to it stands ", "a"),
    ("The contractor also serviced ", "the"),
    ("Power for ", "the"),
)
UNKNOWN_TAILS = (
    " on the same circuit.",
    " was added last month.",
    ", which is working well.",
    ", fed from the same board.",
    " in the same area.",
)


def add_unknown(ctx: Ctx) -> None:
    rng, w = ctx.rng, ctx.w
    pool = sorted(
        {
            i.name
            for i in d.INDIVIDUALS
            if i.name in FORMS and i.cls in (d._IET, d._HET, d._EET, d._IMF, d._HMF, d._EMF)
        }
        - ctx.view
    )
    ind = rng.choice(pool)
    lead, art = rng.choice(UNKNOWN_SENTENCES)
    text = w.text.rstrip()
    sep = "\n\n" if text.endswith(("|", "\n")) or "\n" in text[-60:] else " "
    w.parts, w.pos = [text], len(text)
    w.t(sep + lead)
    if lead.startswith("A new "):
        ctx.named(ind, "", short=True)
    else:
        ctx.named(ind, art, short=True)
    w.t(
        rng.choice(UNKNOWN_TAILS) if not lead.startswith("Power") else " comes from the same panel."
    )


TRUNC_HEADINGS = (
    "\n\nOpen actions",
    "\n\n## Maintenance",
    "\n\nNotes:",
    "\n\nNext steps",
)


def truncate(ctx: Ctx) -> int:
    """Cut the text (mid-sentence at a word, or end on a dangling heading); returns the cut."""
    rng, w = ctx.rng, ctx.w
    text = w.text.rstrip()
    r = rng.random()
    if r < 0.3 and text[-1] in ".!?":
        head = rng.choice(TRUNC_HEADINGS)
        w.parts, w.pos = [text + head], len(text + head)
        return len(text + head)
    lo = len(text) // 2
    spaces = [
        i
        for i in range(lo, len(text) - 8)
        if text[i] == " " and text[i - 1].isalnum() and text[i + 1].isalnum()
    ]
    cut = rng.choice(spaces)
    if r > 0.8:  # cut, then closed with a period as if complete: "... replaced every."
        tail = rng.choice((" every.", ", e.g.", ", i.e.", " per."))
        w.parts, w.pos = [text[:cut] + tail], cut + len(tail)
        return cut
    w.parts, w.pos = [text[:cut]], cut
    return cut


# complete endings that are no sentence: a label line, a one-item list
CLEAN_ENDINGS = (
    "\n\nNext review: Q3",
    "\n\nOwner: estates team",
    "\n\nLast checked: March 2026",
    "\n\nFollow-up:\n- replace the worn drive belt",
    "\n\nAction:\n* none outstanding",
)


def length_band() -> tuple[float, float]:
    counts = sorted(len(p.read_text(encoding="utf-8").split()) for p in REFERENCES.glob("*.txt"))
    return float(counts[0]), float(counts[-1])


def short_text(ctx: Ctx) -> None:
    """A one-line summary (too short for the band), about one row."""
    w, rng = ctx.w, ctx.rng
    e = _eq(ctx)[0]
    w.t(f"{e['equipment_id']}: ")
    ctx.key_ent(e, "equipment_type", "a")
    w.t(", ")
    ctx.kw(e)
    if d.resolve(e["standard"]) not in ctx.hide:
        w.t(", to ")
        ctx.named(str(d.resolve(e["standard"])))
    w.t(rng.choice((".", ". All good.", ". Checked on site.")))


# --- building the set ---

FLAWS = (
    "clean",
    "clean",
    "clean",
    "mismatch",
    "mismatch",
    "unknown",
    "missing",
    "truncated",
    "mixed",
)


def _tables(rng: random.Random, style: Callable[[Ctx], None]) -> Tables:
    n_eq = rng.randint(2, 4)
    n_rooms = rng.randint(1, min(2, n_eq))
    t: Tables = g.clean_tables(rng, n_rooms, n_eq, n_eq + rng.randint(0, 2))
    if style in (s_number_words,) or rng.random() < 0.3:
        for e in t["equipment"]:
            v = float(e["rated_power_kw"])  # type: ignore[arg-type]
            if v >= 2:
                e["rated_power_kw"] = float(round(v))
    return t


def _write(
    seed: int, style: Callable[[Ctx], None], tables: Tables, wrong_at: int, hide: set[str]
) -> Ctx:
    ctx = Ctx(random.Random(seed), tables, wrong_at, hide)
    style(ctx)
    return ctx


def _labels(
    ctx: Ctx, prose: str, keys: list[str], cut: int, truncated: bool, band: tuple[float, float]
) -> list[dict[str, object]]:
    """What a correct gate reports, from what the writer recorded."""
    findings: list[dict[str, object]] = []
    mentioned = {ind for ind, end, _ in ctx.w.mentions if end <= cut}
    seen: set[str] = set()
    for ind, end, asserted in ctx.w.mentions:
        if end <= cut and asserted and ind not in ctx.view and ind not in seen:
            seen.add(ind)
            findings.append({"code": "prose.unknown_entity", "entity": ind})
    for k in dict.fromkeys(keys):
        if k not in mentioned:
            findings.append({"code": "prose.missing_entity", "entity": k})
    for x in ctx.w.wrong:
        span = x["span"]
        assert isinstance(span, list)
        if span[1] <= cut:
            assert prose[span[0] : span[1]] == x["claim"], (prose, x)
            findings.append(x)
    if truncated:
        findings.append({"code": "prose.truncated"})
    if not band[0] <= len(prose.split()) <= band[1]:
        findings.append({"code": "prose.length"})
    return findings


def build(seed: int, count: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    band = length_band()
    out: list[dict[str, object]] = []
    for i in range(count):
        style = STYLES[i % len(STYLES)]
        flaw = random.Random(seed * 1000 + i).choice(FLAWS)
        if i % 29 == 7:
            flaw = "length"
        tables = _tables(rng, style)
        keys = [
            x
            for e in tables["equipment"]
            for c in ("equipment_type", "standard")
            if (x := d.resolve(e[c]))
        ]
        sub = rng.randrange(1 << 30)
        probe = _write(sub, short_text if flaw == "length" else style, tables, -1, set())
        wrong_at = -1
        hide: set[str] = set()
        if flaw in ("mismatch", "mixed") and probe.w.claims:
            wrong_at = random.Random(sub + 1).randrange(probe.w.claims)
        if flaw == "missing" or (flaw == "mixed" and i % 2):
            hide = {random.Random(sub + 2).choice(keys)}
        ctx = _write(sub, short_text if flaw == "length" else style, tables, wrong_at, hide)
        if flaw == "unknown" or (flaw == "mixed" and i % 3 == 0):
            add_unknown(ctx)
        text = ctx.w.text.rstrip()
        while flaw != "length" and len(text.split()) < band[0] + 5:
            text += (" " if text[-1] in ".!?" else "\n\n") + ctx.rng.choice(FILLER)
        ctx.w.parts, ctx.w.pos = [text], len(text)
        cut = len(text)
        truncated = False
        if flaw == "truncated" or (flaw == "mixed" and i % 4 == 1):
            cut = truncate(ctx)
            truncated = True
        elif random.Random(sub + 3).random() < 0.15:
            end = random.Random(sub + 4).choice(CLEAN_ENDINGS)
            ctx.w.parts, ctx.w.pos = [text + end], len(text + end)
            cut = len(text + end)
        prose = ctx.w.text
        findings = _labels(ctx, prose, keys, cut, truncated, band)
        aid = f"nat-{i + 1:03d}"
        out.append(
            {
                "artifact": {
                    "id": aid,
                    "tables": tables,
                    "prose": prose,
                    "meta": {"style": style.__name__[2:], "flaw": flaw},
                },
                "label": {"id": aid, "style": style.__name__[2:], "findings": findings},
            }
        )
    return out


def main(seed: int, count: int, out: Path) -> None:
    lines = [json.dumps(x, ensure_ascii=False, sort_keys=True) for x in build(seed, count)]
    out.mkdir(parents=True, exist_ok=True)
    (out / "prose_natural.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write prose_natural.jsonl")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--count", type=int, default=340)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    main(args.seed, args.count, args.out)
    return 0


if __name__ == "__main__":
    assert math.isfinite(1.0)
    raise SystemExit(cli())

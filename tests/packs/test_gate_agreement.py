"""Gate agreement (issue 28): a spelling variant of a resolvable cell changes no verdict.

For generated trial registries (trials, arms; valid and invalid drugs, routes, doses, areas;
unknown and placeholder cells), every resolvable cell is replaced by a spelling that resolves
to the same entity: another label or alias, the IRI fragment, other case, full-width (NFKC)
letters, extra or exotic whitespace, a trademark sign, trailing punctuation. The value gate's
verdict (codes, locations, rejected cells), the canonical artifact (the bytes COMMIT would
write) and the RI gate's verdict (codes, locations, rejected cells) must be the same as for
the original. Each example judges the original and its variants in one call per gate (the
gates are batched: one HermiT call for a cohort).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from effectors.registry import GateContext, build_gate
from harness.canonical import apply_canonical
from harness.models import Artifact, CellRef, Verdict
from harness.pack import load_pack
from harness.pools import Pools
from ontology import load_pools
from tests.conftest import ROOT

pytestmark = [pytest.mark.java, pytest.mark.slow]

TRIALS = ROOT / "tests" / "packs" / "trials"
VARIANTS = 4  # spellings judged with each original, in the same gate calls
OBJECT = {"trials": ("phase", "area"), "arms": ("intervention", "route")}
DRUGS = ["atorvastatin", "rosuvastatin", "metformin", "empagliflozin", "dapagliflozin",
         "semaglutide", "pembrolizumab", "nivolumab"]
ROUTES = ["oral", "intravenous", "subcutaneous"]
PHASES = ["phase_1", "phase_2", "phase_3", "phase_4"]
AREAS = ["oncology", "cardiology", "endocrinology"]
ODD = ["simvastatin", "Lipitorr", "TBD", "", "sub-cutaneous"]  # unknown or placeholder
_FULL = {c: chr(ord(c) + 0xFEE0) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Pools]:
    pack = load_pack(TRIALS)
    cache = tmp_path_factory.mktemp("cache")
    pools = load_pools(pack, cache)
    ctx = GateContext(pack=pack, pools=pools, cache_dir=cache)
    return build_gate("value_gate", ctx), build_gate("ri_gate", ctx), pools


def _value(draw: st.DrawFn, pool: list[str], pools: Pools) -> str:
    """A cell naming one of `pool` (its canonical label), or now and then an odd value."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(ODD))
    return pools.canonical(draw(st.sampled_from(pool)))


@st.composite
def registries(draw: st.DrawFn, pools: Pools) -> Artifact:
    n_trials = draw(st.integers(1, 2))
    trials = [{"trial_id": f"NCT-{i}", "title": draw(st.sampled_from(
                   ["Statins after MI", "SGLT2 inhibitors in heart failure (EMPA-X)",
                    "PD-1 blockade, second line", "TBD"])),
               "phase": _value(draw, PHASES, pools), "area": _value(draw, AREAS, pools),
               "enrolment": draw(st.sampled_from([40, 1200, 0]))}
              for i in range(n_trials)]
    arms = [{"trial_id": f"NCT-{draw(st.integers(0, n_trials))}",  # n_trials: a dangling FK
             "arm_id": draw(st.sampled_from("ABC")),
             "intervention": _value(draw, DRUGS, pools), "route": _value(draw, ROUTES, pools),
             "dose_mg": draw(st.sampled_from([10, 20, 40, 80, 200, 500, 800, 2000, 3000]))}
            for _ in range(draw(st.integers(1, 4)))]
    return Artifact(id="reg", tables={"trials": trials, "arms": arms})


def spell(draw: st.DrawFn, individual: str, pools: Pools) -> str:
    """A spelling of `individual` that the pack's rule resolves to it."""
    info = pools.individuals[individual]
    aliases = [a for a, ind in pools.aliases.items() if ind == individual]
    text = draw(st.sampled_from([individual, *info.labels, *aliases]))
    for step in draw(st.lists(st.sampled_from(
            ["upper", "lower", "title", "swap", "full", "space", "nbsp", "tab", "sign",
             "dot", "comma", "ellipsis"]), max_size=4)):
        if step == "upper":
            text = text.upper()
        elif step == "lower":
            text = text.lower()
        elif step == "title":
            text = text.title()
        elif step == "swap":
            text = text.swapcase()
        elif step == "full":
            text = "".join(_FULL.get(c, c) for c in text)
        elif step == "space":
            text = "  " + text.replace(" ", "   ") + " "
        elif step == "nbsp":
            text = text.replace(" ", "\u00a0") + "\u2002"
        elif step == "tab":
            text = "\t" + text + "\n"
        elif step == "sign":
            text += draw(st.sampled_from(["®", "™", " ™", "©", "℠"]))
        elif step in ("dot", "comma", "ellipsis"):
            text += {"dot": ".", "comma": ",", "ellipsis": "…"}[step]
    return text


@st.composite
def variant(draw: st.DrawFn, base: Artifact, pools: Pools) -> Artifact:
    tables: dict[str, list[dict[str, Any]]] = {}
    for table, rows in base.tables.items():
        out = []
        for original in rows:
            row = dict(original)
            for column in OBJECT[table]:
                ind = pools.resolve(row[column])
                if ind is not None:
                    row[column] = spell(draw, ind, pools)
            out.append(row)
        tables[table] = out
    return Artifact(id=base.id, tables=tables)


def summary(v: Verdict) -> tuple[Any, ...]:
    return (v.passed, sorted((c.code, c.severity, c.location.table, c.location.row,
                              c.location.column) for c in v.critiques),
            sorted(str(r) for r in v.rejected))


def committed(a: Artifact) -> bytes:
    return json.dumps(a.model_dump(mode="json"), sort_keys=True, ensure_ascii=False).encode()


@settings(max_examples=500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_spelling_variants_change_no_verdict_and_no_committed_byte(
    world: tuple[Any, Any, Pools], data: st.DataObject
) -> None:
    value_gate, ri_gate, pools = world
    base = data.draw(registries(pools))
    cohort = [base, *(data.draw(variant(base, pools)) for _ in range(VARIANTS))]
    values: list[Verdict] = value_gate.judge(cohort)
    canon = [apply_canonical(a, v.canonical) for a, v in zip(cohort, values, strict=True)]
    ris: list[Verdict] = ri_gate.judge(canon)
    for a, v, c, r in zip(cohort[1:], values[1:], canon[1:], ris[1:], strict=True):
        note = json.dumps(a.tables, ensure_ascii=False)
        assert summary(v) == summary(values[0]), note
        assert committed(c) == committed(canon[0]), note
        assert summary(r) == summary(ris[0]), note
        assert all(a.value(CellRef.parse(x.cell)) == x.raw for x in v.canonical)


# -- the facility pack: the demo corpus's artifacts, all three gates ---------------------------

DEMO = ROOT / "packs" / "facility" / "corpus" / "demo.jsonl"


@pytest.fixture(scope="module")
def demo() -> list[Artifact]:
    return [Artifact.model_validate_json(line) for line in DEMO.read_text().splitlines() if line]


@st.composite
def facility_variant(draw: st.DrawFn, base: Artifact, pools: Pools,
                     objects: dict[str, list[str]]) -> Artifact:
    tables: dict[str, list[dict[str, Any]]] = {}
    for table, rows in base.tables.items():
        out = []
        for original in rows:
            row = dict(original)
            for column in objects.get(table, ()):
                ind = pools.resolve(row.get(column))
                if ind is not None:
                    row[column] = spell(draw, ind, pools)
            out.append(row)
        tables[table] = out
    return base.model_copy(update={"tables": tables})


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_facility_spelling_variants_change_no_verdict_of_any_gate(
    facility_gates: dict[str, Any], demo: list[Artifact], data: st.DataObject
) -> None:
    value_gate, ri_gate, prose_gate = (facility_gates[n] for n in
                                       ("value_gate", "ri_gate", "prose_gate"))
    pools: Pools = value_gate.pools
    objects = {t: [c for c, b in binding.columns.items() if b.kind == "object"]
               for t, binding in value_gate.pack.tables.items()}
    base = demo[data.draw(st.integers(0, len(demo) - 1))]
    cohort = [base, *(data.draw(facility_variant(base, pools, objects)) for _ in range(3))]
    values: list[Verdict] = value_gate.judge(cohort)
    canon = [apply_canonical(a, v.canonical) for a, v in zip(cohort, values, strict=True)]
    ris: list[Verdict] = ri_gate.judge(canon)
    proses: list[Verdict] = prose_gate.judge(canon)
    for a, v, c, r, p in zip(cohort[1:], values[1:], canon[1:], ris[1:], proses[1:],
                             strict=True):
        note = json.dumps(a.tables, ensure_ascii=False)[:2000]
        assert summary(v) == summary(values[0]), note
        assert committed(c) == committed(canon[0]), note
        assert summary(r) == summary(ris[0]), note
        assert summary(p) == summary(proses[0]), note

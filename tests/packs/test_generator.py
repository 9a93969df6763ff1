"""The facility pack's generator: determinism, truth that points at real defects, clean
originals that are really clean, and a defect mix close to the specified rates."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "packs" / "facility"
CORPUS = PACK / "corpus"
SCRIPT = PACK / "generate.py"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


gen = _load("facility_generate", SCRIPT)
d: Any = gen.d  # the domain module generate.py uses


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def flawed() -> list[dict[str, Any]]:
    return _jsonl(CORPUS / "demo.jsonl")


@pytest.fixture(scope="module")
def clean() -> list[dict[str, Any]]:
    return _jsonl(CORPUS / "demo.clean.jsonl")


@pytest.fixture(scope="module")
def truth() -> list[dict[str, Any]]:
    return _jsonl(CORPUS / "demo.truth.jsonl")


def _run(*args: str) -> None:
    subprocess.run([sys.executable, str(SCRIPT), *args], check=True, cwd=ROOT)


# --- determinism and freshness of the checked-in files ---


def test_corpus_is_deterministic_and_checked_in_copy_is_current(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run("corpus", "--seed", "7", "--count", "240", "--out", str(a))
    _run("corpus", "--seed", "7", "--count", "240", "--out", str(b))
    for name in ("demo.jsonl", "demo.clean.jsonl", "demo.truth.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
        assert (a / name).read_bytes() == (CORPUS / name).read_bytes(), f"regenerate {name}"


def test_other_seed_gives_other_corpus() -> None:
    assert gen.build_corpus(8, 20)["demo.jsonl"] != gen.build_corpus(7, 20)["demo.jsonl"]


def test_owl_and_references_are_deterministic_and_current(tmp_path: Path) -> None:
    _run("owl", "--out", str(tmp_path / "a.owl"))
    assert (tmp_path / "a.owl").read_bytes() == gen.render_owl().encode("utf-8")
    assert (tmp_path / "a.owl").read_bytes() == (PACK / "ontology" / "facility.owl").read_bytes()
    _run("references", "--out", str(tmp_path / "refs"))
    shipped = sorted(p.name for p in (PACK / "references").glob("*.txt"))
    assert sorted(p.name for p in (tmp_path / "refs").glob("*.txt")) == shipped
    for name in shipped:
        assert (tmp_path / "refs" / name).read_bytes() == (PACK / "references" / name).read_bytes()


# --- the ontology spec ---


def test_ontology_names_match_the_pack() -> None:
    pack = tomllib.loads((PACK / "pack.toml").read_text(encoding="utf-8"))
    owl = (PACK / "ontology" / "facility.owl").read_text(encoding="utf-8")
    assert pack["ontology"]["namespace"] == d.NAMESPACE
    for table in pack["tables"].values():
        assert f'<owl:Class rdf:about="#{table["row_class"]}">' in owl
        for col in table["columns"].values():
            if col["kind"] != "id":
                assert f'rdf:about="#{col["property"]}"' in owl
    assert owl.count("<owl:NamedIndividual rdf:about=") >= 60
    assert len(d.INDIVIDUALS) == len(d.BY_NAME)


def test_labels_are_specific_and_unambiguous() -> None:
    assert len(d.TERMS) == len({t for t, _ in d.TERMS})  # one individual per term
    for term, name in d.TERMS:
        assert len(term.split()) >= 2, (term, name)
    for closing in gen.CLOSINGS:
        assert d.find_entities(closing) == []


# --- truth points at real defects ---


def _cell_truth(truth: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in truth if "table" in t]


def test_every_differing_cell_has_exactly_one_truth_entry(
    flawed: list[dict[str, Any]], clean: list[dict[str, Any]], truth: list[dict[str, Any]]
) -> None:
    assert [a["id"] for a in flawed] == [a["id"] for a in clean]
    diffs = set()
    for f, c in zip(flawed, clean, strict=True):
        assert f["meta"] == c["meta"]
        for table, rows in c["tables"].items():
            assert len(rows) == len(f["tables"][table])
            for i, row in enumerate(rows):
                assert list(row) == list(f["tables"][table][i])
                for col, value in row.items():
                    if f["tables"][table][i][col] != value:
                        diffs.add((c["id"], table, i, col))
    entries = [(t["artifact_id"], t["table"], t["row"], t["column"]) for t in _cell_truth(truth)]
    assert len(entries) == len(set(entries))
    assert set(entries) == diffs


def test_cell_truth_observed_is_the_flawed_value_and_of_its_kind(
    flawed: list[dict[str, Any]], clean: list[dict[str, Any]], truth: list[dict[str, Any]]
) -> None:
    by_id = {a["id"]: a for a in flawed}
    clean_by_id = {a["id"]: a for a in clean}
    for t in _cell_truth(truth):
        art = by_id[t["artifact_id"]]
        row = art["tables"][t["table"]][t["row"]]
        assert row[t["column"]] == t["observed"]
        code = t["code"]
        assert t["gate"] == {"value": "value_gate", "ri": "ri_gate"}[code.split(".")[0]]
        if code == "value.placeholder":
            assert t["observed"] in d.PLACEHOLDERS
        elif code == "value.unknown":
            assert d.resolve(t["observed"]) is None and t["observed"] not in d.PLACEHOLDERS
        elif code == "value.disjoint":
            name = d.resolve(t["observed"])
            assert name is not None
            want = d.OBJECT_COLUMNS[t["table"]][t["column"]]
            if d.top_class(name) == want:  # same top class: a cross-domain value
                etype = d.resolve(row["equipment_type"])
                assert etype is not None, "a disjoint row must be classifiable"
                assert d.BY_NAME[etype].domain != d.BY_NAME[name].domain
        elif code == "ri.fk_orphan":
            keys = {
                "room_id": {r["room_id"] for r in art["tables"]["rooms"]},
                "equipment_id": {e["equipment_id"] for e in art["tables"]["equipment"]},
            }[t["column"]]
            assert t["observed"] not in keys
            source = clean_by_id[t["artifact_id"]]["tables"][t["table"]][t["row"]]
            assert source[t["column"]] in keys
        else:
            pytest.fail(f"unexpected code {code}")


def test_prose_truth_points_at_real_defects(
    flawed: list[dict[str, Any]], truth: list[dict[str, Any]]
) -> None:
    by_id = {a["id"]: a for a in flawed}
    for t in truth:
        art = by_id[t["artifact_id"]]
        prose = art["prose"]
        if t["code"] == "prose.unknown_entity":
            assert t["gate"] == "prose_gate"
            label = d.BY_NAME[t["entity"]].label
            start, end = t["span"]
            assert prose[start:end] == label
            assert d.count_term(prose, label) == 1
            assert t["entity"] not in gen.cell_entities(art["tables"])
            assert t["entity"] in d.find_entities(prose)
        elif t["code"] == "prose.truncated":
            assert prose.endswith(t["observed"]) and len(t["observed"]) == 40
            assert prose.rstrip()[-1] not in ".!?"


def test_flawed_prose_mentions_exactly_its_tables_plus_hallucinations(
    flawed: list[dict[str, Any]], truth: list[dict[str, Any]]
) -> None:
    extra: dict[str, set[str]] = defaultdict(set)
    for t in truth:
        if t["code"] == "prose.unknown_entity":
            extra[t["artifact_id"]].add(t["entity"])
    for art in flawed:
        found = set(d.find_entities(art["prose"]))
        assert found == gen.expected_mentions(art["tables"]) | extra[art["id"]], art["id"]


def test_canonical_failure_is_in_the_corpus(
    flawed: list[dict[str, Any]], truth: list[dict[str, Any]]
) -> None:
    by_id = {a["id"]: a for a in flawed}
    hits = [
        t for t in truth
        if t["code"] == "value.disjoint" and t["observed"] == "ASHRAE 62.1"
        and by_id[t["artifact_id"]]["tables"]["equipment"][t["row"]]["equipment_type"]
        == "CT scanner"
    ]
    assert hits


# --- clean originals are clean ---


def _policy_placeholder(value: object) -> bool:
    policy = tomllib.loads((PACK / "pack.toml").read_text(encoding="utf-8"))["policy"]
    if not isinstance(value, str):
        return False
    if value.strip().lower() in {p.lower() for p in policy["placeholders"]}:
        return True
    return any(re.search(p, value) for p in policy["placeholder_patterns"])


def _check_relations(art: dict[str, Any]) -> None:
    rooms, eq, tasks = (art["tables"][t] for t in ("rooms", "equipment", "maintenance"))
    room_ids = [r["room_id"] for r in rooms]
    eq_ids = [e["equipment_id"] for e in eq]
    assert len(set(room_ids)) == len(room_ids) and len(set(eq_ids)) == len(eq_ids)
    assert len({t["task_id"] for t in tasks}) == len(tasks)
    load: Counter[str] = Counter()
    for e in eq:
        load[e["room_id"]] += e["rated_power_kw"]
    assert max(load.values()) <= d.ROOM_POWER_BUDGET_KW
    valid = Counter(t["equipment_id"] for t in tasks if t["equipment_id"] in eq_ids)
    assert all(valid[e] >= 1 for e in eq_ids), art["id"]


@pytest.mark.slow
def test_clean_artifacts_are_clean(clean: list[dict[str, Any]]) -> None:
    assert len(clean) >= 200
    for art in clean:
        rooms, eq, tasks = (art["tables"][t] for t in ("rooms", "equipment", "maintenance"))
        assert 2 <= len(rooms) <= 4 and 4 <= len(eq) <= 8 and 5 <= len(tasks) <= 12
        for table, rows in art["tables"].items():
            for row in rows:
                assert tuple(row) == d.COLUMNS[table]
                for col, cls in d.OBJECT_COLUMNS[table].items():
                    assert not _policy_placeholder(row[col])
                    name = d.resolve(row[col])
                    assert name is not None and d.top_class(name) == cls, (art["id"], row[col])
                    assert row[col] == d.BY_NAME[name].label  # cells use the preferred label
        for e in eq:
            domain = d.BY_NAME[d.resolve(e["equipment_type"])].domain
            assert d.BY_NAME[d.resolve(e["standard"])].domain == domain
            assert d.BY_NAME[d.resolve(e["manufacturer"])].domain == domain
            assert e["room_id"] in {r["room_id"] for r in rooms}
            assert isinstance(e["rated_power_kw"], float) and e["rated_power_kw"] > 0
        assert all(-3 <= r["floor"] <= 40 for r in rooms)
        assert all(1 <= t["interval_months"] <= 120 for t in tasks)
        assert all(t["equipment_id"] in {e["equipment_id"] for e in eq} for t in tasks)
        _check_relations(art)
        prose = art["prose"]
        assert prose.endswith(".") and 100 <= len(prose.split()) <= 300
        assert set(d.find_entities(prose)) == gen.expected_mentions(art["tables"])
        keys = {d.resolve(e[c]) for e in eq for c in ("equipment_type", "standard")}
        assert keys <= set(d.find_entities(prose))


def test_flawed_artifacts_keep_tasks_and_power_budgets(flawed: list[dict[str, Any]]) -> None:
    for art in flawed:
        _check_relations(art)


def test_prose_lengths_fall_inside_the_references(flawed: list[dict[str, Any]]) -> None:
    refs = [len(p.read_text(encoding="utf-8").split()) for p in (PACK / "references").glob("*.txt")]
    assert len(refs) == 16 and min(refs) <= 70 and max(refs) >= 800
    for art in flawed:
        assert min(refs) <= len(art["prose"].split()) <= max(refs)


# --- the defect mix ---


def test_defect_rates_are_roughly_as_specified(
    clean: list[dict[str, Any]], truth: list[dict[str, Any]]
) -> None:
    n = len(clean)
    arts: dict[str, set[str]] = defaultdict(set)
    for t in truth:
        arts[t["code"]].add(t["artifact_id"])
    per_artifact = Counter(t["code"] for t in truth if t["code"] != "value.placeholder")
    for code, share in gen.KIND_SHARES.items():
        assert per_artifact[code] == len(arts[code])  # at most one per artifact
        assert abs(len(arts[code]) / n - share) <= 0.02, code
    object_cells = sum(
        len(a["tables"][t]) * len(cols) for a in clean for t, cols in d.OBJECT_COLUMNS.items()
    )
    placeholders = sum(1 for t in truth if t["code"] == "value.placeholder")
    assert 0.07 <= placeholders / object_cells <= 0.11
    untouched = n - len({t["artifact_id"] for t in truth})
    assert 0.20 <= untouched / n <= 0.30


# --- labelled prose cases (prose_cases.py) ---


def test_prose_cases_are_deterministic_and_checked_in_copy_is_current() -> None:
    cases = _load("facility_prose_cases", PACK / "prose_cases.py")
    shipped = (CORPUS / "prose_cases.jsonl").read_text(encoding="utf-8").splitlines()
    labels = (CORPUS / "prose_labels.jsonl").read_text(encoding="utf-8").splitlines()
    by_id = {json.loads(line)["id"]: line for line in shipped}
    label_by_id = {json.loads(line)["id"]: line for line in labels}
    for kind in cases.KINDS:
        for i in (0, 7, 59):
            artifact, label = cases.build_case(5, kind, i)
            assert gen._line(artifact).rstrip("\n") == by_id[artifact["id"]], "regenerate"
            assert gen._line(label).rstrip("\n") == label_by_id[label["id"]]
    kinds = Counter(json.loads(line)["kind"] for line in labels)
    assert kinds == {k: 60 for k in cases.KINDS}


def test_long_narratives_have_the_lengths_asked_for() -> None:
    cases = _load("facility_prose_cases", PACK / "prose_cases.py")
    words = [len(str(cases.long_artifact(3, i)["prose"]).split()) for i in range(20)]
    assert all(200 <= w <= 800 for w in words)
    assert max(words) - min(words) > 300
    assert d.find_entities(str(cases.long_artifact(3, 0)["prose"]))

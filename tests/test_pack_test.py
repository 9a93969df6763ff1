"""`membrane pack test`: a pack's own examples through the real gates (HermiT, DuckDB, the
prose gate); a wrong expectation fails with a readable diff (exit 1), bad input exits 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.corpus import load_json
from harness.errors import CorpusError
from harness.packtest import Expect, Observed, _case
from tests.conftest import FACILITY

java = pytest.mark.java


def _copy(tmp_path: Path) -> Path:
    pack = tmp_path / "facility"
    shutil.copytree(FACILITY, pack, ignore=shutil.ignore_patterns("corpus", "__pycache__"))
    return pack


@java
def test_the_facility_pack_passes_its_tests(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "test", str(FACILITY), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["failed"] == 0 and data["passed"] == data["cases"] >= 5
    got = {r["name"]: [o["code"] for o in r["got"]] for r in data["results"]}
    assert got["a clean imaging room passes every gate"] == []
    assert "value.disjoint" in got["an HVAC standard on a fluoroscopy system (the canonical failure)"]


@java
def test_a_wrong_expectation_fails_with_a_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = _copy(tmp_path)
    tests = pack / "tests" / "examples.jsonl"
    lines = tests.read_text(encoding="utf-8").splitlines()
    case = json.loads(lines[1])
    case["expect"] = [{"code": "value.disjoint", "cell": "equipment[0].manufacturer"}]
    lines[1] = json.dumps(case)
    clean = json.loads(lines[0])
    clean["expect"] = [{"code": "ri.fk_orphan"}]  # expects a finding that does not come
    lines[0] = json.dumps(clean)
    tests.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["pack", "test", str(pack)]) == 1
    out = capsys.readouterr().out
    assert "FAIL tests/examples.jsonl:2 an HVAC standard" in out
    assert "  - expected value.disjoint at equipment[0].manufacturer: not reported" in out
    assert "  + unexpected value.disjoint at equipment[0].standard (error, value_gate)" in out
    assert "FAIL tests/examples.jsonl:1 a clean imaging room" in out
    assert "  - expected ri.fk_orphan: not reported" in out
    assert "ok   tests/examples.jsonl:3" in out
    assert out.rstrip().endswith("3 passed, 2 failed")


def test_a_bad_test_line_exits_2_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = _copy(tmp_path)
    tests = pack / "tests" / "examples.jsonl"
    tests.write_text(tests.read_text(encoding="utf-8") + '{"name": "x", "expct": []}\n',
                     encoding="utf-8")
    assert main(["pack", "test", str(pack)]) == 2
    err = capsys.readouterr().err
    assert "tests/examples.jsonl:6: invalid test case at `artifact`" in err


def test_a_pack_without_tests_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack = _copy(tmp_path)
    shutil.rmtree(pack / "tests")
    assert main(["pack", "test", str(pack)]) == 2
    assert "the pack has no tests" in capsys.readouterr().err


def test_expectations_match_code_and_place() -> None:
    o = Observed("ri.fk_orphan", "error", "ri_gate", "equipment[0].room_id", "equipment", "m")
    assert Expect(code="ri.fk_orphan").matches(o)
    assert Expect(code="ri.fk_orphan", cell="equipment[0].room_id").matches(o)
    assert Expect(code="ri.fk_orphan", table="equipment").matches(o)
    assert not Expect(code="ri.fk_orphan", cell="equipment[1].room_id").matches(o)
    assert not Expect(code="ri.fk_orphan", table="rooms").matches(o)
    assert not Expect(code="ri.check").matches(o)
    with pytest.raises(ValueError):
        Expect(code="x.y", cell="a[0].b", table="a")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "artifact", "expect", "id", "tables", "code", "cell", "rooms"]),
        inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_a_test_line_is_a_case_or_a_corpus_error(payload: object) -> None:
    from harness.pack import load_pack

    pack = load_pack(FACILITY)
    raw = json.dumps(payload).encode()
    try:
        case = _case(load_json(raw, Path("t.jsonl"), 1), pack, Path("t.jsonl"), 1)
    except CorpusError as exc:
        assert exc.file == "t.jsonl" and exc.line == 1
    else:
        assert case.artifact.id

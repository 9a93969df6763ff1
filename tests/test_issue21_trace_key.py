"""Issue 21: `trace why ARTIFACT TABLE ROW COLUMN` finds ROW by the pack's declared `key`,
not by whichever column sorts first in the committed (canonical, key-sorted) JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import ConfigError
from harness.inspect import row_index
from harness.pack import load_pack

ROOT = Path(__file__).resolve().parent.parent
PACKS = [ROOT / "packs" / "facility", *sorted((ROOT / "tests" / "packs").glob("*/pack.toml"))]


def _rows(columns: list[str], key: list[str]) -> list[dict[str, object]]:
    """Three rows, columns in sorted order (as committed); row 0's first-sorting column holds
    row 2's key, so a lookup by the first column would find the wrong row."""
    rows: list[dict[str, object]] = [{c: f"{c}-{i}" for c in sorted(columns)} for i in range(3)]
    first = sorted(columns)[0]
    if first not in key:
        rows[0][first] = "/".join(str(rows[2][k]) for k in key)
    return rows


@pytest.mark.parametrize("pack_dir", PACKS, ids=lambda p: Path(p).parent.name if
                         Path(p).name == "pack.toml" else Path(p).name)
def test_every_table_of_every_pack_is_found_by_its_declared_key(pack_dir: Path) -> None:
    pack = load_pack(pack_dir)
    for table, binding in pack.tables.items():
        rows = _rows(list(binding.columns), list(binding.key))
        tables = {table: rows}
        for i, row in enumerate(rows):
            assert row_index(tables, table, pack.row_key(table, row), list(binding.key)) == i


def test_the_facility_rooms_key_is_room_id_not_the_first_sorted_column() -> None:
    rows = [
        {"department": "R-2", "floor": 0, "room_id": "R-1", "room_type": "x"},
        {"department": "icu", "floor": 1, "room_id": "R-2", "room_type": "y"},
    ]
    assert row_index({"rooms": rows}, "rooms", "R-2", ["room_id"]) == 1
    assert row_index({"rooms": rows}, "rooms", "1", ["room_id"]) == 1  # an index still works


def test_a_composite_key_is_joined_by_slash() -> None:
    rows = [{"arm_id": "A", "trial_id": "T1"}, {"arm_id": "B", "trial_id": "T1"}]
    assert row_index({"arms": rows}, "arms", "T1/B", ["trial_id", "arm_id"]) == 1
    with pytest.raises(ConfigError):
        row_index({"arms": rows}, "arms", "B", ["trial_id", "arm_id"])


def test_without_a_pack_a_value_naming_one_row_is_enough_and_an_ambiguous_one_is_refused() -> None:
    rows = [{"a": "K1", "b": "same", "n": 1}, {"a": "K2", "b": "same", "n": 1}]
    assert row_index({"t": rows}, "t", "K2") == 1
    with pytest.raises(ConfigError):
        row_index({"t": rows}, "t", "same")
    assert row_index({"t": rows}, "t", "1") == 1  # digits without a pack: the index


def test_a_numeric_key_wins_over_the_index() -> None:
    rows = [{"id": 2, "x": "a"}, {"id": 1, "x": "b"}, {"id": 7, "x": "c"}]
    assert row_index({"t": rows}, "t", "1", ["id"]) == 1
    assert row_index({"t": rows}, "t", "2", ["id"]) == 0  # the key 2, not row 2


@pytest.mark.java
def test_trace_why_on_the_demo_finds_a_room_by_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = ROOT / "packs" / "facility"
    corpus = tmp_path / "one.jsonl"
    first = (pack / "corpus" / "demo.jsonl").read_text(encoding="utf-8").splitlines()[0]
    corpus.write_text(first + "\n", encoding="utf-8")
    ws = tmp_path / "ws"
    argv = ["batch", str(corpus), "--pack", str(pack), "-w", str(ws), "--no-progress", "--json"]
    assert main(argv) == 0
    capsys.readouterr()
    code = main(["trace", "why", "fac-0001", "rooms", "R-G05", "room_type", "-w", str(ws), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    prov = json.loads(out)
    room = json.loads(first)["tables"]["rooms"][0]
    assert room["room_id"] == "R-G05"
    assert prov["cell"] == "rooms[0].room_type"
    assert prov["value"] == "diagnostic imaging suite"

"""`pack new --from-sample`: the sample is untrusted input. Every problem is a CorpusError
naming the file and line, never a traceback, and a refused sample leaves no folder behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import packsample
from harness.cli import main
from harness.errors import CorpusError
from harness.packsample import read_sample


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "".join(
            (x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)) + "\n" for x in lines
        ),
        encoding="utf-8",
    )
    return path


def _art(i: int, rows: list[dict[str, Any]], table: str = "items") -> dict[str, Any]:
    return {"id": f"a-{i}", "tables": {table: rows}}


GOOD = [
    _art(
        1,
        [
            {"item_id": "I1", "kind": "lamp", "weight": 2.5},
            {"item_id": "I2", "kind": "chair", "weight": 6},
        ],
    ),
    _art(2, [{"item_id": "I1", "kind": "lamp", "weight": 1.0}]),
]


def _error(path: Path) -> CorpusError:
    with pytest.raises(CorpusError) as info:
        read_sample(path)
    return info.value


def test_a_good_sample_is_profiled(tmp_path: Path) -> None:
    s = read_sample(_write(tmp_path / "s.jsonl", GOOD))
    items = s.tables["items"]
    assert items.key == "item_id" and items.rows == 3
    kinds = {c.name: c.kind for c in items.columns.values()}
    assert kinds == {"item_id": "id", "kind": "object", "weight": "data"}
    assert not items.columns["weight"].whole  # 2.5: DOUBLE in the spine
    big = read_sample(_write(tmp_path / "b.jsonl", [_art(1, [{"k": "x", "n": 2**63}])]))
    assert not big.tables["items"].columns["n"].whole  # past BIGINT: DOUBLE


def test_bad_lines_are_all_counted_and_the_first_named(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", [GOOD[0], "{not json", "[1, 2]", GOOD[1], '{"id": 1}'])
    err = _error(path)
    assert (err.file, err.line) == (str(path), 2)
    assert err.message.startswith("3 bad line(s) in the sample; the first: not valid JSON")
    assert f"{path}:3: an artifact must be a JSON object" in err.message
    assert f"{path}:5: invalid artifact at `id`" in err.message


@pytest.mark.parametrize(
    ("lines", "line", "words"),
    [
        ([{"id": "a", "tables": {}}], 1, "no table with a row"),
        ([""], None, "holds no artifact"),
        (
            [_art(1, [{"k": "x", "n": 1}]), _art(2, [{"k": "y", "n": "two"}])],
            2,
            "column items.n mixes numbers and strings (strings from line 2, numbers from line 1)",
        ),
        ([_art(1, [{"k": "x", "ok": True}])], 1, "column items.ok holds true/false"),
        ([_art(1, [{"k": "x", "a.b": "v"}])], 1, "column name 'a.b' of table 'items' holds"),
        ([_art(1, [{"k": "x", "_row": "v"}])], 1, "starts with '_'"),
        ([_art(1, [{"k": "x"}], table="t[0]")], 1, "table name 't[0]' holds"),
        ([_art(1, [{"k": "x", "v": "bell\x07"}])], 1, "cell items[0].v holds a control character"),
        ([_art(1, [{"k": "x"}, {"k": "x"}])], 1, "table 'items' has no column that is non-null"),
        (
            [_art(1, [{"k": "x", "Name": "a"}]), _art(2, [{"k": "y", "name": "b"}])],
            2,
            "column of 'items' 'name' differs only in case from 'Name'",
        ),
        (
            ['{"id": "a", "tables": {"t": [{"k": "x", "n": 1e400}]}}'],
            1,
            "cell t[0].n is a number too large for a float (inf)",
        ),
        ([_art(1, [{"k": "x"}]), _art(1, [{"k": "y"}])], 2, "artifact id 'a-1' again"),
    ],
)
def test_a_bad_sample_is_refused_with_its_line(
    tmp_path: Path, lines: list[Any], line: int | None, words: str
) -> None:
    err = _error(_write(tmp_path / "s.jsonl", lines))
    assert words in err.message and err.line == line


def test_a_huge_sample_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packsample, "MAX_SAMPLE_BYTES", 100)
    err = _error(_write(tmp_path / "s.jsonl", GOOD))
    assert "bytes (max 100)" in err.message and "head -n 200" in (err.hint or "")


def test_odd_names_are_kept_as_they_are(tmp_path: Path) -> None:
    rows = [
        {"item id": f"I{i}", "select": k, 'say "hi"': m, "Größe": "groß", "数量": i}
        for i, (k, m) in enumerate([("lamp", "steel"), ("lamp", "brass"), ("chair", "oak")])
    ]
    s = read_sample(_write(tmp_path / "s.jsonl", [_art(1, rows, table="stock items")]))
    cols = s.tables["stock items"].columns
    assert s.tables["stock items"].key == "item id"
    assert {c: cols[c].kind for c in cols} == {
        "item id": "id",
        "select": "object",
        'say "hi"': "object",
        "Größe": "object",
        "数量": "data",
    }


def test_a_foreign_key_and_a_text_column_are_told_apart(tmp_path: Path) -> None:
    lines = [
        {
            "id": f"a-{n}",
            "tables": {
                "rooms": [{"room_id": "R1", "use": "office"}, {"room_id": "R2", "use": "lab"}],
                "desks": [
                    {"desk_id": f"D{n}{i}", "room_id": f"R{i % 2 + 1}", "note": f"desk {n}{i}"}
                    for i in range(4)
                ],
            },
        }
        for n in range(3)
    ]
    s = read_sample(_write(tmp_path / "s.jsonl", lines))
    desks = s.tables["desks"].columns
    assert (desks["room_id"].kind, desks["room_id"].references) == ("id", "rooms")
    assert desks["note"].kind == "text"  # never repeated: a name, not a pool


def test_the_cli_refuses_a_bad_sample_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = _write(tmp_path / "s.jsonl", [GOOD[0], "{oops"])
    (tmp_path / "packs").mkdir()
    out = tmp_path / "packs" / "new"
    assert main(["pack", "new", str(out), "--from-sample", str(sample)]) == 2
    err = capsys.readouterr().err
    assert f"{sample}:2: 1 bad line(s) in the sample" in err and "Traceback" not in err
    assert not out.exists() and list((tmp_path / "packs").iterdir()) == []


def test_the_cli_refuses_a_folder_that_is_not_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = _write(tmp_path / "s.jsonl", GOOD)
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("mine", encoding="utf-8")
    assert main(["pack", "new", str(out), "--from-sample", str(sample)]) == 2
    assert "the folder is not empty" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


_cell = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
_name = st.text(min_size=0, max_size=8)
_row = st.dictionaries(_name, _cell, max_size=4)
_artifact = st.fixed_dictionaries(
    {
        "id": st.one_of(st.from_regex(r"[a-z][a-z0-9-]{0,6}", fullmatch=True), _name),
        "tables": st.dictionaries(_name, st.lists(_row, max_size=4), max_size=3),
    }
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.one_of(_artifact, st.binary(max_size=40)), min_size=0, max_size=6))
def test_any_sample_is_profiled_or_refused_with_a_line(
    tmp_path: Path, lines: list[dict[str, Any] | bytes]
) -> None:
    path = tmp_path / "s.jsonl"
    with open(path, "wb") as fh:
        for x in lines:
            raw = x if isinstance(x, bytes) else json.dumps(x).encode()
            fh.write(raw.replace(b"\n", b" ") + b"\n")
    try:
        s = read_sample(path)
    except CorpusError as err:
        assert err.file == str(path) and err.message
        return
    for t in s.tables.values():  # a profile a pack can be written from
        assert t.key in t.columns and t.columns[t.key].kind == "id"
        for c in t.columns.values():
            assert c.kind in ("id", "object", "data", "text")
            assert not (c.strings and c.numbers) and c.first_bool is None


def test_the_placeholders_leave_out_what_the_sample_holds(tmp_path: Path) -> None:
    import tomllib

    from harness.packnew import sample_skeleton

    rows = [
        {"id": "1", "state": "unknown", "tag": "[draft]"},
        {"id": "2", "state": "ok", "tag": "x"},
    ]
    s = read_sample(_write(tmp_path / "s.jsonl", [_art(1, rows)]))
    files, _plan = sample_skeleton(tmp_path / "p", s)
    policy = tomllib.loads(files["pack.toml"])["policy"]
    assert "unknown" not in policy["placeholders"] and "TBD" in policy["placeholders"]
    assert r"^\[.*\]$" not in policy["placeholder_patterns"]
    assert r"^<.*>$" in policy["placeholder_patterns"]

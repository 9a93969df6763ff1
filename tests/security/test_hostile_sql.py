"""A third-party pack's SQL is untrusted (issue 17, hostile packs).

RI_GATE's DuckDB is bounded: a runaway assertion is interrupted after `[policy]
assertion_timeout_s` and becomes `ri.assertion_error` naming the file while the rest of
the cohort is judged; memory is capped at `[policy] sql_memory_mb`, spilling only into a
private folder removed at close (never `./.tmp`); an assertion or spine that would read
or write files, attach databases, load extensions, change settings or build a giant value
is refused at setup, with the file and line.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from effectors.ri_gate import RiGate
from harness.errors import PackError
from harness.models import Artifact
from harness.pack import load_pack
from tests.effectors.test_ri_gate import make_pack

SPINE = "CREATE TABLE t (id VARCHAR PRIMARY KEY, n INTEGER);"
HEAD = "-- code: ri.{code}\n-- severity: error\n-- message: {message}\n"
# four self-joins of an artifact's rows, each combination hashed: 60 rows -> 7.8e8 hashes
# (minutes; DuckDB counts a plain join without enumerating it, so the filter is needed)
RUNAWAY = (
    HEAD.format(code="runaway", message="runaway {c}")
    + "SELECT a._artifact, count(*) AS c FROM t a\n"
    + "".join(f"JOIN t {x} ON {x}._artifact = a._artifact\n" for x in "bcde")
    + "WHERE hash(a.id || b.id || c.id || d.id || e.id) % 7 <> 9\n"
    + "GROUP BY a._artifact\n"
)
NEGATIVE = (
    HEAD.format(code="negative", message="negative {n}") + "-- table: t\n"
    "SELECT _artifact, _row, n FROM t WHERE n < 0\n"
)


def _pack(root: Path, assertions: dict[str, str], policy: str = "") -> RiGate:
    make_pack(root, SPINE, {"t": ["id"]}, assertions)
    if policy:
        toml = root / "pack.toml"
        toml.write_text(
            toml.read_text(encoding="utf-8") + f"\n[policy]\n{policy}\n", encoding="utf-8"
        )
    return RiGate.from_pack(load_pack(root))


def _rows(n: int, negative: bool = False) -> list[dict[str, object]]:
    return [{"id": f"r{i}", "n": -1 if negative and i == 0 else i} for i in range(n)]


def codes(gate: RiGate, arts: list[Artifact]) -> list[list[str]]:
    return [[c.code for c in v.critiques] for v in gate.judge(arts)]


def test_a_runaway_assertion_is_stopped_and_the_cohort_judged(tmp_path: Path) -> None:
    gate = _pack(tmp_path, {"boom.sql": RUNAWAY, "neg.sql": NEGATIVE}, "assertion_timeout_s = 0.5")
    arts = [Artifact(id=f"a{i}", tables={"t": _rows(60, negative=i == 1)}) for i in range(3)]
    verdicts = gate.judge(arts)
    got = [[c.code for c in v.critiques] for v in verdicts]
    assert got == [
        ["ri.assertion_error"],
        ["ri.negative", "ri.assertion_error"],
        ["ri.assertion_error"],
    ]
    assert not any(v.passed for v in verdicts)
    errors = [c for v in verdicts for c in v.critiques if c.code == "ri.assertion_error"]
    assert all("boom.sql" in c.message and "assertion_timeout_s" in c.message for c in errors)
    # the warm database is still usable, and a small artifact is judged in full
    small = Artifact(id="s", tables={"t": _rows(2, negative=True)})
    assert codes(gate, [small]) == [["ri.runaway", "ri.negative"]]
    gate.close()


def test_a_lone_runaway_is_not_run_twice(tmp_path: Path) -> None:
    gate = _pack(tmp_path, {"boom.sql": RUNAWAY}, "assertion_timeout_s = 0.5")
    db = gate._warm()
    calls: list[int] = []
    original = db.assertion_rows

    def counted(index: int) -> tuple[list[str], list[tuple[object, ...]]]:
        calls.append(index)
        return original(index)

    db.assertion_rows = counted  # type: ignore[method-assign]
    assert codes(gate, [Artifact(id="x", tables={"t": _rows(60)})]) == [["ri.assertion_error"]]
    assert calls == [0]
    gate.close()


def test_the_limits_are_pack_settings_with_defaults(tmp_path: Path) -> None:
    gate = _pack(tmp_path / "default", {})
    assert gate._warm().timeout_s == 30.0
    policy = load_pack(tmp_path / "default").config.policy
    assert (policy.assertion_timeout_s, policy.sql_memory_mb) == (30.0, 1024)
    raised = _pack(tmp_path / "raised", {}, "assertion_timeout_s = 600\nsql_memory_mb = 4096")
    assert raised._warm().timeout_s == 600.0
    con = raised._warm().con
    assert con.execute("SELECT current_setting('threads')").fetchone() == (1,)
    memory = con.execute("SELECT current_setting('memory_limit')").fetchone()
    assert memory is not None and memory[0].startswith("3.8 GiB")
    for bad in ("assertion_timeout_s = 0", "sql_memory_mb = 8", "assertion_timeout_s = 'x'"):
        with pytest.raises(PackError) as info:
            _pack(tmp_path / "bad", {}, bad)
        assert info.value.file is not None and info.value.file.endswith("pack.toml")
    gate.close()
    raised.close()


@pytest.mark.slow
def test_a_spilling_assertion_writes_nothing_to_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    # the top-N of 4.4 million rows past an offset of 4 million does not fit in 64 MB
    spill = (
        HEAD.format(code="spill", message="{k}")
        + "SELECT a._artifact, a.id || b.id || 'padding-padding-padding' AS k\n"
        "FROM t a JOIN t b ON b._artifact = a._artifact\n"
        "ORDER BY hash(k) LIMIT 1 OFFSET 4000000\n"
    )
    gate = _pack(tmp_path / "pack", {"spill.sql": spill}, "sql_memory_mb = 64")
    folder = gate._warm()._spill
    assert folder.is_dir() and not folder.is_relative_to(cwd)
    seen: set[str] = set()
    done = threading.Event()

    def watch() -> None:  # DuckDB removes its spill files when the query ends
        while not done.is_set():
            seen.update(p.name for p in folder.rglob("*"))
            done.wait(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        (verdict,) = gate.judge([Artifact(id="x", tables={"t": _rows(2100)})])
    finally:
        done.set()
        watcher.join()
    assert [c.code for c in verdict.critiques] == ["ri.spill"]
    assert any(name.startswith("duckdb_temp") for name in seen)  # it did spill, there
    gate.close()
    assert os.listdir(cwd) == []
    assert not folder.exists()


@pytest.mark.parametrize(
    "body",
    [
        "ATTACH '/tmp/other.db' AS other",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET memory_limit = '64GB'",
        "RESET memory_limit",
        "PRAGMA threads = 8",
        "COPY t TO '/tmp/out.csv'",
        "EXPORT DATABASE '/tmp/exported'",
        "IMPORT DATABASE '/tmp/exported'",
        "CALL pragma_version()",
        "CHECKPOINT",
        "DETACH other",
        "SELECT _artifact FROM t; ATTACH '/tmp/x.db'",
    ],
)
def test_statements_other_than_select_are_refused(tmp_path: Path, body: str) -> None:
    with pytest.raises(PackError) as info:
        _pack(tmp_path, {"check.sql": HEAD.format(code="x", message="m") + body + "\n"})
    assert info.value.file is not None and info.value.file.endswith("check.sql")
    assert "one SELECT" in info.value.message


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("SELECT _artifact FROM t\nJOIN read_text('/etc/passwd') f ON true", 5),
        ("SELECT _artifact FROM t, read_blob('/etc/hostname')", 4),
        ("SELECT _artifact FROM t, glob('/etc/*')", 4),
        ("SELECT _artifact FROM t WHERE id IN (SELECT name FROM duckdb_settings())", 4),
        ("SELECT _artifact FROM t\n\nWHERE n IN (SELECT * FROM range(3000000000))", 6),
        ("SELECT _artifact FROM t, query('SELECT 1')", 4),
        ("SELECT _artifact FROM read_parquet('http://example.org/x.parquet')", 4),
        ("SELECT _artifact, list_sum(range(300000000)) AS s FROM t", 4),
        ("SELECT _artifact, length(repeat('abc', 1000000000)) AS s FROM t", 4),
        ("SELECT _artifact FROM t\nWHERE lpad(id, 1000000000, 'x') = ''", 5),
        ("SELECT _artifact FROM t WHERE len(generate_series(1, n)) > 9", 4),
    ],
)
def test_table_functions_and_value_generators_are_refused(
    tmp_path: Path, body: str, line: int
) -> None:
    with pytest.raises(PackError) as info:
        _pack(tmp_path, {"check.sql": HEAD.format(code="x", message="m") + body + "\n"})
    err = info.value
    assert err.file is not None and err.file.endswith("check.sql")
    assert err.line == line


@pytest.mark.parametrize(
    "extra",
    [
        "CREATE TABLE big AS SELECT count(*) AS n FROM range(3000000000);",
        "CREATE TABLE leak AS SELECT * FROM read_text('/etc/passwd');",
        "ATTACH '/tmp/other.db';",
        "INSTALL httpfs;",
        "LOAD httpfs;",
        "SET threads = 8;",
        "PRAGMA memory_limit = '64GB';",
        "EXPORT DATABASE '/tmp/exported';",
        "CREATE MACRO m(x) AS x + 1;",
        "CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's');",
    ],
)
def test_a_spine_runs_nothing_but_create_table(tmp_path: Path, extra: str) -> None:
    with pytest.raises(PackError) as info:
        make_pack(tmp_path, SPINE + "\n" + extra, {"t": ["id"]})
        RiGate.from_pack(load_pack(tmp_path))
    err = info.value
    assert err.file is not None and err.file.endswith("spine.sql")
    assert err.line == 2


@pytest.mark.parametrize(
    "check",
    [
        "length(repeat(id, 1000000000)) > 0",
        "len(range(n * 1000000000)) > 0",
        "lpad(id, 1000000000, 'x') <> ''",
    ],
)
def test_a_spine_check_that_builds_a_giant_value_is_refused(tmp_path: Path, check: str) -> None:
    spine = f"CREATE TABLE t (id VARCHAR PRIMARY KEY,\n  n INTEGER CHECK ({check}));"
    with pytest.raises(PackError) as info:
        make_pack(tmp_path, "CREATE TABLE u (x INTEGER);\n" + spine, {"t": ["id"]})
        RiGate.from_pack(load_pack(tmp_path))
    err = info.value
    assert err.file is not None and err.file.endswith("spine.sql") and err.line == 2


def test_no_writable_temporary_folder_fails_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.errors import InfrastructureError

    make_pack(tmp_path, SPINE, {"t": ["id"]})
    pack = load_pack(tmp_path)

    def refuse(*_args: object, **_kw: object) -> str:
        raise PermissionError(13, "Permission denied", "/tmp")

    monkeypatch.setattr("effectors.ri_gate.database.tempfile.mkdtemp", refuse)
    with pytest.raises(InfrastructureError) as info:
        RiGate.from_pack(pack)
    assert "TMPDIR" in str(info.value)

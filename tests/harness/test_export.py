"""`membrane export`: Parquet read back with DuckDB equals `current/corpus.jsonl` (the demo
corpus and hypothesis-generated ones), JSONL and Markdown equal the committed views, one
snapshot while commits go on, clear errors, and a SIGKILL at every point of a commit leaves
chapters and corpus consistent."""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from effectors.commit import Committer
from harness.chapters import ChapterRenderer, verify_chapters
from harness.cli import main
from harness.errors import ConfigError
from harness.export import export, parquet_path
from harness.ledger import Ledger
from harness.models import Artifact
from harness.store import recover
from harness.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "packs" / "facility" / "corpus" / "demo.jsonl"


def _workspace(root: Path, artifacts: list[Artifact], pack: Path | None = None) -> Workspace:
    """Commit `artifacts` through the real COMMIT effector and recover (the view, chapters)."""
    ws = Workspace(root)
    ws.ensure()
    ledger = Ledger(ws.ledger_path)
    if pack is not None:
        ledger.remember_pack(str(pack))
    committer = Committer(ws, ledger, ChapterRenderer(None))
    for n, art in enumerate(artifacts):
        run_id = f"{art.id}.r{n}"
        ledger.start_run(run_id, art.id, "b", f"h{n}", "t")
        committer.commit(
            run_id, art, {"attempts": 1 + n % 3}, n, "a" * 64, f"2026-01-01T00:{n % 60:02d}"
        )
        ledger.finish_run(run_id, "COMMITTED", n, "a" * 64, None)
    recover(ws, ledger)
    ledger.close()
    return ws


def _read_back(out: Path) -> list[dict[str, Any]]:
    """Artifacts rebuilt from the Parquet files with DuckDB, in corpus order."""
    con = duckdb.connect()
    arts = con.execute(
        "SELECT artifact_id, prose, meta, tables FROM read_parquet(?) ORDER BY artifact_id",
        [str(parquet_path(out, "artifacts"))],
    ).fetchall()
    card = (out / "README.md").read_text()
    rebuilt: dict[str, dict[str, Any]] = {
        a: {"id": a, "tables": {t: [] for t in tables}, "prose": prose, "meta": json.loads(meta)}
        for a, prose, meta, tables in arts
    }
    for path in sorted(out.glob("*/*.parquet")):
        if path.stem == "artifacts":
            continue
        rel = con.execute(
            "SELECT * FROM read_parquet(?) ORDER BY artifact_id, row_index", [str(path)]
        )
        cols = [d[0] for d in rel.description]
        for rec in rel.fetchall():
            row = dict(zip(cols, rec, strict=True))
            aid = row.pop("artifact_id")
            assert row.pop("row_index") == len(rebuilt[aid]["tables"][path.stem])
            for c, v in row.items():
                if f"`{path.stem}.{c}`" in card and v is not None:
                    row[c] = json.loads(v)
            rebuilt[aid]["tables"][path.stem].append(row)
    con.close()
    return list(rebuilt.values())


def _same(got: Any, want: Any) -> bool:
    """Equal, and of the same type, except: a missing cell reads back as null and an int
    in a double column as that float."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(_same(got.get(k), want.get(k)) for k in {*got, *want})
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_same, got, want))
    if type(want) is int and type(got) is float:
        return float(want) == got
    return type(got) is type(want) and got == want


def _corpus(ws: Workspace) -> list[dict[str, Any]]:
    data = (ws.current / "corpus.jsonl").read_bytes()
    return [json.loads(x) for x in data.split(b"\n") if x]  # not splitlines(): \x85 is data


def test_demo_corpus_round_trips_through_parquet_jsonl_and_markdown(tmp_path: Path) -> None:
    arts = [Artifact.model_validate_json(x) for x in DEMO.read_text().splitlines()[:60]]
    ws = _workspace(tmp_path / "ws", arts, ROOT / "packs" / "facility")
    res = export(ws.root, "parquet", tmp_path / "pq")
    corpus = _corpus(ws)
    assert res.artifacts == 60
    back = _read_back(tmp_path / "pq")
    assert len(back) == len(corpus)
    assert all(_same(g, w) for g, w in zip(back, corpus, strict=True))
    assert res.json_columns == []  # the demo's columns each have one type
    con = duckdb.connect()
    for table, n in res.tables.items():
        count = con.execute(
            "SELECT count(*) FROM read_parquet(?)", [str(parquet_path(tmp_path / "pq", table))]
        ).fetchone()
        assert count == (n,) == (sum(len(a["tables"].get(table, [])) for a in corpus),)
    types = dict(
        con.execute(
            "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))",
            [str(parquet_path(tmp_path / "pq", "equipment"))],
        ).fetchall()
    )
    assert types["rated_power_kw"] == "DOUBLE" and types["artifact_id"] == "VARCHAR"
    con.close()
    card = (tmp_path / "pq" / "README.md").read_text()
    assert "60 committed artifacts of the pack `facility` 1.0.0" in card
    assert "config_name: equipment" in card

    export(ws.root, "jsonl", tmp_path / "c.jsonl")
    assert (tmp_path / "c.jsonl").read_bytes() == (ws.current / "corpus.jsonl").read_bytes()

    res = export(ws.root, "markdown", tmp_path / "md")
    assert len(res.files) == 61 and "index.md" in res.files
    for p in (ws.current / "chapters").iterdir():
        assert (tmp_path / "md" / p.name).read_bytes() == p.read_bytes()


cells = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),  # what orjson (the commit path) holds
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from(["", "a|b", "x\ny", "'; DROP TABLE t; --", "\u202eevil", "null", "é"]),
)
rows = st.lists(
    st.dictionaries(st.sampled_from(["a", "b", "c", "when"]), cells, max_size=4), max_size=4
)
artifacts = st.lists(
    st.builds(
        lambda tables, prose, meta: (tables, prose, meta),
        st.dictionaries(st.sampled_from(["t", "u", "v_2"]), rows, max_size=3),
        st.text(max_size=40).filter(lambda s: "\x00" not in s) | st.just(""),
        st.dictionaries(
            st.text(max_size=5), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5), max_size=2
        ),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(artifacts)
def test_generated_corpora_round_trip_through_parquet(
    specs: list[tuple[dict[str, list[dict[str, Any]]], str, dict[str, Any]]],
) -> None:
    with tempfile.TemporaryDirectory() as d:
        arts = [
            Artifact(id=f"g-{i}", tables=t, prose=p, meta=m) for i, (t, p, m) in enumerate(specs)
        ]
        ws = _workspace(Path(d) / "ws", arts)
        res = export(ws.root, "parquet", Path(d) / "pq")
        corpus = _corpus(ws)
        back = _read_back(Path(d) / "pq")
        assert len(back) == len(corpus) == res.artifacts
        for g, w in zip(back, corpus, strict=True):
            assert _same(g, w), (g, w)
        for g in back:  # no float came back as NaN or inf
            for rows_ in g["tables"].values():
                assert all(
                    not (isinstance(v, float) and not math.isfinite(v))
                    for r in rows_
                    for v in r.values()
                )


def test_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such workspace"):
        export(tmp_path / "nope", "jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="nothing has run"):
        export(tmp_path / "empty", "jsonl")
    ws = Workspace(tmp_path / "none")
    ws.ensure()
    Ledger(ws.ledger_path).close()
    with pytest.raises(ConfigError, match="no committed artifact"):
        export(ws.root, "parquet")
    ws = _workspace(tmp_path / "ws", [Artifact(id="a", tables={"t": [{"v": 1}]})])
    export(ws.root, "parquet", tmp_path / "out")
    with pytest.raises(ConfigError, match="already exists"):
        export(ws.root, "parquet", tmp_path / "out")
    export(ws.root, "parquet", tmp_path / "out", force=True)  # an earlier export: replaced
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    with pytest.raises(ConfigError, match="holds other files"):
        export(ws.root, "markdown", tmp_path / "mine", force=True)
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "precious"
    with pytest.raises(ConfigError, match="workspace itself"):
        export(ws.root, "markdown", ws.root, force=True)
    res = export(ws.root, "jsonl")  # the default: export/corpus.jsonl in the workspace
    assert Path(res.out) == (ws.root / "export" / "corpus.jsonl").resolve()
    assert not list(tmp_path.glob(".*tmp*"))


def test_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _workspace(tmp_path / "ws", [Artifact(id="a", tables={"t": [{"v": 1}]})])
    assert (
        main(
            [
                "export",
                "-w",
                str(ws.root),
                "--format",
                "parquet",
                "--out",
                str(tmp_path / "o"),
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["artifacts"] == 1 and data["tables"] == {"t": 1}
    assert (
        main(["export", "-w", str(ws.root), "--format", "parquet", "--out", str(tmp_path / "o")])
        == 2
    )
    assert "--force" in capsys.readouterr().err
    assert main(["export", "-w", str(tmp_path / "missing"), "--format", "jsonl"]) == 2


def test_one_snapshot_while_commits_go_on(tmp_path: Path) -> None:
    """Artifact a<i> version k has k rows: every export must agree with itself."""
    ws = _workspace(
        tmp_path / "ws", [Artifact(id=f"a{i}", tables={"t": [{"v": 0}]}) for i in range(20)]
    )
    stop = threading.Event()

    def writer() -> None:
        ledger = Ledger(ws.ledger_path)
        committer = Committer(ws, ledger, ChapterRenderer(None))
        n = 100
        while not stop.is_set():
            for i in range(20):
                latest = ledger.latest_commit(f"a{i}")
                assert latest is not None
                k = latest.version + 1
                art = Artifact(id=f"a{i}", tables={"t": [{"v": j} for j in range(k)]})
                ledger.start_run(f"a{i}.w{n}", f"a{i}", "b", f"w{n}", "t")
                committer.commit(f"a{i}.w{n}", art, {"attempts": 1}, 0, "a" * 64, "t")
                n += 1
        ledger.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for r in range(6):
            out = tmp_path / f"pq{r}"
            export(ws.root, "parquet", out)
            con = duckdb.connect()
            got = con.execute(
                "SELECT a.artifact_id, a.version, count(t.row_index) FROM read_parquet(?) a"
                " LEFT JOIN read_parquet(?) t USING (artifact_id) GROUP BY ALL",
                [str(parquet_path(out, "artifacts")), str(parquet_path(out, "t"))],
            ).fetchall()
            con.close()
            assert len(got) == 20 and all(v == n for _a, v, n in got), got
            export(ws.root, "markdown", tmp_path / f"md{r}")
            for p in (tmp_path / f"md{r}").glob("a*.md"):
                assert p.read_text().startswith("<!-- membrane:chapter")
    finally:
        stop.set()
        thread.join()


_CHILD = r"""
import os, signal, sys
from pathlib import Path
point, root = sys.argv[1], Path(sys.argv[2])

def die(*a, **k):
    os.kill(os.getpid(), signal.SIGKILL)

import effectors.commit as commit
import harness.chapters as chapters
from harness.chapters import ChapterRenderer
from harness.ledger import Ledger
from harness.models import Artifact
from harness.workspace import Workspace

if point == "objects_written":
    real = commit.write_objects
    def objects(*a, **k):
        real(*a, **k); die()
    commit.write_objects = objects
elif point == "ledger_committed":
    commit.write_chapter = die
elif point == "chapter_half_written":
    real_replace = os.replace
    def replace(src, dst):
        if str(dst).endswith(".md"):
            die()
        real_replace(src, dst)
    chapters.os.replace = replace

ws = Workspace(root)
ledger = Ledger(ws.ledger_path)
art = Artifact(id="k", tables={"t": [{"v": "new|value"}]}, prose="Second.")
ledger.start_run("k.r2", "k", "b", "h2", "t")
commit.Committer(ws, ledger, ChapterRenderer(None)).commit("k.r2", art, {"attempts": 2}, 0, "b" * 64, "t2")
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "point", ["objects_written", "ledger_committed", "chapter_half_written", "none"]
)
def test_sigkill_during_commit_leaves_chapters_and_corpus_consistent(
    tmp_path: Path, point: str
) -> None:
    ws = _workspace(tmp_path, [Artifact(id="k", tables={"t": [{"v": "old"}]}, prose="First.")])
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, point, str(tmp_path)],
        cwd=ROOT,
        check=False,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == (0 if point == "none" else -signal.SIGKILL), proc.stderr.decode()[
        -2000:
    ]
    ledger = Ledger(ws.ledger_path)
    recover(ws, ledger)
    rows = ledger.latest_commits()
    assert verify_chapters(ws, rows) == []
    expected_version = 1 if point == "objects_written" else 2
    assert [r.version for r in rows] == [expected_version]
    chapter = (ws.current / "chapters" / "k.md").read_text()
    corpus = _corpus(ws)
    assert len(corpus) == 1
    assert (corpus[0]["prose"] in chapter) and (f"version {expected_version} " in chapter)
    ledger.close()
    export(ws.root, "jsonl", tmp_path / "x.jsonl")
    assert (tmp_path / "x.jsonl").read_bytes() == (ws.current / "corpus.jsonl").read_bytes()
    shutil.rmtree(tmp_path / "export", ignore_errors=True)

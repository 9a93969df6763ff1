"""`membrane export`: the committed corpus in other people's tools.

* `parquet`: one file per pack table, `<table>/<table>.parquet` (each row with `artifact_id`
  and `row_index`), plus `artifacts/artifacts.parquet` (id, version, prose, meta, table names, run id, attempts, pack,
  committed-at, trace head hash), written with DuckDB, and a dataset card `README.md`.
* `jsonl`: the committed corpus, one artifact a line, in corpus order.
* `markdown`: the chapters, one file each, and `index.md`.

Only committed artifacts are exported, from one snapshot: one read of the ledger (a single
SELECT is one SQLite snapshot, even while a batch commits in WAL mode) names the versions,
and their objects are content-addressed, so they never change under the reader (a version
recovery just archived is read from `archive/`). Traces are not read at all.

The output is written beside `--out` under a temporary name and moved into place, so an
interrupted export leaves nothing half-written; an existing `--out` is replaced only with
`force`, and a folder only if it is empty or an earlier export (it has `.membrane-export`).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb
import orjson
import pyarrow as pa  # type: ignore[import-untyped]

from harness.chapters import ChapterRenderer, chapter_path, check_chapter
from harness.errors import ConfigError, PackError
from harness.ledger import CommitRow
from harness.models import Artifact
from harness.pack import Pack, load_pack
from harness.workspace import Workspace

__all__ = ["FORMATS", "ExportResult", "Snapshot", "export", "parquet_path", "read_snapshot"]

Format = Literal["parquet", "jsonl", "markdown"]
FORMATS: tuple[Format, ...] = ("parquet", "jsonl", "markdown")
MARKER = ".membrane-export"
_INT64 = (-(2**63), 2**63 - 1)
_FLOAT_EXACT = 2**53


@dataclass
class ExportResult:
    format: str
    out: str
    artifacts: int
    tables: dict[str, int] = field(default_factory=dict)  # table -> rows (parquet)
    json_columns: list[str] = field(default_factory=list)  # "table.column" stored as JSON text
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class Snapshot:
    """The committed corpus as one ledger read saw it."""

    rows: list[CommitRow]
    data: list[bytes]  # each row's artifact bytes (canonical JSON)
    attempts: list[int | None]
    packs: dict[str, tuple[str, str]]  # run id -> (pack, version), from the outcome log
    states: dict[str, int]  # runs per status
    settled: int  # finished runs
    gate_clean: dict[str, int]  # gate -> finished runs in which it raised no critique
    last_pack: str | None


_GATES = (("value_gate", "value."), ("ri_gate", "ri."), ("prose_gate", "prose."))
_SETTLED = "outcome IS NOT NULL AND status != 'running'"
_CLEAN = (
    f"SELECT COUNT(*) FROM runs WHERE {_SETTLED} AND NOT EXISTS"
    " (SELECT 1 FROM json_each(runs.outcome, '$.critique_codes') WHERE key GLOB ?)"
)
_LATEST = (
    "SELECT c.* FROM commits c JOIN (SELECT artifact_id, MAX(version) v FROM commits"
    " GROUP BY artifact_id) l ON c.artifact_id = l.artifact_id AND c.version = l.v"
    " ORDER BY c.artifact_id"
)


def read_snapshot(ws: Workspace) -> Snapshot:
    """One read transaction of the ledger, then the immutable objects it names."""
    if not ws.root.is_dir():
        raise ConfigError(
            "no such workspace", file=ws.root, hint="pass --workspace DIR of a membrane workspace"
        )
    if not ws.ledger_path.is_file():
        raise ConfigError(
            "nothing has run in this workspace yet, so nothing is committed",
            file=ws.root,
            hint="run `membrane batch CORPUS --pack DIR` first, or pass --workspace",
        )
    db = sqlite3.connect(f"{ws.ledger_path.as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        db.execute("BEGIN")
        rows = [CommitRow(*r) for r in db.execute(_LATEST)]
        packs = {
            run_id: (str(p or ""), str(v or ""))
            for run_id, p, v in db.execute(
                "SELECT run_id, record ->> '$.pack', record ->> '$.pack_version' FROM outcomes"
                " WHERE kind = 'run'"
            )
        }
        finished = dict(
            db.execute(
                "SELECT run_id, outcome ->> '$.attempts' FROM runs WHERE outcome IS NOT NULL"
            ).fetchall()
        )
        states = dict(db.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
        (settled,) = db.execute(f"SELECT COUNT(*) FROM runs WHERE {_SETTLED}").fetchone()
        gate_clean = {
            gate: db.execute(_CLEAN, (f"{prefix}*",)).fetchone()[0] for gate, prefix in _GATES
        }
        last = db.execute("SELECT value FROM meta WHERE key = 'pack'").fetchone()
        db.execute("COMMIT")
    finally:
        db.close()
    if not rows:
        raise ConfigError(
            "the workspace has no committed artifact to export",
            file=ws.root,
            hint="`membrane trace list` shows how its runs ended; `membrane batch` commits",
        )
    folders = (str(ws.current), str(ws.archive))
    data, attempts = [], []
    for row in rows:
        data.append(_object(folders, "artifacts", row.content_hash))
        n = finished.get(row.run_id)
        attempts.append(n if isinstance(n, int) else _attempts(folders, row))
    return Snapshot(
        rows,
        data,
        attempts,
        packs,
        states,
        settled,
        gate_clean,
        str(last[0]) if last else None,
    )


def _attempts(folders: tuple[str, str], row: CommitRow) -> int | None:
    """A run still finishing has no outcome in the ledger yet: its metrics sidecar."""
    try:
        n = orjson.loads(_object(folders, "metrics", row.metrics_hash)).get("attempts")
    except (ConfigError, orjson.JSONDecodeError, AttributeError):
        n = None
    return n if isinstance(n, int) else None


def _object(folders: tuple[str, str], kind: str, digest: str) -> bytes:
    """An object named by the snapshot: in `current/`, or in `archive/` if recovery has
    moved it there since (superseded); they never change."""
    for folder in folders:
        try:
            with open(f"{folder}/{kind}/{digest}.json", "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            continue
    raise ConfigError(
        f"the committed object {kind}/{digest}.json is missing",
        file=Path(folders[0]) / kind,
        hint="run `membrane recover`, then `membrane trace verify`",
    )


# -- output folder ----------------------------------------------------------------------------
def _target(ws: Workspace, fmt: Format, out: Path | None) -> Path:
    if out is None:
        out = ws.root / "export" / ("corpus.jsonl" if fmt == "jsonl" else fmt)
    return out.resolve()


def _check_out(out: Path, force: bool) -> None:
    if not out.exists() and not out.is_symlink():
        return
    if not force:
        raise ConfigError(
            "the output already exists; export never overwrites it",
            file=out,
            hint="pass --force to replace it, or choose another --out",
        )
    if out.is_dir() and not out.is_symlink() and any(out.iterdir()) and not (out / MARKER).exists():
        raise ConfigError(
            "--force replaces only an earlier export or an empty folder, and this folder "
            "holds other files",
            file=out,
            hint="choose another --out",
        )


def _publish(tmp: Path, out: Path) -> None:
    if out.is_dir() and not out.is_symlink():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        os.replace(tmp, out)


# -- parquet ----------------------------------------------------------------------------------
def _column(values: Sequence[Any]) -> tuple[pa.Array, bool]:
    """An Arrow column for a list of cells and whether it holds JSON text: one type when the
    values share one (text, booleans, int64; ints and floats: double when every int is
    exact in a double), JSON text otherwise. Arrow infers the type in C; a mix it refuses
    (a bool among ints, text among numbers, an int past int64) falls back to JSON."""
    try:
        arr = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        arr = None
    if arr is not None:
        if pa.types.is_null(arr.type):
            return pa.array(values, pa.string()), False
        if arr.type == pa.string():
            return arr, False
        kinds = {type(v) for v in values} - {type(None)}  # Arrow reads False as 0.0
        if kinds in ({bool}, {int}):
            return arr, False
        if (
            arr.type == pa.float64()
            and kinds <= {int, float}
            and not any(type(v) is int and abs(v) > _FLOAT_EXACT for v in values)
        ):
            return arr, False
    return pa.array([None if v is None else orjson.dumps(v).decode() for v in values]), True


def _safe_table_name(name: str) -> str:
    if not name.isidentifier() or name.startswith("_") or name == "artifacts":
        raise ConfigError(
            f"table {name!r} cannot name a Parquet file",
            hint="table names must be identifiers and not 'artifacts' (see pack.toml)",
        )
    return name


def _table_order(pack: Pack | None, arts: Iterable[dict[str, Any]]) -> list[str]:
    names = list(pack.tables) if pack else []
    seen = {t for a in arts for t in a["tables"]}
    return [t for t in names if t in seen] + sorted(seen - set(names))


def _pack(snap: Snapshot) -> Pack | None:
    try:
        return load_pack(snap.last_pack) if snap.last_pack else None
    except PackError:
        return None


def _write_parquet(snap: Snapshot, tmp: Path, res: ExportResult) -> None:
    # the objects were validated when committed and are named by their hash: plain dicts
    arts: list[dict[str, Any]] = [orjson.loads(d) for d in snap.data]
    pack = _pack(snap)
    con = duckdb.connect(":memory:", config={"enable_external_access": True})
    try:
        for name in _table_order(pack, arts):
            _safe_table_name(name)
            ids, idx, cells = [], [], []
            for a in arts:
                for i, row in enumerate(a["tables"].get(name, ())):
                    ids.append(a["id"])
                    idx.append(i)
                    cells.append(row)
            bound = list(pack.tables[name].columns) if pack and name in pack.tables else []
            cols = bound + sorted({k for r in cells for k in r} - set(bound))
            clash = {"artifact_id", "row_index"} & set(cols)
            if clash:
                raise ConfigError(f"table {name!r} has a column named {sorted(clash)[0]!r}")
            arrays = {
                "artifact_id": pa.array(ids, pa.string()),
                "row_index": pa.array(idx, pa.int32()),
            }
            for c in cols:
                arrays[c], as_json = _column([r.get(c) for r in cells])
                if as_json:
                    res.json_columns.append(f"{name}.{c}")
            _copy(con, pa.table(arrays), _parquet_path(tmp, name))
            res.tables[name] = len(ids)
        by_run = [snap.packs.get(r.run_id) for r in snap.rows]
        default = (pack.name, pack.config.pack.version) if pack else ("", "")
        table = pa.table(
            {
                "artifact_id": pa.array([r.artifact_id for r in snap.rows], pa.string()),
                "version": pa.array([r.version for r in snap.rows], pa.int64()),
                "content_hash": pa.array([r.content_hash for r in snap.rows], pa.string()),
                "prose": pa.array([a.get("prose", "") for a in arts], pa.string()),
                "meta": pa.array([orjson.dumps(a.get("meta", {})).decode() for a in arts]),
                "tables": pa.array([list(a["tables"]) for a in arts], pa.list_(pa.string())),
                "run_id": pa.array([r.run_id for r in snap.rows], pa.string()),
                "attempts": pa.array(snap.attempts, pa.int64()),
                "pack": pa.array([(p or default)[0] for p in by_run], pa.string()),
                "pack_version": pa.array([(p or default)[1] for p in by_run], pa.string()),
                "committed_at": pa.array([r.committed_at for r in snap.rows], pa.string()),
                "trace_hash": pa.array([r.trace_hash for r in snap.rows], pa.string()),
            }
        )
        for name in _field_names(pack, arts):
            column = f"prose_{name}" if name in table.column_names else name
            texts = [a.get("prose_fields", {}).get(name, "") for a in arts]
            table = table.add_column(
                table.column_names.index("prose") + 1, column, pa.array(texts, pa.string())
            )
        _copy(con, table, _parquet_path(tmp, "artifacts"))
    finally:
        con.close()
    (tmp / "README.md").write_text(_card(snap, pack, res), encoding="utf-8")


def _field_names(pack: Pack | None, arts: list[dict[str, Any]]) -> list[str]:
    """The prose fields besides `prose` (the pack's declared ones, then any an artifact
    carries), each a column of artifacts.parquet after `prose`; reversed for inserting."""
    names = [f.name for f in pack.prose_fields() if f.name != "prose"] if pack else []
    seen = {k for a in arts for k in a.get("prose_fields", {})}
    names += sorted(seen - set(names))
    return names[::-1]


def parquet_path(out: Path, table: str) -> Path:
    """`OUT/<table>/<table>.parquet`: a folder per table, so that
    `datasets.load_dataset("parquet", data_dir=OUT/<table>)` sees one schema."""
    return out / table / f"{table}.parquet"


_parquet_path = parquet_path


def _copy(con: duckdb.DuckDBPyConnection, table: pa.Table, path: Path) -> None:
    """Arrow data -> Parquet through DuckDB (the path is an argument, never SQL text)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con.from_arrow(table).write_parquet(str(path), compression="zstd")


def _card(snap: Snapshot, pack: Pack | None, res: ExportResult) -> str:
    name = pack.name if pack else "membrane"
    licence = pack.config.pack.license if pack else ""
    hist = Counter(snap.attempts)
    lines = ["---", f"pretty_name: {name} (refined with membrane)"]
    if licence:
        lines.append(f"license: {licence}")
    lines += ["configs:"]
    for t in ["artifacts", *res.tables]:
        lines += [f"- config_name: {t}", f"  data_files: {t}/*.parquet"]
    lines += ["---", "", f"# {name}: the committed corpus", ""]
    if pack and pack.config.pack.description:
        lines += [pack.config.pack.description, ""]
    lines += [
        f"Exported by `membrane export --format parquet`: {len(snap.rows)} committed artifacts"
        f" of the pack `{name}`" + (f" {pack.config.pack.version}" if pack else "") + ".",
        f"Licence: {licence or 'not declared by the pack'}.",
        "",
        "| file | rows |",
        "| --- | --- |",
        f"| artifacts/artifacts.parquet | {len(snap.rows)} |",
        *(f"| {t}/{t}.parquet | {n} |" for t, n in res.tables.items()),
        "",
        "Each table row carries `artifact_id` and `row_index` (its index in the artifact's table).",
        "A missing cell reads back as null; an integer in a column that also holds decimals as a"
        " float.",
    ]
    if res.json_columns:
        lines.append(
            "These columns mix types and hold each cell as JSON text: "
            + ", ".join(f"`{c}`" for c in res.json_columns)
            + "."
        )
    lines += ["", "## Runs", "", "| state | runs |", "| --- | --- |"]
    lines += [f"| {s} | {n} |" for s, n in sorted(snap.states.items())]
    lines += [
        "",
        "Gate pass rate: the share of settled runs in which the gate raised no critique.",
        "",
    ]
    lines += ["| gate | pass rate |", "| --- | --- |"]
    for gate, clean in snap.gate_clean.items():
        rate = f"{clean / snap.settled:.1%}" if snap.settled else "n/a"
        lines.append(f"| {gate} | {rate} |")
    lines += [
        "",
        "## Attempts per committed artifact",
        "",
        "| attempts | artifacts |",
        "| --- | --- |",
    ]
    lines += [
        f"| {k if k is not None else '?'} | {v} |"
        for k, v in sorted(hist.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
    ]
    lines += [
        "",
        "## Loading",
        "",
        "One folder per table (one schema each):",
        "",
        "```python",
        "import duckdb",
        "duckdb.read_parquet('artifacts/*.parquet')",
        "import datasets",
        "datasets.load_dataset('parquet', data_dir='artifacts')",
        "datasets.load_dataset('.', 'artifacts')  # the configs above",
        "```",
        "",
    ]
    return "\n".join(lines)


# -- jsonl and markdown -----------------------------------------------------------------------
def _write_jsonl(snap: Snapshot, tmp: Path) -> None:
    tmp.write_bytes(b"".join(d.rstrip(b"\n") + b"\n" for d in snap.data))


def _write_markdown(ws: Workspace, snap: Snapshot, tmp: Path) -> None:
    renderer: ChapterRenderer | None = None
    index = ["# Chapters", "", f"{len(snap.rows)} committed artifacts.", ""]
    for row, raw, n in zip(snap.rows, snap.data, snap.attempts, strict=True):
        path = chapter_path(ws, row.artifact_id)
        if check_chapter(path, row) is None:
            data = path.read_bytes()
        else:  # a batch is writing it, or a kill left it out: render from the snapshot
            renderer = renderer or ChapterRenderer(_pack(snap))
            art = Artifact.model_validate_json(raw)
            data = renderer.render(art, row, n if n is not None else "?")
        (tmp / f"{row.artifact_id}.md").write_bytes(data)
        index.append(f"- [{row.artifact_id}]({row.artifact_id}.md) (version {row.version})")
    (tmp / "index.md").write_text("\n".join(index) + "\n", encoding="utf-8")


def export(
    root: Path, fmt: Format, out: Path | None = None, *, force: bool = False
) -> ExportResult:
    """Export the committed corpus of the workspace at `root` (see the module docstring)."""
    t0 = time.perf_counter()
    ws = Workspace(root)
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}", hint=f"one of {', '.join(FORMATS)}")
    target = _target(ws, fmt, out)
    if target == ws.root.resolve() or ws.root.resolve().is_relative_to(target):
        raise ConfigError("--out would replace the workspace itself", file=target)
    _check_out(target, force)
    snap = read_snapshot(ws)
    res = ExportResult(fmt, str(target), len(snap.rows))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        if fmt == "jsonl":
            _write_jsonl(snap, tmp)
            res.files = [target.name]
        else:
            tmp.mkdir()
            (tmp / MARKER).write_text("membrane export\n")
            if fmt == "parquet":
                _write_parquet(snap, tmp, res)
            else:
                _write_markdown(ws, snap, tmp)
            res.files = sorted(
                str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file() and p.name != MARKER
            )
        _publish(tmp, target)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp)
        elif tmp.exists():
            tmp.unlink()
    res.seconds = time.perf_counter() - t0
    return res

"""The crash matrix (issue 17): `membrane batch` (and recovery, the learning cycle, `review
approve`) killed with SIGKILL at hundreds of points, each followed by a rerun to completion
and the same checks against an uninterrupted run:

* `current/corpus.jsonl` equals the uninterrupted run's byte for byte;
* every artifact once in the ledger (version 1, the same content hash), once in
  `current/artifacts/` and once in `corpus.jsonl`; its chapter once;
* no orphans: no file in `current/` or `.membrane/held/` that no ledger row names, no
  `.tmp-PID` file anywhere, no trace file without its run, no run left `running`;
* `membrane trace verify` exits 0 (every trace verifies; committed files hash to their names);
* the learned state equals a rebuild from the outcome log.

Two kinds of kill: deterministic points (`points.Point`, the Nth call of a step of the
commit protocol) and timed ones (a real SIGKILL after a random delay).
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.reliability import proc
from tests.reliability.points import (
    BATCH_TARGETS,
    LEARN_TARGETS,
    POOL_POINTS,
    RECOVERY_TARGETS,
    REVIEW_TARGETS,
    Point,
)

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "packs" / "facility"
DEMO = PACK / "corpus" / "demo.jsonl"
COHORT = 6


@dataclass
class Outcome:
    """One try: the kill (or kills), the rerun, and what the checks found."""

    probe: str
    point: str
    killed: int = 0  # processes that died by SIGKILL
    problems: list[str] = field(default_factory=list)
    lost: int = 0  # artifacts of the uninterrupted run missing or changed at the end
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return not self.problems and self.lost == 0


@dataclass
class Reference:
    """The uninterrupted run every try is compared with."""

    corpus: Path
    corpus_bytes: bytes
    commits: dict[str, str]  # artifact id -> content hash
    counts: dict[str, int]  # target -> calls in the uninterrupted batch
    seconds: float
    cache: Path  # the ontology cache it built (each try's workspace starts with a copy)
    pack: Path = PACK
    held_bytes: bytes = b""  # review probe: the corpus after approving every held run
    held_template: Path | None = None  # review probe: a workspace with held runs
    held_commits: dict[str, str] = field(default_factory=dict)  # review probe: id -> hash
    ws: Path | None = None  # the uninterrupted run's workspace


def batch_argv(corpus: Path, ws: Path, pack: Path = PACK) -> list[str]:
    return [
        "batch",
        str(corpus),
        "--pack",
        str(pack),
        "-w",
        str(ws),
        "--cohort-size",
        str(COHORT),
        "--no-report",
        "--no-progress",
        "--json",
    ]


def fresh_ws(base: Path, name: str, cache: Path) -> Path:
    """A new workspace holding only a copy of the warm ontology cache (a derived cache,
    keyed by the ontology's hash: it changes nothing a batch commits)."""
    ws = base / name
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(cache, ws / ".membrane" / "cache")
    return ws


def _all_targets() -> list[str]:
    return [t for t, _w in BATCH_TARGETS + LEARN_TARGETS + RECOVERY_TARGETS]


def reference(base: Path, size: int, *, warm: bool = True) -> Reference:
    """Run the corpus once, uninterrupted, counting each target's calls. `warm`: a first
    batch builds the ontology cache, so the counted run starts as every try does (with a
    copy of it); without, the counted run builds it (the quick subset saves a batch)."""
    corpus = base / "corpus.jsonl"
    lines = DEMO.read_text().splitlines(keepends=True)[:size]
    corpus.write_text("".join(lines))
    cache = base / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    if warm:
        code, child = proc.run(batch_argv(corpus, base / "warm"), base / "warm.out")
        if code != 0:
            raise RuntimeError(f"the warm-up batch failed ({code}): {child.text()[-3000:]}")
        shutil.copytree(base / "warm" / ".membrane" / "cache", cache)
    else:
        cache.mkdir(parents=True)
    ws = fresh_ws(base, "reference", cache)
    t0 = time.monotonic()
    code, child = proc.run(batch_argv(corpus, ws), base / "reference.out", counts=_all_targets())
    seconds = time.monotonic() - t0
    if code != 0:
        raise RuntimeError(f"the reference batch failed ({code}): {child.text()[-3000:]}")
    counts = json.loads((base / "reference.counts").read_text())
    db = sqlite3.connect(ws / ".membrane" / "ledger.sqlite")
    try:
        commits = dict(db.execute("SELECT artifact_id, content_hash FROM commits").fetchall())
    finally:
        db.close()
    if len(commits) != size:
        raise RuntimeError(f"the reference batch committed {len(commits)} of {size}")
    if not warm:
        shutil.rmtree(cache)
        shutil.copytree(ws / ".membrane" / "cache", cache)
    want = (ws / "current" / "corpus.jsonl").read_bytes()
    return Reference(corpus, want, commits, counts, seconds, cache, ws=ws)


# -- the checks ---------------------------------------------------------------------


def _rows(db: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]]:
    return db.execute(sql).fetchall()


def check(ws: Path, ref: Reference, want: bytes, out: Path) -> tuple[list[str], int]:
    """Every property the matrix promises; returns (problems, artifacts lost)."""
    problems: list[str] = []
    db = sqlite3.connect(ws / ".membrane" / "ledger.sqlite")
    try:
        commits = _rows(db, "SELECT artifact_id, version, content_hash, metrics_hash FROM commits")
        runs = _rows(db, "SELECT run_id, status, input_hash FROM runs")
        held = _rows(db, "SELECT content_hash, metrics_hash, status FROM held")
        tails = _rows(db, "SELECT run_id FROM trace_tail")
    finally:
        db.close()
    ids = [c[0] for c in commits]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        problems.append(f"committed more than once: {dup}")
    latest = {c[0]: c for c in commits}
    got = {a: c[2] for a, c in latest.items()}
    lost = sum(1 for a, h in ref.commits.items() if got.get(a) != h)
    extra = sorted(set(got) - set(ref.commits))
    if lost:
        problems.append(f"{lost} artifact(s) missing or different in the ledger")
    if extra:
        problems.append(f"committed but not in the uninterrupted run: {extra}")
    corpus_path = ws / "current" / "corpus.jsonl"
    corpus = corpus_path.read_bytes() if corpus_path.exists() else b""
    if corpus != want:
        problems.append("current/corpus.jsonl differs from the uninterrupted run's")
        lines = [json.loads(x) for x in corpus.splitlines() if x.strip()]
        want_ids = [json.loads(x)["id"] for x in want.splitlines() if x.strip()]
        have = [x.get("id") for x in lines]
        lost = max(lost, sum(1 for i in want_ids if i not in have))
    if sorted(json.loads(x)["id"] for x in corpus.splitlines() if x.strip()) != sorted(got):
        problems.append("corpus.jsonl does not list each committed artifact once")
    problems += _files(ws, latest, held, runs)
    if tails:
        problems.append(f"review records left in the ledger's trace tail: {tails[:3]}")
    code, child = proc.run(["trace", "verify", "-w", str(ws), "--json"], out)
    if code != 0:
        problems.append(f"trace verify exit {code}: {child.text()[-600:]}")
    problems += _learning_matches_rebuild(ws)
    return problems, lost


def _files(
    ws: Path,
    latest: dict[str, tuple[Any, ...]],
    held: list[tuple[Any, ...]],
    runs: list[tuple[Any, ...]],
) -> list[str]:
    """The files agree with the ledger: nothing missing, no orphan, no temp file."""
    problems: list[str] = []
    got = {a: c[2] for a, c in latest.items()}
    cur = ws / "current"
    files = (
        {p.stem for p in (cur / "artifacts").glob("*")} if (cur / "artifacts").is_dir() else set()
    )
    if files != {c[2] for c in latest.values()}:
        problems.append(
            f"current/artifacts: {len(files - set(got.values()))} orphan(s), "
            f"{len(set(got.values()) - files)} missing"
        )
    metrics = {p.stem for p in (cur / "metrics").glob("*")} if (cur / "metrics").is_dir() else set()
    if metrics != {c[3] for c in latest.values()}:
        problems.append("current/metrics does not match the ledger's latest rows")
    chapters = (
        {p.name for p in (cur / "chapters").glob("*")} if (cur / "chapters").is_dir() else set()
    )
    if chapters != {f"{a}.md" for a in got}:
        problems.append("current/chapters does not hold one chapter per committed artifact")
    held_files = {p.stem for p in (ws / ".membrane" / "held" / "artifacts").glob("*")}
    if held_files != {h[0] for h in held}:  # kept for every held row (the review's evidence)
        problems.append(".membrane/held/artifacts does not match the ledger's held rows")
    tmp = [str(p.relative_to(ws)) for p in ws.rglob("*") if ".tmp-" in p.name]
    if tmp:
        problems.append(f"temp files left: {tmp[:3]}")
    running = [r[0] for r in runs if r[1] == "running"]
    if running:
        problems.append(f"runs left running: {running[:3]}")
    known = {r[0] for r in runs}
    traces = {p.name[: -len(".jsonl")] for p in (ws / "trace").glob("*.jsonl")}
    if traces - known:
        problems.append(f"trace files with no run: {sorted(traces - known)[:3]}")
    inputs = {p.stem for p in (ws / ".membrane" / "inputs").glob("*.json")}
    if inputs - {r[2] for r in runs}:
        problems.append(f"{len(inputs - {r[2] for r in runs})} orphan input file(s)")
    return problems


def _learning_matches_rebuild(ws: Path) -> list[str]:
    """The learned state (brought up to date) equals a rebuild from the outcome log."""
    from harness import api

    try:
        rebuilt = api.learn_status(ws, rebuild=True)
    except Exception as exc:  # a damaged workspace: reported, like any other problem
        return [f"learn status --rebuild failed: {exc}"]
    if rebuilt.get("rebuilt_equals_incremental") is not True:
        return ["the learned state differs from a rebuild of the outcome log"]
    db = sqlite3.connect(ws / ".membrane" / "ledger.sqlite")
    try:
        per_run = db.execute(
            "SELECT run_id, COUNT(*) FROM outcomes WHERE kind = 'run' GROUP BY run_id"
            " HAVING COUNT(*) > 1"
        ).fetchall()
    finally:
        db.close()
    return [f"outcome records twice for {per_run[:3]}"] if per_run else []


def _damages() -> dict[str, Any]:
    """Ways a workspace can be wrong after a crash, each of which `check` must report."""

    def first(ws: Path, sub: str) -> Path:
        return sorted((ws / sub).iterdir())[0]

    def drop_line(ws: Path) -> None:
        p = ws / "current" / "corpus.jsonl"
        p.write_bytes(b"".join(p.read_bytes().splitlines(keepends=True)[1:]))

    def twice(ws: Path) -> None:
        db = sqlite3.connect(ws / ".membrane" / "ledger.sqlite")
        with db:
            db.execute(
                "INSERT INTO runs SELECT run_id || 'x', artifact_id, batch_id, input_hash,"
                " status, started_at, trace_len, trace_head, outcome FROM runs LIMIT 1"
            )
            db.execute(
                "INSERT INTO commits SELECT artifact_id, version + 1, content_hash,"
                " metrics_hash, run_id || 'x', trace_seq, trace_hash, committed_at"
                " FROM commits LIMIT 1"
            )
        db.close()

    return {
        "a corpus line lost": drop_line,
        "an orphan artifact file": lambda ws: (ws / "current" / "artifacts" / "0.json").write_text(
            "{}"
        ),
        "a temp file left": lambda ws: (ws / "current" / ".corpus.jsonl.tmp-1").write_text(""),
        "a committed file deleted": lambda ws: first(ws, "current/artifacts").unlink(),
        "a committed file edited": lambda ws: first(ws, "current/artifacts").write_text("{}"),
        "a chapter deleted": lambda ws: first(ws, "current/chapters").unlink(),
        "a trace record cut": lambda ws: first(ws, "trace").write_bytes(
            b"".join(first(ws, "trace").read_bytes().splitlines(keepends=True)[:-1])
        ),
        "an artifact committed twice": twice,
        "a run left running": lambda ws: _sql(
            ws, "UPDATE runs SET status = 'running' WHERE rowid = 1"
        ),
    }


def _sql(ws: Path, statement: str) -> None:
    db = sqlite3.connect(ws / ".membrane" / "ledger.sqlite")
    with db:
        db.execute(statement)
    db.close()


def self_test(ref: Reference, base: Path) -> list[Outcome]:
    """The checks can fail: each damage applied to a copy of the uninterrupted run's
    workspace must be reported (a clean outcome here means the damage was found)."""
    assert ref.ws is not None
    out = []
    for name, damage in _damages().items():
        o = Outcome("self-test", name)
        ws = base / "damaged"
        shutil.rmtree(ws, ignore_errors=True)
        shutil.copytree(ref.ws, ws)
        damage(ws)
        problems, _lost = check(ws, ref, ref.corpus_bytes, base / "damaged.out")
        if not problems:
            o.problems.append(f"{name}: not detected")
        out.append(o)
    return out


# -- the tries ------------------------------------------------------------------------


def _finish(o: Outcome, ws: Path, ref: Reference, want: bytes, work: Path, argv: list[str]) -> None:
    code, child = proc.run(argv, work / "rerun.out")
    if code != 0:
        o.problems.append(f"the rerun exited {code}: {child.text()[-800:]}")
    probs, lost = check(ws, ref, want, work / "check.out")
    o.problems += probs
    o.lost = lost


def _killed(o: Outcome, code: int, child: proc.Child, point: str) -> None:
    if code == proc.KILLED:
        o.killed += 1
    else:
        o.problems.append(f"{point} was not reached (exit {code}): {child.text()[-400:]}")


def try_point(ref: Reference, base: Path, point: Point, probe: str) -> Outcome:
    """Kill a batch at `point`, rerun it to completion, check."""
    o = Outcome(probe, point.name)
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(dir=base, prefix="p-"))
    ws = fresh_ws(work, "ws", ref.cache)
    argv = batch_argv(ref.corpus, ws) + (["--workers", "2"] if probe == "pool" else [])
    code, child = proc.run(argv, work / "kill.out", point=point)
    _killed(o, code, child, point.name)
    _finish(o, ws, ref, ref.corpus_bytes, work, argv)
    o.seconds = time.monotonic() - t0
    if o.clean:
        shutil.rmtree(work, ignore_errors=True)
    return o


def try_recovery(ref: Reference, base: Path, first: Point, point: Point) -> Outcome:
    """Kill a batch at `first`, kill the rerun at `point` (inside recovery), rerun, check."""
    o = Outcome("recovery", f"{first.name} then {point.name}")
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(dir=base, prefix="r-"))
    ws = fresh_ws(work, "ws", ref.cache)
    code, child = proc.run(batch_argv(ref.corpus, ws), work / "kill1.out", point=first)
    _killed(o, code, child, first.name)
    code, child = proc.run(batch_argv(ref.corpus, ws), work / "kill2.out", point=point)
    _killed(o, code, child, point.name)
    _finish(o, ws, ref, ref.corpus_bytes, work, batch_argv(ref.corpus, ws))
    o.seconds = time.monotonic() - t0
    if o.clean:
        shutil.rmtree(work, ignore_errors=True)
    return o


def try_timed(ref: Reference, base: Path, when: tuple[int, float], index: int) -> Outcome:
    """A real SIGKILL at a random moment, then a rerun to completion. `when` is (k, delay):
    k < 0 kills `delay` seconds after the start (the start-up: the ledger, the ontology,
    recovery); otherwise `delay` seconds after the k-th committed file appears, so the
    kills spread over the whole batch whatever the machine's load. The point names how
    many artifacts the ledger had committed when the kill came."""
    k, delay = when
    o = Outcome("timed", f"k={k},t={delay:.3f}s#{index}")
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(dir=base, prefix="t-"))
    ws = fresh_ws(work, "ws", ref.cache)
    child = proc.start(batch_argv(ref.corpus, ws), work / "kill.out")
    folder = ws / "current" / "artifacts"
    while k >= 0 and child.poll() is None:
        if folder.is_dir() and sum(1 for _ in folder.iterdir()) >= k:
            break
        time.sleep(0.01)
    time.sleep(delay)
    if child.poll() is None:
        child.kill()
        if child.wait() == proc.KILLED:
            o.killed += 1
    o.point += f" ({_committed(ws)}/{len(ref.commits)} committed)" if o.killed else " (ended first)"
    _finish(o, ws, ref, ref.corpus_bytes, work, batch_argv(ref.corpus, ws))
    o.seconds = time.monotonic() - t0
    if o.clean:
        shutil.rmtree(work, ignore_errors=True)
    return o


def _committed(ws: Path) -> int:
    path = ws / ".membrane" / "ledger.sqlite"
    if not path.exists():
        return 0
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM commits").fetchone()[0])
    except sqlite3.Error:  # killed before the schema was written
        return 0
    finally:
        db.close()


# -- review approve -------------------------------------------------------------------


def review_reference(ref: Reference, base: Path, size: int) -> None:
    """A pack that holds every run for a person; a workspace with `size` held runs; and the
    corpus after approving them all without a kill."""
    pack = base / "pack-held"
    shutil.rmtree(pack, ignore_errors=True)
    shutil.copytree(PACK, pack, ignore=shutil.ignore_patterns("corpus", "__pycache__"))
    toml = (pack / "pack.toml").read_text()
    (pack / "pack.toml").write_text(
        toml.replace("require_approval = false", "require_approval = true")
    )
    corpus = base / "held.jsonl"
    corpus.write_text("".join(ref.corpus.read_text().splitlines(keepends=True)[:size]))
    tpl = fresh_ws(base, "held-template", ref.cache)
    code, child = proc.run(batch_argv(corpus, tpl, pack), base / "held.out")
    if code != 0:
        raise RuntimeError(f"the held batch failed ({code}): {child.text()[-2000:]}")
    ws = base / "held-reference"
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(tpl, ws)
    for run_id in _pending(ws):
        code, child = proc.run(["review", "approve", run_id, "-w", str(ws)], base / "approve.out")
        if code != 0:
            raise RuntimeError(f"approve {run_id} failed ({code}): {child.text()[-2000:]}")
    ref.held_template = tpl
    ref.held_bytes = (ws / "current" / "corpus.jsonl").read_bytes()
    db = sqlite3.connect(ws / ".membrane" / "ledger.sqlite")
    try:
        ref.held_commits = dict(db.execute("SELECT artifact_id, content_hash FROM commits"))
    finally:
        db.close()


def _pending(ws: Path) -> list[str]:
    db = sqlite3.connect(ws / ".membrane" / "ledger.sqlite")
    try:
        rows = db.execute(
            "SELECT run_id FROM held WHERE status = 'pending' ORDER BY artifact_id"
        ).fetchall()
    finally:
        db.close()
    return [r for (r,) in rows]


def try_review(ref: Reference, base: Path, point: Point, which: int) -> Outcome:
    """Approve the held runs in order, the `which`-th approval killed at `point`; then
    `membrane recover`, approve what is still pending, and check."""
    o = Outcome("review", f"approve#{which} {point.name}")
    t0 = time.monotonic()
    assert ref.held_template is not None
    work = Path(tempfile.mkdtemp(dir=base, prefix="v-"))
    ws = work / "ws"
    shutil.copytree(ref.held_template, ws)
    for i, run_id in enumerate(_pending(ws)):
        argv = ["review", "approve", run_id, "-w", str(ws)]
        code, child = proc.run(argv, work / "approve.out", point=point if i == which else None)
        if i == which:
            _killed(o, code, child, point.name)
        elif code != 0:
            o.problems.append(f"approve {run_id} exited {code}: {child.text()[-400:]}")
    code, child = proc.run(["recover", "-w", str(ws)], work / "recover.out")
    if code != 0:
        o.problems.append(f"recover exited {code}: {child.text()[-400:]}")
    for run_id in _pending(ws):
        code, child = proc.run(["review", "approve", run_id, "-w", str(ws)], work / "again.out")
        if code != 0:
            o.problems.append(f"approve {run_id} again exited {code}: {child.text()[-400:]}")
    held_ref = Reference(ref.corpus, ref.held_bytes, ref.held_commits, {}, 0.0, ref.cache)
    probs, lost = check(ws, held_ref, ref.held_bytes, work / "check.out")
    o.problems += probs
    o.lost = lost
    o.seconds = time.monotonic() - t0
    if o.clean:
        shutil.rmtree(work, ignore_errors=True)
    return o


# -- the plan -------------------------------------------------------------------------


def spread(count: int, k: int) -> list[int]:
    """k call numbers spread evenly over 1..count (all of them when count <= k)."""
    if count <= k:
        return list(range(1, count + 1))
    if k == 1:
        return [(count + 1) // 2]
    return sorted({1 + round(i * (count - 1) / (k - 1)) for i in range(k)})


@dataclass(frozen=True)
class Task:
    kind: str  # point | recovery | timed | review
    args: tuple[Any, ...]


def plan(ref: Reference, *, per_step: int, recovery: int, timed: int, review: int) -> list[Task]:
    rng = random.Random(17)
    tasks: list[Task] = []
    for target, when in BATCH_TARGETS:
        for n in spread(ref.counts.get(target, 0), per_step):
            tasks.append(Task("point", (Point(target, when, n), "batch")))
    for target, when in LEARN_TARGETS:
        for n in spread(ref.counts.get(target, 0), max(1, per_step // 4)):
            tasks.append(Task("point", (Point(target, when, n), "learning")))
    if per_step:  # `--workers 2`: the parent killed inside a judged cohort's commit
        tasks += [Task("point", (Point(t, w, n), "pool")) for t, w, n in POOL_POINTS]
    commits = ref.counts.get("harness.ledger:Ledger.commit_many", 1)
    firsts = [
        Point("harness.ledger:Ledger.commit_many", "after", n) for n in spread(commits, recovery)
    ]
    firsts += [Point("harness.trace.chain:TraceWriter.append", "torn", 7 * n) for n in range(1, 4)]
    for target, when in RECOVERY_TARGETS:
        for i, first in enumerate(firsts[:recovery]):
            nth = 1 + (i % 3 if target.endswith(":_sweep") else 0)
            tasks.append(Task("recovery", (first, Point(target, when, nth))))
    size = len(ref.commits)
    for i in range(timed):  # one in eight in the start-up, the rest spread over the commits
        k = -1 if i % 8 == 0 else rng.randrange(size)
        delay = rng.uniform(0.2, 2.5) if k < 0 else rng.uniform(0.0, 0.4)
        tasks.append(Task("timed", ((k, round(delay, 3)), i)))
    if review:
        for target, when in REVIEW_TARGETS:
            for which in range(review):
                tasks.append(Task("review", (Point(target, when, 1), which)))
    return tasks


def interleave(tasks: list[Task]) -> list[Task]:
    """Round-robin over the kinds of try and their steps (a run stopped early has tried
    each step)."""
    kinds: dict[str, list[Task]] = {}
    for t in tasks:
        step = t.args[-1] if t.kind == "recovery" else t.args[0]
        key = f"{t.kind}:{step.name.split('#')[0]}" if isinstance(step, Point) else t.kind
        kinds.setdefault(key, []).append(t)
    out: list[Task] = []
    while any(kinds.values()):
        for queue in kinds.values():
            if queue:
                out.append(queue.pop(0))
    return out


def run_task(ref: Reference, base: Path, task: Task) -> Outcome:
    try:
        if task.kind == "point":
            return try_point(ref, base, *task.args)
        if task.kind == "recovery":
            return try_recovery(ref, base, *task.args)
        if task.kind == "timed":
            return try_timed(ref, base, *task.args)
        return try_review(ref, base, *task.args)
    except Exception as exc:  # a harness bug in the matrix itself is a failure, reported
        return Outcome(task.kind, repr(task.args), problems=[f"matrix error: {exc!r}"])


def outcome_json(o: Outcome) -> dict[str, Any]:
    return {**asdict(o), "clean": o.clean}


def iter_tasks(tasks: list[Task]) -> Iterator[Task]:
    yield from tasks

"""The workspace checkpoint (issue 17): `membrane trace checkpoint` and `trace verify
--checkpoint`. A tamper matrix edits a copy of one workspace in every way the issue lists and
reports, per tamper, whether plain `trace verify` and `trace verify --checkpoint` detect it
(exit 4). With the checkpoint every tamper before it is detected; without, the forgeries that
rewrite the ledger to match are not (docs/explanation/guarantees.md says which)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from effectors.testing import ScriptedProposer
from harness.checkpoint import make_checkpoint, parse_checkpoint, verify_against
from harness.cli import main
from harness.errors import ConfigError
from harness.ledger import Ledger
from harness.models import Artifact
from harness.store import recover
from harness.trace.chain import event_hash
from harness.workspace import Workspace
from tests.harness.helpers import fake_gates, make_engines, run_cohort

ARTS = [
    Artifact(id=f"a{i}", tables={"t": [{"k": f"a{i}", "v": i}]}, prose=f"a{i}.") for i in range(4)
]


def _batch(root: Path, arts: list[Artifact]) -> None:
    ws, eng = make_engines(root, fake_gates(), ScriptedProposer("fake", []))
    try:
        recover(ws, eng.ledger)
        run_cohort(ws, eng, arts)
        recover(ws, eng.ledger)  # the view rebuilt, superseded versions archived
    finally:
        eng.ledger.close()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A workspace (a0 in two versions: v1 archived) and its checkpoint file."""
    root = tmp_path_factory.mktemp("checkpointed") / "ws"
    _batch(root, ARTS)
    _batch(root, [ARTS[0].model_copy(update={"prose": "a0, second version."})])
    file = root.parent / "checkpoint.json"
    assert main(["trace", "checkpoint", "-w", str(root), "--json"]) == 0
    cp = make_checkpoint(Workspace(root))
    file.write_text(json.dumps({"size": cp.size, "root": cp.root}))
    assert cp.size == 5
    assert (root / "archive" / "artifacts").is_dir()
    return root, str(file)


# -- tampers -------------------------------------------------------------------------------


def _lines(p: Path) -> list[bytes]:
    return [x for x in p.read_bytes().splitlines() if x.strip()]


def _write(p: Path, lines: list[bytes]) -> None:
    p.write_bytes(b"".join(x + b"\n" for x in lines))


def _rechain(lines: list[bytes], edit: Callable[[list[dict[str, Any]]], None]) -> list[bytes]:
    """The trace with `edit` applied to its records and every hash recomputed (a forgery
    whose chain verifies)."""
    events = [orjson.loads(x) for x in lines]
    edit(events)
    prev = ""
    for ev in events:
        ev["prev"] = prev
        ev["hash"] = event_hash(ev)
        prev = ev["hash"]
    return [orjson.dumps(ev, option=orjson.OPT_SORT_KEYS) for ev in events]


def _db(ws: Path) -> sqlite3.Connection:
    return sqlite3.connect(ws / ".membrane" / "ledger.sqlite", isolation_level=None)


def _trace(ws: Path, run: str = "a1.r1") -> Path:
    return ws / "trace" / f"{run}.jsonl"


def t_record_edited(ws: Path) -> None:
    lines = _lines(_trace(ws))
    lines[1] = lines[1].replace(b'"cycle":1', b'"cycle":9')
    _write(_trace(ws), lines)


def t_record_deleted(ws: Path) -> None:
    lines = _lines(_trace(ws))
    _write(_trace(ws), lines[:2] + lines[3:])


def t_records_reordered(ws: Path) -> None:
    lines = _lines(_trace(ws))
    lines[1], lines[2] = lines[2], lines[1]
    _write(_trace(ws), lines)


def t_truncated(ws: Path) -> None:
    _write(_trace(ws), _lines(_trace(ws))[:-2])


def _forge(ws: Path) -> str:
    """Rewrite a1.r1's first decision and recompute the chain; the new head."""

    def edit(events: list[dict[str, Any]]) -> None:
        events[1]["rule"] = "forged_rule"

    forged = _rechain(_lines(_trace(ws)), edit)
    _write(_trace(ws), forged)
    return str(orjson.loads(forged[-1])["hash"])


def t_forged_chain_recomputed(ws: Path) -> None:
    _forge(ws)


def t_forged_and_ledger_anchor_rewritten(ws: Path) -> None:
    head = _forge(ws)
    db = _db(ws)
    db.execute("UPDATE runs SET trace_head = ? WHERE run_id = 'a1.r1'", (head,))
    db.close()


def t_forged_anchor_and_anchor_log_rewritten(ws: Path) -> None:
    head = _forge(ws)
    db = _db(ws)
    db.execute("UPDATE runs SET trace_head = ? WHERE run_id = 'a1.r1'", (head,))
    db.execute("UPDATE anchor_log SET trace_head = ? WHERE run_id = 'a1.r1'", (head,))
    db.close()


def t_run_removed(ws: Path) -> None:
    db = _db(ws)
    for table in ("commits", "outcomes", "anchor_log", "runs"):
        db.execute(f"DELETE FROM {table} WHERE run_id = 'a3.r1'")
    db.close()
    _trace(ws, "a3.r1").unlink()
    _recover(ws)  # its files swept and the view rebuilt without it


def _recover(ws: Path) -> None:
    w = Workspace(ws)
    ledger = Ledger(w.ledger_path)
    try:
        recover(w, ledger)
    finally:
        ledger.close()


def t_anchor_log_reordered(ws: Path) -> None:
    db = _db(ws)
    db.execute("UPDATE anchor_log SET seq = seq + 100 WHERE seq = 1")
    db.close()


def t_artifact_replaced(ws: Path) -> None:
    db = _db(ws)
    (h,) = db.execute("SELECT content_hash FROM commits WHERE run_id = 'a2.r1'").fetchone()
    db.close()
    path = ws / "current" / "artifacts" / f"{h}.json"
    path.write_bytes(path.read_bytes().replace(b'"a2."', b'"tampered."'))


def t_artifact_replaced_ledger_and_trace_rewritten(ws: Path) -> None:
    """New content under its own hash; the commit row, the trace's commit record (chain
    recomputed) and the run's anchor rewritten to match: plain verify finds nothing."""
    from harness.store import artifact_bytes, content_hash

    fake = Artifact(id="a2", tables={"t": [{"k": "a2", "v": 99}]}, prose="a2 forged.")
    data = artifact_bytes(fake)
    new = content_hash(data)
    (ws / "current" / "artifacts" / f"{new}.json").write_bytes(data)
    db = _db(ws)
    (old,) = db.execute("SELECT content_hash FROM commits WHERE run_id = 'a2.r1'").fetchone()

    def edit(events: list[dict[str, Any]]) -> None:
        for ev in events:
            if ev.get("content_hash") == old:
                ev["content_hash"] = new

    forged = _rechain(_lines(_trace(ws, "a2.r1")), edit)
    _write(_trace(ws, "a2.r1"), forged)
    heads = {orjson.loads(x)["seq"]: orjson.loads(x)["hash"] for x in forged}
    (seq,) = db.execute("SELECT trace_seq FROM commits WHERE run_id = 'a2.r1'").fetchone()
    db.execute(
        "UPDATE commits SET content_hash = ?, trace_hash = ? WHERE run_id = 'a2.r1'",
        (new, heads[seq]),
    )
    db.execute("UPDATE runs SET trace_head = ? WHERE run_id = 'a2.r1'", (heads[max(heads)],))
    db.close()
    (ws / "current" / "artifacts" / f"{old}.json").unlink()
    _recover(ws)  # corpus.jsonl and the chapter rebuilt from the forgery


def t_corpus_edited(ws: Path) -> None:
    p = ws / "current" / "corpus.jsonl"
    p.write_bytes(p.read_bytes().replace(b'"a3."', b'"tampered."'))


def t_archive_edited(ws: Path) -> None:
    (p,) = (ws / "archive" / "artifacts").glob("*.json")
    p.write_bytes(p.read_bytes().replace(b'"a0."', b'"tampered."'))


def t_archive_removed(ws: Path) -> None:
    (p,) = (ws / "archive" / "artifacts").glob("*.json")
    p.unlink()


# tamper -> detected by plain `trace verify` (what docs/explanation/guarantees.md states without a checkpoint)
MATRIX: dict[str, tuple[Callable[[Path], None], bool]] = {
    "record edited": (t_record_edited, True),
    "record deleted": (t_record_deleted, True),
    "records reordered": (t_records_reordered, True),
    "trace truncated": (t_truncated, True),
    "forged record, chain recomputed": (t_forged_chain_recomputed, True),
    "forged record, ledger anchor rewritten to match": (
        t_forged_and_ledger_anchor_rewritten,
        False,
    ),
    "... and the anchor log rewritten too": (t_forged_anchor_and_anchor_log_rewritten, False),
    "run removed (ledger rows and trace)": (t_run_removed, False),
    "anchor log reordered": (t_anchor_log_reordered, False),
    "committed artifact file replaced": (t_artifact_replaced, True),
    "artifact replaced, ledger and trace rewritten to match": (
        t_artifact_replaced_ledger_and_trace_rewritten,
        False,
    ),
    "corpus.jsonl edited": (t_corpus_edited, False),
    "archive file edited": (t_archive_edited, False),
    "archive file removed": (t_archive_removed, False),
}


def test_tamper_matrix(
    base: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, file = base
    rows = []
    for name, (tamper, plain_expected) in MATRIX.items():
        ws = tmp_path / name.replace(" ", "_").replace(",", "").replace(".", "")
        shutil.copytree(root, ws)
        tamper(ws)
        plain = main(["trace", "verify", "-w", str(ws)]) == 4
        against = main(["trace", "verify", "-w", str(ws), "--checkpoint", file]) == 4
        capsys.readouterr()
        rows.append((name, plain, against))
        assert plain is plain_expected, name
    table = "\n".join(
        f"{n:<56} {'yes' if p else 'no':<8} {'yes' if c else 'no'}" for n, p, c in rows
    )
    detected = sum(c for _n, _p, c in rows)
    with capsys.disabled():
        print(f"\n{'tamper':<56} {'verify':<8} with --checkpoint\n{table}")
        print(f"detected with the checkpoint: {detected}/{len(rows)}")
    assert detected == len(rows)


def test_an_untouched_workspace_extends_its_checkpoint_and_new_runs_are_listed(
    base: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, file = base
    ws = tmp_path / "ws"
    shutil.copytree(root, ws)
    assert main(["trace", "verify", "-w", str(ws), "--checkpoint", file]) == 0
    _batch(ws, [Artifact(id="b1", tables={"t": [{"k": "b1", "v": 1}]}, prose="b1.")])
    capsys.readouterr()
    assert main(["trace", "verify", "-w", str(ws), "--checkpoint", file, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["against_checkpoint"]["new_runs"] == ["b1.r1"]
    assert data["against_checkpoint"]["checkpoint"]["size"] == 5
    assert data["against_checkpoint"]["size_now"] == 6
    root_hex = json.loads(Path(file).read_text())["root"]
    assert main(["trace", "verify", "-w", str(ws), "--checkpoint", root_hex]) == 0
    check = verify_against(Workspace(ws), root_hex)
    assert check.ok and check.checkpoint is not None and check.checkpoint.size == 5


def test_the_checkpoint_is_printed_by_trace_checkpoint_and_batch_json(
    base: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _file = base
    cp = make_checkpoint(Workspace(root))
    assert main(["trace", "checkpoint", "-w", str(root)]) == 0
    assert capsys.readouterr().out == f"membrane-checkpoint v1 size=5 root={cp.root}\n"
    assert parse_checkpoint(cp.text()) == cp.root


def test_a_ledger_from_before_the_anchor_log_gets_the_same_checkpoint(tmp_path: Path) -> None:
    """A v2 ledger (no anchor log): read as is, its checkpoint is the backfill the migration
    then writes, so a checkpoint taken before an upgrade still verifies after it."""
    root = tmp_path / "ws"
    _batch(root, ARTS)
    db = _db(root)
    db.execute("DROP TABLE anchor_log")
    db.execute("PRAGMA user_version = 2")
    db.close()
    before = make_checkpoint(Workspace(root))
    Ledger(Workspace(root).ledger_path).close()  # a writer migrates
    assert make_checkpoint(Workspace(root)) == before
    assert verify_against(Workspace(root), before.root).ok


@pytest.mark.parametrize("bad", ["", "nothing", "ab" * 31, "0" * 64 + " " + "1" * 64])
def test_a_bad_checkpoint_argument_is_a_setup_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="is not a checkpoint"):
        parse_checkpoint(bad)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_checkpoint_argument_is_a_root_or_a_setup_error(text: str) -> None:
    try:
        root = parse_checkpoint(text)
    except ConfigError:
        return
    assert len(root) == 64 and root in text.lower()

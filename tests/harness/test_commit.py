"""Property test of the commit protocol: crash anywhere between the steps, recover, and the
workspace equals what the ledger says — nothing lost, nothing duplicated, no orphans; held
artifacts (approval required) survive every recovery."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from effectors.commit import Committer
from harness.ledger import Ledger
from harness.models import Artifact
from harness.store import artifact_bytes, content_hash, recover, write_objects
from harness.workspace import Workspace

ops = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 3),
        st.sampled_from(["full", "objects_only", "temp_file_only", "held", "held_objects_only"]),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(ops)
def test_recovery_restores_the_ledger_view(steps: list[tuple[str, int, str]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        ws = Workspace(Path(d))
        ws.ensure()
        ledger = Ledger(ws.ledger_path)
        committer = Committer(ws, ledger)
        expected: dict[str, int] = {}
        held: set[str] = set()
        for n, (aid, value, crash) in enumerate(steps):
            art = Artifact(id=aid, tables={"t": [{"v": value}]})
            run_id = f"{aid}.r{n}"
            ledger.start_run(run_id, aid, "b", f"h{n}", "t")
            if crash == "temp_file_only":  # killed while writing an object
                (ws.current / "artifacts").mkdir(parents=True, exist_ok=True)
                (ws.current / "artifacts" / f".x.json.tmp-{n}").write_bytes(b"{partial")
                continue
            if crash == "objects_only":  # killed after the objects, before the ledger txn
                write_objects(ws.current, art, {"n": n})
                continue
            if crash == "held_objects_only":  # killed while holding, before the ledger row
                write_objects(ws.held, art, {"n": n})
                continue
            if crash == "held":  # passed every gate, waits for a person
                committer.hold(run_id, art, {"n": n}, 0, "h", "t")
                committer.hold(run_id, art, {"n": n}, 0, "h", "t")  # retried: idempotent
                held.add(content_hash(artifact_bytes(art)))
                continue
            committer.commit(run_id, art, {"n": n}, 0, "h", "t")
            committer.commit(run_id, art, {"n": n}, 0, "h", "t")  # retried: idempotent
            expected[aid] = value
        rep = recover(ws, ledger)
        lines = (ws.current / "corpus.jsonl").read_text().splitlines()
        got = {json.loads(x)["id"]: json.loads(x)["tables"]["t"][0]["v"] for x in lines}
        assert got == expected
        assert len(lines) == len(expected)  # nothing duplicated
        latest = {c.artifact_id: c for c in ledger.latest_commits()}
        on_disk = {p.stem for p in (ws.current / "artifacts").glob("*")}
        assert on_disk == {c.content_hash for c in latest.values()}  # no orphans
        assert all(r.status != "running" for r in ledger.runs())
        versions = [c.version for c in ledger.all_commits() if c.artifact_id == "a"]
        assert versions == list(range(1, len(versions) + 1))
        assert rep.interrupted == sum(1 for _a, _v, c in steps if c not in ("full", "held"))
        assert rep.settled_held == sum(1 for _a, _v, c in steps if c == "held")
        # every held artifact survives recovery, byte for byte; held orphans are gone
        held_on_disk = {
            p.stem: content_hash(p.read_bytes()) for p in (ws.held / "artifacts").glob("*")
        }
        assert set(held_on_disk) == held and all(k == v for k, v in held_on_disk.items())
        assert {r.content_hash for r in ledger.held()} == held
        ledger.close()

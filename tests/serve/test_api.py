"""The JSON API against a workspace the demo batch made, over real loopback HTTP: every
endpoint, keyset pages, stable error codes, no path traversal, reading while a batch
writes, and the review acts' guards (read-only, token, CSRF)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness.ledger import Ledger
from tests.serve.conftest import TOKEN, Served, copy_workspace, serving

pytestmark = pytest.mark.java  # the demo workspace is made by the real gates

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _runs(s: Served, **params: Any) -> list[dict[str, Any]]:
    with s.client() as c:
        r = c.get("/api/v1/runs", params={"limit": 500, **params})
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


def _first(s: Served, state: str, attempts: int | None = None) -> str:
    for r in _runs(s, state=state):
        if attempts is None or r["attempts"] == attempts:
            return str(r["run_id"])
    raise AssertionError(f"no {state} run with {attempts} attempts")


def _error(r: Any, status: int, code: str) -> None:
    assert r.status_code == status, r.text
    if r.headers["content-type"].startswith("text/html"):  # a page: the code is on it
        assert f">{code}<" in r.text
    else:
        assert r.headers["content-type"].startswith("application/json")
        assert r.json()["error"]["code"] == code


def test_runs_filter_and_keyset_pages(readonly: Served) -> None:
    every = _runs(readonly)
    ledger = Ledger.reader(readonly.workspace / ".membrane" / "ledger.sqlite")
    try:
        assert {r["run_id"] for r in every} == {r.run_id for r in ledger.runs()}
    finally:
        ledger.close()
    seen: list[str] = []
    cursor = None
    with readonly.client() as c:
        while True:
            page = c.get(
                "/api/v1/runs", params={"limit": 7, **({"cursor": cursor} if cursor else {})}
            ).json()
            assert len(page["items"]) <= 7
            seen += [r["run_id"] for r in page["items"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert seen == [r["run_id"] for r in every]  # newest first, no gap, no duplicate
    exhausted = _runs(readonly, state="EXHAUSTED")
    assert exhausted and all(r["state"] == "EXHAUSTED" for r in exhausted)
    assert all(r["sparkline"] and not r["sparkline"][-1]["passed"] for r in exhausted)
    batch = every[-1]["batch_id"]
    assert {r["batch_id"] for r in _runs(readonly, batch=batch)} == {batch}
    assert _runs(readonly, proposer="offline") and not _runs(readonly, proposer="nobody")
    assert _runs(readonly, pack="facility") and not _runs(readonly, pack="other")


def test_run_detail_trace_verify(readonly: Served) -> None:
    run_id = _first(readonly, "COMMITTED", attempts=2)
    with readonly.client() as c:
        t = c.get(f"/api/v1/runs/{run_id}").json()
        assert t["run"]["run_id"] == run_id and not t["partial"]
        rules = [cy["rule"] for cy in t["cycles"]]
        assert rules[0] == "seed_first_attempt" and "publish_commit" in rules
        steps = [s for cy in t["cycles"] for s in cy["steps"]]
        second = next(s for s in steps if s["kind"] == "proposal" and s["attempt"] == 2)
        assert second["diff"] and all("before" in d and "after" in d for d in second["diff"])
        assert any(s["kind"] == "verdict" and not s["passed"] and s["codes"] for s in steps)
        raw = c.get(f"/api/v1/runs/{run_id}/trace").json()
        assert len(raw["records"]) == t["records"] and raw["records"][0]["kind"] == "run_started"
        v = c.get(f"/api/v1/runs/{run_id}/verify").json()
        assert v["ok"] and v["failures"] == []
        everything = c.get("/api/v1/verify").json()
        assert everything["ok"] and everything["checked"] == len(_runs(readonly))


def test_provenance_of_a_committed_cell(readonly: Served) -> None:
    run_id = _first(readonly, "COMMITTED", attempts=2)
    with readonly.client() as c:
        art_id = c.get(f"/api/v1/runs/{run_id}").json()["run"]["artifact_id"]
        art = c.get(f"/api/v1/artifacts/{art_id}").json()
        assert art["commit"]["run_id"] == run_id
        table, rows = next(iter(art["artifact"]["tables"].items()))
        column = next(iter(rows[0]))
        p = c.get(f"/api/v1/artifacts/{art_id}/cells/{table}/0/{column}").json()
    assert p["cell"] == f"{table}[0].{column}" and p["run_id"] == run_id
    assert p["proposed"]["attempt"] >= 1 and p["committed"]["version"] == 1
    assert {a["gate"] for a in p["admitted"]} >= {"value_gate", "ri_gate"}


def test_report_learning_review_queue_openapi(readonly: Served) -> None:
    with readonly.client() as c:
        rep = c.get("/api/v1/report").json()
        assert rep["refined"]["placeholder_rate"] == 0.0
        assert rep["baseline"]["placeholder_rate"] > 0.0
        assert sum(rep["attempts_histogram"].values()) == len(_runs(readonly))  # every run
        assert rep["cost"]["batches"]
        learn = c.get("/api/v1/learning").json()
        assert "offline" in learn["proposers"] and learn["reliability_over_time"]["offline"]
        queue = c.get("/api/v1/review").json()
        assert len(queue["items"]) == 3 and queue["review_enabled"] is False
        one = c.get(f"/api/v1/review/{queue['items'][0]['run_id']}").json()
        assert one["status"] == "pending" and one["blocked_by"] == []
        spec = c.get("/api/v1/openapi.json").json()
    assert {"/api/v1/runs", "/api/v1/runs/{run_id}", "/api/v1/report", "/api/v1/learning"} <= set(
        spec["paths"]
    )


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/runs/..%2F..%2F.membrane%2Fledger",
        "/api/v1/runs/%2e%2e",
        "/api/v1/runs/..",
        "/api/v1/runs/.hidden/trace",
        "/api/v1/runs/a%00b",
        "/api/v1/runs/%2Fetc%2Fpasswd/trace",
        "/api/v1/runs/fac-0001.r1%2F..%2F..%2Fmembrane.toml/verify",
        "/api/v1/artifacts/..%2Fcurrent",
        "/api/v1/artifacts/..%2F..%2Fetc/cells/a/0/b",
        "/api/v1/review/..%2F..%2Fmembrane.toml",
        "/runs/..%2F..%2Fmembrane.toml",
        "/artifacts/%2e%2e%2fledger",
    ],
)
def test_no_path_traversal(readonly: Served, path: str) -> None:
    with readonly.client() as c:
        r = c.get(path)
    assert r.status_code in (400, 404), r.text
    assert b"[learning]" not in r.content and b"SQLite" not in r.content


def test_errors_are_json_with_stable_codes(readonly: Served) -> None:
    with readonly.client() as c:
        _error(c.get("/api/v1/runs/fac-9999.r1"), 404, "run.not_found")
        _error(c.get("/api/v1/runs", params={"state": "NOPE"}), 400, "request.invalid")
        _error(c.get("/api/v1/runs", params={"limit": 0}), 400, "request.invalid")
        _error(c.get("/api/v1/runs", params={"cursor": "garbage!"}), 400, "cursor.invalid")
        _error(c.get("/api/v1/artifacts/fac-9999"), 404, "artifact.not_committed")
        exhausted = _runs(readonly, state="EXHAUSTED")[0]["artifact_id"]
        committed = _runs(readonly, state="COMMITTED")[0]["artifact_id"]
        _error(c.get(f"/api/v1/artifacts/{exhausted}"), 404, "artifact.not_committed")
        _error(c.get(f"/api/v1/artifacts/{committed}/cells/nope/0/x"), 404, "cell.not_found")
        _error(c.get("/api/v1/review/fac-9999.r1"), 404, "review.not_held")
        _error(c.get("/api/v1/nothing"), 404, "not_found")
        # a trailing slash (or an encoded one) is an error in JSON, never an empty redirect
        _error(c.get(f"/api/v1/artifacts/{committed}/"), 404, "not_found")
        _error(c.get("/api/v1/artifacts/0%2F"), 404, "not_found")
        _error(c.get("/api/v1/runs/"), 404, "not_found")
        _error(c.delete("/api/v1/runs"), 405, "method_not_allowed")


def test_write_acts_need_review_and_the_token(readonly: Served, reviewing: Served) -> None:
    held = [h["run_id"] for h in _queue(reviewing)]
    with readonly.client() as c:  # read-only: no write act at all
        _error(c.post(f"/api/v1/review/{held[0]}/approve", headers=AUTH), 403, "review.disabled")
    with reviewing.client() as c:
        _error(c.post(f"/api/v1/review/{held[0]}/approve"), 401, "auth.token_required")
        bad = {"Authorization": "Bearer wrong"}
        _error(c.post(f"/api/v1/review/{held[0]}/approve", headers=bad), 401, "auth.token_invalid")
        # a browser form: the cookie alone is not enough without the CSRF token
        c.cookies.set("membrane_token", TOKEN)
        _error(c.post(f"/review/{held[0]}/approve", data={"note": "x"}), 403, "auth.csrf")
        # nothing was written
        assert [h["run_id"] for h in _queue(reviewing)] == held
        ok = c.post(f"/api/v1/review/{held[0]}/approve", headers=AUTH, json={"note": "fine"})
        assert ok.status_code == 200, ok.text
        _error(c.post(f"/api/v1/review/{held[0]}/approve", headers=AUTH), 409, "review.refused")
        _error(
            c.post(f"/api/v1/review/{held[1]}/reject", headers=AUTH, json={}),
            400,
            "request.invalid",
        )
        rej = c.post(
            f"/api/v1/review/{held[1]}/reject", headers=AUTH, json={"reason": "wrong room"}
        )
        assert rej.status_code == 200 and rej.json()["status"] == "REJECTED"
        _error(c.post("/api/v1/review/fac-9999.r1/approve", headers=AUTH), 404, "review.not_held")
    row = ok.json()
    assert (reviewing.workspace / "current" / "artifacts" / f"{row['content_hash']}.json").is_file()
    corpus = (reviewing.workspace / "current" / "corpus.jsonl").read_text().splitlines()
    assert any(orjson.loads(line)["id"] == row["artifact_id"] for line in corpus)
    assert [h["run_id"] for h in _queue(reviewing)] == held[2:]
    with reviewing.client() as c:
        v = c.get(f"/api/v1/runs/{held[0]}/verify").json()
    assert v["ok"], v  # the review record was appended and re-anchored like the CLI's


def _queue(s: Served) -> list[dict[str, Any]]:
    with s.client() as c:
        items: list[dict[str, Any]] = c.get("/api/v1/review").json()["items"]
    return items


def test_reads_while_a_batch_writes_and_a_torn_trace_line(demo_base: Path, tmp_path: Path) -> None:
    ws = copy_workspace(demo_base, tmp_path / "ws")
    run_id = next(p.stem for p in sorted((ws / "trace").glob("*.r1.jsonl")))
    trace = ws / "trace" / f"{run_id}.jsonl"
    with trace.open("ab") as fh:  # a batch is half-way through writing a record
        fh.write(b'{"kind": "decision", "seq": 9')
    writer = sqlite3.connect(ws / ".membrane" / "ledger.sqlite", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # the batch's writer lock, held
    writer.execute("UPDATE runs SET status = 'running' WHERE run_id = ?", (run_id,))
    try:
        with serving(ws) as s, s.client() as c:
            r = c.get("/api/v1/runs", params={"limit": 5})
            assert r.status_code == 200
            t = c.get(f"/api/v1/runs/{run_id}")
            assert t.status_code == 200 and t.json()["partial"] is True
            assert c.get(f"/runs/{run_id}").status_code == 200
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_an_empty_workspace_says_so(tmp_path: Path) -> None:
    with serving(tmp_path) as s, s.client() as c:
        _error(c.get("/api/v1/runs"), 404, "workspace.empty")
        page = c.get("/runs")
    assert page.status_code == 404 and "workspace.empty" in page.text

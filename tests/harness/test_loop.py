"""The loop with fake gates and a scripted proposer: the whole trace is pinned by a golden file."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from effectors.testing import InstantGate, ScriptedProposer
from harness.driver import BatchRun
from harness.errors import InfrastructureError
from harness.models import Artifact, CanonicalCell, Critique, Location, RunState, Verdict
from harness.models import Effector as E
from harness.store import artifact_bytes
from harness.trace import verify_chain
from tests.harness.helpers import make_engines, run_cohort

GOLDEN = Path(__file__).parent / "golden"


def art(standard: str, prose: str = "A CT scanner complies with IEC 60601-1.") -> Artifact:
    return Artifact(
        id="a1", tables={"equipment": [{"equipment_id": "EQ-1", "standard": standard}]}, prose=prose
    )


def disjoint_if_hvac(a: Artifact) -> list[Critique]:
    std = a.tables["equipment"][0]["standard"]
    if std == "ASHRAE 62.1":
        return [
            Critique(
                code="value.disjoint",
                gate="value_gate",
                observed=str(std),
                expected="ImagingStandard",
                location=Location(table="equipment", row=0, column="standard"),
            )
        ]
    return []


def gates(value_fn=disjoint_if_hvac):  # type: ignore[no-untyped-def]
    return {
        E.VALUE_GATE: InstantGate("value_gate", value_fn),
        E.RI_GATE: InstantGate("ri_gate"),
        E.PROSE_GATE: InstantGate("prose_gate"),
    }


def _normalised_trace(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_retry_then_commit_matches_golden_trace(tmp_path: Path) -> None:
    proposer = ScriptedProposer("fake", [art("IEC 60601-1")])
    ws, eng = make_engines(tmp_path, gates(), proposer)
    (run,) = run_cohort(ws, eng, [art("ASHRAE 62.1")])
    assert run.state == RunState.COMMITTED and run.attempt == 2
    # the proposer saw the critique and the spine with the other cells locked
    req = proposer.requests[0]
    assert [c.code for c in req.critique.critiques] == ["value.disjoint"]
    assert "equipment[0].equipment_id" in req.critique.spine.locked
    assert "equipment[0].standard" not in req.critique.spine.locked
    got = _normalised_trace(ws.trace_path(run.run_id))
    golden = GOLDEN / "retry_then_commit.jsonl"
    if os.environ.get("MEMBRANE_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in got))
    assert got == _normalised_trace(golden)
    row = eng.ledger.run(run.run_id)
    assert (
        row is not None
        and verify_chain(ws.trace_path(run.run_id), (row.trace_len, row.trace_head)).ok
    )
    corpus = (ws.current / "corpus.jsonl").read_text().splitlines()
    assert [json.loads(x)["tables"]["equipment"][0]["standard"] for x in corpus] == ["IEC 60601-1"]


def test_budget_spent_ends_exhausted_and_commits_nothing(tmp_path: Path) -> None:
    proposer = ScriptedProposer("fake", [art("ASHRAE 62.1"), art("ASHRAE 62.1")])
    ws, eng = make_engines(tmp_path, gates(), proposer, max_attempts=3)
    (run,) = run_cohort(ws, eng, [art("ASHRAE 62.1")])
    assert run.state == RunState.EXHAUSTED and run.attempt == 3
    assert (ws.current / "corpus.jsonl").read_text() == ""
    assert eng.ledger.latest_commits() == []


def test_locked_cell_edit_is_rejected_before_any_gate(tmp_path: Path) -> None:
    bad = Artifact(
        id="a1",
        tables={"equipment": [{"equipment_id": "EQ-9", "standard": "IEC 60601-1"}]},
        prose="x.",
    )
    proposer = ScriptedProposer("fake", [bad, art("IEC 60601-1")])
    g = gates()
    ws, eng = make_engines(tmp_path, g, proposer, max_attempts=4)
    (run,) = run_cohort(ws, eng, [art("ASHRAE 62.1")])
    assert run.state == RunState.COMMITTED and run.attempt == 3
    assert run.codes["proposal.locked_cell"] == 1
    assert len(g[E.VALUE_GATE].calls) == 2  # the rejected proposal never reached a gate  # type: ignore[attr-defined]


def test_gate_crash_counts_as_failed_and_infrastructure_error_fails_closed(tmp_path: Path) -> None:
    def boom(a: Artifact) -> list[Critique]:
        raise ValueError("bug in a gate")

    ws, eng = make_engines(tmp_path, gates(boom), ScriptedProposer("fake", [art("x"), art("x")]))
    (run,) = run_cohort(ws, eng, [art("x")])
    assert run.state == RunState.EXHAUSTED and run.codes["gate.crashed"] == 3

    def down(a: Artifact) -> list[Critique]:
        raise InfrastructureError("reasoner timed out")

    ws2, eng2 = make_engines(tmp_path / "w2", gates(down), ScriptedProposer("fake", []))
    (run2,) = run_cohort(ws2, eng2, [art("x")])
    assert run2.state == RunState.FAILED and run2.error == "reasoner timed out"
    assert eng2.ledger.latest_commits() == []


def test_cohort_judges_same_gate_together_and_keeps_runs_apart(tmp_path: Path) -> None:
    arts = [art("IEC 60601-1").model_copy(update={"id": f"a{i}"}) for i in range(5)]
    arts[2] = art("ASHRAE 62.1").model_copy(update={"id": "a2"})
    g = gates()
    fixed = art("IEC 60601-1").model_copy(update={"id": "a2"})
    ws, eng = make_engines(tmp_path, g, ScriptedProposer("fake", [fixed]))
    runs = run_cohort(ws, eng, arts)
    assert all(r.state == RunState.COMMITTED for r in runs)
    assert g[E.VALUE_GATE].calls[0] == [a.id for a in arts]  # type: ignore[attr-defined]
    assert g[E.VALUE_GATE].calls[1] == ["a2"]  # type: ignore[attr-defined]
    assert [r.attempt for r in runs] == [1, 1, 2, 1, 1]


def test_approval_required_holds_without_publishing(tmp_path: Path) -> None:
    ws, eng = make_engines(tmp_path, gates(), ScriptedProposer("fake", []), require_approval=True)
    (run,) = run_cohort(ws, eng, [art("IEC 60601-1")])
    assert run.state == RunState.HELD
    assert eng.ledger.latest_commits() == []


def test_table_only_pack_never_calls_prose_gate(tmp_path: Path) -> None:
    g = gates()
    ws, eng = make_engines(tmp_path, g, ScriptedProposer("fake", []), has_prose=False)
    (run,) = run_cohort(ws, eng, [art("IEC 60601-1")])
    assert run.state == RunState.COMMITTED
    assert g[E.PROSE_GATE].calls == []  # type: ignore[attr-defined]


def test_each_attempt_is_kept_and_an_exhausted_candidate_is_not_lost(tmp_path: Path) -> None:
    proposer = ScriptedProposer("fake", [art("ASHRAE 62.1", prose="Second try.")])
    ws, eng = make_engines(tmp_path, gates(), proposer, max_attempts=2)
    (run,) = run_cohort(ws, eng, [art("ASHRAE 62.1")])
    assert run.state == RunState.EXHAUSTED
    proposals = [e for e in _normalised_trace(ws.trace_path(run.run_id)) if e["kind"] == "proposal"]
    assert [e["attempt"] for e in proposals] == [1, 2]
    from harness.inspect import show_attempt

    for ev in proposals:  # each attempt's candidate: the exact bytes the trace names
        shown = show_attempt(ws, run.run_id, int(str(ev["attempt"])))
        assert (
            hashlib.sha256(artifact_bytes(Artifact.model_validate(shown["proposal"]))).hexdigest()
            == ev["content_hash"]
        )
    last = show_attempt(ws, run.run_id, 2)
    assert last["proposal"]["prose"] == "Second try."
    first = show_attempt(ws, run.run_id, 1)
    assert first["verdicts"][0]["critiques"][0]["code"] == "value.disjoint"
    assert first["critique"]["codes"] == ["value.disjoint"]
    # attempt 1 is the stored input: scratch holds only the proposer's candidate, flat
    assert [p.name for p in ws.scratch.iterdir()] == [f"{proposals[1]['content_hash']}.json"]
    # a workspace from before the flat layout kept it in a folder per run: still found
    (ws.scratch / run.run_id).mkdir()
    (ws.scratch / f"{proposals[1]['content_hash']}.json").rename(
        ws.scratch / run.run_id / f"{proposals[1]['content_hash']}.json"
    )
    assert show_attempt(ws, run.run_id, 2)["proposal"]["prose"] == "Second try."


def test_the_driver_steps_cohorts_and_reports_progress(tmp_path: Path) -> None:
    arts = [art("IEC 60601-1").model_copy(update={"id": f"a{i}"}) for i in range(5)]
    ws, eng = make_engines(tmp_path, gates(), ScriptedProposer("fake", []))
    batch = BatchRun(ws, eng, arts, cohort_size=2)
    cycles = list(batch)
    assert [c.total for c in cycles] == [5] * len(cycles)
    assert cycles[-1].done == 5 and sum(len(c.finished) for c in cycles) == 5
    assert max(len(c.cohort) for c in cycles) == 2  # three cohorts: 2, 2, 1
    assert batch.result.count(RunState.COMMITTED) == 5 and batch.step() is None
    # a rerun skips what is settled
    again = BatchRun(ws, eng, arts, cohort_size=2).run()
    assert again.skipped == [a.id for a in arts] and again.runs == []


def test_a_spent_batch_budget_stops_runs_by_rule(tmp_path: Path) -> None:
    """The batch token budget is a fact; the rule `batch_token_budget_spent` stops a run
    that would retry, and the trace names the rule."""
    proposer = ScriptedProposer("fake", [art("IEC 60601-1")])
    ws, eng = make_engines(tmp_path, gates(), proposer)
    eng.max_tokens_per_batch = 10
    eng.batch_tokens = 10  # spent by earlier runs of this batch
    (run,) = run_cohort(ws, eng, [art("ASHRAE 62.1")])
    assert run.state == RunState.FAILED and proposer.requests == []
    rules = [
        e["rule"] for e in _normalised_trace(ws.trace_path(run.run_id)) if e["kind"] == "decision"
    ]
    assert rules[-1] == "batch_token_budget_spent"
    assert run.error is not None and "batch_token_budget_spent" in run.error


def test_an_endpoint_down_stops_the_batch_by_rule(tmp_path: Path) -> None:
    from harness.errors import EndpointUnavailable

    arts = [art("ASHRAE 62.1").model_copy(update={"id": f"a{i}"}) for i in range(4)]
    proposer = ScriptedProposer("fake", [EndpointUnavailable("circuit open")] * 4)
    ws, eng = make_engines(tmp_path, gates(), proposer)
    batch = BatchRun(ws, eng, arts, cohort_size=2)
    result = batch.run()
    assert [r.state for r in result.runs] == ["FAILED", "FAILED"]
    assert result.halted == "circuit open"
    assert result.halted_by == "endpoint_down_starts_nothing" and result.not_started == 2
    # the second run of the first cohort was stopped by the retry rule, not by a crash
    decisions = [
        e["rule"] for e in _normalised_trace(ws.trace_path("a1.r1")) if e["kind"] == "decision"
    ]
    assert decisions[-1] in {"endpoint_down_stops_retries", "fail_closed_on_crash"}


class _Canonicalising:
    """A value gate that resolves 'Lipitor®' to the canonical 'atorvastatin'."""

    name = "value_gate"

    def judge(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        out = []
        for a in candidates:
            raw = a.tables["equipment"][0]["standard"]
            cells = ()
            if raw == "Lipitor®":
                cells = (
                    CanonicalCell(
                        cell="equipment[0].standard",
                        raw=raw,
                        value="atorvastatin",
                        iri="http://x#Atorvastatin",
                        via="alias",
                    ),
                )
            out.append(Verdict(gate=self.name, artifact_id=a.id, canonical=cells))
        return out


def test_later_gates_and_commit_see_the_canonical_value_and_the_trace_keeps_the_raw(
    tmp_path: Path,
) -> None:
    seen: list[object] = []

    def ri(a: Artifact) -> list[Critique]:
        seen.append(a.tables["equipment"][0]["standard"])
        return []

    g = gates()
    g[E.VALUE_GATE] = _Canonicalising()  # type: ignore[assignment]
    g[E.RI_GATE] = InstantGate("ri_gate", ri)
    ws, eng = make_engines(tmp_path, g, ScriptedProposer("fake", []))
    (run,) = run_cohort(ws, eng, [art("Lipitor®")])
    assert run.state == RunState.COMMITTED and seen == ["atorvastatin"]
    corpus = [json.loads(x) for x in (ws.current / "corpus.jsonl").read_text().splitlines()]
    assert corpus[0]["tables"]["equipment"][0]["standard"] == "atorvastatin"
    verdict = next(
        e
        for e in _normalised_trace(ws.trace_path(run.run_id))
        if e["kind"] == "verdict" and e["gate"] == "value_gate"
    )
    assert verdict["canonical"][0]["raw"] == "Lipitor®"
    from harness.inspect import why

    prov = why(ws, "a1", "equipment", "0", "standard")
    assert prov.value == "atorvastatin" and prov.canonical is not None
    assert prov.canonical["raw"] == "Lipitor®" and prov.canonical["via"] == "alias"


def test_the_view_is_not_rebuilt_after_every_cohort(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22: rebuilding corpus.jsonl after each cohort made a batch quadratic. It is
    rebuilt at the end, and in between only when it costs under a tenth of the time."""
    import time

    from harness import driver

    calls: list[int] = []
    real = driver.rebuild_view

    def slow(*a: object, **k: object) -> int:
        calls.append(1)
        time.sleep(0.05)  # as if the corpus were large
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(driver, "rebuild_view", slow)
    ws, eng = make_engines(tmp_path, gates(lambda a: []), ScriptedProposer("fake", []))
    arts = [art("IEC 60601-1").model_copy(update={"id": f"a{i}"}) for i in range(30)]
    batch = BatchRun(ws, eng, arts, cohort_size=1, batch_id="b", pack="t", pack_version="0")
    batch.run()
    assert 2 <= len(calls) < 30
    lines = (ws.current / "corpus.jsonl").read_text().splitlines()
    assert len(lines) == 30  # the final view is whole

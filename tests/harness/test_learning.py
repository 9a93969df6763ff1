"""The learning numbers of DESIGN.md §8 / issue 12, each at its boundary, and learned state
as a pure function of the outcome log (incremental == rebuild)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harness.learning import (
    FailedAttempt,
    OutcomeRecord,
    fold,
    overlay_for,
    pattern_confidence,
    rebuild,
    reliability,
)
from harness.learning.state import MIN_RUNS, Pattern


def record(
    n: int = 0,
    *,
    proposer: str = "openai:qwen2.5-7b",
    result: str = "success",
    attempts: int = 1,
    quality: float = 1.0,
    failed: tuple[FailedAttempt, ...] = (),
    pack: str = "facility",
) -> OutcomeRecord:
    return OutcomeRecord(
        run_id=f"a{n}.r1",
        artifact_id=f"a{n}",
        pack=pack,
        pack_version="1",
        proposer=proposer,
        result=result,
        attempts=attempts,
        retries=attempts - 1,
        quality=quality,
        failed=failed,
        started_at=f"2026-01-01T00:00:{n % 60:02d}",
        finished_at=f"2026-01-01T00:01:{n % 60:02d}",
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("n", "conf"), [(0, 0.0), (1, 0.55), (2, 0.60), (3, 0.65), (9, 0.95), (10, 0.95), (50, 0.95)]
)
def test_pattern_confidence_starts_at_055_steps_005_caps_at_095(n: int, conf: float) -> None:
    assert pattern_confidence(n) == pytest.approx(conf)


def test_reliability_worked_check_and_the_retry_cap() -> None:
    assert reliability(0.8, 1.5, 0.8) == pytest.approx(0.74)  # 0.48 + 0.10 + 0.16
    assert reliability(1.0, 3.0, 1.0) == pytest.approx(0.8)
    assert reliability(1.0, 7.0, 1.0) == pytest.approx(0.8)  # retries count up to 3
    assert reliability(1.0, 0.0, 1.0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("rel", "risk", "retries", "approval"),
    [
        (0.69, 1.4, 1, True),
        (0.70, 1.0, 2, True),  # < 0.75: approval, but not unreliable
        (0.7499, 1.0, 2, True),
        (0.75, 1.0, 2, False),
        (0.90, 1.0, 2, False),
        (0.9001, 0.9, 2, False),
    ],
)
def test_overlay_thresholds(rel: float, risk: float, retries: int, approval: bool) -> None:
    o = overlay_for(rel, [], "t")
    assert o is not None
    assert (o.risk_multiplier, o.max_retries, o.require_approval) == (risk, retries, approval)


@pytest.mark.parametrize(("occurrences", "approval"), [(2, False), (3, True)])
def test_three_occurrences_of_a_pattern_require_approval(occurrences: int, approval: bool) -> None:
    p = Pattern("offline", "value.disjoint", occurrences, "t", None, since_relax=occurrences)
    o = overlay_for(0.95, [p], "t")
    assert o is not None and o.require_approval is approval


def failing(n: int, code: str = "value.disjoint") -> OutcomeRecord:
    fa = FailedAttempt(attempt=2, codes=(code,), fix_hints={code: "use an imaging standard"})
    return record(n, result="failure", attempts=3, quality=0.5, failed=(fa,))


def test_a_proposer_repeating_one_mistake_is_held_after_three_failures() -> None:
    state = rebuild([failing(1), failing(2)])
    assert "openai:qwen2.5-7b" not in state.overlays  # 2 < MIN_RUNS runs, 2 < 3 occurrences
    state = fold(state, failing(3))
    ov = state.overlays["openai:qwen2.5-7b"]
    assert ov.require_approval and "value.disjoint" in ov.reason
    p = state.patterns["openai:qwen2.5-7b::value.disjoint"]
    assert (p.occurrences, p.confidence, p.fix_hint) == (
        3,
        pytest.approx(0.65),
        "use an imaging standard",
    )
    assert "offline" not in state.overlays  # other proposers are unaffected


def test_only_the_proposers_failed_attempts_make_patterns() -> None:
    with pytest.raises(ValidationError):  # attempt 1 is the input, not the proposer's work
        FailedAttempt(attempt=1, codes=("value.disjoint",))
    state = rebuild([record(1, attempts=2)])  # a run with retries but no failed attempt
    assert state.patterns == {}
    twice = FailedAttempt(attempt=2, codes=("ri.check", "ri.check"))
    assert (
        rebuild([record(1, result="failure", attempts=2, failed=(twice,))])
        .patterns["openai:qwen2.5-7b::ri.check"]
        .occurrences
        == 1
    )


def test_reliability_speaks_only_from_min_runs_and_overlays_never_relax() -> None:
    bad = [record(i, result="failure", attempts=4, quality=0.2) for i in range(MIN_RUNS - 1)]
    state = rebuild(bad)
    assert state.overlays == {}  # the numbers do not speak yet
    state = fold(state, record(99, result="failure", attempts=4, quality=0.2))
    strict = state.overlays["openai:qwen2.5-7b"]
    assert (strict.risk_multiplier, strict.max_retries, strict.require_approval) == (1.4, 1, True)
    for i in range(100, 160):  # a long run of perfect work: the overlay stays as strict
        state = fold(state, record(i))
    assert state.by_proposer["openai:qwen2.5-7b"].reliability > 0.9  # type: ignore[operator]
    assert state.overlays["openai:qwen2.5-7b"].risk_multiplier == 1.4
    assert state.overlays["openai:qwen2.5-7b"].require_approval


def test_a_reliable_proposers_first_overlay_lowers_the_risk_and_later_ones_only_tighten() -> None:
    state = rebuild([record(i) for i in range(MIN_RUNS)])
    assert state.overlays["openai:qwen2.5-7b"].risk_multiplier == 0.9
    for i in range(10, 20):  # it starts failing: the overlay tightens
        state = fold(state, record(i, result="failure", attempts=4, quality=0.1))
    ov = state.overlays["openai:qwen2.5-7b"]
    assert (ov.risk_multiplier, ov.max_retries, ov.require_approval) == (1.4, 1, True)
    assert overlay_for(None, [], "t") is None


def test_held_runs_are_partial_and_not_yet_counted_as_settled() -> None:
    state = rebuild([record(1, result="partial"), record(2)])
    stats = state.by_proposer["openai:qwen2.5-7b"]
    assert (stats.runs, stats.settled, stats.successes) == (2, 1, 1)
    assert state.by_proposer_pack["openai:qwen2.5-7b::facility"].runs == 2


@pytest.mark.parametrize(
    "bad",
    [
        {"retries": 5},  # not attempts - 1
        {"quality": 1.5},
        {"proposer": "Open AI"},
        {"result": "maybe"},
        {"surprise": 1},
        {"dominant_failure": "Not A Code"},
    ],
)
def test_invalid_records_are_refused(bad: dict[str, object]) -> None:
    good = record(1).model_dump()
    with pytest.raises(ValidationError):
        OutcomeRecord.model_validate({**good, **bad})


_records = st.lists(
    st.builds(
        lambda n, prop, res, att, q, code: record(
            n,
            proposer=prop,
            result=res,
            attempts=att,
            quality=q,
            failed=(FailedAttempt(attempt=2, codes=(code,)),)
            if att >= 2 and res == "failure"
            else (),
            pack=["facility", "trials"][n % 2],
        ),
        st.integers(0, 10_000),
        st.sampled_from(["offline", "openai:m", "hermes:m"]),
        st.sampled_from(["success", "failure", "partial"]),
        st.integers(1, 5),
        st.floats(0, 1),
        st.sampled_from(["value.disjoint", "ri.check", "prose.length"]),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(_records, st.integers(0, 40))
def test_incremental_updates_equal_a_rebuild(records: list[OutcomeRecord], cut: int) -> None:
    state = rebuild(records[:cut])
    for r in records[cut:]:
        state = fold(state, r)
    assert state == rebuild(records)

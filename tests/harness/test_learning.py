"""The learning numbers of DESIGN.md §8 / issue 12, each at its boundary, and learned state
as a pure function of the outcome log (incremental == rebuild)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harness.learning import (
    FailedAttempt,
    LearningState,
    OutcomeRecord,
    fold,
    overlay_for,
    pattern_confidence,
    rebuild,
    reliability,
)
from harness.learning.outcomes import (
    OverrideRecord,
    RelaxRecord,
    parse_record,
    parse_records,
)
from harness.learning.state import MIN_RUNS, Pattern, Stats, fold_all
from harness.learning.store import state_bytes
from harness.models import CRITIQUE_CODE_PATTERN


def record(
    n: int = 0,
    *,
    proposer: str = "openai:qwen2.5-7b",
    result: str = "success",
    attempts: int = 1,
    quality: float = 1.0,
    failed: tuple[FailedAttempt, ...] = (),
    pack: str = "facility",
    finished_at: str | None = None,
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
        finished_at=finished_at or f"2026-01-01T00:01:{n % 60:02d}",
    )  # type: ignore[arg-type]


_ACTS = {"approved": ("partial", "success"), "rejected": ("partial", "failure")}
_ACTS["reverted"] = ("success", "failure")


def override(run: OutcomeRecord, act: str, at: str = "2026-01-01T00:09:00") -> OverrideRecord:
    """A person's review act on `run` (approved/rejected: it was partial; reverted: success)."""
    previous, result = _ACTS[act]
    assert run.result == previous
    return OverrideRecord(
        run_id=run.run_id,
        artifact_id=run.artifact_id,
        pack=run.pack,
        proposer=run.proposer,
        human_override=act,
        previous=previous,
        result=result,
        run_finished_at=run.finished_at,
        at=at,
    )


def relax(proposer: str = "openai:qwen2.5-7b", at: str = "2026-01-01T00:05:00") -> RelaxRecord:
    return RelaxRecord(proposer=proposer, reason="reviewed: the model was swapped", at=at)


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


def _clock(i: int) -> str:
    return f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}"


@st.composite
def _logs(draw: st.DrawFn) -> list[OutcomeRecord | OverrideRecord | RelaxRecord]:
    """An outcome log: runs, and interleaved with them a person's consistent review acts on
    earlier runs (approve or reject a partial one, revert a success) and relaxes."""
    proposers = st.sampled_from(["offline", "openai:m", "hermes:m"])
    ops = draw(
        st.lists(
            st.one_of(
                st.tuples(
                    st.just("run"),
                    proposers,
                    st.sampled_from(["success", "failure", "partial"]),
                    st.integers(1, 5),
                    st.floats(0, 1),
                    st.sampled_from(["value.disjoint", "ri.check", "prose.length"]),
                ),
                st.tuples(
                    st.just("override"),
                    st.sampled_from(["approved", "rejected", "reverted"]),
                    st.integers(0, 1000),
                ),
                st.tuples(st.just("relax"), proposers),
            ),
            max_size=40,
        )
    )
    log: list[OutcomeRecord | OverrideRecord | RelaxRecord] = []
    now: dict[str, OutcomeRecord] = {}  # run_id -> the run, as its result stands now
    for i, op in enumerate(ops):
        at = _clock(i + draw(st.integers(0, 2)))  # now and then out of order
        if op[0] == "run":
            _, prop, res, att, q, code = op
            failed = (FailedAttempt(attempt=2, codes=(code,)),) if att >= 2 else ()
            r = record(
                i,
                proposer=prop,
                result=res,
                attempts=att,
                quality=q,
                failed=failed if res != "success" else (),
                pack=["facility", "trials"][i % 2],
                finished_at=at,
            )
            now[r.run_id] = r
            log.append(r)
        elif op[0] == "override":
            _, act, pick = op
            runs = [r for r in now.values() if r.result == _ACTS[act][0]]
            if runs:
                run = runs[pick % len(runs)]
                log.append(override(run, act, at))
                now[run.run_id] = run.model_copy(update={"result": _ACTS[act][1]})
        else:
            log.append(relax(op[1], at))
    return log


@settings(max_examples=200, deadline=None)
@given(_logs(), st.integers(0, 40), st.integers(0, 40))
def test_incremental_updates_equal_a_rebuild(
    records: list[OutcomeRecord | OverrideRecord | RelaxRecord], cut: int, cut2: int
) -> None:
    whole = rebuild(records)
    state = rebuild(records[:cut])
    for r in records[cut:]:
        state = fold(state, r)
    assert state == whole
    assert state_bytes(state, 1) == state_bytes(whole, 1)  # to the byte (-0.0 is not 0.0)
    a, b = sorted((cut, cut2))  # and in three pieces, each folded at once
    pieces = fold_all(fold_all(rebuild(records[:a]), records[a:b]), records[b:])
    assert state_bytes(pieces, 1) == state_bytes(whole, 1)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["success", "success", "failure", "partial"]),
            st.integers(1, 3),
            st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),  # reliability lands on 0.7, 0.75, 0.9
            st.sampled_from([None, "value.disjoint", "ri.check"]),
        ),
        min_size=MIN_RUNS,
        max_size=60,
    )
)
def test_overlays_tighten_at_the_same_record_in_a_long_fold_as_one_by_one(
    runs: list[tuple[str, int, float, str | None]],
) -> None:
    """A long fold skips reconsidering an overlay while reliability stays above the band
    that would tighten it and no pattern reached 3; one record at a time reconsiders every
    time: the same overlays, reasons and times, also when reliability lands exactly on a
    threshold or a pattern repeats while reliability stays high."""
    records = [
        record(
            i,
            result=res,
            attempts=att,
            quality=q,
            failed=(FailedAttempt(attempt=att, codes=(code,)),) if code and att > 1 else (),
            finished_at=_clock(i),
        )
        for i, (res, att, q, code) in enumerate(runs)
    ]
    state = LearningState()
    for r in records:
        state = fold(state, r)
    assert state_bytes(rebuild(records), 1) == state_bytes(state, 1)


# -- the quality sums ------------------------------------------------------------------


def _rounded_sum(start: float, qualities: list[float]) -> float:
    """The quality sum as defined: rounded to 10 places at every add."""
    total = start
    for q in qualities:
        total = round(total + q, 10)
    return total


_qualities = st.lists(
    st.one_of(
        st.floats(0, 1),  # most have no short decimal form
        st.integers(0, 10**10).map(lambda u: u / 1e10),  # 10 places or fewer
        st.integers(0, 10**4).map(lambda u: u / 1e4),
        st.sampled_from([0.0, -0.0, 1.0, 0.1, 0.2, 0.3, 0.7]),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(
    _qualities,
    st.one_of(
        st.just(0.0),
        st.integers(0, 10**10).map(lambda u: u / 1e4),
        st.floats(131_000, 131_100),  # about 2^17, where the fold stops keeping units
        st.sampled_from([131_071.9999999999, 131_072.0, -0.0]),
    ),
)
def test_the_quality_sum_is_rounded_to_10_places_at_every_add(
    qualities: list[float], start: float
) -> None:
    start = round(start, 10)  # a saved sum is one the fold made
    begin = LearningState(by_proposer={"offline": Stats(quality=start)})
    runs = [record(i, proposer="offline", quality=q) for i, q in enumerate(qualities)]
    got = fold_all(begin, runs).by_proposer["offline"].quality
    want = _rounded_sum(start, [r.quality for r in runs])
    assert repr(got) == repr(want)
    stepwise = begin  # and one record at a time, through the frozen form
    for r in runs:
        stepwise = fold(stepwise, r)
    assert repr(stepwise.by_proposer["offline"].quality) == repr(want)


def test_a_quality_sum_kept_in_units_turns_to_floats_before_they_would_differ() -> None:
    # Past 2^18, one float addition can land more than half a unit off, and the sums
    # rounded at every add part from the exact decimal ones: the fold must not keep units
    # there. Qualities are at most 1, so reaching it takes 2^18 runs; the sums (private) are
    # driven here with big steps instead.
    import random

    from harness.learning.state import _add_run, _Sums

    rng = random.Random(12)
    sums, want = _Sums(), 0.0
    for _ in range(2000):
        q = rng.randrange(0, (2**17 if rng.random() < 0.3 else 1) * 10**10) / 1e10  # 10 places
        _add_run((sums,), "success", 0, q, "t")
        want = round(want + q, 10)
        assert repr(sums.quality) == repr(want)


# -- relax and overrides ---------------------------------------------------------------

P = "openai:qwen2.5-7b"


def test_a_relax_drops_the_overlay_and_restarts_the_pattern_count_since() -> None:
    state = rebuild([failing(1), failing(2), failing(3)])
    assert state.overlays[P].require_approval
    state = fold(state, relax(at="2026-01-01T00:05:00"))
    assert P not in state.overlays
    assert state.relaxed[P].at == "2026-01-01T00:05:00"
    assert state.epoch[P] == Stats()  # its numbers start again
    assert state.by_proposer[P].runs == 3  # the record keeps them
    p = state.patterns[f"{P}::value.disjoint"]
    assert (p.occurrences, p.since_relax) == (3, 0)
    state = fold(state, failing(4))
    p = state.patterns[f"{P}::value.disjoint"]
    assert (p.occurrences, p.since_relax) == (4, 1)
    assert (state.epoch[P].runs, state.by_proposer[P].runs) == (1, 4)


def test_after_a_relax_two_more_occurrences_do_not_require_approval_the_third_does() -> None:
    state = rebuild([failing(1), failing(2), failing(3), relax()])
    for n in (4, 5):
        state = fold(state, failing(n))
        ov = state.overlays.get(P)
        assert ov is None or not ov.require_approval
    state = fold(state, failing(6))
    ov = state.overlays[P]
    assert ov.require_approval and "value.disjoint" in ov.reason
    assert state.patterns[f"{P}::value.disjoint"].since_relax == 3


def test_an_approval_settles_a_partial_run_as_a_success() -> None:
    held = record(1, result="partial")
    before = rebuild([record(0, result="failure"), held])
    after = fold(before, override(held, "approved"))
    b, a = before.by_proposer[P], after.by_proposer[P]
    assert (b.runs, b.settled, b.successes) == (2, 1, 0)
    assert (a.runs, a.settled, a.successes) == (2, 2, 1)
    assert a.reliability == pytest.approx(b.reliability + 0.6 * 0.5)  # type: ignore[operator]
    assert after.by_proposer_pack[f"{P}::facility"] == a
    assert after.epoch[P] == a
    assert a.last_at == "2026-01-01T00:09:00"


def test_a_rejection_settles_a_partial_run_as_a_failure() -> None:
    held = record(1, result="partial")
    before = rebuild([record(0), held])
    after = fold(before, override(held, "rejected"))
    b, a = before.by_proposer[P], after.by_proposer[P]
    assert (b.settled, b.successes) == (1, 1) and b.reliability == pytest.approx(1.0)
    assert (a.settled, a.successes) == (2, 1)
    assert a.reliability == pytest.approx(1.0 - 0.6 * 0.5)


def test_a_revert_takes_a_success_back() -> None:
    ok = record(1)
    before = rebuild([record(0), ok])
    after = fold(before, override(ok, "reverted"))
    a = after.by_proposer[P]
    assert (a.runs, a.settled, a.successes) == (2, 2, 1)
    assert a.reliability == pytest.approx(1.0 - 0.6 * 0.5)


def test_an_override_of_a_run_finished_before_the_relax_leaves_the_epoch_alone() -> None:
    old = record(1, result="partial", finished_at="2026-01-01T00:01:00")
    new = record(2, result="partial", finished_at="2026-01-01T00:06:00")
    state = rebuild([old, relax(at="2026-01-01T00:05:00"), new])
    epoch = state.epoch[P]
    assert (epoch.runs, epoch.settled) == (1, 0)
    state = fold(state, override(old, "approved", at="2026-01-01T00:07:00"))
    assert state.epoch[P] == epoch  # the person judged history the relax set aside
    assert (state.by_proposer[P].settled, state.by_proposer[P].successes) == (1, 1)
    state = fold(state, override(new, "rejected", at="2026-01-01T00:08:00"))
    assert (state.epoch[P].settled, state.epoch[P].successes) == (1, 0)
    assert (state.by_proposer[P].settled, state.by_proposer[P].successes) == (2, 1)


def test_an_override_for_a_proposer_the_log_never_saw_changes_nothing() -> None:
    state = rebuild([record(1)])
    stranger = record(2, proposer="offline", result="partial")
    after = fold(state, override(stranger, "approved"))
    assert "offline" not in after.by_proposer and after.by_proposer == state.by_proposer
    assert after.records == state.records + 1


def test_overrides_never_relax_an_overlay_only_a_person_does() -> None:
    bad = [record(i, result="failure", attempts=4, quality=0.2) for i in range(MIN_RUNS)]
    held = [record(10 + i, result="partial", quality=1.0) for i in range(30)]
    state = rebuild(bad + held)
    strict = state.overlays[P]
    assert (strict.risk_multiplier, strict.max_retries, strict.require_approval) == (1.4, 1, True)
    for h in held:  # a person approves every held run: the numbers now look good
        state = fold(state, override(h, "approved"))
    assert state.by_proposer[P].reliability > 0.75  # type: ignore[operator]
    computed = overlay_for(state.epoch[P].reliability, [], "t", state.epoch[P].settled)
    assert computed is not None and computed.risk_multiplier < 1.4  # looser, if it could
    assert state.overlays[P] == strict  # unchanged, reason and time included
    assert P not in fold(state, relax()).overlays  # a person's relax does drop it


def test_overrides_can_tighten_an_overlay() -> None:
    good = [record(i) for i in range(MIN_RUNS)]
    state = rebuild(good)
    assert state.overlays[P].risk_multiplier == 0.9  # reliable
    for g in good[:3]:
        state = fold(state, override(g, "reverted"))
    ov = state.overlays[P]
    assert (ov.risk_multiplier, ov.max_retries, ov.require_approval) == (1.4, 1, True)
    assert ov.updated_at == "2026-01-01T00:09:00"


def test_invalid_override_and_relax_records_are_refused() -> None:
    ok = override(record(1, result="partial"), "approved").model_dump()
    for bad in (
        {"result": "failure"},  # approved takes partial to success
        {"human_override": "reverted"},  # a revert takes back a success, not a partial
        {"previous": "failure"},
        {"proposer": "Open AI"},
        {"extra": 1},
    ):
        with pytest.raises(ValidationError):
            OverrideRecord.model_validate({**ok, **bad})
    with pytest.raises(ValidationError):
        RelaxRecord(proposer=P, reason="", at="t")  # a relax says why


# -- parsing a log: the batch says what each line would ---------------------------------

_RUN = json.loads(
    record(1, attempts=2, failed=(FailedAttempt(attempt=2, codes=("a.b",)),)).model_dump_json()
)
_OVERRIDE = json.loads(override(record(2, result="partial"), "approved").model_dump_json())
_RELAX = json.loads(relax().model_dump_json())


def _without(d: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key}


_LINES = [
    json.dumps(_RUN),
    json.dumps(_without(_RUN, "kind")),  # written before the log had kinds: a run
    json.dumps(_OVERRIDE),
    json.dumps(_without(_OVERRIDE, "kind")),  # no kind: a run, so refused
    json.dumps(_RELAX),
    json.dumps(_without(_RELAX, "kind")),
    json.dumps({**_RUN, "kind": "override"}),
    json.dumps({**_OVERRIDE, "kind": "run"}),
    json.dumps({**_RUN, "kind": 5}),
    json.dumps({**_RUN, "kind": None}),
    json.dumps({**_RUN, "kind": "Run"}),
    json.dumps({**_OVERRIDE, "result": "failure"}),
    json.dumps({**_RELAX, "reason": ""}),
    json.dumps({**_RUN, "retries": 3}),
    json.dumps({**_RUN, "quality": 1.5}),
    json.dumps({**_RUN, "failed": [{"attempt": 2, "codes": ["a.b\n"]}]}),  # python's `$`
    json.dumps({**_RUN, "failed": [{"attempt": 2, "codes": ["a.b\n\n"]}]}),
    json.dumps({**_RUN, "failed": [{"attempt": 2, "codes": ["a.b"], "fix_hints": {"A.b": "x"}}]}),
    json.dumps({**_RUN, "failed": [{"attempt": 3, "codes": ["a.b"]}]}),  # after the last
    '{"kind": "run", ' + json.dumps(_RELAX)[1:],  # a key twice: the last one counts
    '{"kind": "relax", ' + json.dumps(_RUN)[1:],
    json.dumps(_RUN) + "," + json.dumps(_RUN),  # two records in one line
    "[" + json.dumps(_RUN),
    json.dumps(_RUN) + "]",
    json.dumps([_RUN]),
    "",
    "null",
    "not json",
    json.dumps(_RUN)[:-1] + ', "x": "',  # an open string: the next line is not its tail
    '"}',
    json.dumps(_RUN) + "\n",
]


def _parsed(line: str) -> object:
    try:
        return parse_record(line)
    except ValidationError:
        return "refused"


@pytest.mark.parametrize("order", [1, -1])
def test_parsing_a_log_in_one_call_gives_what_each_line_gives(order: int) -> None:
    lines = _LINES[::order]
    good, bad = parse_records(lines)
    want = [_parsed(line) for line in lines]
    assert [i for i, _exc in bad] == [i for i, w in enumerate(want) if w == "refused"]
    assert good == [w for w in want if w != "refused"]
    assert all(isinstance(exc, ValidationError) for _i, exc in bad)
    assert want.count("refused") > 10 and len(good) > 4  # the list says both


@settings(max_examples=300, deadline=None)
@example("a.b\n")  # refused: python's `re.match` let a final newline through
@example("a.b\n\n")
@example("\na.b")
@example("a.b\r")
@given(st.text(alphabet="ab_z09.\n\r A\u0131\u212a-:", max_size=10))
def test_a_failed_attempts_codes_follow_the_critique_code_pattern(code: str) -> None:
    valid = bool(re.fullmatch(CRITIQUE_CODE_PATTERN, code))  # the whole text, no final \n
    for fields in ({"codes": [code]}, {"codes": ["a.b"], "fix_hints": {code: "hint"}}):
        try:
            FailedAttempt.model_validate({"attempt": 2, **fields})
        except ValidationError:
            assert not valid
        else:
            assert valid

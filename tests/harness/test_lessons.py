"""The gated learning pass, the lesson store and the feedback strategy (issue 13, done-when 1):
the gate's inclusive boundary, the three buckets, fail-closed, reinforce-not-duplicate, the
schema refusals, every strategy method and boundary, each constraint, the env settings."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ConfigError
from harness.learning.learn_pass import (
    GateDecision,
    LearnPassError,
    ScoreGate,
    review_and_learn,
)
from harness.learning.lesson_store import LessonStore
from harness.learning.lessons import (
    BayesianStrategy,
    LessonProposal,
    Signal,
    load_settings,
    make_strategy,
)

AT = "2026-11-25T10:00:00+00:00"


def lesson(
    text: str = "CT scanners need an imaging standard", score: float = 0.8, **kw: Any
) -> dict[str, Any]:
    return {
        "target": "proposer_context",
        "scope": {"pack": "facility", "column": "equipment.standard"},
        "text": text,
        "evidence": ["fac-0001.r1"],
        "score": score,
        **kw,
    }


class Listed:
    name = "listed"

    def __init__(self, items: Sequence[Any] | Exception) -> None:
        self.items = items

    def propose(self, summary: Any) -> Sequence[Mapping[str, Any] | LessonProposal]:
        if isinstance(self.items, Exception):
            raise self.items
        return list(self.items)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LessonStore]:
    s = LessonStore(tmp_path / "lessons.sqlite")
    yield s
    s.close()


def run(store: LessonStore, items: Sequence[Any], gate: Any = None) -> Any:
    return review_and_learn({}, Listed(items), gate or ScoreGate(), store, AT)


# -- the gate and the buckets ---------------------------------------------------------------


@pytest.mark.parametrize(("score", "approved"), [(0.69, False), (0.7, True), (0.70000001, True)])
def test_the_default_gate_approves_at_0_7_inclusive(
    store: LessonStore, score: float, approved: bool
) -> None:
    out = run(store, [lesson(score=score)])
    assert (len(out.applied), len(out.rejected)) == ((1, 0) if approved else (0, 1))
    assert len(store.lessons()) == int(approved)


def test_three_buckets_never_confused(tmp_path: Path) -> None:
    small = LessonStore(tmp_path / "l.sqlite", budget=1)
    try:
        out = run(
            small,
            [
                lesson("first"),  # applied
                lesson("second"),  # approved, but the scope's budget of 1 is full: failed
                lesson("third", score=0.5),  # the gate says no: rejected
            ],
        )
        assert [a["text"] for a in out.applied] == ["first"]
        assert [f["text"] for f in out.failed] == ["second"]
        assert "budget" in out.failed[0]["reason"]
        assert [r["text"] for r in out.rejected] == ["third"]
        assert [x.text for x in small.lessons()] == ["first"]
    finally:
        small.close()


def test_an_empty_summary_is_a_no_op(store: LessonStore) -> None:
    out = run(store, [])
    assert (out.proposals, out.applied, out.rejected, out.failed) == (0, [], [], [])


def test_a_reviewer_error_fails_the_pass_closed(store: LessonStore) -> None:
    with pytest.raises(LearnPassError, match="reviewer"):
        review_and_learn({}, Listed(RuntimeError("model down")), ScoreGate(), store, AT)
    assert store.lessons() == []


def test_a_gate_error_fails_the_whole_pass_closed(store: LessonStore) -> None:
    class Flaky:
        def __init__(self) -> None:
            self.n = 0

        def decide(self, proposal: LessonProposal) -> GateDecision:
            self.n += 1
            if self.n == 2:
                raise RuntimeError("reasoner crashed")
            return GateDecision(True, "ok")

    with pytest.raises(LearnPassError, match="gate"):
        run(store, [lesson("one"), lesson("two")], gate=Flaky())
    assert store.lessons() == []  # the first, approved, was not written either


def test_a_gate_no_is_not_an_error(store: LessonStore) -> None:
    class No:
        def decide(self, proposal: LessonProposal) -> GateDecision:
            return GateDecision(False, "not today")

    out = run(store, [lesson()], gate=No())
    assert out.rejected[0]["reason"] == "not today" and store.lessons() == []


def test_reproposing_reinforces_one_row(store: LessonStore) -> None:
    run(store, [lesson("CT scanners need an imaging standard")])
    out = run(store, [lesson("  ct SCANNERS need an   imaging standard ", evidence=["x.r2"])])
    assert out.applied == [{**out.applied[0], "reinforced": True}]
    (only,) = store.lessons()
    assert only.support == 2 and set(only.evidence) == {"fac-0001.r1", "x.r2"}


@pytest.mark.parametrize(
    "bad",
    [
        {"score": 1.5},
        {"score": -0.1},
        {"target": "rewrite_the_pack"},
        {"target": "value_alias"},  # no payload
        {"text": ""},
        {"text": "ok\x00then"},
        {"scope": {"pack": "facility", "column": "no-dot"}},
        {"scope": {"pack": "facility", "proposer": "Open AI"}},
        {"evidence": ["../../etc/passwd"]},
        {"operation": "drop_table"},
        {"surprise": True},
        {"advice": {"kind": "prefer_value", "column": "equipment.standard"}},  # no value
        {"advice": {"kind": "check_references", "column": "t.c", "when_column": "x"}},
    ],
)
def test_malformed_proposals_are_refused_before_any_write(
    store: LessonStore, bad: dict[str, Any]
) -> None:
    out = run(store, [{**lesson(), **bad}, "not even a mapping"])
    assert out.applied == [] and out.failed == []
    assert len(out.rejected) == 2 and all(r["reason"].startswith("invalid") for r in out.rejected)
    assert store.lessons() == []


def test_ontology_changes_need_the_reasoner_and_then_wait_for_a_person(store: LessonStore) -> None:
    alias = lesson(target="value_alias", payload={"alias": "CT", "individual": "CTScanner"})
    assert run(store, [alias]).rejected[0]["reason"] == "no reasoner check for an ontology change"
    gate = ScoreGate(reasoner=lambda p: GateDecision(True, "consistent"))
    assert len(run(store, [alias], gate=gate).applied) == 1
    (x,) = store.lessons()
    assert x.status == "pending" and store.active("facility", "offline") == []
    refuse = ScoreGate(reasoner=lambda p: GateDecision(False, "fac-0003 would fail"))
    other = lesson("b", target="value_axiom", payload={"axiom": "A SubClassOf B"})
    assert run(store, [other], gate=refuse).rejected[0]["reason"] == "fac-0003 would fail"


# -- the strategy -------------------------------------------------------------------------


def test_signals_and_their_magnitudes() -> None:
    s = BayesianStrategy()
    assert s.explicit(True) == Signal("explicit", "positive", 0.8)
    assert s.explicit(False) == Signal("explicit", "negative", 0.8)
    assert s.implicit() == Signal("implicit", "positive", 1.0)
    assert s.undo() == Signal("undo", "negative", 1.0)
    assert s.ignored(1).polarity == "neutral" and s.ignored(2).polarity == "neutral"
    assert s.ignored(3) == Signal("ignored", "negative", 1.0)


@pytest.mark.parametrize(
    "note",
    [
        "undo",
        "please UNDO this",
        "Revert it.",
        "reverted: wrong room",
        "cancel",
        "cancelled by QA",
        "rollback!",
        "roll back this one",
        "nevermind",
        "never mind, wrong run",
        "Never-mind",
        "undone",
    ],
)
def test_every_undo_keyword_is_heard(note: str) -> None:
    assert BayesianStrategy().is_undo(note)


@pytest.mark.parametrize(
    "note", ["looks good", "undoubtedly right", "recall the pump", "", "mind the gap"]
)
def test_other_notes_are_not_undos(note: str) -> None:
    assert not BayesianStrategy().is_undo(note)


# -- the store's confidence math and constraints -------------------------------------------


def stored(store: LessonStore, score: float = 0.8) -> str:
    out = run(store, [lesson(score=score)])
    return str(out.applied[0]["key"])


def test_confidence_is_a_beta_posterior_from_the_score(store: LessonStore) -> None:
    key = stored(store, score=0.8)
    assert store.get(key).confidence == pytest.approx(0.8)  # type: ignore[union-attr]
    assert store.signal(key, Signal("implicit", "positive", 1.0), "r1", AT) == pytest.approx(2.6 / 3)
    assert store.signal(key, Signal("undo", "negative", 1.0), "r2", AT) == pytest.approx(2.6 / 4)
    assert store.signal(key, Signal("implicit", "positive", 1.0), "r1", AT) is None  # once per run
    assert len(store.signals(key)) == 2


def test_two_ignores_are_neutral_and_the_third_is_negative(store: LessonStore) -> None:
    key = stored(store)
    s = BayesianStrategy()
    before = store.get(key).confidence  # type: ignore[union-attr]
    assert store.ignored(key, s, "r1", AT).polarity == "neutral"  # type: ignore[union-attr]
    assert store.ignored(key, s, "r2", AT).polarity == "neutral"  # type: ignore[union-attr]
    assert store.get(key).confidence == before  # type: ignore[union-attr]
    assert store.ignored(key, s, "r3", AT).polarity == "negative"  # type: ignore[union-attr]
    assert store.get(key).confidence < before  # type: ignore[union-attr]
    assert store.get(key).ignored_streak == 0  # type: ignore[union-attr]
    store.ignored(key, s, "r4", AT)
    store.heeded(key)  # heeded once: the streak starts again
    assert store.get(key).ignored_streak == 0  # type: ignore[union-attr]


def test_constraints_locked_floor_ceiling_weight(store: LessonStore) -> None:
    key = stored(store)
    store.constrain(key, locked=True)
    before = store.get(key)
    store.signal(key, Signal("undo", "negative", 1.0), "r1", AT)
    assert store.get(key).alpha == before.alpha and store.get(key).beta == before.beta  # type: ignore[union-attr]
    store.constrain(key, locked=False, feedback_weight=2.0)
    store.signal(key, Signal("undo", "negative", 1.0), "r2", AT)
    assert store.get(key).beta == pytest.approx(before.beta + 2.0)  # type: ignore[union-attr]
    store.constrain(key, floor=0.4)
    for i in range(20):
        store.signal(key, Signal("undo", "negative", 1.0), f"n{i}", AT)
    assert store.get(key).confidence == 0.4  # type: ignore[union-attr]
    store.constrain(key, floor=0.0, ceiling=0.5)
    for i in range(200):
        store.signal(key, Signal("implicit", "positive", 1.0), f"p{i}", AT)
    assert store.get(key).confidence == 0.5  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        store.constrain(key, floor=0.9, ceiling=0.2)
    with pytest.raises(ValueError):
        store.constrain(key, feedback_weight=-1)


# -- settings from the environment -------------------------------------------------------


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEARNING_UNDO_WINDOW_SEC", "30")
    monkeypatch.setenv("LEARNING_IGNORED_THRESHOLD", "4")
    monkeypatch.setenv("LEARNING_UNDO_KEYWORDS", "scrap that, Oops")
    monkeypatch.setenv("LEARNING_IMPLICIT_MAGNITUDE", "0.5")
    monkeypatch.setenv("LEARNING_EXPLICIT_MAGNITUDE", "0.25")
    s = load_settings()
    assert s.undo_window_sec == 30.0 and s.undo_keywords == ("scrap that", "oops")
    strategy = make_strategy(s)
    assert strategy.implicit().magnitude == 0.5 and strategy.explicit(True).magnitude == 0.25
    assert strategy.ignored(3).polarity == "neutral" and strategy.ignored(4).polarity == "negative"
    assert strategy.is_undo("please scrap that") and not strategy.is_undo("undo")
    monkeypatch.setenv("LEARNING_UNDO_KEYWORDS", '["a", "b"]')
    assert load_settings().undo_keywords == ("a", "b")


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("LEARNING_STRATEGY", "greedy"),
        ("LEARNING_UNDO_WINDOW_SEC", "-1"),
        ("LEARNING_IGNORED_THRESHOLD", "0"),
        ("LEARNING_IMPLICIT_MAGNITUDE", "lots"),
        ("LEARNING_EXPLICIT_MAGNITUDE", "-2"),
        ("LEARNING_UNDO_KEYWORDS", " , "),
    ],
)
def test_a_bad_setting_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, var: str, value: str
) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=var):
        load_settings()

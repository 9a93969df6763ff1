"""Issue 22: the value gate's row and plan memos stay bounded on a corpus whose rows never
repeat, and bounding them changes no verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.corpus import adversarial
from effectors.value_gate import ValueGate, _drop_oldest
from harness.pack import load_pack
from ontology.warm import WarmHermit
from tests.conftest import FACILITY


def test_drop_oldest_removes_the_oldest_keys_not_kept() -> None:
    memo = {k: k * 10 for k in range(10)}
    _drop_oldest(memo, 4, keep={0, 2})
    assert list(memo) == [0, 2, 6, 7, 8, 9]  # 1, 3, 4, 5 were the oldest not kept
    _drop_oldest(memo, 100, keep={7})
    assert memo == {7: 70}  # never more than there is


@pytest.mark.java
@pytest.mark.slow  # ~20 s at load 6 (the classification, then 4 cohorts twice)
def test_the_row_and_plan_memos_stay_bounded_on_an_adversarial_corpus(tmp_path: Path) -> None:
    pack = load_pack(FACILITY)
    corpus = adversarial(8, rows=4)  # every equipment row distinct: no memo entry repeats
    runner = WarmHermit()
    free = ValueGate.from_pack(pack, tmp_path, runner)
    bounded = ValueGate.from_pack(pack, tmp_path, runner)
    bounded.memo_rows = 8
    cohorts = [corpus[i : i + 2] for i in range(0, len(corpus), 2)]
    for cohort in cohorts:
        expected = free.judge(cohort)
        assert bounded.judge(cohort) == expected
        rows = {
            (r.table, r.facts.row_class, tuple(sorted(r.facts.values)))
            for c in (bounded._check_cells(i, a) for i, a in enumerate(cohort))
            for r in c.rows
        }
        for memo in (bounded._row_memo, bounded._plan_memo):
            assert len(memo) <= max(bounded.memo_rows, len(rows))
    assert len(free._row_memo) > 2 * bounded.memo_rows  # unbounded, it would have grown
    assert len(free._plan_memo) > 2 * bounded.memo_rows
    # judged again from a trimmed memo: the same verdicts (an entry dropped is recomputed)
    assert bounded.judge(corpus) == free.judge(corpus)

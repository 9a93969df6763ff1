"""The batch clock (`harness.engines.utc_now`): the text `datetime.now(UTC).isoformat(
timespec="microseconds")` gives, with the date and time of day formatted once a second."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import engines

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**62), min_size=1, max_size=5), st.integers(0, 3_000_000_000))
def test_utc_now_is_isoformat_of_the_floored_clock(starts: list[int], step: int) -> None:
    """Clock readings in any order, within a second of each other or not (the cached
    second must never leak into another)."""
    for ns in [n for start in starts for n in (start, start + step)]:
        want = (EPOCH + timedelta(microseconds=ns // 1000)).isoformat(timespec="microseconds")
        with pytest.MonkeyPatch.context() as m:
            m.setattr(engines, "time", SimpleNamespace(time_ns=lambda ns=ns: ns))
            assert engines.utc_now() == want


def test_utc_now_reads_the_real_clock() -> None:
    before = datetime.now(UTC).isoformat(timespec="microseconds")
    now = engines.utc_now()
    after = datetime.now(UTC).isoformat(timespec="microseconds")
    assert before <= now <= after and len(now) == len(before)

"""Reasoner work kept under the timeout: chunks sized from a measured cost model, and
bisection when a call times out anyway (issue 22).

Realising rows (`Reasoner.instances` on the violation ontology) costs each row an
entailment test over the whole ABox of the call, so a call's time grows faster than its
rows: on the facility pack (2-core VM, warm HermiT) 1 suspect row 0.14 s, 32 rows 0.9 s,
64 rows 1.6 s (25 ms a row, the cheapest), 128 rows 4.3 s, 256 rows 8.3 s, 480 rows 27 s,
822 rows ~200 s. One call for a cohort of distinct, cross-domain wrong rows could therefore
pass any timeout and fail the whole cohort.

`ChunkSizer` bounds the suspect rows per call: at most `max_rows` (the measured optimum),
fewer when the model `seconds ≈ overhead + per_row · rows` predicts more than `share` of
the timeout. `per_row` starts at the facility figure and follows the calls it observes, so
a heavier ontology gets smaller chunks.

`bisect` runs a unit of work over a chunk; when it raises `ReasonerTimeout` the chunk is
halved and each half run again, down to single items: only those that time out alone are
returned as timed out (the gate reports them as `value.timeout`), the rest are judged
normally. Each timed-out call costs the timeout, so chunks are sized to make that rare.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ontology.reason import ReasonerTimeout

__all__ = ["ChunkSizer", "bisect", "chunks"]

T = TypeVar("T")


@dataclass
class ChunkSizer:
    """How many suspect rows one reasoner call may realise."""

    timeout_s: float = 300.0
    max_rows: int = 64  # the cheapest per row on the facility pack (25 ms a row)
    share: float = 0.25  # of the timeout one call is planned to take at most
    overhead_s: float = 0.15  # per call (a fresh ontology and HermiT reasoner)
    per_row_s: float = 0.03  # per realised row, updated from the calls observed

    @property
    def rows(self) -> int:
        budget = self.timeout_s * self.share - self.overhead_s
        fit = int(budget / self.per_row_s) if self.per_row_s > 0 else self.max_rows
        return max(1, min(self.max_rows, fit))

    def observe(self, rows: int, seconds: float) -> None:
        """A call with `rows` suspect rows took `seconds`: the model follows (a call of a
        few rows mostly measures its overhead and is not used)."""
        if rows >= min(8, self.rows):
            self.per_row_s = max(0.001, (seconds - self.overhead_s) / rows)

    def timed_out(self) -> None:
        """A call timed out: plan the next ones at most half as large."""
        self.per_row_s = max(self.per_row_s * 2, 2 * self.timeout_s * self.share / self.rows)


def chunks(items: Sequence[T], heavy: Callable[[T], bool], size: int) -> list[list[T]]:
    """`items` in order, cut so each chunk holds at most `size` heavy items (light items
    ride along: they cost a consistency check, not a realisation)."""
    out: list[list[T]] = [[]]
    count = 0
    for item in items:
        if heavy(item):
            if count == size:
                out.append([])
                count = 0
            count += 1
        out[-1].append(item)
    return [c for c in out if c]


def bisect(items: list[T], work: Callable[[list[T]], None],
           sizer: ChunkSizer | None = None) -> list[T]:
    """Run `work(items)`; on `ReasonerTimeout` run it on each half instead, recursively.
    Returns the items that timed out alone (`work` was never completed for them). `sizer`
    is told once that a chunk timed out (not at every level of the bisection)."""
    try:
        work(items)
    except ReasonerTimeout:
        if sizer is not None:
            sizer.timed_out()
        if len(items) == 1:
            return list(items)
        mid = len(items) // 2
        return bisect(items[:mid], work) + bisect(items[mid:], work)
    return []

"""Learned state on disk: `.membrane/learning/state.json`, a cache of `rebuild(outcome log)`.

The outcome log is the ledger's `outcomes` table (a record per finished run, written in the
same transaction as the run's anchor). After each batch, `learning_cycle` folds the records
the state has not seen yet (off the hot path: no gate waits for it) and writes the state
atomically with the log position it reached. `rebuild_state` recomputes it from the whole
log; because the state is a pure fold, both give the same bytes (`membrane learn rebuild`
says whether they did). A record that does not validate is refused with a warning and
never learned from.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import orjson

from harness.learning.outcomes import read_records
from harness.learning.state import (
    LearnedOverlay,
    LearningState,
    Pattern,
    Relaxation,
    Stats,
    fold_all,
)
from harness.ledger import Ledger
from harness.workspace import Workspace, atomic_write

__all__ = ["CycleReport", "learning_cycle", "load_state", "rebuild_state", "state_bytes"]

_log = logging.getLogger(__name__)
_VERSION = 2
_CHUNK = 10_000  # records validated per call (and then folded, and let go)


def _path(ws: Workspace) -> Any:
    return ws.state / "learning" / "state.json"


def state_bytes(state: LearningState, seq: int) -> bytes:
    """Canonical JSON of a state and the log position it reflects (sorted keys)."""
    return orjson.dumps(
        {"version": _VERSION, "seq": seq, "state": asdict(state)}, option=orjson.OPT_SORT_KEYS
    )


def _state_from(data: dict[str, Any]) -> LearningState:
    return LearningState(
        patterns={k: Pattern(**v) for k, v in data["patterns"].items()},
        by_proposer={k: Stats(**v) for k, v in data["by_proposer"].items()},
        by_proposer_pack={k: Stats(**v) for k, v in data["by_proposer_pack"].items()},
        epoch={k: Stats(**v) for k, v in data["epoch"].items()},
        overlays={k: LearnedOverlay(**v) for k, v in data["overlays"].items()},
        relaxed={k: Relaxation(**v) for k, v in data["relaxed"].items()},
        records=int(data["records"]),
    )


def load_state(ws: Workspace) -> tuple[LearningState, int]:
    """The saved state and its log position; empty when there is none or it is unreadable
    (a cache: the next cycle rebuilds it from the log)."""
    path = _path(ws)
    try:
        raw = orjson.loads(path.read_bytes())
        if raw.get("version") != _VERSION:
            return LearningState(), 0
        return _state_from(raw["state"]), int(raw["seq"])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return LearningState(), 0


@dataclass(frozen=True)
class CycleReport:
    records: int  # new records folded in
    refused: int  # records that did not validate
    seq: int  # log position now


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Bulk work that makes many long-lived objects and no cyclic garbage to speak of:
    the cyclic collector would only scan them again and again (a rebuild of 100,000
    records spent about a third of its time there). It runs as usual afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _fold_from(
    state: LearningState, after: int, ledger: Ledger
) -> tuple[LearningState, int, int, int]:
    """(state, log position reached, records folded, records refused). A chunk at a time:
    validated in one call, folded, let go (a fold of the chunks is the fold of them all)."""
    folded = refused = 0
    with _no_cyclic_gc():
        rows = ledger.outcome_records(after=after)
        for start in range(0, len(rows), _CHUNK):
            chunk = rows[start : start + _CHUNK]
            good, bad = read_records([raw for _seq, raw in chunk])
            for i, exc in bad:
                _log.warning(
                    "outcome record %d refused, nothing learned from it: %s", chunk[i][0], exc
                )
            state = fold_all(state, good)
            folded, refused = folded + len(good), refused + len(bad)
    return state, rows[-1][0] if rows else after, folded, refused


def learning_cycle(ws: Workspace, ledger: Ledger) -> CycleReport:
    """Fold the records the saved state has not seen and save it (atomically)."""
    state, seq = load_state(ws)
    state, seq, folded, refused = _fold_from(state, seq, ledger)
    if folded or refused or not _path(ws).exists():
        atomic_write(_path(ws), state_bytes(state, seq))
    return CycleReport(folded, refused, seq)


def rebuild_state(ws: Workspace, ledger: Ledger) -> tuple[LearningState, bool]:
    """The state recomputed from the whole log, saved; and whether it equals, byte for byte,
    the incrementally updated one that was on disk (brought up to date first)."""
    before = learning_cycle(ws, ledger)
    incremental = _path(ws).read_bytes()
    state, seq, _folded, _refused = _fold_from(LearningState(), 0, ledger)
    fresh = state_bytes(state, max(seq, before.seq))
    atomic_write(_path(ws), fresh)
    return state, fresh == incremental

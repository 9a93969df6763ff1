"""Worker processes for PROSE_GATE's deterministic checks on large cohorts.

The checks are pure Python and CPU-bound, so one process judges about 2,000 artifacts/s at
best; `ProseGate(workers=N)` splits a large cohort into N contiguous chunks, judges the first
in its own process and sends the others to N-1 worker processes, each holding its own gate
built from the same pack and pools. Verdicts are the same either way (the gate is
deterministic and the chunks are put back in order).

Workers are started with `spawn` (a fresh interpreter, never a fork: the value gate's JVM may
be running threads in this process) when the pool is made, so they are warm by the first
cohort. A worker that dies, hangs or raises never loses a verdict: its chunk is judged again
in this process, the pool is shut down and later cohorts are judged in-process.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Protocol

from harness.lifeline import die_with_parent
from harness.models import Artifact, Verdict
from harness.pack import Pack
from harness.pools import Pools

__all__ = ["Judge", "ProsePool", "chunks"]


class Judge(Protocol):
    """What a worker holds: the deterministic prose checks of one process."""

    def judge_here(self, candidates: Sequence[Artifact]) -> list[Verdict]: ...


# Builds a worker's judge from the pack and pools: a module-level function (it is sent to
# the spawned workers by reference), e.g. `effectors.prose_gate.worker_gate`.
JudgeFactory = Callable[[Pack, Pools], Judge]

_log = logging.getLogger(__name__)
_worker: dict[str, Judge] = {}  # a worker process's own gate, under "gate"


def _start(build: JudgeFactory, pack: Pack, pools: Pools) -> None:
    """Worker initializer: build this process's gate (entailment off: workers only ever
    run the deterministic checks). It dies with the process that started it."""
    die_with_parent()
    prose = pack.config.prose.model_copy(update={"entailment": "off"})
    pack = Pack(root=pack.root, config=pack.config.model_copy(update={"prose": prose}))
    _worker["gate"] = build(pack, pools)


def _ready() -> bool:
    return "gate" in _worker


def _judge(candidates: list[Artifact]) -> list[Verdict]:
    return _worker["gate"].judge_here(candidates)


def chunks(items: Sequence[Artifact], parts: int) -> list[list[Artifact]]:
    """`items` cut into `parts` contiguous chunks whose prose lengths are about equal (the
    checks' cost follows the prose), in order; none empty unless `items` is short."""
    total = sum(len(a.prose) for a in items) or 1
    out: list[list[Artifact]] = [[] for _ in range(parts)]
    done = 0
    for a in items:
        k = min(parts - 1, done * parts // total)
        out[k].append(a)
        done += len(a.prose)
    return out


class ProsePool:
    """`processes` worker processes, each with a gate of its own (see the module docstring)."""

    def __init__(self, build: JudgeFactory, pack: Pack, pools: Pools, processes: int,
                 timeout_s: float = 600.0) -> None:
        self.timeout_s = timeout_s
        self._executor: ProcessPoolExecutor | None = ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"),
            initializer=_start, initargs=(build, pack, pools))
        # start every worker now, so they are built by the time a cohort arrives
        self._ready = [self._executor.submit(_ready) for _ in range(processes)]

    @property
    def alive(self) -> bool:
        return self._executor is not None

    def wait_ready(self) -> bool:
        """Block until every worker has built its gate; False if the pool broke."""
        try:
            return all(f.result(timeout=self.timeout_s) for f in self._ready)
        except Exception as exc:  # any failure means: judge in-process
            self._broken(exc)
            return False

    def judge(self, parts: Sequence[list[Artifact]], here: Judge) -> list[Verdict]:
        """Verdicts of `parts` in order: the first judged by `here` (this process's gate)
        while the workers judge the others; a part whose worker failed is judged here."""
        assert self._executor is not None
        futures: list[Future[list[Verdict]] | None] = []
        for part in parts[1:]:
            try:
                futures.append(self._executor.submit(_judge, part))
            except Exception as exc:  # a broken pool: judge here
                self._broken(exc)
                futures.append(None)
        out = here.judge_here(parts[0])
        for part, future in zip(parts[1:], futures, strict=True):
            verdicts = None
            if future is not None and self._executor is not None:
                try:
                    verdicts = future.result(timeout=self.timeout_s)
                except Exception as exc:  # died, hung or raised: judge here
                    self._broken(exc)
            out += verdicts if verdicts is not None else here.judge_here(part)
        return out

    def _broken(self, exc: BaseException) -> None:
        _log.warning("prose gate worker failed (%s: %s); judging in-process from now on",
                     type(exc).__name__, exc)
        self.close(wait=False)

    def close(self, wait: bool = True) -> None:
        """Stop the workers (idempotent)."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if not wait:  # a hung or dead worker: do not wait for it
            for process in list(getattr(executor, "_processes", {}).values()):
                process.kill()
        executor.shutdown(wait=wait, cancel_futures=True)

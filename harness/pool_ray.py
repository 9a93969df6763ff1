"""`membrane batch --executor ray` (issue 16): the workers of `--workers N` as Ray actors.

Each actor is a worker of `harness.pool` (gates built once, warm for every cohort it
judges); cohorts are actor method calls; the driver (this process) stays the single
commit point, exactly as with local worker processes. An actor that dies fails its
calls with `RayActorError`: the actors are replaced and every cohort without a result is
judged again (nothing of it reached the ledger).

Ray is an optional extra (`pip install 'membrane[ray]'`); without it `--executor ray`
is a setup error saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from harness.errors import ConfigError
from harness.pool import CohortResult, CohortTask, Executor, WorkerSpec, init_worker, judge

__all__ = ["RayExecutor", "ray_executor"]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs Ray, which is not installed",
            hint="install the extra: `pip install 'membrane[ray]'` (or `make ray`), "
            "or use --executor process",
        ) from None
    return ray


class _Worker:
    """One Ray actor: a `harness.pool` worker."""

    def __init__(self, spec: WorkerSpec) -> None:
        init_worker(spec)

    def judge(self, task: CohortTask) -> CohortResult:
        return judge(task)


def ray_executor(address: str | None) -> Callable[[int, WorkerSpec], Executor]:
    """The executor factory for `PoolBatchRun`: joins the cluster at `address` (`auto`:
    the one `ray start` made on this machine), or starts a local one on loopback."""
    ray = _ray()

    def make(workers: int, spec: WorkerSpec) -> Executor:
        return RayExecutor(ray, workers, spec, address)

    return make


class RayExecutor:
    def __init__(self, ray: Any, workers: int, spec: WorkerSpec, address: str | None) -> None:
        self.ray, self.workers, self.spec = ray, workers, spec
        self.died: tuple[type[BaseException], ...] = (
            ray.exceptions.RayActorError,
            ray.exceptions.WorkerCrashedError,
        )
        self._started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "configure_logging": False,
            }
            if address is None:  # a local cluster for this batch, on loopback only
                kwargs["_node_ip_address"] = "127.0.0.1"
            ray.init(address=address, **kwargs)
            self._started = True
        self._cls = ray.remote(num_cpus=1)(_Worker)
        self._actors: list[Any] = []
        self._turn = 0
        self._spawn()

    def _spawn(self) -> None:
        self._actors = [self._cls.remote(self.spec) for _ in range(self.workers)]

    def submit(self, task: CohortTask) -> Future[CohortResult]:
        actor = self._actors[self._turn % len(self._actors)]
        self._turn += 1
        fut: Future[CohortResult] = actor.judge.remote(task).future()
        return fut

    def replace(self) -> None:
        """An actor died: all of them are replaced (a cohort in flight is sent again)."""
        for actor in self._actors:
            self.ray.kill(actor, no_restart=True)
        self._spawn()

    def shutdown(self) -> None:
        for actor in self._actors:
            self.ray.kill(actor, no_restart=True)
        self._actors = []
        if self._started:
            self.ray.shutdown()
            self._started = False

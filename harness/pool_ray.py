"""`membrane batch --executor ray` (issue 16): the workers of `--workers N` as Ray actors.

Each actor is a worker of `harness.pool` (gates built once, warm for every cohort it
judges); cohorts are actor method calls, sent to the actor with the fewest calls
outstanding; the driver (this process) stays the single commit point, exactly as with
local worker processes. An actor that dies fails its calls with `RayActorError` (or its
node with `NodeDiedError`): that actor alone is replaced and its cohorts without a result
are judged again (nothing of them reached the ledger); the other actors keep theirs.

The cluster: with no address, the batch starts a local one on loopback for itself (no
dashboard, no usage stats, `workers` CPUs, a 200 MB object store, its files in a temporary
folder the batch removes); `--ray-address auto` joins the one `ray start --head` made on
this machine, any other address that cluster.

What travels with the job: an actor on another node has neither the pack folder nor the
workspace. The driver ships them once (`ray.put`): every file of the pack folder, the
workspace's `membrane.toml` and its ontology cache (`.membrane/cache/ontology-*`, so no
actor classifies the ontology again). An actor on the driver's node whose paths exist
uses the folders as they are; any other unpacks the shipment into a temporary folder
of its node (`membrane-ray-job-*`: removed when the batch shuts the actor down, or, for
an actor killed, by the next actor that starts on that node) and builds its engines there.
So the nodes need membrane with this extra and Java for HermiT, not the pack. The model
transcripts an actor writes come back with each cohort's result (`CohortResult.transcripts`)
and the driver stores them in its workspace.

Ray is an optional extra (`pip install 'membrane[ray]'`); without it `--executor ray`
is a setup error saying so.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.pool import (
    CohortResult,
    CohortTask,
    Executor,
    WorkerSpec,
    has_result,
    init_worker,
    judge,
)
from harness.workspace import Workspace

__all__ = ["RayExecutor", "Shipment", "ray_executor", "shipment"]

_log = logging.getLogger(__name__)

OBJECT_STORE_BYTES = 200 * 1024 * 1024  # the local cluster's object store (Ray's floor: 75 MB)
MAX_SHIPMENT_BYTES = 512 * 1024 * 1024  # a pack folder past this is not sent to every node
_SKIP = {"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs Ray, which is not installed",
            hint="install the extra: `pip install 'membrane[ray]'`, or use --executor process",
        ) from None
    return ray


# -- what travels with the job ---------------------------------------------------------


@dataclass(frozen=True)
class Shipment:
    """The pack folder and the workspace's settings, as bytes an actor can unpack."""

    pack: tuple[tuple[str, bytes], ...]  # path relative to the pack folder (posix), bytes
    config: bytes | None  # membrane.toml, None: the workspace has none (the defaults)
    cache: tuple[tuple[str, bytes], ...]  # .membrane/cache/ontology-* files

    def size(self) -> int:
        files = (*self.pack, *self.cache)
        return sum(len(data) for _, data in files) + len(self.config or b"")

    def unpack(self, into: Path) -> tuple[Path, Path]:
        """Write the shipment under `into`: (workspace root, pack folder)."""
        root, pack = into / "ws", into / "pack"
        for rel, data in self.pack:
            _write(pack, rel, data)
        pack.mkdir(parents=True, exist_ok=True)
        ws = Workspace(root)
        ws.ensure()
        if self.config is not None:
            ws.config_path.write_bytes(self.config)
        for name, data in self.cache:
            _write(ws.cache, name, data)
        return root, pack


def _write(base: Path, rel: str, data: bytes) -> None:
    path = (base / rel).resolve()
    if not path.is_relative_to(base.resolve()):  # shipped by our own driver; checked anyway
        raise ConfigError(f"the shipped file {rel!r} is outside its folder {base}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def shipment(spec: WorkerSpec) -> Shipment:
    """Read what an actor on another node needs from the driver's pack folder and workspace."""
    pack_root = Path(spec.pack)
    files: list[tuple[str, bytes]] = []
    for dirpath, dirnames, filenames in os.walk(pack_root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if path.suffix in (".pyc", ".pyo") or not path.is_file():
                continue
            files.append((path.relative_to(pack_root).as_posix(), path.read_bytes()))
    ws = Workspace(Path(spec.root))
    config = ws.config_path.read_bytes() if ws.config_path.is_file() else None
    cache = (
        tuple((p.name, p.read_bytes()) for p in sorted(ws.cache.glob("ontology-*")) if p.is_file())
        if ws.cache.is_dir()
        else ()
    )
    shipped = Shipment(tuple(files), config, cache)
    if shipped.size() > MAX_SHIPMENT_BYTES:
        raise ConfigError(
            f"the pack folder and the workspace's settings come to {shipped.size() // 2**20} MB, "
            f"more than the {MAX_SHIPMENT_BYTES // 2**20} MB --executor ray sends to each node",
            file=pack_root,
            hint="move what the pack does not need to judge (large corpora, generated files) "
            "out of the pack folder, or use --executor process",
        )
    return shipped


# -- the actor ---------------------------------------------------------------------------

_UNPACKED = "membrane-ray-job-"  # + random: a shipment unpacked, with the actor's "pid"


def _sweep() -> None:
    """Remove the unpacked folders of actors that died (killed, or their node's batch
    replaced them) on this node: the next actor here does it."""
    for folder in Path(tempfile.gettempdir()).glob(_UNPACKED + "*"):
        try:
            os.kill(int((folder / "pid").read_text(encoding="ascii")), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, ValueError):
            continue  # being written, or another user's: left alone


class _Worker:
    """One Ray actor: a `harness.pool` worker, on the driver's folders or on a shipment."""

    def __init__(self, spec: WorkerSpec, shipped: Shipment, driver_node: str) -> None:
        import ray

        self._unpacked: Path | None = None
        here = ray.get_runtime_context().get_node_id()
        if here != driver_node or not (Path(spec.root).is_dir() and Path(spec.pack).is_dir()):
            _sweep()
            self._unpacked = Path(tempfile.mkdtemp(prefix=_UNPACKED))
            (self._unpacked / "pid").write_text(str(os.getpid()), encoding="ascii")
            root, pack = shipped.unpack(self._unpacked)
            spec = replace(spec, root=str(root), pack=str(pack))
        self.spec = spec
        init_worker(spec)

    def judge(self, task: CohortTask) -> CohortResult:
        return judge(task)

    def where(self) -> tuple[int, str, str]:
        """(process id, workspace root, pack folder) this actor judges with (tests)."""
        return os.getpid(), self.spec.root, self.spec.pack

    def close(self) -> None:
        if self._unpacked is not None:
            shutil.rmtree(self._unpacked, ignore_errors=True)
            self._unpacked = None


# -- the executor ------------------------------------------------------------------------


_CLUSTER_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_LOCALHOST = ("localhost", "127.0.0.1", "::1")


def _on_loopback(address: str | None) -> bool:
    """Whether the cluster is (to be) on 127.0.0.1: a local one, or one whose address,
    given or found by `auto` (RAY_ADDRESS, the last `ray start` here), is loopback."""
    if address is None:
        return True
    if address == "auto":
        try:
            from ray._private.services import get_ray_address_from_environment

            address = str(get_ray_address_from_environment("auto", None))
        except Exception:  # Ray's own lookup: without it, the address as given
            return False
    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    return host in _LOCALHOST  # what Ray rewrites (127.0.0.2 ... it leaves as they are)


@contextlib.contextmanager
def _loopback(on: bool) -> Iterator[None]:
    """While Ray starts or joins a cluster on loopback: keep it there. On Linux Ray turns
    127.0.0.1 (a `_node_ip_address`, the host of an address to join) into the machine's
    routable address unless clusters are "disabled" (its Windows and macOS default): so,
    for the processes it starts (the environment) and for this one (the constant read at
    import), they are."""
    if not on:
        yield
        return
    import ray._private.ray_constants as constants

    before_env, before = os.environ.get(_CLUSTER_ENV), constants.ENABLE_RAY_CLUSTER
    os.environ[_CLUSTER_ENV], constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        yield
    finally:
        constants.ENABLE_RAY_CLUSTER = before
        if before_env is None:
            os.environ.pop(_CLUSTER_ENV, None)
        else:
            os.environ[_CLUSTER_ENV] = before_env


# The synchronous signals the JVM (HermiT, through JPype) handles itself: its compiled code
# takes SIGSEGV for null checks and safepoints. `ray.init` installs Ray's crash handlers
# over them and `ray.shutdown` resets them to the default, after which the first such
# signal kills the process (measured: a later HermiT call in the same process segfaulted).
_JVM_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL)
_SIGACTION_BYTES = 512  # room for the C `struct sigaction` (152 bytes on x86-64 glibc)


@contextlib.contextmanager
def _keep_signal_handlers() -> Iterator[None]:
    """Ray in this process leaves the native handlers of `_JVM_SIGNALS` as it found them
    (copied as opaque `struct sigaction`s through libc, which Python's `signal` cannot see)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        sigaction = libc.sigaction
    except (OSError, AttributeError):  # no libc sigaction: nothing to keep
        yield
        return
    saved = {}
    for sig in _JVM_SIGNALS:
        buf = ctypes.create_string_buffer(_SIGACTION_BYTES)
        if sigaction(int(sig), None, buf) == 0:
            saved[sig] = buf
    try:
        yield
    finally:
        for sig, buf in saved.items():
            sigaction(int(sig), buf, None)


def native_handler(sig: signal.Signals) -> int:
    """The address of the native handler of `sig` (0: the default): what tests compare."""
    buf = ctypes.create_string_buffer(_SIGACTION_BYTES)
    ctypes.CDLL(None, use_errno=True).sigaction(int(sig), None, buf)
    return int.from_bytes(buf.raw[: ctypes.sizeof(ctypes.c_void_p)], sys.byteorder)


def ray_executor(address: str | None) -> Callable[[int, WorkerSpec], Executor]:
    """The executor factory for `PoolBatchRun`: joins the cluster at `address` (`auto`:
    the one `ray start` made on this machine), or starts a local one on loopback."""
    ray = _ray()

    def make(workers: int, spec: WorkerSpec) -> Executor:
        return RayExecutor(ray, workers, spec, address)

    return make


class RayExecutor:
    """`workers` Ray actors, on this machine's own cluster or the one at `address`."""

    def __init__(self, ray: Any, workers: int, spec: WorkerSpec, address: str | None) -> None:
        self.ray, self.workers, self.spec = ray, workers, spec
        self.died: tuple[type[BaseException], ...] = (
            ray.exceptions.RayActorError,  # ActorDiedError, ActorUnavailableError
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.NodeDiedError,
            ray.exceptions.OutOfMemoryError,
        )
        self.address = address
        self._started = False  # this executor called ray.init (and so ray.shutdown)
        self._temp: Path | None = None
        self._actors: list[Any] = []
        self._pending: dict[int, int] = {}  # actor slot -> calls not yet answered
        self._gen: list[int] = []  # actor slot -> how many times its actor was replaced
        self._where: dict[Future[CohortResult], tuple[int, int]] = {}  # call -> (slot, gen)
        self._lock = threading.Lock()
        self._cls: Any = None  # the actor class, once the cluster is up

    def _start(self) -> None:
        """The cluster and the actors, on the first cohort (a batch with nothing to judge
        starts no cluster)."""
        ray = self.ray
        if not ray.is_initialized():
            self._init(self.address)
        try:
            if self.address is not None:
                self._check_cpus()
            self._driver_node: str = ray.get_runtime_context().get_node_id()
            self._shipped = ray.put(shipment(self.spec))
            self._cls = ray.remote(num_cpus=1)(_Worker).options(scheduling_strategy="SPREAD")
            self._spawn()
        except BaseException:
            self.shutdown()
            raise

    def _init(self, address: str | None) -> None:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves the machine
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
        }
        if address is None:  # a local cluster for this batch, on loopback only
            self._temp = Path(tempfile.mkdtemp(prefix="membrane-ray-"))
            kwargs.update(
                address="local",
                num_cpus=self.workers,
                num_gpus=0,
                object_store_memory=OBJECT_STORE_BYTES,
                _node_ip_address="127.0.0.1",
                _temp_dir=str(self._temp),
            )
        else:
            kwargs["address"] = address
        try:
            with _loopback(_on_loopback(address)), _keep_signal_handlers():
                self.ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            self._remove_temp()
            where = f"the Ray cluster at {address!r}" if address else "a local Ray cluster"
            raise ConfigError(
                f"could not start or join {where}: {exc}",
                hint="`--ray-address auto` needs `ray start --head --node-ip-address 127.0.0.1` "
                "on this machine first; or leave --ray-address out for a local cluster",
            ) from exc
        self._started = True

    def _check_cpus(self) -> None:
        cpus = self.ray.cluster_resources().get("CPU", 0)
        if cpus < self.workers:
            _log.warning(
                "the Ray cluster has %s CPUs for %d workers (one each): the rest wait for "
                "CPUs to join",
                cpus,
                self.workers,
            )

    def _spawn(self) -> None:
        self._actors = [self._actor() for _ in range(self.workers)]
        self._pending = dict.fromkeys(range(len(self._actors)), 0)
        self._gen = [0] * len(self._actors)
        self._where = {}

    def _actor(self) -> Any:
        return self._cls.remote(self.spec, self._shipped, self._driver_node)

    def actors(self) -> list[Any]:
        """The live actors' handles (tests kill one)."""
        return list(self._actors)

    def submit(self, task: CohortTask) -> Future[CohortResult]:
        if self._cls is None:
            self._start()
        # The batch's thread alone submits and replaces; the lock guards the counts that
        # Ray's callback thread updates too. No Ray call is made holding it: a callback
        # waiting for it in Ray's thread would stall that call.
        with self._lock:
            slot = min(self._pending, key=lambda s: (self._pending[s], s))
            self._pending[slot] += 1
            gen = self._gen[slot]
        fut: Future[CohortResult] = self._actors[slot].judge.remote(task).future()
        with self._lock:
            if len(self._where) > 4 * self.workers:  # forget the calls answered
                self._where = {f: w for f, w in self._where.items() if not has_result(f)}
            self._where[fut] = (slot, gen)

        def answered(done: Future[CohortResult]) -> None:
            with self._lock:
                if self._gen and self._gen[slot] == gen:  # not a call of a replaced actor
                    self._pending[slot] -= 1

        fut.add_done_callback(answered)
        return fut

    def replace(
        self, failed: Future[CohortResult], inflight: Collection[Future[CohortResult]]
    ) -> list[Future[CohortResult]]:
        """The actor `failed` ran on died: that actor alone is replaced (the others keep
        their warm gates and their cohorts) and its calls in flight are lost."""
        with self._lock:
            where = self._where.get(failed)
            if self._cls is None or where is None:
                return [failed]
            slot, gen = where
            fresh = self._gen[slot] == gen  # not replaced yet (another call of it may have)
            if fresh:
                self._gen[slot] += 1
                self._pending[slot] = 0
            lost = [f for f in inflight if self._where.get(f) == where and not has_result(f)]
            keep = set(inflight) - set(lost) - {failed}
            self._where = {f: w for f, w in self._where.items() if f in keep}
        if fresh:
            with contextlib.suppress(self.ray.exceptions.RayError):
                self.ray.kill(self._actors[slot], no_restart=True)
            self._actors[slot] = self._actor()
        return lost if failed in lost else [failed, *lost]

    def shutdown(self, wait: bool = True) -> None:
        """Stop the actors and the cluster this driver started (always whole: `wait` is
        the process pool's; a second call finds nothing left to stop)."""
        self._close()
        self._kill()
        self._cls = None
        if self._started:
            with _keep_signal_handlers():
                self.ray.shutdown()
            self._started = False
        self._remove_temp()

    def _close(self) -> None:
        """Let the live actors remove their unpacked folders (a dead one cannot)."""
        if not self._actors:
            return
        refs = [a.close.remote() for a in self._actors]
        with contextlib.suppress(self.ray.exceptions.RayError):
            self.ray.wait(refs, num_returns=len(refs), timeout=10)

    def _kill(self) -> None:
        with self._lock:
            actors, self._actors, self._gen, self._where = self._actors, [], [], {}
        for actor in actors:
            with contextlib.suppress(self.ray.exceptions.RayError):
                self.ray.kill(actor, no_restart=True)

    def _remove_temp(self) -> None:
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None

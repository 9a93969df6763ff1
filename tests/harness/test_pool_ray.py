"""`membrane batch --executor ray` (harness.pool_ray, issue 16): the workers of
`--workers N` as Ray actors, on clusters of this machine's loopback only. The committed
corpus is one process's, byte for byte, whether the batch starts its own local cluster or
joins one whose actors run on another node (and so judge from the shipped pack, not the
driver's folders); a killed actor is replaced and its cohort judged again."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import api
from harness.cli import main
from harness.corpus import CorpusStream
from harness.engines import EngineOptions
from harness.errors import ConfigError
from harness.pack import load_pack
from harness.pool import WorkerSpec
from harness.pool_ray import Shipment, _keep_signal_handlers, native_handler, shipment
from harness.store import recover
from harness.workspace import Workspace
from tests.harness.pooled import PACK, demo_corpus, published, verify

RAY_BIN = Path(sys.executable).parent / "ray"

ray: Any
try:
    import ray as _ray

    ray = _ray
except ImportError:  # the extra membrane[ray] (make install installs it)
    ray = None

needs_ray = pytest.mark.skipif(
    ray is None, reason="Ray is not installed: pip install 'membrane[ray]' (make install does)"
)


def _ray_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("membrane-ray-*")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        port: int = s.getsockname()[1]
        return port


# a two-node test cluster on loopback: its nodes on 127.0.0.2 and 127.0.0.3 (Ray rewrites
# 127.0.0.1 to the routable address, and refuses a second node when told not to), no usage
# stats, and no token (the token file a `ray start` and a driver find may differ on this machine)
_TEST_CLUSTER_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "disabled",
}


def _ray_start(*args: str) -> subprocess.Popen[bytes]:
    """`ray start --block ...` on loopback, in a process group of its own (ended by id)."""
    env = {**os.environ, **_TEST_CLUSTER_ENV}
    return subprocess.Popen(
        [str(RAY_BIN), "start", "--block", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


_CPUS = "import ray; ray.init(address={!r}, log_to_driver=False); print(ray.cluster_resources().get('CPU', 0))"


def _cpus(address: str) -> float:
    """The cluster's CPUs, asked by a driver of its own (-1: not up yet)."""
    env = {**os.environ, **_TEST_CLUSTER_ENV}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CPUS.format(address)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1
    lines = done.stdout.split()
    return float(lines[-1]) if done.returncode == 0 and lines else -1


@pytest.fixture
def two_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A head node with no CPU (the driver's) and a second node with two (the actors'),
    both on loopback: the actors run on another node than the driver, as on a cluster."""
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # the driver: this test process
    port = _free_port()
    temp = Path(tempfile.mkdtemp(prefix="membrane-ray-test-"))
    store = str(100 * 1024 * 1024)
    address = f"127.0.0.2:{port}"
    nodes = [
        _ray_start(
            "--head", "--node-ip-address=127.0.0.2", f"--port={port}", "--num-cpus=0", "--num-gpus=0",
            f"--object-store-memory={store}", "--include-dashboard=false",
            "--disable-usage-stats", f"--temp-dir={temp}",
        )
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while _cpus(address) < 0:  # the head answers once its GCS is up
            assert time.monotonic() < deadline, "the Ray head did not come up in time"
            assert nodes[0].poll() is None, "the Ray head exited"
            time.sleep(2)
        nodes.append(
            _ray_start(
                f"--address={address}", "--node-ip-address=127.0.0.3", "--num-cpus=2", "--num-gpus=0",
                f"--object-store-memory={store}",
            )
        )  # fmt: skip
        while _cpus(address) < 2:
            assert time.monotonic() < deadline, "the second Ray node did not join in time"
            assert nodes[1].poll() is None, "the second Ray node exited"
            time.sleep(2)
        yield address
    finally:
        if ray.is_initialized():
            with _keep_signal_handlers():  # the JVM of this process keeps its handlers
                ray.shutdown()
        for proc in reversed(nodes):
            _stop(proc)
        subprocess.run(["rm", "-rf", str(temp)], check=False)


@needs_ray
@pytest.mark.java
@pytest.mark.slow
def test_a_killed_actor_on_another_node_is_replaced_alone_and_loses_nothing(
    one_process_48: tuple[Path, Path],
    two_nodes: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus, one = one_process_48
    root = tmp_path / "ws"
    pack = load_pack(PACK)
    with api.open_session(root, PACK) as session:
        recover(session.ws, session.ledger)
        batch = session.batch(
            CorpusStream(corpus, pack),
            cohort_size=8,
            workers=2,
            executor="ray",
            ray_address=two_nodes,
        )
        killed: list[Any] = []
        spared: Any = None
        replacements: list[Any] = []
        for cycle in batch:
            executor: Any = batch.executor  # type: ignore[attr-defined]
            if not killed and cycle.done:  # one cohort committed, others in flight
                actors = executor.actors()
                wheres = ray.get([a.where.remote() for a in actors])
                for _pid, ws_root, pack_root in wheres:  # not the driver's folders:
                    assert Path(ws_root) != root.resolve()  # the shipment, unpacked
                    assert Path(pack_root) != PACK and Path(pack_root, "pack.toml").is_file()
                ray.kill(actors[0], no_restart=True)
                killed.append(wheres[0])
                spared = wheres[1]
            elif killed and not replacements and batch.restarts:  # type: ignore[attr-defined]
                replacements = ray.get([a.where.remote() for a in executor.actors()])
        assert killed and batch.restarts >= 1  # type: ignore[attr-defined]
        assert len(batch.result.runs) == 48
    assert published(root) == published(one)
    verify(root, capsys)
    # the live actors removed their unpacked folders when the batch shut them down
    assert replacements and not any(Path(w[1]).parent.exists() for w in replacements)
    # only the killed actor was replaced: the other kept its process and warm gates
    pids = {w[0] for w in replacements}
    assert spared[0] in pids and killed[0][0] not in pids and len(pids) == 2


@needs_ray
@pytest.mark.java
@pytest.mark.slow
def test_a_local_ray_cluster_commits_what_one_process_commits_byte_for_byte(
    one_process_48: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The batch starts a cluster on 127.0.0.1 for itself and removes it afterwards.
    (After the two-node test: a local cluster turns Ray's token auth on for this process,
    which the two-node test cluster, token-free, would then refuse.)"""
    corpus, one = one_process_48
    before = _ray_dirs()
    jvm = {sig: native_handler(sig) for sig in (signal.SIGSEGV, signal.SIGBUS)}
    result = api.run_batch(
        tmp_path / "ws", corpus, PACK, cohort_size=8, workers=2, executor="ray", report=True
    )
    # Ray's crash handlers over the JVM's (HermiT in this process takes SIGSEGV for its
    # null checks) made a later HermiT call here segfault: the batch leaves them as it found them
    assert {sig: native_handler(sig) for sig in jvm} == jvm
    assert len(result.runs) == 48
    assert published(tmp_path / "ws") == published(one)
    verify(tmp_path / "ws", capsys)
    assert not ray.is_initialized()  # the batch's cluster is down ...
    assert _ray_dirs() <= before  # ... and its files are gone
    # a rerun skips everything it settled, and starts no cluster for nothing
    again = api.run_batch(tmp_path / "ws", corpus, PACK, cohort_size=8, executor="ray")
    assert not again.runs and len(again.skipped) == 48


def test_the_shipment_carries_the_pack_settings_and_ontology_cache(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.ensure()
    ws.config_path.write_text('proposer = "offline"\n', encoding="utf-8")
    (ws.cache / "ontology-abc.json").write_bytes(b"{}")
    (ws.cache / "other.bin").write_bytes(b"not shipped")
    spec = WorkerSpec(str(ws.root), str(PACK), EngineOptions(), None, (), "b", "f", "1")
    shipped = shipment(spec)
    root, pack = shipped.unpack(tmp_path / "there")
    here = sorted(
        p.relative_to(PACK) for p in PACK.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    there = sorted(p.relative_to(pack) for p in pack.rglob("*") if p.is_file())
    assert here == there
    assert all((PACK / p).read_bytes() == (pack / p).read_bytes() for p in here)
    assert Workspace(root).config_path.read_text(encoding="utf-8") == 'proposer = "offline"\n'
    assert sorted(p.name for p in Workspace(root).cache.iterdir()) == ["ontology-abc.json"]
    assert load_pack(pack).name == load_pack(PACK).name
    # a workspace without membrane.toml ships none (the defaults)
    ws.config_path.unlink()
    assert shipment(spec).config is None
    with pytest.raises(ConfigError, match="outside its folder"):
        Shipment((("../escape.txt", b"x"),), None, ()).unpack(tmp_path / "evil")
    assert not (tmp_path / "escape.txt").exists()


@pytest.mark.java
@pytest.mark.slow
def test_executor_ray_without_ray_is_a_setup_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    corpus = demo_corpus(tmp_path, 8)
    code = main(
        [
            "batch",
            str(corpus),
            "--pack",
            str(PACK),
            "-w",
            str(tmp_path / "ws"),
            "--executor",
            "ray",
            "--no-report",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--executor ray needs Ray, which is not installed" in err
    assert "pip install 'membrane[ray]'" in err
    assert not (tmp_path / "ws" / ".membrane").exists()  # said before anything was opened

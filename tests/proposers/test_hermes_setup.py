"""The hermes proposer's failure paths that need no hermes environment: setup errors and a
worker that cannot start (run everywhere, with or without `.venv-hermes`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.proposers.hermes import HermesProposer, Sandbox, hermes_config
from harness.errors import ConfigError, EndpointUnavailable, InfrastructureError
from harness.models import Artifact
from harness.pack import Pack
from harness.pools import Pools
from harness.workspace import LlmConfig
from tests.conftest import FACILITY
from tests.proposers.test_openai import request_for

pytestmark = pytest.mark.java  # the pools come from HermiT (once per session)


@pytest.fixture(scope="module")
def candidate() -> Artifact:
    line = (FACILITY / "corpus" / "demo.jsonl").read_text().splitlines()[0]
    return Artifact.model_validate_json(line)


def test_a_worker_that_cannot_start_fails_cleanly_then_opens_the_breaker(
    facility_pack: Pack, facility_pools: Pools, candidate: Artifact, tmp_path: Path
) -> None:
    cfg = LlmConfig(base_url="http://127.0.0.1:9/v1", model="m", breaker_failures=2)
    p = HermesProposer(
        facility_pack,
        facility_pools,
        cfg,
        tmp_path / "hermes",
        python=Path("/bin/false"),
        environ={},
    )
    with pytest.raises(InfrastructureError, match="exited") as first:
        p.propose(request_for(candidate))
    assert not isinstance(first.value, EndpointUnavailable)
    with pytest.raises(EndpointUnavailable, match="2 failed conversations"):
        p.propose(request_for(candidate, attempt=3))


def test_setup_errors_are_config_errors(
    facility_pack: Pack, facility_pools: Pools, tmp_path: Path
) -> None:
    cfg = LlmConfig(model="m")
    with pytest.raises(ConfigError, match="make hermes"):
        HermesProposer(
            facility_pack,
            facility_pools,
            cfg,
            tmp_path,
            python=tmp_path / "nope" / "python",
            environ={},
        )
    with pytest.raises(ConfigError, match="model"):
        HermesProposer(facility_pack, facility_pools, LlmConfig(), tmp_path, environ={})
    remote = LlmConfig(base_url="https://api.example.com/v1", model="m")
    with pytest.raises(ConfigError, match="MEMBRANE_ALLOW_MODEL_REQUESTS"):
        HermesProposer(
            facility_pack,
            facility_pools,
            remote,
            tmp_path,
            environ={"MEMBRANE_ALLOW_MODEL_REQUESTS": "0"},
        )


def test_the_sandbox_keeps_the_worker_inside_the_workspace(tmp_path: Path) -> None:
    box = Sandbox(tmp_path / ".membrane" / "hermes")
    cfg = LlmConfig(model="m", timeout_s=7)
    box.prepare(cfg)
    env = box.env({"PATH": "/bin", "OPENAI_API_KEY": "sk-x", "HOME": "/root", "PYTHONPATH": "/x"})
    assert env["HERMES_HOME"] == str(box.home) and env["HERMES_DISABLE_LAZY_INSTALLS"] == "1"
    assert all(env[k].startswith(str(box.root)) for k in ("HOME", "TMPDIR", "XDG_CACHE_HOME"))
    assert "OPENAI_API_KEY" not in env and "PYTHONPATH" not in env  # keys go over the pipe
    conf = hermes_config(cfg)
    assert conf["model"]["context_length"] >= 64_000
    assert conf["providers"]["custom"]["request_timeout_seconds"] == 7
    assert (box.home / "config.yaml").is_file()

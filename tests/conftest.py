"""Shared fixtures. No test ever talks to a real model."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.pack import Pack, load_pack
from tests.proposers.server import Responder, ScriptedServer

os.environ["MEMBRANE_ALLOW_MODEL_REQUESTS"] = "0"
# each test classifies its own workspace's ontology (tests/ontology/test_shared_cache.py
# turns the per-user cache on where it is the subject)
os.environ["MEMBRANE_CACHE_DIR"] = "off"

ROOT = Path(__file__).resolve().parent.parent
FACILITY = ROOT / "packs" / "facility"
# the Pizza ontology (owlcs, CC BY 3.0; see tests/data/pizza/NOTICE), vendored unmodified
PIZZA_OWL = ROOT / "tests" / "data" / "pizza" / "pizza.owl"


@pytest.fixture(scope="session")
def facility_pack() -> Pack:
    return load_pack(FACILITY)


@pytest.fixture(scope="session")
def facility_gates(
    facility_pack: Pack, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, object]:
    """The three real gates on the facility pack (HermiT, DuckDB), built once per session."""
    from effectors.registry import GateContext, build_gate
    from ontology import load_pools

    cache = tmp_path_factory.mktemp("cache")
    pools = load_pools(facility_pack, cache)
    ctx = GateContext(pack=facility_pack, pools=pools, cache_dir=cache)
    return {name: build_gate(name, ctx) for name in ("value_gate", "ri_gate", "prose_gate")}


@pytest.fixture
def serve() -> Iterator[Callable[[Responder], ScriptedServer]]:
    """`srv = serve(responder)`: a started server, stopped after the test."""
    started: list[ScriptedServer] = []

    def start(responder: Responder) -> ScriptedServer:
        srv = ScriptedServer(responder).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()

"""Built-in gates and proposers register once and never drop or override a user's
registration, whichever comes first."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors import registry
from effectors.registry import (
    GateContext,
    build_gate,
    build_proposer,
    register_gate,
    register_proposer,
)
from effectors.testing import InstantGate, ScriptedProposer
from harness.errors import ConfigError
from harness.pack import Pack
from harness.pools import Pools


@pytest.fixture(autouse=True)
def _clean_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_GATES", {})
    monkeypatch.setattr(registry, "_PROPOSERS", {})


@pytest.fixture
def ctx(facility_pack: Pack, tmp_path: Path) -> GateContext:
    return GateContext(pack=facility_pack, pools=Pools(ontology_hash="x"), cache_dir=tmp_path)


def test_a_user_gate_registered_first_does_not_drop_the_built_ins(ctx: GateContext) -> None:
    register_gate("mine", lambda c: InstantGate("mine"))
    assert build_gate("mine", ctx).name == "mine"
    assert build_gate("prose_gate", ctx).name == "prose_gate"  # was a KeyError
    assert {"mine", "value_gate", "ri_gate", "prose_gate"} <= set(registry.gates())


def test_a_user_proposer_wins_over_the_built_in_in_either_order(ctx: GateContext) -> None:
    mine = ScriptedProposer("mine-offline", [])
    register_proposer("offline", lambda c: mine)  # before any built-in was looked up
    assert build_proposer("offline", ctx) is mine  # was silently replaced
    build_gate("prose_gate", ctx)
    assert build_proposer("offline", ctx) is mine
    other = ScriptedProposer("other", [])
    register_proposer("offline", lambda c: other)  # after built-ins were used
    assert build_proposer("offline", ctx) is other


def test_a_user_gate_can_replace_a_built_in(ctx: GateContext) -> None:
    build_gate("prose_gate", ctx)
    register_gate("prose_gate", lambda c: InstantGate("prose_gate"))
    assert isinstance(build_gate("prose_gate", ctx), InstantGate)


def test_unknown_names_are_config_errors_naming_the_choices(ctx: GateContext) -> None:
    with pytest.raises(ConfigError, match="value_gate"):
        build_gate("valu_gate", ctx)
    with pytest.raises(ConfigError, match="offline"):
        build_proposer("ofline", ctx)

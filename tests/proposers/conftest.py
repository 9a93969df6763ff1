"""Fixtures for the LLM proposers: the facility pack's pools, a loopback chat-completions
server per test, and a "model" that answers with the offline proposer's repair (the model
is the only fake; HTTP, gates, ledger and traces are real)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from effectors.proposers.offline import OfflineProposer
from harness.models import Artifact, CritiqueReport, ProposalRequest, Spine
from harness.pack import Pack
from harness.pools import Pools
from tests.proposers.server import Reply, Responder, completion

_BLOCK = re.compile(r'<data name="(\w+)" id="(\w+)">\n(.*?)\n</data id="\2">', re.S)
_ATTEMPT = re.compile(r"^Attempt (\d+) for artifact `([^`]+)`")


@pytest.fixture(scope="session")
def facility_pools(facility_pack: Pack, tmp_path_factory: pytest.TempPathFactory) -> Pools:
    from ontology import load_pools

    return load_pools(facility_pack, tmp_path_factory.mktemp("pools"))


def blocks(body: dict[str, Any]) -> dict[str, Any]:
    """The data blocks of a request's user message, decoded."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return {name: json.loads(text) for name, _id, text in _BLOCK.findall(user)}


def request_of(body: dict[str, Any]) -> ProposalRequest:
    """The ProposalRequest a chat request was built from (as far as the model can see it)."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    m = _ATTEMPT.match(user)
    assert m is not None, user[:200]
    data = blocks(body)
    crit = data["critique"]
    report = CritiqueReport(
        gate=crit["gate"],
        attempt=crit["attempt"],
        critiques=tuple(crit["critiques"]),
        spine=Spine(locked=data["spine"]),
    )
    candidate = Artifact(
        id=m.group(2), tables=data["candidate"]["tables"], prose=data["candidate"]["prose"]
    )
    return ProposalRequest(
        run_id="x", attempt=int(m.group(1)), candidate=candidate, critique=report
    )


def answer(artifact: Artifact, **kw: Any) -> Reply:
    return completion(json.dumps({"tables": artifact.tables, "prose": artifact.prose}), **kw)


def offline_model(pack: Pack, pools: Pools, seed: int = 0) -> Responder:
    """A scripted model that answers every request with the offline proposer's repair."""
    offline = OfflineProposer(pack, pools, seed=seed)

    def respond(body: dict[str, Any]) -> Reply:
        return answer(offline.propose(request_of(body)).artifact)

    return respond


def write_config(ws: Path, base_url: str, **llm: object) -> None:
    """A membrane.toml pointing the openai proposer at `base_url`."""
    settings = {"base_url": base_url, "model": "scripted", "backoff_s": 0.0, **llm}
    lines = ['proposer = "openai"', "[llm]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "membrane.toml").write_text("\n".join(lines) + "\n")

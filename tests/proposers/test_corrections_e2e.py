"""A preference promoted from reviewers' corrections reaches the proposers: the offline
proposer's choice where it applies, and an LLM proposer's prompt (seen by a scripted model
on loopback), marked as a learned preference. Real loop, real gates; only the model is
faked."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from effectors.proposers.offline import OfflineProposer
from harness.api import run_batch
from harness.pack import Pack
from harness.pools import Pools
from tests.conftest import FACILITY
from tests.proposers.conftest import answer, blocks, request_of
from tests.proposers.server import Reply, Responder, ScriptedServer

pytestmark = [pytest.mark.java, pytest.mark.slow]
Serve = Callable[[Responder], ScriptedServer]
DEMO = FACILITY / "corpus" / "demo.jsonl"
IMAGING = ("Canon Medical Systems", "Siemens Healthineers")


def first_artifact(tmp: Path) -> Path:
    path = tmp / "one.jsonl"
    path.write_text(DEMO.read_text().splitlines()[0] + "\n")
    return path


def manufacturer(ws: Path) -> str:
    lines = (ws / "current" / "corpus.jsonl").read_text().splitlines()
    art = next(a for a in map(json.loads, lines) if a["id"] == "fac-0001")
    row = next(r for r in art["tables"]["equipment"] if r["equipment_id"] == "EQ-004")
    return str(row["manufacturer"])


def config(ws: Path, extra: str = "") -> None:
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "membrane.toml").write_text(
        f'pack = "{FACILITY}"\n{extra}\n[learning.corrections]\nenabled = true\n'
        'distiller = "fallback"\n'
    )


def teach(ws: Path, value: str) -> None:
    """Three corrections, two days, two sessions: the recurrence gate admits them."""
    text = f"for PET-CT scanner rows the manufacturer should be {value}"
    rows = [
        {"text": text, "at": "2026-11-02T09:00:00+00:00", "session": "a", "reviewer": "dana"},
        {
            "text": f"No - use {value} for PET-CT scanner",
            "at": "2026-11-02T11:00:00+00:00",
            "session": "b",
            "reviewer": "dana",
        },
        {
            "text": text + " please",
            "at": "2026-11-03T09:00:00+00:00",
            "session": "b",
            "reviewer": "dana",
        },
    ]
    path = ws / "notes.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    from harness.corrections import api as capi

    out = capi.import_file(ws, path)
    assert out["captured"] == 3 and len(out["records"]) == 1, out


def test_a_promoted_preference_steers_the_offline_proposer(tmp_path: Path) -> None:
    corpus = first_artifact(tmp_path)
    base = tmp_path / "base"
    run_batch(base, corpus, FACILITY)  # EQ-004's manufacturer is "N/A": the gate flags it
    chosen = manufacturer(base)
    assert chosen != "N/A"
    want = next(v for v in IMAGING if v != chosen)
    ws = tmp_path / "ws"
    config(ws)
    teach(ws, want)
    result = run_batch(ws, corpus, FACILITY)  # the batch's tick promotes and routes it
    assert [r.state for r in result.runs] == ["COMMITTED"]
    assert manufacturer(ws) == want
    events = [json.loads(x) for x in (ws / "trace" / "fac-0001.r1.jsonl").read_text().splitlines()]
    shown = [e for e in events if e.get("kind") == "proposal" and e.get("lessons")]
    assert shown and any(k.startswith("pref:") for e in shown for k in e["lessons"])


def test_a_promoted_preference_reaches_the_models_prompt(
    tmp_path: Path, serve: Serve, facility_pack: Pack, facility_pools: Pools
) -> None:
    offline = OfflineProposer(facility_pack, facility_pools, seed=0)
    seen: list[Any] = []

    def model(body: dict[str, Any]) -> Reply:
        seen.append(blocks(body).get("preferences"))
        return answer(offline.propose(request_of(body)).artifact)

    srv = serve(model)
    ws = tmp_path / "ws"
    settings = {"base_url": srv.base_url, "model": "scripted", "backoff_s": 0.0}
    llm = "\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items())
    config(ws, f'proposer = "openai"\n[llm]\n{llm}')
    teach(ws, "Siemens Healthineers")
    run_batch(ws, first_artifact(tmp_path), FACILITY)
    assert seen and all(s is not None for s in seen)
    (pref,) = seen[0]
    assert pref["preference"] == (
        "Prefer 'Siemens Healthineers' in equipment.manufacturer for rows whose "
        "equipment.equipment_type is 'PET-CT scanner'."
    )
    system = srv.requests[0]["messages"][0]["content"]
    assert "preferences, not instructions" in system

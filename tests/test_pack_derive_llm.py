"""`pack derive --llm`: candidate axioms from a model (a scripted OpenAI-compatible server on
loopback; HTTP, HermiT and the value gate are real). The answer is parsed strictly, names
the sample does not have are refused before the gate, and every other LLM axiom passes the
same gate as the frequency candidates."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from effectors.proposers.openai_client import ChatClient
from harness.cli import main
from harness.errors import InfrastructureError
from harness.models import Artifact
from harness.pack import load_pack
from harness.packderive import SampleValues, derive_pack
from harness.packllm import MAX_ANSWER_CHARS, MAX_AXIOMS, LlmAxioms, parse_axioms
from harness.packnew import new_pack
from harness.workspace import LlmConfig
from tests.proposers.server import Reply, ScriptedServer, completion, script

# kind -> material in the sample; "steel" is both a kind and a material (the pools overlap)
_ROWS = [
    ("lamp", "steel"),
    ("lamp", "brass"),
    ("chair", "oak"),
    ("chair", "pine"),
    ("steel", "oak"),
]


def _sample(tmp_path: Path) -> Path:
    lines = []
    for n in range(3):
        rows = [
            {"item_id": f"IT-{n}{i}", "kind": k, "material": m, "weight_kg": 1.0 + i}
            for i, (k, m) in enumerate(_ROWS)
        ]
        lines.append(json.dumps({"id": f"s-{n}", "tables": {"items": rows}}))
    path = tmp_path / "sample.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def skeleton(tmp_path: Path) -> Path:
    """The `pack new` skeleton: it binds items(item_id, kind, material, weight_kg)."""
    new_pack(tmp_path / "skeleton")
    return tmp_path / "skeleton"


def _values(skeleton: Path, sample: Path) -> SampleValues:
    pack = load_pack(skeleton)
    arts = [Artifact.model_validate_json(x) for x in sample.read_text("utf-8").splitlines()]
    return SampleValues(pack, arts)


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[ScriptedServer] = []

    def start(*replies: Reply) -> ScriptedServer:
        srv = ScriptedServer(script(replies)).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


def _client(srv: ScriptedServer, **kw: Any) -> ChatClient:
    settings = LlmConfig(base_url=srv.base_url, model="scripted", retries=0, **kw)
    return ChatClient(settings, allow_remote=False, sleep=lambda _s: None)


def _only(if_values: list[str], then_values: list[str], **kw: Any) -> dict[str, Any]:
    return {
        "kind": "only",
        "table": "items",
        "if_column": "kind",
        "if_values": if_values,
        "then_column": "material",
        "then_values": then_values,
        **kw,
    }


GOOD_LAMPS = _only(["lamp"], ["steel", "brass"], why="lamps are metal")
GOOD_CHAIRS = _only(["chair"], ["oak", "pine"], why="chairs are wood")
INCONSISTENT = {"kind": "disjoint", "classes": ["ItemsKind", "ItemsMaterial"]}  # share steel
REFUTED = _only(["lamp"], ["brass"])  # the sample has a steel lamp
UNKNOWN_CLASS = {"kind": "disjoint", "classes": ["ItemsKind", "Unobtainium"]}
UNKNOWN_VALUE = _only(["lamp"], ["titanium"])
UNKNOWN_COLUMN = _only(["lamp"], ["oak"], then_column="colour")


@pytest.mark.java
def test_llm_axioms_pass_the_same_gate_and_the_report_says_who_and_why(
    tmp_path: Path, skeleton: Path, serve: Any
) -> None:
    answer = {
        "axioms": [
            GOOD_LAMPS,
            INCONSISTENT,
            REFUTED,
            UNKNOWN_CLASS,
            UNKNOWN_VALUE,
            UNKNOWN_COLUMN,
            GOOD_CHAIRS,
        ]
    }
    srv = serve(completion("```json\n" + json.dumps(answer) + "\n```"))
    llm = LlmAxioms(_client(srv), "scripted")
    report = derive_pack(skeleton, _sample(tmp_path), tmp_path / "out", candidates=[], extra=llm)
    got = {c.name: (c.source, c.admitted, c.why) for c in report.candidates}
    assert [c.source for c in report.candidates] == ["llm"] * 7
    lamps, chairs = got["llm only items.kind -> material"], report.candidates[-1]
    assert (
        lamps[1] is True
        and chairs.admitted
        and chairs.description.startswith(
            "a items row whose kind is chair has its material among oak, pine (chairs are wood)"
        )
    )
    why = [c.why for c in report.candidates]
    assert why[1].startswith("HermiT:") and "inconsistent" in why[1]
    assert "would fail: value.disjoint at items[0].material" in why[2]
    assert why[3] == (
        "refused before the gate: unknown class(es) ['Unobtainium'] (the pools: "
        "ItemsKind, ItemsMaterial)"
    )
    assert why[4] == "refused before the gate: unknown value(s) ['titanium'] (not in ItemsMaterial)"
    assert why[5] == "refused before the gate: items.colour is not a bound object column"
    saved = json.loads((tmp_path / "out" / "derive.json").read_text(encoding="utf-8"))
    assert [c["source"] for c in saved["admitted"]] == ["llm", "llm"]
    assert len(saved["rejected"]) == 5

    # the admitted restriction bites: a lamp made of oak is value.disjoint
    from effectors.value_gate import ValueGate

    bad = Artifact(
        id="t",
        tables={"items": [{"item_id": "X", "kind": "lamp", "material": "oak", "weight_kg": 1.0}]},
    )
    [verdict] = ValueGate.from_pack(load_pack(tmp_path / "out"), tmp_path / "c").judge([bad])
    assert ("value.disjoint", "items[0].material") in {
        (c.code, str(c.location.cell())) for c in verdict.critiques
    }
    [request] = srv.requests
    assert request["response_format"] == {"type": "json_object"}
    assert "ItemsKind" in request["messages"][1]["content"]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "the answer is not one JSON object"),
        ("", "the answer is empty"),
        (json.dumps({"axioms": [GOOD_LAMPS], "note": "hi"}), "does not fit the schema at `note`"),
        (json.dumps({"axioms": [{"kind": "domain", "class": "X"}]}), "does not fit the schema"),
        (
            json.dumps({"axioms": [GOOD_LAMPS] * (MAX_AXIOMS + 1)}),
            f"{MAX_AXIOMS + 1} axioms (max {MAX_AXIOMS})",
        ),
        (
            json.dumps({"axioms": [{**GOOD_LAMPS, "why": "x" * MAX_ANSWER_CHARS}]}),
            f"characters (max {MAX_ANSWER_CHARS:,})",
        ),
    ],
)
def test_an_unusable_answer_is_one_rejected_candidate(
    tmp_path: Path, skeleton: Path, serve: Any, content: str, why: str
) -> None:
    srv = serve(completion(content))
    [cand] = LlmAxioms(_client(srv), "scripted")(_values(skeleton, _sample(tmp_path)))
    assert (cand.name, cand.source, cand.admitted) == ("llm answer", "llm", False)
    assert cand.why.startswith("refused before the gate: ") and why in cand.why, cand.why


def test_a_good_answer_parses_to_owl_over_the_samples_names(tmp_path: Path, skeleton: Path) -> None:
    s = _values(skeleton, _sample(tmp_path))
    [cand] = parse_axioms(json.dumps({"axioms": [GOOD_LAMPS]}), s)
    assert not cand.why and cand.source == "llm"
    assert '<owl:allValuesFrom rdf:resource="#ItemsMaterial_llm1"/>' in cand.owl
    assert 'rdf:about="#ItemsMaterial_llm1_not"' in cand.owl  # the closure that makes it bite


@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=500, body={"error": {"message": "boom"}}),
        Reply(body=b"<html>not json</html>"),
        Reply(body={"object": "chat.completion"}),
    ],
)
def test_a_failing_endpoint_raises_for_derive_to_report(
    tmp_path: Path, skeleton: Path, serve: Any, reply: Reply
) -> None:
    srv = serve(reply)
    with pytest.raises(InfrastructureError):
        LlmAxioms(_client(srv), "scripted")(_values(skeleton, _sample(tmp_path)))


def test_llm_without_a_model_is_a_setup_error(
    tmp_path: Path, skeleton: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert (
        main(
            [
                "pack",
                "derive",
                "--pack",
                str(skeleton),
                "--from-sample",
                str(_sample(tmp_path)),
                "--out",
                str(tmp_path / "out"),
                "--llm",
                "-w",
                str(ws),
            ]
        )
        == 2
    )
    assert "--llm needs a model" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.java
def test_a_model_that_times_out_leaves_the_frequency_candidates(
    tmp_path: Path, skeleton: Path, serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = serve(Reply(delay=3.0, body={"choices": []}))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "membrane.toml").write_text(
        f'[llm]\nbase_url = "{srv.base_url}"\nmodel = "scripted"\ntimeout_s = 0.5\nretries = 0\n',
        encoding="utf-8",
    )
    assert (
        main(
            [
                "pack",
                "derive",
                "--pack",
                str(skeleton),
                "--from-sample",
                str(_sample(tmp_path)),
                "--out",
                str(tmp_path / "out"),
                "--llm",
                "-w",
                str(ws),
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert "no reply within 0.5s" in report["llm_error"]
    assert {c["source"] for c in report["admitted"] + report["rejected"]} == {"frequency"}
    assert len(srv.requests) == 1


def test_the_model_sees_pools_and_shared_rows_cut_to_fit(
    tmp_path: Path, skeleton: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness import packllm

    s = _values(skeleton, _sample(tmp_path))
    summary = packllm.sample_summary(s)
    assert summary["pools"]["ItemsKind"] == ["chair", "lamp", "steel"]
    items = summary["tables"]["items"]
    assert items["object_columns"]["material"] == {
        "pool": "ItemsMaterial",
        "property": "hasMaterial",
    }
    assert ["lamp", "steel", 3] in items["values_sharing_rows"]["kind / material"]
    monkeypatch.setattr(packllm, "MAX_SUMMARY_CHARS", 300)
    small = packllm.sample_summary(s)
    assert small["tables"]["items"]["values_sharing_rows"] == {}


def test_new_llm_needs_a_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pack", "new", str(tmp_path / "p"), "--llm"]) == 2
    assert "--llm needs --from-sample" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


@pytest.mark.java
def test_new_from_a_sample_with_the_model_gates_its_axioms_too(
    tmp_path: Path, serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = serve(completion(json.dumps({"axioms": [GOOD_LAMPS, REFUTED, UNKNOWN_CLASS]})))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "membrane.toml").write_text(
        f'[llm]\nbase_url = "{srv.base_url}"\nmodel = "scripted"\nretries = 0\n', encoding="utf-8"
    )
    out = tmp_path / "shop"
    args = ["pack", "new", str(out), "--from-sample", str(_sample(tmp_path)), "--llm"]
    assert main([*args, "-w", str(ws), "--json"]) == 0
    derived = json.loads(capsys.readouterr().out)["derive"]
    llm = [c for c in derived["admitted"] + derived["rejected"] if c["source"] == "llm"]
    assert [(c["name"], c["admitted"]) for c in llm] == [
        ("llm only items.kind -> material", True),
        ("llm only items.kind -> material", False),
        ("llm disjoint ItemsKind, Unobtainium", False),
    ]
    assert "would fail: value.disjoint" in llm[1]["why"]
    assert "ItemsMaterial_llm1" in (out / "ontology" / "shop.owl").read_text(encoding="utf-8")
    assert len(srv.requests) == 1

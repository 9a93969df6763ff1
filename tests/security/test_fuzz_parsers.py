"""Fuzzing the parsers at a trust boundary that had no property test yet (issue 17).

The bar: no input gives an uncaught exception. Every rejection is the parser's own error
type (`CorpusError`, `PackError`, `ConfigError`, `ProposalFailed`) naming the file (and the
line, where the input has lines). Parsers that already have one: pack.toml
(tests/test_pack_check.py), ontology bytes and XML catalogs (tests/ontology/test_intake.py),
ACP transport (tests/proposers/test_acp_parsing.py), correction distillation envelopes
(tests/harness/test_corrections_text.py), outcome lines (tests/harness/test_outcome_views.py).
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from effectors.proposers.prompting import parse_answer
from effectors.ri_gate import RiGate
from effectors.ri_gate.assertions import parse_assertion
from harness.corpus import read_corpus
from harness.errors import ConfigError, CorpusError, PackError, ProposalFailed
from harness.models import Artifact, CritiqueReport, ProposalRequest, Spine
from harness.pack import Pack, load_pack
from harness.workspace import Workspace
from tests.conftest import FACILITY
from tests.effectors.test_ri_gate import make_pack

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
DEMO = (FACILITY / "corpus" / "demo.jsonl").read_text(encoding="utf-8").splitlines()

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
)
json_value = st.recursive(
    json_leaf,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def mutated_artifact(draw: st.DrawFn) -> str:
    """A demo corpus line with one value somewhere replaced by any JSON value."""
    data = json.loads(draw(st.sampled_from(DEMO[:20])))
    paths: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in list(items):
            paths.append((node, key))
            if isinstance(value, dict | list):
                walk(value)

    walk(data)
    node, key = draw(st.sampled_from(paths))
    if draw(st.booleans()) and isinstance(node, dict):
        node.pop(key)
    else:
        node[key] = draw(json_value)
    return json.dumps(data, ensure_ascii=draw(st.booleans()))


corpus_line = st.one_of(
    st.binary(max_size=200).filter(lambda b: b"\n" not in b),
    json_value.map(json.dumps),
    mutated_artifact(),
    st.sampled_from(DEMO[:5]),
    st.sampled_from(
        [
            "{",
            "[]",
            '{"id": "a"}',
            '{"id": "a", "id": "b"}',
            "NaN",
            "1e999",
            '{"id": "x\\u0000"}',
            "\ufeff{}",
            '"' + "[" * 5000,
        ]
    ),
).map(lambda x: x if isinstance(x, bytes) else x.encode("utf-8", "surrogatepass"))


@pytest.fixture(scope="module")
def facility() -> Pack:
    return load_pack(FACILITY)


@given(lines=st.lists(corpus_line, min_size=1, max_size=6))
@FUZZ
def test_any_corpus_is_artifacts_and_line_errors(
    facility: Pack, tmp_path: Path, lines: list[bytes]
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    read = read_corpus(path, facility)
    numbered = [n for n, raw in enumerate(lines, start=1) if raw.strip()]
    assert sorted([n or 0 for n in read.lines] + [e.line or 0 for e in read.errors]) == numbered
    for err in read.errors:
        assert err.file == str(path) and err.line in numbered and err.message


# -- assertion headers and bodies ------------------------------------------------------------

SPINE = "CREATE TABLE rooms (room_id VARCHAR PRIMARY KEY, floor INTEGER);"
header_line = st.one_of(
    st.builds(
        lambda k, v: f"-- {k}: {v}",
        st.sampled_from(["code", "severity", "message", "table", "columns", "limit", "other"]),
        st.text(alphabet=string.printable.replace("\n", "").replace("\r", ""), max_size=25)
        | st.sampled_from(
            [
                "ri.x",
                "error",
                "warn",
                "rooms",
                "room_id, floor",
                "5",
                "{room_id}",
                "{room_id.__class__}",
                "{0}",
                "{",
                "ri.Bad Code",
                "99999",
            ]
        ),
    ),
    st.text(max_size=30).map(lambda t: "--" + t.replace("\n", " ").replace("\r", " ")),
    st.just(""),
)
sql_token = st.sampled_from(
    [
        "SELECT",
        "_artifact",
        "_row",
        "room_id",
        "floor",
        "FROM",
        "rooms",
        "r",
        "WHERE",
        ",",
        "(",
        ")",
        ";",
        "'",
        "--",
        "/*",
        "*/",
        "JOIN",
        "ON",
        "1",
        "=",
        "range(3)",
        "read_csv('x')",
        "repeat('a', 9)",
        "_pool",
        "UNION ALL",
        "GROUP BY",
        "ATTACH 'x'",
        "\n",
        "AS",
        "r.floor",
        "count(*)",
        "WITH w AS (SELECT 1)",
        "VALUES (1)",
        "*",
        "ORDER BY",
        "LIMIT 1",
    ]
)
VALID_HEAD = ["-- code: ri.x", "-- severity: warn", "-- message: room {room_id}"]


@pytest.fixture(scope="module")
def ri_probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RiGate]:
    gate = RiGate.from_pack(make_pack(tmp_path_factory.mktemp("ri"), SPINE, {"rooms": ["room_id"]}))
    yield gate
    gate.close()


@given(
    head=st.lists(header_line, max_size=7),
    keep_valid=st.booleans(),
    body=st.lists(sql_token, max_size=14).map(" ".join),
)
@example(head=[], keep_valid=True, body="SELECT _artifact, room_id FROM rooms")
@FUZZ
def test_any_assertion_file_parses_or_is_a_pack_error_with_its_line(
    ri_probe: RiGate, tmp_path: Path, head: list[str], keep_valid: bool, body: str
) -> None:
    text = "\n".join((VALID_HEAD if keep_valid else []) + head + [body]) + "\n"
    path = tmp_path / "a.sql"
    path.write_text(text, encoding="utf-8")
    try:
        a = parse_assertion(path, ri_probe.schema, ri_probe._warm().con)
    except PackError as err:
        assert err.file == str(path) and err.message
        assert err.line is None or 1 <= err.line <= text.count("\n") + 1
    else:
        assert "_artifact" in a.result_columns
    con = ri_probe._warm().con  # the probe's catalog is as it was: no view left behind
    views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    assert not [v for (v,) in views if v == "_probe"]


# -- membrane.toml --------------------------------------------------------------------------

toml_key = st.sampled_from(
    [
        "pack",
        "proposer",
        "seed",
        "max_attempts",
        "prose_workers",
        "base_url",
        "model",
        "timeout_s",
        "enabled",
        "x",
    ]
)
toml_value = st.one_of(
    st.integers(min_value=-(2**65), max_value=2**65).map(str),
    st.floats(allow_nan=True).map(lambda f: repr(f).replace("inf", "inf").lower()),
    st.text(max_size=15).map(json.dumps),
    st.sampled_from(
        [
            "true",
            "false",
            "[]",
            "[1, 'a']",
            "{a = 1}",
            "1979-05-27",
            "'''x'''",
            '"\\ud800"',
            "nan",
            "-inf",
            '"a',
            "[",
            "0x10",
        ]
    ),
)
toml_line = st.one_of(
    st.builds(lambda k, v: f"{k} = {v}", toml_key, toml_value),
    st.sampled_from(
        [
            "[llm]",
            "[acp]",
            "[learning]",
            "[learning.corrections]",
            "[[llm]]",
            "[prose]",
            "[",
            "x.y = 1",
            "= 1",
            "",
        ]
    ),
    st.text(max_size=20).map(lambda t: t.replace("\n", " ")),
)


@given(lines=st.lists(toml_line, max_size=8) | st.binary(max_size=60).map(lambda b: [b.hex()]))
@example(lines=[b"\xff\xfe".decode("latin-1")])
@FUZZ
def test_any_membrane_toml_is_a_config_or_a_config_error(tmp_path: Path, lines: list[str]) -> None:
    ws = Workspace(tmp_path)
    ws.config_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        ws.config()
    except ConfigError as err:
        assert err.file == str(ws.config_path) and err.message


def test_a_membrane_toml_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.config_path.write_bytes(b'pack = "\xff"\n')
    with pytest.raises(ConfigError) as info:
        ws.config()
    assert info.value.file == str(ws.config_path)


def test_a_bad_membrane_toml_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main

    (tmp_path / "membrane.toml").write_text("max_attempts = 'many'\n[llm\n", encoding="utf-8")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(DEMO[0] + "\n", encoding="utf-8")
    code = main(
        ["batch", str(corpus), "--pack", str(FACILITY), "-w", str(tmp_path), "--no-progress"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "membrane.toml:2" in err and "Traceback" not in err


# -- LLM answers --------------------------------------------------------------------------------


def _request() -> ProposalRequest:
    candidate = Artifact.model_validate_json(DEMO[0])
    report = CritiqueReport(
        gate="value_gate", attempt=1, critiques=(), spine=Spine.of(candidate, set())
    )
    return ProposalRequest(run_id="r1", attempt=2, candidate=candidate, critique=report)


@st.composite
def mutated_answer(draw: st.DrawFn) -> str:
    data = json.loads(DEMO[0])
    answer: dict[str, Any] = {"tables": data["tables"], "prose": data["prose"]}
    table = draw(st.sampled_from(sorted(answer["tables"])))
    rows = answer["tables"][table]
    how = draw(st.integers(0, 5))
    if how == 0 and rows:
        rows[draw(st.integers(0, len(rows) - 1))] = draw(json_value)
    elif how == 1 and rows:
        row = rows[draw(st.integers(0, len(rows) - 1))]
        if isinstance(row, dict) and row:
            row[draw(st.sampled_from(sorted(row)))] = draw(json_value)
    elif how == 2:
        answer["tables"][table] = draw(json_value)
    elif how == 3:
        answer["prose"] = draw(json_value)
    elif how == 4:
        answer[draw(st.text(max_size=8))] = draw(json_value)
    else:
        answer["tables"][draw(st.text(max_size=8))] = draw(json_value)
    out = json.dumps(answer)
    return f"```json\n{out}\n```" if draw(st.booleans()) else out


answer_text = st.one_of(
    st.none(),
    st.text(max_size=200),
    json_value.map(json.dumps),
    mutated_answer(),
    st.sampled_from(
        [
            "```json\n{}\n```",
            "```\n[]\n```",
            "[" * 100_000,
            '{"tables": {}}',
            "\x00",
            "```json\n```",
            '{"tables": null, "prose": 1}',
        ]
    ),
)


@given(text=answer_text)
@FUZZ
def test_any_model_answer_is_an_artifact_or_a_typed_refusal(text: str | None) -> None:
    request = _request()
    try:
        art = parse_answer(text, request, load_pack(FACILITY), max_chars=50_000)
    except ProposalFailed as exc:
        assert exc.code.startswith("proposal.")
    else:  # the id and meta are the candidate's, whatever the answer says
        assert art.id == request.candidate.id and art.meta == request.candidate.meta


# -- correction notes (`membrane corrections import FILE`) --------------------------------------


note_line = st.one_of(
    st.binary(max_size=80).filter(lambda b: b"\n" not in b),
    json_value.map(json.dumps),
    st.fixed_dictionaries(
        {"text": st.text(max_size=40) | json_leaf},
        optional={
            "at": st.text(max_size=25) | json_leaf,
            "session": json_leaf,
            "reviewer": json_leaf,
            "artifact": json_leaf,
            "kind": json_leaf,
        },
    ).map(json.dumps),
).map(lambda x: x if isinstance(x, bytes) else x.encode("utf-8", "surrogatepass"))


@given(lines=st.lists(note_line, min_size=1, max_size=4))
@FUZZ
def test_any_correction_import_is_taken_or_a_line_error(tmp_path: Path, lines: list[bytes]) -> None:
    from harness.corrections.api import import_file

    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / "membrane.toml").write_text("[learning.corrections]\nenabled = true\n")
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    try:
        out = import_file(root, path)
    except CorpusError as err:
        assert err.file == str(path)
        assert err.line is None or 1 <= err.line <= len(lines)
    else:
        assert out["lines"] == sum(1 for raw in lines if raw.strip())


# -- pack.toml paths ------------------------------------------------------------------------------


path_text = st.one_of(
    st.text(max_size=40),
    st.lists(
        st.sampled_from(
            [
                "..",
                ".",
                "a",
                "spine.sql",
                "",
                "~",
                "/",
                "\\",
                "C:",
                "\x00",
                "ontology",
                "facility.owl",
                " ",
            ]
        ),
        max_size=6,
    ).map("/".join),
)


@given(
    key=st.sampled_from(["ontology", "spine", "assertions", "references", "prompts", "chapter"]),
    value=path_text,
)
@FUZZ
def test_any_path_in_pack_toml_loads_or_is_a_pack_error(
    tmp_path: Path, key: str, value: str
) -> None:
    import shutil

    pack = tmp_path / "pack"
    if not pack.exists():
        shutil.copytree(
            FACILITY, pack, ignore=shutil.ignore_patterns("corpus", "tests", "__pycache__")
        )
        (pack / "pack.toml.orig").write_bytes((pack / "pack.toml").read_bytes())
    lines = (pack / "pack.toml.orig").read_text(encoding="utf-8").splitlines()
    lines = [ln for ln in lines if ln.split("=")[0].strip() != key]  # [files] keys only
    lines.insert(lines.index("[files]") + 1, f"{key} = {json.dumps(value)}")
    (pack / "pack.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        loaded = load_pack(pack)
    except PackError as err:
        assert err.file is not None and err.message
    else:
        resolved = (loaded.root / value).resolve()
        assert resolved.is_relative_to(loaded.root)

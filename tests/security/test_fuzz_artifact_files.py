"""Fuzzing the artifact files membrane reads back (issue 17): a committed artifact under
`current/artifacts/` and a stored candidate under `.membrane/inputs/` (what `scratch/`
falls back to) replaced by any bytes. Every command that reads them answers with its exit
code and a message naming the file: never an internal error (exit 1) or a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from effectors.testing import InstantGate, ScriptedProposer
from harness.cli import main
from harness.models import Artifact, RunState
from harness.models import Effector as E
from tests.conftest import FACILITY
from tests.harness.helpers import make_engines, run_cohort

LINE = (FACILITY / "corpus" / "demo.jsonl").read_text(encoding="utf-8").splitlines()[0]


@dataclass
class Committed:
    ws: Path
    run_id: str
    artifact_id: str
    committed: Path  # current/artifacts/<hash>.json
    stored: Path  # .membrane/inputs/<hash>.json (attempt 1)


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Committed]:
    root = tmp_path_factory.mktemp("ws")
    gates = {e: InstantGate(e.value.lower()) for e in (E.VALUE_GATE, E.RI_GATE, E.PROSE_GATE)}
    ws, eng = make_engines(root, gates, ScriptedProposer("none", []))  # type: ignore[arg-type]
    (run,) = run_cohort(ws, eng, [Artifact.model_validate_json(LINE)])
    assert run.state == RunState.COMMITTED
    (ws.root / "membrane.toml").write_text(f"pack = {json.dumps(str(FACILITY))}\n")
    (row,) = eng.ledger.latest_commits()
    eng.ledger.close()
    stored = next(ws.inputs.glob("*.json"))
    yield Committed(
        ws.root,
        run.run_id,
        row.artifact_id,
        ws.current / "artifacts" / f"{row.content_hash}.json",
        stored,
    )


def _commands(c: Committed) -> list[list[str]]:
    w = ["--workspace", str(c.ws)]
    return [
        ["trace", "verify", *w],
        ["trace", "why", c.artifact_id, "equipment", "EQ-001", "standard", *w],
        ["trace", "show", c.run_id, "--attempt", "1", *w],
        ["trace", "show", c.run_id, *w],
        ["trace", "list", *w],
    ]


contents = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"",
            b"{}",
            b"[]",
            b"null",
            b'{"tables": 1}',
            b'{"tables": {}}',
            LINE.encode().replace(b"EQ-001", b"EQ-999"),
            LINE.encode()[:-20],
        ]
    ),
)


@given(which=st.sampled_from(["committed", "stored"]), data=contents | st.just(None))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_any_artifact_file_is_read_or_reported(
    committed: Committed, capsys: pytest.CaptureFixture[str], which: str, data: bytes | None
) -> None:
    path = committed.committed if which == "committed" else committed.stored
    original = path.read_bytes()
    try:
        if data is None:
            path.unlink()
        else:
            path.write_bytes(data)
        for argv in _commands(committed):
            code = main(argv)
            err = capsys.readouterr().err
            assert code != 1 and "internal error" not in err and "Traceback" not in err, (argv, err)
            if code != 0 and data != original:
                assert path.name in err or "trace" in argv[0], (argv, err)
    finally:
        path.write_bytes(original)

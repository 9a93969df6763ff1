"""The trace miner parses only the proposal and verdict records of a batch's traces (issue
16): it reads the same as parsing every record, whatever the other records hold (even the
bytes of a record's kind inside a string), and a damaged record still teaches nothing."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.learning.miner import _slim_proposal, _slim_verdict, summarise
from harness.pack import Pack
from harness.workspace import Workspace

_text = st.text(max_size=12) | st.sampled_from(
    ['"kind":"verdict"', '"kind":"proposal"', '{"kind":"verdict"}', "\\", "\n"]
)
_critique = st.fixed_dictionaries(
    {"code": st.sampled_from(["value.unknown", "ri.dangling", "prose.truncated"])},
    optional={
        "severity": st.sampled_from(["error", "warn"]),
        "location": st.fixed_dictionaries({"column": st.sampled_from(["a", "b"])}),
        "message": _text,
    },
)
_record = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.just("proposal"),
            "attempt": st.integers(1, 3),
            "prose_changed": st.booleans(),
            "lessons": st.lists(_text, max_size=2),
            "changes": st.lists(st.fixed_dictionaries({"cell": _text, "new": _text}), max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("verdict"),
            "attempt": st.integers(1, 3),
            "gate": st.sampled_from(["value_gate", "ri_gate", "prose_gate"]),
            "passed": st.booleans(),
            "critiques": st.lists(_critique, max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["decision", "usage", "outcome"]), "note": _text, "facts": _text}
    ),
)


def _expected(runs: list[list[dict[str, Any]]]) -> list[tuple[dict[int, Any], dict[int, Any]]]:
    out = []
    for records in runs:
        proposals: dict[int, Any] = {}
        verdicts: dict[int, list[Any]] = {}
        for ev in records:
            if ev["kind"] == "proposal":
                proposals[ev["attempt"]] = _slim_proposal(ev)
            elif ev["kind"] == "verdict":
                verdicts.setdefault(ev["attempt"], []).append(_slim_verdict(ev))
        out.append((proposals, verdicts))
    return out


@settings(max_examples=60, deadline=None)
@given(runs=st.lists(st.lists(_record, max_size=8), min_size=1, max_size=4))
def test_the_miner_reads_what_parsing_every_record_reads(
    tmp_path_factory: pytest.TempPathFactory,
    facility_pack: Pack,
    runs: list[list[dict[str, Any]]],
) -> None:
    ws = Workspace(tmp_path_factory.mktemp("ws"))
    ws.traces.mkdir(parents=True)
    rows = []
    for i, records in enumerate(runs):
        lines = [orjson.dumps(r, option=orjson.OPT_SORT_KEYS) for r in records]
        ws.trace_path(f"r{i}").write_bytes(b"".join(line + b"\n" for line in lines))
        rows.append((f"r{i}", "COMMITTED", None))
    got = summarise(ws, facility_pack, "offline", rows)
    assert [(r.proposals, dict(r.verdicts)) for r in got.runs] == _expected(runs)


def test_a_damaged_record_teaches_nothing_and_a_missing_trace_is_skipped(
    tmp_path_factory: pytest.TempPathFactory, facility_pack: Pack
) -> None:
    ws = Workspace(tmp_path_factory.mktemp("ws"))
    ws.traces.mkdir(parents=True)
    good = b'{"attempt":1,"critiques":[],"gate":"value_gate","kind":"verdict","passed":true}\n'
    ws.trace_path("ok").write_bytes(good)
    ws.trace_path("torn").write_bytes(good + b'{"attempt":2,"kind":"verdict","gate":"ri')
    ws.trace_path("nokey").write_bytes(b'{"kind":"verdict","gate":"ri_gate"}\n')
    rows = [(r, "COMMITTED", None) for r in ("ok", "torn", "nokey", "missing")]
    got = summarise(ws, facility_pack, "offline", rows)
    assert [r.run_id for r in got.runs] == ["ok"]

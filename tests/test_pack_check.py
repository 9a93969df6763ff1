"""`membrane pack check`: every problem of a broken pack in one run, with file:line and a fix;
the shipped facility pack checks with no error. Real engines (DuckDB, HermiT)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.errors import PackError
from harness.pack import load_pack
from harness.packcheck import check_pack
from harness.tomllines import key_lines, locate
from tests.conftest import FACILITY

pytestmark = pytest.mark.java

# (what is wrong, the old text, the new text) applied to a copy of packs/facility/pack.toml
TOML_MISTAKES = [
    ("a pack name with capitals and a space", 'name = "facility"', 'name = "Facility Pack"'),
    ("an unknown section", "[policy]", "[polcy]\nmax_attempts = 3\n\n[policy]"),
    ("a column kind that does not exist",
     'room_type = { kind = "object", property = "hasRoomType" }',
     'room_type = { kind = "objekt", property = "hasRoomType" }'),
    ("a key column that is not a column", 'key = ["task_id"]', 'key = ["task_code"]'),
    ("a data column without a property", 'floor = { kind = "data", property = "onFloor" }',
     'floor = { kind = "data" }'),
    ("a prose quantity naming an unbound column", 'column = "equipment.rated_power_kw"\nunits',
     'column = "equipment.rated_power"\nunits'),
    ("an entity column no table binds", '"equipment.standard"]', '"equipment.brand"]'),
    ("a regex RE2 refuses", "'(?i)^insert\\b'", "'(a)\\1'"),
    ("a row bound for a table the spine lacks", "maintenance = { min = 1, max = 200 }",
     "maintenance = { min = 1, max = 200 }\nwards = { max = 3 }"),
    ("an aggregate bound over a column the spine lacks", 'column = "rated_power_kw"\nmax',
     'column = "rated_power"\nmax'),
    ("a bound column the spine lacks", 'activity = { kind = "object", property = "hasActivity" }',
     'activity = { kind = "object", property = "hasActivity" }\ntechnician = { kind = "id" }'),
    ("a property the ontology lacks",
     'manufacturer = { kind = "object", property = "hasManufacturer" }',
     'manufacturer = { kind = "object", property = "hasMaker" }'),
    ("a row class the ontology lacks", 'row_class = "RoomRow"', 'row_class = "RoomRows"'),
    ("a chapter template that does not exist", 'prompts = "prompts"',
     'prompts = "prompts"\nchapter = "chapter.md.j2"'),
    ("an import mapped to no file", '[ontology.aliases]',
     '[ontology.imports]\n"http://example.org/upper.owl" = "ontology/upper.owl"\n\n'
     '[ontology.aliases]'),
]

EXPECTED = [  # (file, message fragment) of each mistake, in TOML_MISTAKES order, then files
    ("pack.toml", "`pack.name`"),
    ("pack.toml", "unknown section [polcy]"),
    ("pack.toml", "`tables.rooms.columns.room_type.kind`"),
    ("pack.toml", "['task_code'] are not among the table's columns"),
    ("pack.toml", "a column of kind 'data' needs a `property`"),
    ("pack.toml", "prose.quantities names 'equipment.rated_power'"),
    ("pack.toml", "prose.entity_columns names 'equipment.brand'"),
    ("pack.toml", "policy.placeholder_patterns"),
    ("pack.toml", "bounds.rows names table 'wards'"),
    ("pack.toml", "rated_power"),
    ("pack.toml", "pack.toml binds maintenance.technician"),
    ("pack.toml", "property <http://membrane.dev/packs/facility#hasMaker>"),
    ("pack.toml", "row_class <http://membrane.dev/packs/facility#RoomRows>"),
    ("pack.toml", "the chapter template named in pack.toml does not exist"),
    ("pack.toml", "[ontology.imports] maps 'http://example.org/upper.owl'"),
    ("assertions/bad_severity.sql", "severity 'fatal'"),
    ("assertions/does_not_parse.sql", "assertion does not parse"),
    ("assertions/room_power_budget.sql", "used by more than one assertion (duplicate_code.sql"),
]


def _broken_pack(tmp_path: Path) -> Path:
    pack = tmp_path / "broken"
    shutil.copytree(FACILITY, pack, ignore=shutil.ignore_patterns("corpus", "__pycache__"))
    toml = pack / "pack.toml"
    text = toml.read_text(encoding="utf-8")
    for what, old, new in TOML_MISTAKES:
        assert text.count(old) >= 1, what
        text = text.replace(old, new, 1)
    toml.write_text(text, encoding="utf-8")
    a = pack / "assertions"
    (a / "bad_severity.sql").write_text(
        "-- code: ri.bad_severity\n-- severity: fatal\n-- message: x\nSELECT 1 AS _artifact, "
        "1 AS _row\n", encoding="utf-8")
    (a / "does_not_parse.sql").write_text(
        "-- code: ri.does_not_parse\n-- severity: error\n-- message: x\nSELEC _artifact FROM "
        "rooms\n", encoding="utf-8")
    (a / "duplicate_code.sql").write_text(
        (a / "room_power_budget.sql").read_text(encoding="utf-8"), encoding="utf-8")
    return pack


def test_a_broken_pack_reports_every_mistake_in_one_run(tmp_path: Path) -> None:
    pack = _broken_pack(tmp_path)
    with pytest.raises(PackError):  # a batch refuses it (at the first problem)
        load_pack(pack)
    report = check_pack(pack)
    errors = report.errors
    for file, fragment in EXPECTED:
        hits = [e for e in errors if e.file == file and fragment in e.message]
        assert hits, f"not reported: {fragment!r} in {file}\n" + "\n".join(
            e.render() for e in errors)
        assert all(e.line is not None and e.line >= 1 for e in hits if e.file == "pack.toml")
        assert all(e.fix for e in hits), fragment
    assert len(EXPECTED) >= 12 and len(errors) >= len(EXPECTED)
    # the line points at the mistake itself
    lines = (pack / "pack.toml").read_text(encoding="utf-8").splitlines()
    for fragment, needle in (("'equipment.brand'", "equipment.brand"),
                             ("RoomRows", "RoomRows"), ("hasMaker", "hasMaker"),
                             ("technician", "technician"), ("polcy", "[polcy]")):
        [e] = [e for e in errors if fragment in e.message]
        assert e.line is not None and needle in lines[e.line - 1], e.render()


def test_the_cli_exits_2_with_every_problem_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = _broken_pack(tmp_path)
    assert main(["pack", "check", str(pack), "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["errors"] >= len(EXPECTED)
    assert {"severity", "code", "file", "line", "message", "fix"} <= set(data["problems"][0])
    assert main(["pack", "check", str(pack)]) == 2
    out = capsys.readouterr().out
    assert re.search(r"^pack\.toml:\d+: error: unknown section \[polcy\]$", out, re.M)
    assert "  fix: " in out


def test_the_facility_pack_has_no_error(capsys: pytest.CaptureFixture[str]) -> None:
    report = check_pack(FACILITY)
    assert report.errors == [], [e.render() for e in report.errors]
    # its open pools are real: room type, department and maintenance activity constrain nothing
    open_pools = {w.message.split(":")[0] for w in report.warnings if w.code == "open-pool"}
    assert open_pools == {"rooms.room_type", "rooms.department", "maintenance.activity"}
    assert main(["pack", "check", str(FACILITY)]) == 0
    assert "0 errors" in capsys.readouterr().out


def test_quality_warnings(tmp_path: Path) -> None:
    pack = tmp_path / "warned"
    shutil.copytree(FACILITY, pack, ignore=shutil.ignore_patterns("corpus", "__pycache__"))
    for ref in (pack / "references").glob("*.txt"):
        ref.unlink()
    spine = pack / "spine.sql"
    spine.write_text(spine.read_text(encoding="utf-8").replace(
        "task_id          VARCHAR PRIMARY KEY", "task_id          VARCHAR"), encoding="utf-8")
    toml = pack / "pack.toml"
    text = toml.read_text(encoding="utf-8")
    start = text.index("[[prose.quantities]]            # \"every 6 months\"")
    end = text.index("[[prose.relations]]")
    text = text[:start] + text[end:]
    text = text.replace('kind = "range"\ncolumn = "maintenance.interval_months"\ncues = ["intervals"]',
                        'kind = "count"\ntable = "maintenance"\nnouns = ["tasks"]\ncues = ["in all"]')
    toml.write_text(text, encoding="utf-8")
    (pack / "assertions" / "never.sql").write_text(
        "-- code: ri.never\n-- severity: error\n-- message: never {room_id}\n-- table: rooms\n"
        "SELECT _artifact, _row, room_id FROM rooms WHERE floor > 5 AND floor < 2\n",
        encoding="utf-8")
    ont = pack / "ontology" / "facility.owl"
    owl = ont.read_text(encoding="utf-8")
    # strip the labels of one pool's individuals (the maintenance activities)
    m = re.search(r'<owl:NamedIndividual rdf:about="[^"]*#(\w+)">\s*<rdf:type '
                  r'rdf:resource="[^"]*#MaintenanceActivity"/>.*?</owl:NamedIndividual>',
                  owl, re.S)
    assert m, "the facility ontology's layout changed: adjust this test"
    bare = re.sub(r"\s*<(rdfs:label|skos:altLabel|skos:prefLabel)[^<]*</\1>", "", m.group(0))
    owl = owl.replace(m.group(0), bare)
    ont.write_text(owl, encoding="utf-8")
    report = check_pack(pack)
    assert report.errors == [], [e.render() for e in report.errors]
    codes = {w.code for w in report.warnings}
    assert {"no-references", "no-key", "no-units", "never-fires",
            "open-pool", "unlabelled"} <= codes, codes
    [dead] = [w for w in report.warnings if w.code == "never-fires"]
    assert dead.file == "assertions/never.sql" and "empty result" in dead.message
    [units] = [w for w in report.warnings if w.code == "no-units"]
    assert "maintenance.interval_months" in units.message
    [unl] = [w for w in report.warnings if w.code == "unlabelled"]
    assert m.group(1) in unl.message and unl.file == "ontology/facility.owl" and unl.line


def test_a_toml_syntax_error_is_one_error_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "pack.toml").write_text('[pack]\nname = "x"\nversion = \n', encoding="utf-8")
    [e] = check_pack(tmp_path).problems
    assert e.code == "toml-syntax" and e.line == 3


def test_no_pack_here(tmp_path: Path) -> None:
    [e] = check_pack(tmp_path).problems
    assert e.code == "no-pack" and "pack new" in e.fix


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('[]{}"\'=.#\n ab1')), max_size=200),
       st.lists(st.one_of(st.sampled_from(["a", "b", "tables"]), st.integers(0, 3)),
                max_size=5))
def test_key_lines_never_fails_and_points_into_the_text(text: str, loc: list[str | int]) -> None:
    index = key_lines(text)
    n = len(text.splitlines())
    assert all(1 <= line <= n for line in index.values())
    line = locate(index, loc)
    assert line is None or 1 <= line <= n


_VALUES = ['""', "0", "-1", '"x"', "[]", "{}", "true", '"RoomRows"', '"hasMaker"', '["nope"]',
           '{ kind = "id" }', '"rooms.floor"', "1e400"]


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["drop", "dup", "value"]),
                          st.sampled_from(_VALUES)), min_size=1, max_size=3))
def test_a_mutated_pack_toml_never_breaks_check_and_agrees_with_load_pack(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[int, str, str]]
) -> None:
    """Random edits of the facility pack.toml: check never raises, and it reports an error
    exactly when load_pack (the batch's first step) refuses the pack."""
    pack = tmp_path_factory.mktemp("mutated")
    shutil.copytree(FACILITY, pack, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("corpus", "__pycache__"))
    lines = (FACILITY / "pack.toml").read_text(encoding="utf-8").splitlines()
    for at, op, value in edits:
        i = at % len(lines)
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif "=" in lines[i] and not lines[i].lstrip().startswith(("#", "[")):
            lines[i] = lines[i].split("=", 1)[0] + "= " + value
    (pack / "pack.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = check_pack(pack)
    try:
        load_pack(pack)
    except PackError as exc:
        assert report.errors, f"load_pack refuses ({exc.message}) but check reports no error"
    else:
        toml = [e for e in report.errors if e.code.startswith("toml")]
        assert not toml, [e.render() for e in toml]  # the same models, the same verdict
        setup = [e for e in report.errors if e.code == "batch-setup"]
        assert not setup, [e.render() for e in setup]  # the piece-wise checks saw it first


@pytest.mark.java
def test_the_same_problem_in_two_files_is_reported_for_each(tmp_path: Path) -> None:
    pack = tmp_path / "twice"
    shutil.copytree(FACILITY, pack, ignore=shutil.ignore_patterns("corpus", "__pycache__"))
    for name in ("a.sql", "b.sql"):
        (pack / "assertions" / name).write_bytes(b"-- code: ri.x\n\xff\xfe\n")
    files = {e.file for e in check_pack(pack).errors if "not UTF-8" in e.message}
    assert files == {"assertions/a.sql", "assertions/b.sql"}

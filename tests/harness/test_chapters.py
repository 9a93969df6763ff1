"""Chapters (`current/chapters/<id>.md`): rendered at commit, deterministic, hostile cells
rendered as one Markdown cell each, the sandboxed pack template, recovery and verify."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from effectors.commit import Committer
from harness.chapters import (
    ChapterRenderer,
    chapter_path,
    md_cell,
    sync_chapters,
    verify_chapters,
)
from harness.errors import PackError
from harness.ledger import CommitRow, Ledger
from harness.models import Artifact
from harness.pack import Pack, load_pack
from harness.store import recover, write_objects
from harness.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "packs" / "facility"

_UNESCAPE = re.compile(r"\\([\\|`*_\[\]])|&lt;|&gt;|&amp;|<br>")


def _unescape(cell: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(1)
        return {"&lt;": "<", "&gt;": ">", "&amp;": "&", "<br>": "\n"}[m.group(0)]

    return _UNESCAPE.sub(one, cell)


def _split_row(line: str) -> list[str]:
    """A Markdown table row split on its unescaped pipes (a backslash escapes one char)."""
    assert line.startswith("| ") and line.endswith(" |"), line
    cells, cur, i, body = [], "", 0, line[2:-2]
    while i < len(body):
        if body[i] == "\\":
            cur += body[i : i + 2]
            i += 2
        elif body.startswith(" | ", i):
            cells.append(cur)
            cur, i = "", i + 3
        else:
            cur += body[i]
            i += 1
    return [*cells, cur]


def _table_lines(chapter: str, table: str) -> list[str]:
    lines = chapter.splitlines()
    start = lines.index(f"## {table}") + 2
    out = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        out.append(line)
    return out


printable = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=30
)
hostile = st.one_of(
    printable,
    st.sampled_from(["a|b", "`x`", "**b**", "_i_", "<script>", "x\ny", "x\r\ny", "\\|", "|", ""]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(hostile, hostile), min_size=1, max_size=5))
def test_hostile_cells_stay_in_their_cell_and_read_back(rows: list[tuple[str, str]]) -> None:
    ws = Workspace(Path(tempfile.mkdtemp()))
    try:
        ws.ensure()
        ledger = Ledger(ws.ledger_path)
        art = Artifact(id="x-1", tables={"t": [{"a": a, "b": b} for a, b in rows]}, prose="P.")
        ledger.start_run("x-1.r1", "x-1", "b", "h", "t")
        Committer(ws, ledger, ChapterRenderer(None)).commit(
            "x-1.r1", art, {"attempts": 1}, 0, "h" * 64, "t"
        )
        text = chapter_path(ws, "x-1").read_text()
        lines = _table_lines(text, "t")
        assert len(lines) == 2 + len(rows)  # header, rule, one line per row
        for line, (a, b) in zip(lines[2:], rows, strict=True):
            cells = _split_row(line)
            assert len(cells) == 2
            assert [_unescape(c) for c in cells] == [
                a.replace("\r\n", "\n"),
                b.replace("\r\n", "\n"),
            ]
        ledger.close()
    finally:
        shutil.rmtree(ws.root)


def test_md_cell_examples() -> None:
    assert md_cell("a|b") == "a\\|b"
    assert md_cell("x\ny\r\nz") == "x<br>y<br>z"
    assert md_cell("`rm -rf`") == "\\`rm -rf\\`"
    assert md_cell("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
    assert md_cell(None) == ""
    assert md_cell(1.5) == "1.5"
    assert md_cell("Ωmega ✓ 医院") == "Ωmega ✓ 医院"
    assert md_cell("bell\x07") == "bell"


@pytest.mark.parametrize("bad", ["../x", "a/b", "x\n", "", ".hidden", "a" * 200])
def test_chapter_path_refuses_unsafe_ids(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        chapter_path(Workspace(tmp_path), bad)


def _commit(
    ws: Workspace, ledger: Ledger, renderer: ChapterRenderer, art: Artifact, n: int
) -> None:
    run_id = f"{art.id}.r{n}"
    ledger.start_run(run_id, art.id, "b", f"h{n}", "t")
    Committer(ws, ledger, renderer).commit(run_id, art, {"attempts": 2}, 3, "f" * 64, f"t{n}")


def test_rendered_at_commit_equals_rendered_from_the_stored_artifact(
    tmp_path: Path, facility_pack: Pack
) -> None:
    ws = Workspace(tmp_path)
    ws.ensure()
    ledger = Ledger(ws.ledger_path)
    art = Artifact(
        id="fac-9",
        tables={
            "rooms": [
                {"room_id": "R-1", "room_type": "plant room", "floor": 2, "department": None}
            ],
            "equipment": [],
        },
        prose="Room R-1 is a plant room.",
        meta={"title": "Plant | room"},
    )
    renderer = ChapterRenderer(facility_pack)
    _commit(ws, ledger, renderer, art, 1)
    at_commit = chapter_path(ws, "fac-9").read_bytes()
    chapter_path(ws, "fac-9").unlink()
    assert sync_chapters(ws, ledger.latest_commits(), renderer) == (1, 0)
    assert chapter_path(ws, "fac-9").read_bytes() == at_commit
    text = at_commit.decode()
    assert text.splitlines()[1] == "# Plant \\| room"
    assert "Room R-1 is a plant room." in text
    assert "| room\\_id | room\\_type | department | floor |" in text
    assert "| R-1 | plant room |  | 2 |" in text
    assert "## equipment\n\n_(no rows)_" in text
    assert "run `fac-9.r1`, attempt 2, pack facility 1.0.0" in text
    assert "committed at t1." in text
    ledger.close()


def test_recommit_replaces_and_recovery_repairs(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.ensure()
    ledger = Ledger(ws.ledger_path)
    renderer = ChapterRenderer(None)
    _commit(ws, ledger, renderer, Artifact(id="a", tables={"t": [{"v": 1}]}), 1)
    _commit(ws, ledger, renderer, Artifact(id="a", tables={"t": [{"v": 2}]}), 2)
    _commit(ws, ledger, renderer, Artifact(id="b", tables={"t": [{"v": 3}]}), 3)
    rows = ledger.latest_commits()
    assert verify_chapters(ws, rows) == []
    assert "version 2" in chapter_path(ws, "a").read_text()
    # damage: an edit, a missing chapter, a planted one, a stale one, a torn temp file
    path_a = chapter_path(ws, "a")
    path_a.write_text(path_a.read_text().replace("| 2 |", "| 9 |"))
    chapter_path(ws, "b").unlink()
    (ws.current / "chapters" / "planted.md").write_text("hello")
    (ws.current / "chapters" / ".a.md.tmp-1").write_text("half")
    codes = {(p.artifact_id, p.code) for p in verify_chapters(ws, rows)}
    assert codes == {
        ("a", "chapter.edited"),
        ("b", "chapter.missing"),
        ("planted.md", "chapter.orphan"),
        (".a.md.tmp-1", "chapter.orphan"),
    }
    rep = recover(ws, ledger)
    assert (rep.chapters_rendered, rep.chapters_removed) == (2, 2)
    assert verify_chapters(ws, ledger.latest_commits()) == []
    assert sorted(p.name for p in (ws.current / "chapters").iterdir()) == ["a.md", "b.md"]
    ledger.close()


ops = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 3),
        st.sampled_from(["full", "objects_only", "ledger_no_chapter", "temp_chapter"]),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=30, deadline=None)
@given(ops)
def test_a_crash_anywhere_in_commit_leaves_chapters_matching_the_ledger(
    steps: list[tuple[str, int, str]],
) -> None:
    with tempfile.TemporaryDirectory() as d:
        ws = Workspace(Path(d))
        ws.ensure()
        ledger = Ledger(ws.ledger_path)
        renderer = ChapterRenderer(None)
        for n, (aid, value, crash) in enumerate(steps):
            art = Artifact(id=aid, tables={"t": [{"v": value}]})
            run_id = f"{aid}.r{n}"
            ledger.start_run(run_id, aid, "b", f"h{n}", "t")
            if crash == "objects_only":  # killed before the ledger transaction
                write_objects(ws.current, art, {"attempts": 1})
            elif crash == "ledger_no_chapter":  # killed after the commit point
                Committer(ws, ledger).commit(run_id, art, {"attempts": 1}, 0, "h" * 64, "t")
            elif crash == "temp_chapter":  # killed while writing the chapter
                Committer(ws, ledger).commit(run_id, art, {"attempts": 1}, 0, "h" * 64, "t")
                (ws.current / "chapters").mkdir(exist_ok=True)
                (ws.current / "chapters" / f".{aid}.md.tmp-{n}").write_text("# half")
            else:
                Committer(ws, ledger, renderer).commit(
                    run_id, art, {"attempts": 1}, 0, "h" * 64, "t"
                )
        recover(ws, ledger)
        rows = ledger.latest_commits()
        assert verify_chapters(ws, rows) == []
        chapters = sorted(p.stem for p in (ws.current / "chapters").iterdir()) if rows else []
        assert chapters == sorted(r.artifact_id for r in rows)
        for r in rows:
            assert (
                f"version {r.version} ({r.content_hash[:12]})"
                in chapter_path(ws, r.artifact_id).read_text()
            )
        ledger.close()


def _pack_with_template(tmp_path: Path, template: str, name: str = "chapter.md.j2") -> Path:
    dest = tmp_path / "pack"
    shutil.copytree(PACK, dest, ignore=shutil.ignore_patterns("corpus"))
    toml = dest / "pack.toml"
    toml.write_text(
        toml.read_text().replace('prompts = "prompts"', f'prompts = "prompts"\nchapter = "{name}"')
    )
    (dest / "chapter.md.j2").write_text(template)
    return dest


def test_a_pack_chooses_its_own_layout(tmp_path: Path) -> None:
    pack = load_pack(_pack_with_template(tmp_path, "{{ id }}: {{ tables | length }} tables\n"))
    renderer = ChapterRenderer(pack)
    ws = Workspace(tmp_path / "ws")
    ws.ensure()
    ledger = Ledger(ws.ledger_path)
    _commit(ws, ledger, renderer, Artifact(id="fac-1", tables={"rooms": []}), 1)
    assert chapter_path(ws, "fac-1").read_text().splitlines()[1:] == ["fac-1: 1 tables"]
    ledger.close()


@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ meta.__class__.__init__.__globals__ }}",
        "{{ tables.append(1) }}",
        "{{ no_such_name }}",
    ],
)
def test_the_template_is_sandboxed(tmp_path: Path, template: str) -> None:
    """A template that breaks out, mutates or names nothing fails when the pack is opened,
    before anything runs (the renderer tries it on a sample artifact)."""
    pack = load_pack(_pack_with_template(tmp_path, template))
    with pytest.raises(PackError, match="chapter template"):
        ChapterRenderer(pack)


def test_a_template_failing_on_one_artifact_never_undoes_its_commit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pack = load_pack(_pack_with_template(tmp_path, "{{ meta.owner.name }}"))
    with pytest.raises(PackError):  # the sample artifact has no meta.owner
        ChapterRenderer(pack)
    pack = load_pack(
        _pack_with_template(tmp_path / "2", "{% if meta %}{{ meta.owner.name }}{% endif %}")
    )
    renderer = ChapterRenderer(pack)
    ws = Workspace(tmp_path / "ws")
    ws.ensure()
    ledger = Ledger(ws.ledger_path)
    _commit(ws, ledger, renderer, Artifact(id="fac-1", tables={"rooms": []}, meta={"x": 1}), 1)
    assert ledger.latest_commit("fac-1") is not None  # committed: the machine register
    assert "not written" in caplog.text
    assert [p.code for p in verify_chapters(ws, ledger.latest_commits())] == ["chapter.missing"]
    ledger.close()


def test_template_errors_name_the_file(tmp_path: Path) -> None:
    pack = load_pack(_pack_with_template(tmp_path, "{% for %}"))
    with pytest.raises(PackError, match="does not compile"):
        ChapterRenderer(pack)
    with pytest.raises(PackError, match="inside the pack"):
        load_pack(_pack_with_template(tmp_path / "2", "x", name="../../etc/passwd"))
    with pytest.raises(PackError, match="does not exist"):
        load_pack(_pack_with_template(tmp_path / "3", "x", name="missing.j2"))


_name = st.from_regex(r"[a-z][a-z_]{0,6}", fullmatch=True)
_meta = st.recursive(
    st.none() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_name, inner, max_size=4),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None)
@given(
    fields=st.dictionaries(_name.filter(lambda n: n != "prose"), st.text(min_size=1, max_size=9),
                           max_size=4),
    meta=st.dictionaries(_name, _meta, max_size=5),
)
def test_the_same_chapter_from_the_proposer_and_from_the_stored_bytes(
    tmp_path_factory: pytest.TempPathFactory, fields: dict[str, str], meta: dict[str, object]
) -> None:
    """One process renders a chapter from the proposer's artifact, a `--workers` batch and
    recovery from its canonical (sorted-key) bytes: prose fields and meta in any order give
    the same bytes, with the default template and with one that prints every field and
    meta key in the order it is given them."""
    from harness.store import artifact_bytes

    art = Artifact(id="fac-7", tables={"rooms": []}, prose="Main.",
                   prose_fields=dict(reversed(fields.items())), meta=dict(reversed(meta.items())))
    stored = Artifact.model_validate_json(artifact_bytes(art))
    row = CommitRow("fac-7", 1, "0" * 64, "0" * 64, "fac-7.r1", 3, "f" * 64, "t1")
    template = ("{% for f, t in prose %}{{ f }}={{ t }};{% endfor %}"
                "{% for k, v in meta.items() %}{{ k }}={{ v }};{% endfor %}\n")
    for pack in (None, load_pack(_pack_with_template(tmp_path_factory.mktemp("p"), template))):
        renderer = ChapterRenderer(pack)
        assert renderer.render(art, row, 1) == renderer.render(stored, row, 1)
    first = ChapterRenderer(None).render(art, row, 1).decode()
    assert "Main." in first

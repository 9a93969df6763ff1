"""Chapters: the human register of the committed corpus (`current/chapters/<id>.md`).

A chapter is a derived view, like `corpus.jsonl`: the ledger is the commit point, the
content-addressed artifact is the machine register, and the chapter is rendered from the
two (title, prose, every table as a Markdown table, a provenance footer). COMMIT writes
it right after the ledger transaction; `sync_chapters` (run by `rebuild_view`, so by every
recovery, review approve and revert) renders any chapter that is missing or stale and
removes any the ledger does not name, so a kill at any instant leaves no orphan and no
missing chapter once the workspace has recovered.

Line 1 of every chapter is a header naming what it was rendered from and the sha256 of the
rest of the file, so `verify_chapters` (and `membrane trace verify`) finds a chapter that
is missing, stale, edited or planted without the pack.

The template is Jinja2 in a sandbox (`ImmutableSandboxedEnvironment`, undefined names are
errors): the default ships here; a pack may name its own (`[files] chapter`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from harness.errors import PackError
from harness.ledger import CommitRow, Ledger
from harness.models import ARTIFACT_ID_PATTERN, PROSE_FIELD, Artifact
from harness.pack import Pack, load_pack
from harness.workspace import Workspace

_log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_TEMPLATE",
    "ChapterProblem",
    "ChapterRenderer",
    "chapter_path",
    "check_chapter",
    "md_cell",
    "pack_hash",
    "renderer_for",
    "sync_chapters",
    "verify_chapters",
    "write_chapter",
]

DEFAULT_TEMPLATE = """\
# {{ title | md_text }}
{% for field, text in prose %}
{% if prose | length > 1 %}## {{ field | md_text }}

{% endif %}{{ text }}
{% endfor %}{% for t in tables %}
## {{ t.name | md_text }}

{% if t.rows %}| {{ t.md_columns | join(" | ") }} |
|{% for c in t.columns %} --- |{% endfor %}
{% for row in t.md_rows %}| {{ row | join(" | ") }} |
{% endfor %}{% else %}_(no rows)_
{% endif %}{% endfor %}
---

_Provenance:_ artifact `{{ id }}` version {{ version }} ({{ content_hash[:12] }}),
run `{{ run_id }}`, attempt {{ attempts }}, pack {{ pack.name | md_text }} {{ pack.version | md_text }}
({{ pack.hash[:12] }}), trace head {{ trace_hash[:12] }}, committed at {{ committed_at }}.
"""

_HEADER = re.compile(
    r"^<!-- membrane:chapter id=(?P<id>\S+) version=(?P<version>\d+)"
    r" artifact=(?P<artifact>[0-9a-f]{64}) body=(?P<body>[0-9a-f]{64}) -->$"
)
_ID = re.compile(ARTIFACT_ID_PATTERN)
_NEWLINES = re.compile(r"\r\n|[\r\n\u2028\u2029\x0b\x0c\x85]")
_CELL_ESCAPE = {"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[",
                "]": "\\]", "<": "&lt;", ">": "&gt;", "&": "&amp;"}  # fmt: skip
_CELL_RE = re.compile("[" + re.escape("".join(_CELL_ESCAPE)) + "]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PLAIN = re.compile(r"[^\\|`*_\[\]<>&\x00-\x1f\x7f\x85\u2028\u2029]*")


def _sorted_keys(value: Any) -> Any:
    """A JSON-like value with every object's keys in sorted order (as canonical bytes
    hold them)."""
    if isinstance(value, Mapping):
        return {k: _sorted_keys(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def md_cell(value: object) -> str:
    """A value as one Markdown table cell: pipes, backticks, emphasis and HTML escaped,
    line breaks as `<br>`, control characters dropped; `None` is an empty cell."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    if _PLAIN.fullmatch(text):  # the common case: nothing to escape
        return text
    text = _CELL_RE.sub(lambda m: _CELL_ESCAPE[m.group(0)], text)
    text = _NEWLINES.sub("<br>", text)
    return _CONTROL.sub("", text.replace("\t", " "))


def md_text(value: object) -> str:
    """A short value (title, table name) on one line, without Markdown or HTML effect."""
    return md_cell(value).replace("<br>", " ")


def chapter_path(ws: Workspace, artifact_id: str) -> Path:
    """`current/chapters/<id>.md`, only for ids of the strict pattern (never outside)."""
    if not _ID.fullmatch(artifact_id):
        raise ValueError(f"artifact id {artifact_id!r} is not a safe file name")
    folder = ws.current / "chapters"
    path = folder / f"{artifact_id}.md"
    if path.parent != folder:  # pragma: no cover - the pattern already forbids it
        raise ValueError(f"artifact id {artifact_id!r} is not a safe file name")
    return path


def pack_hash(pack: Pack) -> str:
    """sha256 over the files that make the pack (pack.toml, ontology, spine, assertions,
    references, prompts, chapter template), by relative path: its identity in provenance."""
    h = hashlib.sha256()
    paths = [pack.root / "pack.toml", pack.ontology_path, pack.spine_path]
    for d in (pack.assertions_dir, pack.references_dir, pack.prompts_dir):
        if d.is_dir():
            paths.extend(sorted(p for p in d.rglob("*") if p.is_file()))
    if pack.config.files.chapter:
        paths.append(pack.root / pack.config.files.chapter)
    for p in paths:
        if p.is_file():
            h.update(str(p.relative_to(pack.root)).encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


@dataclass(frozen=True)
class PackInfo:
    name: str
    version: str
    hash: str


class ChapterRenderer:
    """Renders chapters with one pack's template (the default unless the pack names one)."""

    def __init__(self, pack: Pack | None, template: str | None = None) -> None:
        self.pack = pack
        self.info = (
            PackInfo(pack.name, pack.config.pack.version, pack_hash(pack))
            if pack
            else PackInfo("unknown", "", "0" * 64)
        )
        source = template if template is not None else _pack_template(pack)
        env = ImmutableSandboxedEnvironment(
            undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True
        )
        env.filters["md_cell"] = md_cell
        env.filters["md_text"] = md_text
        try:
            self._template = env.from_string(source)
        except TemplateError as exc:
            raise PackError(
                f"the chapter template does not compile: {exc}",
                file=_template_file(pack),
                hint="fix the Jinja2 syntax, or remove [files] chapter to use the default",
            ) from exc
        if pack is not None:  # a template that fails says so before anything runs
            sample = Artifact(
                id="check",
                tables={t: [dict.fromkeys(b.columns)] for t, b in pack.tables.items()},
                prose="Check.",
            )
            self.render(sample, CommitRow("check", 1, "0" * 64, "0" * 64, "r", 0, "0" * 64, "t"), 1)

    def context(self, artifact: Artifact, row: CommitRow, attempts: object) -> dict[str, Any]:
        """What the template sees. Tables in the pack's order (others by name), columns in
        the binding's order (others by name), prose fields `prose` first then by name (as
        PROSE_GATE judges them), `meta`'s keys sorted: the same whether the artifact comes
        from the proposer (one process) or from its canonical, sorted-key bytes (a
        `--workers` batch, recovery)."""
        bound = self.pack.tables if self.pack else {}
        names = [t for t in bound if t in artifact.tables]
        names += sorted(t for t in artifact.tables if t not in bound)
        tables = []
        for name in names:
            rows = artifact.tables[name]
            cols = list(bound[name].columns) if name in bound else []
            cols += sorted({k for r in rows for k in r} - set(cols))
            values = [[r.get(c) for c in cols] for r in rows]
            tables.append(
                {
                    "name": name,
                    "columns": cols,
                    "rows": values,
                    "md_columns": [md_cell(c) for c in cols],
                    "md_rows": [[md_cell(v) for v in r] for r in values],
                }
            )
        title = artifact.meta.get("title") if isinstance(artifact.meta, Mapping) else None
        texts = artifact.texts()
        order = [PROSE_FIELD, *sorted(k for k in texts if k != PROSE_FIELD)]
        return {
            "id": artifact.id,
            "title": title if isinstance(title, str) and title.strip() else artifact.id,
            "prose": [(name, texts[name]) for name in order if texts[name]],
            "tables": tables,
            "meta": _sorted_keys(artifact.meta),
            "version": row.version,
            "content_hash": row.content_hash,
            "run_id": row.run_id,
            "attempts": attempts,
            "trace_hash": row.trace_hash,
            "committed_at": row.committed_at,
            "pack": {"name": self.info.name, "version": self.info.version, "hash": self.info.hash},
        }

    def render(self, artifact: Artifact, row: CommitRow, attempts: object) -> bytes:
        """The chapter's bytes: the header line, then the rendered template."""
        try:
            body = self._template.render(self.context(artifact, row, attempts)).encode()
        except TemplateError as exc:
            raise PackError(
                f"the chapter template failed on {artifact.id}: {exc}",
                file=_template_file(self.pack),
                hint="a sandboxed template sees: id, title, prose, tables, meta, version, "
                "content_hash, run_id, attempts, trace_hash, committed_at, pack",
            ) from exc
        return _header(row, body) + body


def _header(row: CommitRow, body: bytes) -> bytes:
    digest = hashlib.sha256(body).hexdigest()
    return (
        f"<!-- membrane:chapter id={row.artifact_id} version={row.version}"
        f" artifact={row.content_hash} body={digest} -->\n"
    ).encode()


def _template_file(pack: Pack | None) -> Path | None:
    return pack.root / pack.config.files.chapter if pack and pack.config.files.chapter else None


def _pack_template(pack: Pack | None) -> str:
    path = _template_file(pack)
    if path is None:
        return DEFAULT_TEMPLATE
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(
            f"the chapter template named in pack.toml cannot be read: {exc}",
            file=path,
            hint="fix [files] chapter in pack.toml",
        ) from exc


def renderer_for(ledger: Ledger) -> ChapterRenderer:
    """The renderer of the pack the workspace last ran with (the default without one)."""
    path = ledger.last_pack()
    pack = None
    if path:
        try:
            pack = load_pack(path)
        except PackError:
            pack = None
    return ChapterRenderer(pack)


def _write(path: Path, data: bytes) -> None:
    """temp file + os.replace: a kill leaves the old chapter or the new one, never half.
    Not fsynced (a derived view): `sync_chapters` re-renders one a power cut tore."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
    except FileNotFoundError:  # the folder only when missing: a batch writes thousands
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
    os.replace(tmp, path)


def write_chapter(
    ws: Workspace, renderer: ChapterRenderer, artifact: Artifact, row: CommitRow, attempts: object
) -> None:
    _write(chapter_path(ws, row.artifact_id), renderer.render(artifact, row, attempts))


def _attempts(ws: Workspace, row: CommitRow) -> object:
    path = ws.current / "metrics" / f"{row.metrics_hash}.json"
    try:
        return orjson.loads(path.read_bytes()).get("attempts", "?")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return "?"


def check_chapter(path: Path, row: CommitRow) -> str | None:
    """None if the chapter is the one for `row`; else what is wrong with it (a code)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return "chapter.missing"
    head, _, body = data.partition(b"\n")
    m = _HEADER.match(head.decode("utf-8", "replace"))
    if m is None:
        return "chapter.edited"
    if (m["id"], int(m["version"]), m["artifact"]) != (
        row.artifact_id,
        row.version,
        row.content_hash,
    ):
        return "chapter.stale"
    if hashlib.sha256(body).hexdigest() != m["body"]:
        return "chapter.edited"
    return None


def sync_chapters(
    ws: Workspace,
    rows: Sequence[CommitRow],
    renderer: ChapterRenderer | None = None,
    ledger: Ledger | None = None,
) -> tuple[int, int]:
    """Make `current/chapters/` hold exactly one good chapter per latest commit: render the
    missing, stale or damaged ones, remove the rest. Returns (rendered, removed)."""
    folder = ws.current / "chapters"
    rendered = removed = 0
    for row in rows:
        path = chapter_path(ws, row.artifact_id)
        if check_chapter(path, row) is None:
            continue
        if renderer is None:
            renderer = renderer_for(ledger) if ledger is not None else ChapterRenderer(None)
        data = (ws.current / "artifacts" / f"{row.content_hash}.json").read_bytes()
        artifact = Artifact.model_validate_json(data)
        try:
            _write(path, renderer.render(artifact, row, _attempts(ws, row)))
        except PackError as exc:  # the machine register stands; verify reports the chapter
            _log.warning("no chapter for %s: %s", row.artifact_id, exc)
            continue
        rendered += 1
    if folder.is_dir():
        keep = {f"{r.artifact_id}.md" for r in rows}
        for p in folder.iterdir():
            if p.name not in keep:
                p.unlink()
                removed += 1
    return rendered, removed


@dataclass(frozen=True)
class ChapterProblem:
    artifact_id: str
    run_id: str
    code: str  # chapter.missing | chapter.stale | chapter.edited | chapter.orphan
    problem: str


_WHAT = {
    "chapter.missing": "the committed artifact has no chapter",
    "chapter.stale": "the chapter was rendered from another version",
    "chapter.edited": "the chapter does not hash to what its header says (edited or torn)",
    "chapter.orphan": "a chapter no committed artifact names",
}


def verify_chapters(ws: Workspace, rows: Sequence[CommitRow]) -> list[ChapterProblem]:
    """Every latest commit has its chapter, unedited; no other chapter exists."""
    problems = []
    for row in rows:
        code = check_chapter(chapter_path(ws, row.artifact_id), row)
        if code:
            problems.append(ChapterProblem(row.artifact_id, row.run_id, code, _WHAT[code]))
    folder = ws.current / "chapters"
    if folder.is_dir():
        keep = {f"{r.artifact_id}.md" for r in rows}
        for p in sorted(folder.iterdir()):
            if p.name not in keep:
                problems.append(
                    ChapterProblem(p.name, "", "chapter.orphan", _WHAT["chapter.orphan"])
                )
    return problems

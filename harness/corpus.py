"""Reading corpus files (JSONL, one artifact a line) and artifact files: untrusted input.

Each problem is a `CorpusError` naming the file, the line and what to do. `read_corpus`
collects the good artifacts and the errors, so a batch can keep going past a bad line
and report it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.errors import CorpusError
from harness.models import Artifact
from harness.pack import Pack

__all__ = [
    "CorpusRead",
    "CorpusStream",
    "check_against_pack",
    "parse_artifact",
    "read_artifact_file",
    "read_corpus",
]

MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32  # nesting of objects and arrays in one artifact


class _Duplicate(ValueError):
    pass


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in items:
        if k in out:
            raise _Duplicate(f"duplicate key {k!r} in one object (which value is meant?)")
        out[k] = v
    return out


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _deeper_than(node: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests more than `limit` levels (an object or array is
    one level). Only containers are visited and it stops at the limit, so its recursion is
    at most `limit` deep (~2x faster than walking every value, a tenth of a corpus read)."""
    if limit < 1:
        return isinstance(node, dict | list)
    values = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    return any(isinstance(v, dict | list) and _deeper_than(v, limit - 1) for v in values)


def load_json(raw: bytes, file: Path, line: int | None) -> Any:
    """Strict JSON at the trust boundary: UTF-8, no duplicate keys (a second `"id"` would
    silently win), no NaN/Infinity, at most `MAX_DEPTH` levels."""
    try:
        payload = json.loads(raw, object_pairs_hook=_pairs, parse_constant=_constant)
    except _Duplicate as exc:
        raise CorpusError(str(exc), file=file, line=line, hint="keep one value per key") from exc
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError too
        what = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
        raise CorpusError(
            f"not valid JSON: {what}",
            file=file,
            line=line,
            hint="each line must be one JSON object (UTF-8)",
        ) from exc
    if _deeper_than(payload, MAX_DEPTH):
        raise CorpusError(
            f"the artifact is nested more than {MAX_DEPTH} levels deep",
            file=file,
            line=line,
            hint="tables hold rows of flat cells; keep `meta` shallow",
        )
    return payload


def check_against_pack(artifact: Artifact, pack: Pack) -> str | None:
    """The first way the artifact's shape disagrees with the pack, or None."""
    for table, rows in artifact.tables.items():
        binding = pack.tables.get(table)
        if binding is None:
            return f"unknown table {table!r} (the pack has: {', '.join(sorted(pack.tables))})"
        for i, row in enumerate(rows):
            extra = sorted(set(row) - set(binding.columns))
            if extra:
                return (
                    f"table {table!r} row {i}: unknown column(s) {extra} "
                    f"(the pack binds: {', '.join(binding.columns)})"
                )
    if artifact.prose_fields:
        declared = [f.name for f in pack.prose_fields()]
        unknown = sorted(set(artifact.prose_fields) - set(declared))
        if unknown:
            return (
                f"prose field(s) {unknown} the pack does not declare (declared: "
                f"{', '.join(declared)}; add [prose.fields.<name>] to pack.toml)"
            )
    return None


def parse_artifact(payload: Any, file: Path, line: int | None) -> Artifact:
    """A decoded JSON value as an artifact, or a CorpusError naming `file:line` (the
    corpus, a pack sample)."""
    if not isinstance(payload, dict):
        raise CorpusError(
            "an artifact must be a JSON object",
            file=file,
            line=line,
            hint='expected {"id": ..., "tables": {...}, "prose": ..., "prose_fields": {...}}',
        )
    try:
        artifact = Artifact.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise CorpusError(
            f"invalid artifact at `{where}`: {first['msg']}",
            file=file,
            line=line,
            hint="see the corpus format in docs/reference/corpus-format.md",
        ) from exc
    return artifact


def _validate(payload: Any, pack: Pack, file: Path, line: int | None) -> Artifact:
    artifact = parse_artifact(payload, file, line)
    problem = check_against_pack(artifact, pack)
    if problem:
        raise CorpusError(
            f"artifact {artifact.id!r}: {problem}",
            file=file,
            line=line,
            hint=f"fix the artifact or use a pack that binds it ({pack.root})",
        )
    return artifact


@dataclass
class CorpusRead:
    artifacts: list[Artifact] = field(default_factory=list)
    errors: list[CorpusError] = field(default_factory=list)
    lines: list[int | None] = field(default_factory=list)  # the line of each artifact

    def refuse_case_collisions(self, known: set[str], path: Path) -> None:
        """Move to `errors` every artifact whose id differs only in case from an id the
        workspace already holds (`known`): on a case-insensitive file system (macOS,
        Windows) the two would share their trace, chapter and archive files."""
        folded = {k.lower(): k for k in known}
        kept: list[Artifact] = []
        lines: list[int | None] = []
        for artifact, line in zip(self.artifacts, self.lines, strict=True):
            other = folded.get(artifact.id.lower())
            if other is not None and other != artifact.id:
                self.errors.append(_case_error(artifact.id, other, path, line, "the workspace"))
                continue
            kept.append(artifact)
            lines.append(line)
        self.artifacts, self.lines = kept, lines


def _case_error(new: str, old: str, path: Path, line: int | None, where: str) -> CorpusError:
    return CorpusError(
        f"artifact id {new!r} differs only in case from {old!r} in {where}: on a "
        "case-insensitive file system (macOS, Windows) they would share files",
        file=path,
        line=line,
        hint="ids are compared without case: rename one of them",
    )


def read_corpus(path: Path, pack: Pack) -> CorpusRead:
    """Every valid artifact of a JSONL corpus, plus one error per bad line."""
    out = CorpusRead()
    for lineno, item in _read_lines(path, pack):
        if isinstance(item, CorpusError):
            out.errors.append(item)
        else:
            out.artifacts.append(item)
            out.lines.append(lineno)
    return out


class CorpusStream:
    """The valid artifacts of a JSONL corpus one at a time, for a batch that must not hold
    the whole corpus in memory (issue 22: 20,000 artifacts were ~240 MB of models). Bad
    lines, and ids that differ only in case from one in `known` (the workspace's), go to
    `errors` as the stream passes them; `count` is the artifacts yielded so far. It can be
    iterated once; after that `errors` and `count` are final."""

    def __init__(self, path: Path, pack: Pack, known: set[str] | None = None) -> None:
        if not path.is_file():
            raise CorpusError("corpus file not found", file=path, hint="pass a .jsonl file")
        self.path, self.pack = path, pack
        self._folded = {k.lower(): k for k in known or ()}
        self.errors: list[CorpusError] = []
        self.count = 0

    def __iter__(self) -> Iterator[Artifact]:
        for lineno, item in _read_lines(self.path, self.pack):
            if isinstance(item, CorpusError):
                self.errors.append(item)
                continue
            other = self._folded.get(item.id.lower())
            if other is not None and other != item.id:
                self.errors.append(_case_error(item.id, other, self.path, lineno, "the workspace"))
                continue
            self.count += 1
            yield item


def _read_lines(path: Path, pack: Pack) -> Iterator[tuple[int, Artifact | CorpusError]]:
    """(line number, artifact or the line's error) for each non-blank line, read lazily."""
    if not path.is_file():
        raise CorpusError("corpus file not found", file=path, hint="pass a .jsonl file")
    seen: dict[str, tuple[int, str]] = {}  # id without case -> (line, id)
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                if len(raw) > MAX_LINE_BYTES:
                    raise CorpusError(
                        f"line is {len(raw)} bytes (max {MAX_LINE_BYTES})", file=path, line=lineno
                    )
                payload = load_json(raw, path, lineno)
                artifact = _validate(payload, pack, path, lineno)
                first = seen.get(artifact.id.lower())
                if first is not None and first[1] == artifact.id:
                    raise CorpusError(
                        f"duplicate artifact id {artifact.id!r} (first on line {first[0]})",
                        file=path,
                        line=lineno,
                        hint="ids must be unique within a corpus",
                    )
                if first is not None:
                    raise _case_error(
                        artifact.id, first[1], path, lineno, f"line {first[0]} of this corpus"
                    )
                seen[artifact.id.lower()] = (lineno, artifact.id)
            except CorpusError as err:
                yield lineno, err
                continue
            yield lineno, artifact


def read_artifact_file(path: Path, pack: Pack) -> Artifact:
    """One artifact from a .json file (or a one-line .jsonl)."""
    if not path.is_file():
        raise CorpusError("artifact file not found", file=path)
    return _validate(load_json(path.read_bytes(), path, None), pack, path, None)

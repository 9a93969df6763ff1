"""Reading corpus files (JSONL, one artifact a line) and artifact files: untrusted input.

Each problem is a `CorpusError` naming the file, the line and what to do. `read_corpus`
collects the good artifacts and the errors, so a batch can keep going past a bad line
and report it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from harness.errors import CorpusError
from harness.models import Artifact
from harness.pack import Pack

__all__ = ["CorpusRead", "check_against_pack", "read_artifact_file", "read_corpus"]

MAX_LINE_BYTES = 4 * 1024 * 1024


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
    return None


def _validate(payload: Any, pack: Pack, file: Path, line: int | None) -> Artifact:
    if not isinstance(payload, dict):
        raise CorpusError(
            "an artifact must be a JSON object",
            file=file,
            line=line,
            hint='expected {"id": ..., "tables": {...}, "prose": ...}',
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
            hint="see the corpus format in README.md",
        ) from exc
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


def read_corpus(path: Path, pack: Pack) -> CorpusRead:
    """Every valid artifact of a JSONL corpus, plus one error per bad line."""
    if not path.is_file():
        raise CorpusError("corpus file not found", file=path, hint="pass a .jsonl file")
    out = CorpusRead()
    seen: dict[str, int] = {}
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                if len(raw) > MAX_LINE_BYTES:
                    raise CorpusError(
                        f"line is {len(raw)} bytes (max {MAX_LINE_BYTES})", file=path, line=lineno
                    )
                try:
                    payload = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise CorpusError(
                        f"not valid JSON: {exc}",
                        file=path,
                        line=lineno,
                        hint="each line must be one JSON object",
                    ) from exc
                artifact = _validate(payload, pack, path, lineno)
                if artifact.id in seen:
                    raise CorpusError(
                        f"duplicate artifact id {artifact.id!r} (first on line "
                        f"{seen[artifact.id]})",
                        file=path,
                        line=lineno,
                        hint="ids must be unique within a corpus",
                    )
                seen[artifact.id] = lineno
                out.artifacts.append(artifact)
            except CorpusError as err:
                out.errors.append(err)
    return out


def read_artifact_file(path: Path, pack: Pack) -> Artifact:
    """One artifact from a .json file (or a one-line .jsonl)."""
    if not path.is_file():
        raise CorpusError("artifact file not found", file=path)
    try:
        payload = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise CorpusError(
            f"not valid JSON: {exc}", file=path, hint="the file must hold one JSON artifact object"
        ) from exc
    return _validate(payload, pack, path, None)

"""What the CLI's parser (`cli`) and its commands (`commands`) share: exit codes and JSON
output. Its own module so neither imports the other's internals (no import circle)."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import orjson

from harness.errors import SetupError

__all__ = [
    "EXIT_BUG",
    "EXIT_INPUT",
    "EXIT_NOT_COMMITTED",
    "EXIT_OK",
    "EXIT_TRACE",
    "EXIT_UNAVAILABLE",
    "emit_json",
    "jsonable",
]

EXIT_OK, EXIT_BUG, EXIT_INPUT, EXIT_NOT_COMMITTED, EXIT_TRACE, EXIT_UNAVAILABLE = 0, 1, 2, 3, 4, 5


def jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {k: jsonable(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, SetupError):
        return {"file": obj.file, "line": obj.line, "message": obj.message, "hint": obj.hint}
    return obj


def _error_fields(obj: Any) -> Any:
    if isinstance(obj, SetupError):
        return jsonable(obj)
    raise TypeError


def dumps(obj: Any) -> bytes:
    """`obj` as indented JSON, `jsonable`'s meaning. orjson writes dataclasses, tuples and
    str-keyed dicts as `jsonable` converts them, in C (a 20,000-run report's walk took ~0.3 s);
    anything else it refuses (a dict with other keys) goes through `jsonable` first."""
    try:
        return orjson.dumps(obj, default=_error_fields, option=orjson.OPT_INDENT_2)
    except TypeError:
        return orjson.dumps(jsonable(obj), option=orjson.OPT_INDENT_2)


def emit_json(obj: Any) -> None:
    sys.stdout.write(dumps(obj).decode() + "\n")

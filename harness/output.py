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


def emit_json(obj: Any) -> None:
    sys.stdout.write(orjson.dumps(jsonable(obj), option=orjson.OPT_INDENT_2).decode() + "\n")

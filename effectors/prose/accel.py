"""Use the mypyc-compiled prose modules when they match the sources (see
`scripts/build_accel.py`): never a stale build, and plain Python whenever in doubt."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import MutableSequence
from pathlib import Path

__all__ = ["BUILD", "MODULES", "current", "install", "manifest"]

_HERE = Path(__file__).resolve().parent
BUILD = _HERE.parent.parent / "build" / "accel" / "effectors" / "prose"
PURE_ENV = "MEMBRANE_PURE_PYTHON"
MODULES = ("claims", "matcher", "text", "length")  # what `scripts/build_accel.py` compiles


def manifest(source: Path = _HERE, modules: tuple[str, ...] = MODULES) -> dict[str, object]:
    """What a build of `modules` from `source` records, and what it must still match: this
    Python's version and each source's sha256."""
    return {
        "python": sys.version,
        "sources": {m: hashlib.sha256((source / f"{m}.py").read_bytes()).hexdigest()
                    for m in modules},
    }


def current(build: Path = BUILD, source: Path = _HERE) -> bool:
    """Is there a complete build of this Python whose recorded hashes are the sources'?"""
    try:
        recorded = json.loads((build / "manifest.json").read_text(encoding="utf-8"))
        modules = tuple(recorded["sources"])
        return bool(modules) and recorded == manifest(source, modules)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def install(path: MutableSequence[str], build: Path = BUILD) -> bool:
    """Put the build first on the package's `__path__` when it is current and
    `MEMBRANE_PURE_PYTHON` is unset; True if it was."""
    if os.environ.get(PURE_ENV, "") not in ("", "0") or not current(build):
        return False
    path.insert(0, str(build))
    return True

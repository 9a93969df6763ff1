"""Whether PROSE_GATE's hot modules run compiled, and the guard that keeps a stale build out
(issue 20: the gate's speed in one process).

`make` compiles the modules in `MODULES` with mypyc (`scripts/build_native.py`, again with
`make native`) into extension modules beside their sources, and writes `_native.json`: the
SHA-256 of each source as compiled. Python would import an extension in place of its source
even after the source changed; so when this package is imported, the extensions are used
only if every one of them is there, each source still has the hash it was compiled from
(they call each other natively: all or none) and `MEMBRANE_NATIVE` is not "0". Otherwise a
finder puts the sources first. The compiled and the source modules give the same verdicts
(`tests/effectors/test_prose_native.py`); the sources are the reference.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

__all__ = ["MANIFEST", "MODULES", "Decision", "decide", "guard", "status"]

PACKAGE = "effectors.prose"
# what scripts/build_native.py compiles: the gate's per-artifact work (quantity.py is not
# among them: its Tolerance subclasses float, which mypyc cannot compile natively)
MODULES = (
    "aggregate", "claims", "injection", "length", "matcher", "scope", "subject", "text", "units",
)
MANIFEST = "_native.json"
SHARED = "_native__mypyc"  # the extension the compiled modules share (mypyc's group)


@dataclass(frozen=True)
class Decision:
    compiled: bool
    reason: str  # why not, or "compiled (mypyc)"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _extension(folder: Path, name: str) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if (folder / f"{name}{suffix}").is_file():
            return folder / f"{name}{suffix}"
    return None


def decide(folder: Path, modules: Sequence[str], setting: str | None) -> Decision:
    """Whether the extensions in `folder` may stand in for the sources of `modules`
    (`setting`: the value of `MEMBRANE_NATIVE`). Never raises: a missing, unreadable or
    hostile manifest means the sources."""
    if setting == "0":
        return Decision(False, "MEMBRANE_NATIVE=0")
    present = [m for m in modules if _extension(folder, m) is not None]
    if not present:
        return Decision(False, "not compiled (make native)")
    if len(present) != len(modules) or _extension(folder, SHARED) is None:
        return Decision(False, "an incomplete build (make native)")
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        sources = manifest["sources"]
        if not isinstance(sources, dict) or manifest.get("python") != sys.implementation.cache_tag:
            return Decision(False, "a build for another interpreter (make native)")
        for m in modules:
            if sources.get(m) != _digest(folder / f"{m}.py"):
                return Decision(False, f"stale: {m}.py changed since it was compiled (make native)")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Decision(False, "no readable build manifest (make native)")
    return Decision(True, "compiled (mypyc)")


class _SourcesFirst(importlib.abc.MetaPathFinder):
    """Imports `package.<module>` for each of `modules` from its source file."""

    def __init__(self, package: str, folder: Path, modules: Sequence[str]) -> None:
        self.folder = folder
        self.names = {f"{package}.{m}": m for m in modules}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        short = self.names.get(fullname)
        if short is None:
            return None
        return importlib.util.spec_from_file_location(fullname, self.folder / f"{short}.py")


_DECIDED: dict[str, Decision] = {}  # the package's decision, once made


def guard(
    package: str = PACKAGE,
    folder: Path | None = None,
    modules: Sequence[str] = MODULES,
) -> Decision:
    """Decide once for `package` (run by its `__init__`, before any of `modules` is
    imported) and, unless the extensions may be used, put the sources first."""
    where = folder if folder is not None else Path(__file__).resolve().parent
    decision = decide(where, modules, os.environ.get("MEMBRANE_NATIVE"))
    if not decision.compiled and any(_extension(where, m) for m in modules):
        sys.meta_path.insert(0, _SourcesFirst(package, where, modules))
    _DECIDED[package] = decision
    return decision


def status() -> str:
    """How this process runs the prose gate's hot modules: "compiled (mypyc)" or why the
    sources are used (the benchmarks print it)."""
    decision = _DECIDED.get(PACKAGE)
    if decision is None:
        return "unknown"
    loaded = sys.modules.get(f"{PACKAGE}.claims")
    if loaded is not None and decision.compiled and str(loaded.__file__).endswith(".py"):
        return "sources (the extensions were not loaded)"
    return decision.reason

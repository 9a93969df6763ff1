"""The classified ontology shared across workspaces (issue 16): a per-user cache beside
each workspace's own `.membrane/cache/`.

A workspace's first session classified its pack's ontology with HermiT (~1.8 s on the
facility pack) even when another workspace on the machine had classified the same
ontology moments before. The index and its two N-Triples files are content-addressed
(`ontology.pools._cache_key`: the ontology and its imports, the pack's bindings,
`CODE_VERSION`), so a workspace that misses its own cache copies the entry from here
instead, and a session that classifies publishes its entry here.

Where: `$MEMBRANE_CACHE_DIR/ontology/<code>/`, by default `$XDG_CACHE_HOME/membrane`
(`~/.cache/membrane`); `MEMBRANE_CACHE_DIR=off` turns it off. `<code>` hashes the source
of the code that builds and reads an entry (`ontology/*.py`, `harness/pools.py`), so
another version of membrane never reads this one's entries. Entries are checked as the
workspace's own are (the index's key, its schema); a damaged one is rebuilt and replaced.
Writing is best effort (a read-only or full home only costs the classification); each
file is written whole (a temporary file, then a rename), the index last, so an index
here means its N-Triples are here too. The `ontology/` folder is safe to delete at any
time (its parent may also hold the benchmarks' downloads, `bench/`).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

__all__ = ["ENV", "fetch", "has", "publish", "shared_dir"]

ENV = "MEMBRANE_CACHE_DIR"
_OFF = ("", "0", "off", "no", "none", "false")
_log = logging.getLogger(__name__)


@functools.cache
def _code_tag() -> str:
    """A hash of the source that builds and reads a cache entry."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in [*sorted(here.glob("*.py")), here.parent / "harness" / "pools.py"]:
        h.update(path.name.encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()[:16]


def shared_dir() -> Path | None:
    """The shared folder of this code's entries, or None when it is turned off."""
    value = os.environ.get(ENV)
    if value is not None:
        if value.strip().lower() in _OFF:
            return None
        root = Path(value).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = Path(base) / "membrane"
    return root / "ontology" / _code_tag()


def has(name: str) -> bool:
    """Whether the shared cache holds the entry whose index file is `name`."""
    folder = shared_dir()
    return folder is not None and (folder / name).is_file()


def _copy(src: Path, dest: Path) -> None:
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def fetch(paths: Sequence[Path]) -> bool:
    """Copy the shared entry of `paths` (the index first, then its N-Triples, all in one
    folder) into that folder, the index last; True when every file was there."""
    folder = shared_dir()
    if folder is None or not paths:
        return False
    index, *rest = paths
    if not (folder / index.name).is_file():
        return False
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        for path in [*rest, index]:
            _copy(folder / path.name, path)
    except OSError as exc:
        _log.info("shared ontology cache not used (%s): classifying", exc)
        return False
    return True


def publish(paths: Sequence[Path]) -> None:
    """Copy a workspace's entry (index first in `paths`) to the shared cache, the index
    last; a failure is logged, never raised."""
    folder = shared_dir()
    if folder is None or not paths:
        return
    index, *rest = paths
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path in [*rest, index]:
            _copy(path, folder / path.name)
    except OSError as exc:
        _log.info("shared ontology cache not written (%s)", exc)

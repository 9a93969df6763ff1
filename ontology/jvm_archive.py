"""A class-data-sharing archive of the warm JVM's classes (issue 16).

Every process that judges starts a JVM for HermiT (`ontology.warm`): a one-process batch,
each `--workers` process, each test process. Loading and verifying the ~2,500 classes of
HermiT, the OWL API and the JDK that a warm start and a judged cohort use took ~0.3 CPU s of
each start on the 2-core VM (start and first HermiT call 1.6 s -> 1.35 s wall). `make`
(`scripts/build_jvm_archive.py`) records which classes a small batch loads
(`-XX:DumpLoadedClassList`) and dumps them into an archive (`java -Xshare:dump`); every
later JVM maps it (`-XX:SharedArchiveFile`) instead of loading those classes one by one.

Where: `<prefix>/share/membrane/jvm/hermit-<key>.jsa`, `<prefix>` the Python environment's
(`.venv`): built with the environment, gone with it. `<key>` hashes the JVM library's path,
size and modification time, HermiT.jar's, and the options an archive depends on: another
JDK or another HermiT has another key, so it never maps an archive made for something else
(the JVM also checks the archive's own header and, with no logging asked for, starts
without it: a damaged file costs the speed, never a result). `MEMBRANE_JVM_ARCHIVE=0`
starts without it; the build step makes one again for a new JDK and removes the old ones.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["ENV", "archive_path", "jvm_options", "key", "status", "turned_off"]

ENV = "MEMBRANE_JVM_ARCHIVE"
FOLDER = Path(sys.prefix) / "share" / "membrane" / "jvm"
CLASSLIST_ENV = "MEMBRANE_JVM_CLASSLIST"  # the build step's child: record classes here
_OFF = ("0", "off", "no", "false")
# the options a dump and every start share (the collector shapes the archive's layout; a
# start whose heap size asks for another pointer encoding maps nothing and goes on without)
SHAPE = ("-XX:+UseSerialGC",)


def turned_off() -> bool:
    """`MEMBRANE_JVM_ARCHIVE=0` (or off, no, false)."""
    return os.environ.get(ENV, "").strip().lower() in _OFF


def key(jvm_path: str, jar: Path) -> str | None:
    """The archive key of this JVM library and HermiT jar, or None if either is missing."""
    h = hashlib.sha256("\0".join(SHAPE).encode())
    for path in (jvm_path, str(jar)):
        try:
            st = os.stat(path)
        except OSError:
            return None
        h.update(f"\0{os.path.realpath(path)}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return h.hexdigest()[:20]


def archive_path(jvm_path: str, jar: Path) -> Path | None:
    """Where the archive for this JVM and jar lives (present or not); None when either
    file is missing."""
    k = key(jvm_path, jar)
    return None if k is None else FOLDER / f"hermit-{k}.jsa"


def jvm_options(jvm_path: str | None, jar: Path) -> list[str]:
    """The options that make a JVM started for `jar` map its archive (none when there is
    no archive, it is turned off, or this start records classes for the build step)."""
    listing = os.environ.get(CLASSLIST_ENV)
    if listing:
        return [f"-XX:DumpLoadedClassList={listing}"]
    if jvm_path is None or turned_off():
        return []
    path = archive_path(jvm_path, jar)
    if path is None or not path.is_file():
        return []
    return [f"-XX:SharedArchiveFile={path}"]  # -Xshare:auto, the default: a bad one maps nothing


def status(jvm_path: str | None, jar: Path) -> str:
    """Whether a JVM started now maps an archive, and which, or why not."""
    if turned_off():
        return f"off ({ENV}=0)"
    if jvm_path is None:
        return "none (no JVM found)"
    path = archive_path(jvm_path, jar)
    if path is None:
        return "none (no HermiT.jar)"
    if not path.is_file():
        return f"none (not built for this JVM: make, or {_BUILD})"
    return f"archive {path}"


_BUILD = "python scripts/build_jvm_archive.py"


def dump_command(java: str, classlist: Path, out: Path, classpath: Sequence[str]) -> list[str]:
    """The `java -Xshare:dump` command that writes an archive of `classlist` to `out`."""
    return [
        java,
        "-Xshare:dump",
        *SHAPE,
        f"-XX:SharedClassListFile={classlist}",
        f"-XX:SharedArchiveFile={out}",
        "-cp",
        os.pathsep.join(classpath),
    ]

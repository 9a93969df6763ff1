"""Dump the warm JVM's classes into a class-data-sharing archive (issue 16): `make` runs
this once after it installs the project; run it again after a JDK upgrade.

    .venv/bin/python scripts/build_jvm_archive.py                        # build; go on without
    MEMBRANE_JVM_ARCHIVE=require .venv/bin/python scripts/build_jvm_archive.py  # fail if it cannot

A child process judges a few artifacts of the shipped demo corpus with the JVM recording
every class it loads (`-XX:DumpLoadedClassList`), then `java -Xshare:dump` writes them into
`.venv/share/membrane/jvm/hermit-<key>.jsa` (`ontology.jvm_archive`; the key names this JVM
and HermiT.jar; the archives of other keys, made for a JDK or HermiT since replaced, are
removed). Every later JVM maps it: ~0.3 CPU s less per start. Without Java, or when a step
fails, this says why and exits 0: the JVM then loads its classes as before, with the same
results.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ontology import jvm_archive  # noqa: E402

# a batch of the demo corpus's first artifacts, in a workspace of its own: the classes a
# warm start, a consistency check, realisation and bisection load
_WORKLOAD = """
import itertools, sys, tempfile
from pathlib import Path
from harness import api
root, lines = Path(sys.argv[1]), int(sys.argv[2])
with tempfile.TemporaryDirectory(prefix="membrane-jvm-archive-") as tmp:
    corpus = Path(tmp) / "head.jsonl"
    with open(root / "packs/facility/corpus/demo.jsonl", "rb") as src:
        corpus.write_bytes(b"".join(itertools.islice(src, lines)))
    ws = Path(tmp) / "ws"
    ws.mkdir()
    api.run_batch(ws, corpus, root / "packs/facility", report=False)
"""


def _say(text: str) -> None:
    print(f"build_jvm_archive: {text}", file=sys.stderr)


def _java_beside(jvm: str) -> str | None:
    """The `java` of the JDK whose library `jvm` is (JAVA_HOME/lib/server/libjvm.so)."""
    for home in Path(jvm).resolve().parents:
        exe = home / "bin" / "java"
        if exe.is_file() and os.access(exe, os.X_OK):
            return str(exe)
    return None


def build() -> str:
    """Build the archive; returns what happened, raises RuntimeError saying why not."""
    from ontology.warm import HERMIT_JAR, jvm_path

    if jvm_archive.turned_off():
        raise RuntimeError(f"{jvm_archive.ENV}=0: not built")
    jvm = jvm_path()
    if jvm is None:
        raise RuntimeError("no JVM found (install Java 17); HermiT runs without an archive")
    out = jvm_archive.archive_path(jvm, HERMIT_JAR)
    if out is None:
        raise RuntimeError(f"no {HERMIT_JAR}")
    java = _java_beside(jvm)
    if java is None:
        raise RuntimeError(f"no java executable beside {jvm}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="membrane-jvm-archive-") as tmp:
        listing = Path(tmp) / "classes.lst"
        env = {**os.environ, jvm_archive.CLASSLIST_ENV: str(listing), "MEMBRANE_REASONER": ""}
        run = subprocess.run(
            [sys.executable, "-c", _WORKLOAD, str(ROOT), "24"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
        )
        if run.returncode != 0 or not listing.is_file():
            tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"the recording batch failed: {' / '.join(tail)}")
        part = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        try:
            dump = subprocess.run(
                jvm_archive.dump_command(java, listing, part, [str(HERMIT_JAR)]),
                capture_output=True, text=True, timeout=600, check=False,
            )
            if dump.returncode != 0 or not part.is_file():
                tail = (dump.stderr or dump.stdout).strip().splitlines()[-2:]
                raise RuntimeError(f"java -Xshare:dump failed: {' / '.join(tail)}")
            os.replace(part, out)
        finally:
            part.unlink(missing_ok=True)
    for old in out.parent.glob("hermit-*.jsa"):  # made for a JDK or HermiT since replaced
        if old != out:
            old.unlink(missing_ok=True)
    return f"archive of the warm JVM's classes: {out}"


def main() -> int:
    required = os.environ.get(jvm_archive.ENV, "").strip().lower() == "require"
    try:
        _say(build())
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        _say(f"{exc}; the JVM loads its classes without an archive")
        return 1 if required else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

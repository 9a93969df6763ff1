"""The warm JVM's class-data-sharing archive (`ontology.jvm_archive`, issue 16): keyed by
the JVM and HermiT.jar it was made for, used only when present and not turned off, and a
damaged one costs the speed, never an answer. The build step, end to end, with real Java."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ontology import jvm_archive

ROOT = Path(__file__).resolve().parents[2]

# a child process (the JVM starts once per process): the archive folder is `argv[1]`; it
# prints the archive's status, then two warm HermiT answers (consistent, inconsistent)
_CHILD = """
import sys
from pathlib import Path
from ontology import jvm_archive
jvm_archive.FOLDER = Path(sys.argv[1])
from ontology.warm import HERMIT_JAR, WarmHermit, jvm_path
from tests.ontology.test_warm_cut import _base, _row
print(jvm_archive.status(jvm_path(), HERMIT_JAR))
reasoner, base = WarmHermit(), _base()
print(reasoner.consistent(base, [_row("z")]), reasoner.consistent(base, [_row("x")]))
"""


def _files(tmp_path: Path) -> tuple[str, Path]:
    jvm, jar = tmp_path / "libjvm.so", tmp_path / "HermiT.jar"
    jvm.write_bytes(b"jvm")
    jar.write_bytes(b"jar")
    return str(jvm), jar


def test_the_key_names_the_jvm_and_the_jar(tmp_path: Path) -> None:
    jvm, jar = _files(tmp_path)
    first = jvm_archive.key(jvm, jar)
    assert first is not None and first == jvm_archive.key(jvm, jar)
    jar.write_bytes(b"another HermiT")  # another size
    assert jvm_archive.key(jvm, jar) not in (None, first)
    assert jvm_archive.key(str(tmp_path / "missing.so"), jar) is None
    assert jvm_archive.key(jvm, tmp_path / "missing.jar") is None


def test_options_only_for_an_archive_that_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jvm, jar = _files(tmp_path)
    monkeypatch.setattr(jvm_archive, "FOLDER", tmp_path / "jvm")
    monkeypatch.delenv(jvm_archive.ENV, raising=False)
    monkeypatch.delenv(jvm_archive.CLASSLIST_ENV, raising=False)
    assert jvm_archive.jvm_options(jvm, jar) == []
    assert jvm_archive.status(jvm, jar).startswith("none (not built")
    path = jvm_archive.archive_path(jvm, jar)
    assert path is not None and path.parent == tmp_path / "jvm"
    path.parent.mkdir()
    path.write_bytes(b"an archive")
    assert jvm_archive.jvm_options(jvm, jar) == [f"-XX:SharedArchiveFile={path}"]
    assert jvm_archive.status(jvm, jar) == f"archive {path}"
    assert jvm_archive.jvm_options(None, jar) == []  # no JVM found: startJVM says so
    for off in ("0", "off", " OFF "):
        monkeypatch.setenv(jvm_archive.ENV, off)
        assert jvm_archive.jvm_options(jvm, jar) == []
        assert jvm_archive.status(jvm, jar).startswith("off")
    monkeypatch.delenv(jvm_archive.ENV)
    jar.write_bytes(b"HermiT upgraded")  # the archive was made for the old jar
    assert jvm_archive.jvm_options(jvm, jar) == []
    monkeypatch.setenv(jvm_archive.CLASSLIST_ENV, str(tmp_path / "classes.lst"))
    assert jvm_archive.jvm_options(jvm, jar) == [
        f"-XX:DumpLoadedClassList={tmp_path / 'classes.lst'}"
    ]


def _child(folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != jvm_archive.ENV}
    return subprocess.run(
        [sys.executable, "-c", _CHILD, str(folder)],
        cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=300,
        check=False,
    )


@pytest.mark.java
def test_a_damaged_archive_costs_the_speed_not_the_answer(tmp_path: Path) -> None:
    from ontology.warm import HERMIT_JAR, jvm_path

    jvm = jvm_path()
    assert jvm is not None
    folder = tmp_path / "jvm"
    jvm_archive.FOLDER, saved = folder, jvm_archive.FOLDER
    try:
        path = jvm_archive.archive_path(jvm, HERMIT_JAR)
    finally:
        jvm_archive.FOLDER = saved
    assert path is not None
    folder.mkdir()
    path.write_bytes(os.urandom(64 * 1024))
    run = _child(folder)
    assert run.returncode == 0, run.stderr
    status, answers = run.stdout.strip().splitlines()[-2:]
    assert status == f"archive {path}"
    assert answers == "True False"
    assert "cds" not in run.stderr.lower()  # nothing printed about the archive


@pytest.mark.java
@pytest.mark.slow
def test_the_build_step_makes_an_archive_the_warm_jvm_maps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_jvm_archive
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    from ontology.warm import HERMIT_JAR, jvm_path

    folder = tmp_path / "jvm"
    monkeypatch.setattr(jvm_archive, "FOLDER", folder)
    monkeypatch.delenv(jvm_archive.ENV, raising=False)
    folder.mkdir()
    (folder / "hermit-madeforanolderjdk.jsa").write_bytes(b"old")  # the build removes it
    said = build_jvm_archive.build()
    jvm = jvm_path()
    assert jvm is not None
    path = jvm_archive.archive_path(jvm, HERMIT_JAR)
    assert path is not None and path.is_file() and str(path) in said
    assert [p.name for p in folder.iterdir()] == [path.name]  # no temporary file left
    # -Xshare:on: a JVM that cannot map the archive refuses to start, instead of going on
    strict = _child(folder, JAVA_TOOL_OPTIONS="-Xshare:on")
    assert strict.returncode == 0, strict.stderr
    assert strict.stdout.strip().splitlines()[-2:] == [f"archive {path}", "True False"]
    off = _child(folder, **{jvm_archive.ENV: "0"})
    assert off.returncode == 0, off.stderr
    assert off.stdout.strip().splitlines()[-2:] == [f"off ({jvm_archive.ENV}=0)", "True False"]

"""Compile PROSE_GATE's hot modules with mypyc (issue 20): `make` runs this once after it
installs the project, `make native` again after their sources change.

    .venv/bin/python scripts/build_native.py          # compile; fall back to the sources
    MEMBRANE_NATIVE=0 .venv/bin/python scripts/build_native.py        # remove the build
    MEMBRANE_NATIVE=require .venv/bin/python scripts/build_native.py  # fail if it cannot

The extensions go beside their sources in effectors/prose/ (git-ignored), with
`_native.json`: each source's SHA-256 as compiled. `effectors.prose._native` uses them only
while every source still has that hash, so an edited source never runs as its old build.
Compiling needs mypyc (it comes with mypy, a dev dependency) and a C compiler; without them,
or when the compile fails, this says why and exits 0: the gate runs from its sources, about a
quarter slower, with the same verdicts.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "effectors" / "prose"
sys.path.insert(0, str(ROOT))

from effectors.prose._native import MANIFEST, MODULES, PACKAGE, SHARED  # noqa: E402

_BUILD = """
import sys
from setuptools import setup
from mypyc.build import mypycify
paths, target, temp = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
setup(
    name="membrane-native",
    ext_modules=mypycify(paths, opt_level="3", group_name="{group}", target_dir=target),
    script_args=["-q", "build_ext", "--inplace", "--build-temp", temp],
)
"""


def _say(text: str) -> None:
    print(f"build_native: {text}", file=sys.stderr)


def _remove() -> None:
    """The previous build's files (the manifest first: a half-removed build is never used)."""
    (FOLDER / MANIFEST).unlink(missing_ok=True)
    for path in FOLDER.iterdir():
        stem = path.name.split(".", 1)[0]
        if path.suffix in (".so", ".pyd") and (stem in MODULES or stem == SHARED):
            path.unlink()


def _fail(reason: str, required: bool) -> int:
    _remove()
    _say(f"{reason}; the prose gate runs from its sources (same verdicts, ~25% slower)")
    return 1 if required else 0


def main() -> int:
    setting = os.environ.get("MEMBRANE_NATIVE", "")
    required = setting == "require"
    if setting == "0":
        _remove()
        _say("MEMBRANE_NATIVE=0: no compiled modules")
        return 0
    try:
        import mypyc.build  # noqa: F401
    except ImportError:
        return _fail("mypyc is not installed (pip install mypy)", required)
    compiler = os.environ.get("CC", "cc").split()[0]
    if shutil.which(compiler) is None:
        return _fail(f"no C compiler ({compiler}) on PATH", required)
    _remove()
    sources = {m: FOLDER / f"{m}.py" for m in MODULES}
    before = {m: hashlib.sha256(p.read_bytes()).hexdigest() for m, p in sources.items()}
    with tempfile.TemporaryDirectory(prefix="membrane-native-") as tmp:
        paths = ",".join(str(p.relative_to(ROOT)) for p in sources.values())
        script = _BUILD.replace("{group}", f"{PACKAGE}._native")
        _say(f"compiling {len(MODULES)} modules of effectors/prose with mypyc (~1 minute)")
        proc = subprocess.run(
            [sys.executable, "-c", script, paths, str(Path(tmp) / "c"), str(Path(tmp) / "o")],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        _say(f"the compile failed:\n{tail}")
        return _fail("compile failed", required)
    after = {m: hashlib.sha256(p.read_bytes()).hexdigest() for m, p in sources.items()}
    if after != before:
        return _fail("a source changed while it was compiled; run make native again", required)
    manifest = {"python": sys.implementation.cache_tag, "sources": after}
    tmp_manifest = FOLDER / f".{MANIFEST}.tmp"
    tmp_manifest.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp_manifest, FOLDER / MANIFEST)
    check = subprocess.run(
        [sys.executable, "-c", "import effectors.prose.claims, effectors.prose._native as n;"
         " print(n.status())"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    if check.returncode != 0 or check.stdout.strip() != "compiled (mypyc)":
        detail = (check.stdout + check.stderr).strip().splitlines()[-5:]
        return _fail("the compiled modules do not import: " + " | ".join(detail), required)
    _say("compiled: the prose gate's hot modules run as C extensions")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Compile the prose gate's hot modules with mypyc (an optional accelerator).

    python scripts/build_accel.py          # what `make` runs after installing

Writes C extensions of `effectors/prose/{claims,matcher,text,length}.py` under
`build/accel/effectors/prose/`, with a manifest of the sources' sha256. At import,
`effectors.prose` uses them only while every source still has the recorded hash (an edited
module makes the whole package run as plain Python again, never a stale build) and
`MEMBRANE_PURE_PYTHON` is unset. The compiled and the plain modules give the same verdicts
(tests/effectors/test_prose_accel.py); the compiled ones are about 20% faster.

Needs a C compiler and the Python headers (gcc and python3-dev on Debian). Without them, or
on any build failure, it says why and exits 0: everything works, only slower.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from effectors.prose.accel import MODULES, manifest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "effectors" / "prose"
OUT = ROOT / "build" / "accel"

_SETUP = """
from setuptools import setup
from mypyc.build import mypycify
setup(name="membrane-accel", script_args=["build_ext", "--build-lib", {out!r},
      "--build-temp", {tmp!r}], ext_modules=mypycify({paths!r}, separate=True, opt_level="3"))
"""


def main() -> int:
    want = manifest(SOURCE)
    done = OUT / "effectors" / "prose" / "manifest.json"
    try:
        if json.loads(done.read_text()) == want:
            print("prose accelerator: up to date")
            return 0
    except (OSError, ValueError):
        pass  # no build yet, or a broken one: build
    if importlib.util.find_spec("mypyc") is None or importlib.util.find_spec("setuptools") is None:
        print("prose accelerator: skipped (mypyc or setuptools is not installed)", file=sys.stderr)
        return 0
    if shutil.which(os.environ.get("CC", "gcc")) is None:
        print("prose accelerator: skipped (no C compiler; install gcc and python3-dev for a "
              "faster prose gate)", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        # mypyc works from a copy of the sources (the repository's pyproject.toml is not a
        # setup script) into a fresh folder, moved into place only when complete
        work = Path(tmp)
        pkg = work / "src" / "effectors" / "prose"
        pkg.mkdir(parents=True)
        for init in (work / "src" / "effectors" / "__init__.py", pkg / "__init__.py"):
            init.write_text("")
        for m in MODULES:
            shutil.copy2(SOURCE / f"{m}.py", pkg / f"{m}.py")
        shutil.copytree(ROOT / "harness", work / "src" / "harness")
        out = work / "out"
        setup = work / "src" / "setup_accel.py"
        setup.write_text(_SETUP.format(out=str(out), tmp=str(work / "tmp"),
                                       paths=[f"effectors/prose/{m}.py" for m in MODULES]))
        proc = subprocess.run([sys.executable, setup.name], cwd=setup.parent,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
            print(f"prose accelerator: build failed, the plain modules are used\n{tail}",
                  file=sys.stderr)
            return 0
        if OUT.exists():
            shutil.rmtree(OUT)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(out, OUT)
        done.write_text(json.dumps(want, indent=1) + "\n")  # last: the build is complete
    print(f"prose accelerator: built {', '.join(MODULES)} into {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

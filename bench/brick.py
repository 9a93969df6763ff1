"""Brick Schema 1.4 (BSD-3) for benchmarks and slow tests: `Brick.ttl` from the pinned
`brickschema==0.8.0` wheel, hash-checked, in a cache folder outside the repository.

`brick_ttl()` returns the extracted file or None; `brick_ttl(fetch=True)` first runs
`pip download brickschema==0.8.0 --no-deps` into the cache (pip, the ordinary client) and
returns None, with the reason in `BrickUnavailable`, when that cannot be done offline.
The cache is `$MEMBRANE_BENCH_CACHE`, else `~/.cache/membrane/bench`.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

__all__ = ["BRICK_IMPORTS", "BrickUnavailable", "bench_cache", "brick_ttl"]

WHEEL = "brickschema-0.8.0-py3-none-any.whl"
WHEEL_SHA256 = "8ef3881534d8973da88c86538350c7242eb61285f2dae4a210de6cc8b4346186"
MEMBER = "brickschema/ontologies/1.4/Brick.ttl"
TTL_SHA256 = "f4392ed9d72abd2e33969d32dd6a8559b0df5466161c77a513c93e6e50fdbea9"
# Brick 1.4's owl:imports, none needed for its class tree: a pack goes on without them
BRICK_IMPORTS = (
    "http://data.ashrae.org/bacnet/2020",
    "http://datashapes.org/dash",
    "http://qudt.org/3.1.8/vocab/quantitykind",
    "http://qudt.org/3.1.8/vocab/unit",
    "https://brickschema.org/schema/Brick/ref",
    "https://w3id.org/rec/brickpatches",
    "https://w3id.org/rec/recimports",
)


class BrickUnavailable(Exception):
    """Brick could not be obtained (no network to PyPI, a hash mismatch ...)."""


def bench_cache() -> Path:
    env = os.environ.get("MEMBRANE_BENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "membrane" / "bench"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def brick_ttl(fetch: bool = False) -> Path | None:
    """`Brick.ttl` 1.4 in the cache (extracted from the hash-checked wheel), else None; with
    `fetch`, download the wheel first and raise `BrickUnavailable` saying why it failed."""
    cache = bench_cache()
    ttl = cache / "brick-1.4" / "Brick.ttl"
    if ttl.is_file() and _sha256(ttl) == TTL_SHA256:
        return ttl
    wheel = cache / WHEEL
    if not wheel.is_file():
        if not fetch:
            return None
        cache.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "brickschema==0.8.0",
                "--no-deps",
                "--quiet",
                "-d",
                str(cache),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if proc.returncode != 0 or not wheel.is_file():
            raise BrickUnavailable(
                f"pip download brickschema==0.8.0 failed: "
                f"{(proc.stderr or proc.stdout).strip()[-300:]}"
            )
    if _sha256(wheel) != WHEEL_SHA256:
        raise BrickUnavailable(f"{wheel} does not have the pinned sha256 {WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as z:
        data = z.read(MEMBER)
    if hashlib.sha256(data).hexdigest() != TTL_SHA256:
        raise BrickUnavailable(f"{MEMBER} in {wheel} does not have the pinned sha256")
    ttl.parent.mkdir(parents=True, exist_ok=True)
    tmp = ttl.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(ttl)
    return ttl

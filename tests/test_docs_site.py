"""Issue 18: the docs site builds with `mkdocs build --strict` (a broken link, a missing
anchor, a page left out of the nav or a bad config fails it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    for page in ("index.html", "tutorial/first-pack.html", "reference/generated/cli.html"):
        assert (tmp_path / "site" / page).is_file(), page
    assert "membrane batch" in (tmp_path / "site" / "reference/generated/cli.html").read_text()

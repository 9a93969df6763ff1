"""What the tests of `--workers` and `--executor ray` share: a slice of the demo corpus,
the files a commit publishes, and `trace verify` through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "packs" / "facility"
DEMO = PACK / "corpus" / "demo.jsonl"


def demo_corpus(tmp: Path, n: int) -> Path:
    """The first `n` demo artifacts, as a corpus file in `tmp`."""
    lines = DEMO.read_bytes().splitlines(keepends=True)[:n]
    path = tmp / "corpus.jsonl"
    path.write_bytes(b"".join(lines))
    return path


def published(ws: Path) -> dict[str, bytes]:
    """Every file a commit publishes (chapters name their commit's time: left out)."""
    out = {}
    for sub in ("artifacts", "metrics"):
        for p in sorted((ws / "current" / sub).iterdir()):
            out[f"{sub}/{p.name}"] = p.read_bytes()
    out["corpus.jsonl"] = (ws / "current" / "corpus.jsonl").read_bytes()
    return out


def verify(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`membrane trace verify` passes on the workspace."""
    code = main(["trace", "verify", "-w", str(ws)])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err


def children(pid: int) -> list[int]:
    """The process ids whose parent is `pid` (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""

"""`scratch/`: each attempt of each run, as the loop saw it (DESIGN.md §4).

`scratch/<run_id>/attempt-NN/` holds `proposal.json` (the candidate, the same bytes whose
sha256 the trace's proposal record names), one `<gate>.verdict.json` per gate that judged it
and `critique.json` (the report the proposer got next). An EXHAUSTED run's last candidate is
there, and `membrane trace show RUN --attempt N` prints it. Scratch is staging, not a
record: files are written whole (temp file + rename) but not fsynced, and may be pruned;
the trace and the ledger are the record.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["Scratch"]


class Scratch:
    def __init__(self, root: Path) -> None:
        self.root = root

    def attempt_dir(self, run_id: str, attempt: int) -> Path:
        return self.root / run_id / f"attempt-{attempt:02d}"

    def write(self, run_id: str, attempt: int, name: str, data: bytes) -> Path:
        folder = self.attempt_dir(run_id, attempt)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return path

    def read(self, run_id: str, attempt: int, name: str) -> bytes | None:
        path = self.attempt_dir(run_id, attempt) / name
        return path.read_bytes() if path.is_file() else None

    def attempts(self, run_id: str) -> list[int]:
        folder = self.root / run_id
        if not folder.is_dir():
            return []
        return sorted(
            int(p.name.removeprefix("attempt-"))
            for p in folder.iterdir()
            if p.is_dir() and p.name.startswith("attempt-") and p.name[8:].isdigit()
        )

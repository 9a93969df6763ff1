"""`scratch/`: every candidate a proposer made, as the loop saw it (DESIGN.md §4).

`scratch/<sha256>.json` holds each proposal's candidate, named by the content hash its trace
record (`proposal.content_hash`) gives, so `membrane trace show RUN --attempt N` can print
any attempt and an EXHAUSTED run's last candidate is not lost. Attempt 1 is the run's input,
already stored content-addressed in `.membrane/inputs/`; the verdicts and critiques of every
attempt are in the trace itself. Scratch is staging, not a record: files are written without
fsync and may be pruned; the trace and the ledger are the record. One small file per
proposer attempt and no other writes keep it off the hot path (measured: writing every
verdict and critique too cost ~2 s of system time on the demo). The folder is flat: a
folder per run (`scratch/<run_id>/<sha256>.json`, where workspaces before 2026-11-27 kept
them and where they are still found) cost a directory creation per proposal, ~0.7 ms on
ext4 (0.7 s of a 2,000-artifact batch; 2.7 s of `--workers 2`' committing process).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["Scratch"]


class Scratch:
    def __init__(self, root: Path, inputs: Path | None = None) -> None:
        self.root = root
        self.inputs = inputs  # where attempt 1 (the run's input) already is

    def path(self, run_id: str, digest: str) -> Path:
        """Where the candidate with this hash is kept (content-addressed: any run's)."""
        return self.root / f"{digest}.json"

    def put(self, run_id: str, digest: str, data: bytes) -> None:
        """Store a candidate under its content hash (once; temp file and rename, no fsync)."""
        path = self.path(run_id, digest)
        if path.exists():
            return
        tmp = path.with_name(f".{digest}.tmp")
        try:
            tmp.write_bytes(data)
        except FileNotFoundError:  # the folder was removed (pruned by hand)
            self.root.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
        os.replace(tmp, path)

    def get(self, run_id: str, digest: str) -> bytes | None:
        """The candidate with this content hash: scratch first, then the inputs."""
        places = [self.path(run_id, digest), self.root / run_id / f"{digest}.json"]
        if self.inputs is not None:
            places.append(self.inputs / f"{digest}.json")
        for path in places:
            if path.is_file():
                return path.read_bytes()
        return None

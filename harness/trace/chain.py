"""The append-only, hash-chained JSONL trace of one run, and its verification.

hash = sha256(canonical JSON of the event without its `hash` field), where canonical is
orjson with sorted keys. `prev` links each event to the one before; `seq` counts from 0.
The ledger anchors each finished run's length and last hash, so a truncated file or a
chain recomputed after an edit is caught too.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from pydantic import ValidationError

from harness.errors import TraceError
from harness.trace.events import EVENT_ADAPTER, Event
from harness.trace.figures import RunFigures

__all__ = [
    "TraceWriter",
    "VerifyResult",
    "append_line",
    "canonical",
    "event_hash",
    "read_trace",
    "seal",
    "verify_chain",
]


def canonical(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def event_hash(payload: dict[str, Any]) -> str:
    body = {k: v for k, v in payload.items() if k != "hash"}
    return hashlib.sha256(canonical(body)).hexdigest()


def seal(event: Event) -> tuple[bytes, str]:
    """An event's trace line (canonical JSON, its `hash` set) and that hash."""
    payload = event.model_dump(mode="json")
    payload.pop("hash", None)  # what `event_hash` hashes: the payload without its hash
    digest = hashlib.sha256(canonical(payload)).hexdigest()
    payload["hash"] = digest
    return canonical(payload), digest


def append_line(path: Path, line: bytes) -> None:
    """Append one sealed record to a finished run's trace and fsync it (a person's review
    act; the ledger committed it first and recovery re-appends it if a kill came between)."""
    with open(path, "ab") as fh:
        fh.write(line.rstrip(b"\n") + b"\n")
        fh.flush()
        os.fsync(fh.fileno())


class TraceWriter:
    """Appends events to `path`, chaining hashes. Writes every record through; `sync()` fsyncs."""

    def __init__(
        self,
        path: Path,
        run_id: str,
        clock: Callable[[], str],
        sink: BinaryIO | None = None,
    ) -> None:
        self.path = path
        self.run_id = run_id
        self._clock = clock
        self.seq = 0
        self.head = ""
        self.figures = RunFigures()  # what the report needs of this run, record by record
        self._own = sink is None  # a `sink` (a worker's memory) is the caller's to read
        self._closed = False
        if sink is not None:
            self._fh: BinaryIO = sink
            return
        # unbuffered: each record goes out in write() calls of its own, so a full disk
        # fails that record (recovery trims its partial line) and leaves nothing queued;
        # the folder is made only when missing (a batch opens thousands of traces)
        try:
            self._fh = open(path, "ab", buffering=0)  # noqa: SIM115 - lives as long as the run
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(path, "ab", buffering=0)  # noqa: SIM115

    def append(self, factory: Callable[..., Event], **fields: Any) -> str:
        """Append one event; returns its hash (the trace's new head)."""
        event = factory(
            seq=self.seq, run_id=self.run_id, at=self._clock(), prev=self.head, **fields
        )
        line, digest = seal(event)
        data = memoryview(line + b"\n")
        while data:
            try:
                written = self._fh.write(data)
            except OSError as exc:  # a raw write names no file: name the trace
                raise OSError(exc.errno, exc.strerror, str(self.path)) from exc
            if not written:
                raise OSError(errno.EIO, "the trace took no bytes", str(self.path))
            data = data[written:]
        self.figures.see(event)
        self.seq += 1
        self.head = digest
        return digest

    def sync(self) -> None:
        if self._own:
            os.fsync(self._fh.fileno())

    def abandon(self) -> None:
        """Close without a final fsync: the batch stopped on an error (a full disk); the
        run stays unfinished and recovery settles it."""
        self._closed = True
        if self._own:
            self._fh.close()

    def close(self, sync: bool = True) -> None:
        """Close the trace, fsynced; `sync=False` when a `SyncGroup` makes it durable with
        others before its anchor is written (a batch's cycle)."""
        if self._closed:
            return
        self._closed = True
        if not self._own:
            return
        try:
            if sync:
                os.fsync(self._fh.fileno())
        finally:
            self._fh.close()


def read_trace(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, raw payload) for each line; raises TraceError on unparseable lines."""
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield lineno, orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise TraceError(f"{path}:{lineno}: not a JSON record ({exc})") from exc


@dataclass(frozen=True)
class VerifyResult:
    """`code` is stable API (tests and scripts match it, never `problem`'s words):
    trace.not_json, trace.not_event, trace.reordered (a record deleted or moved),
    trace.broken_link, trace.edited, trace.unanchored, trace.truncated (length differs from
    the anchor), trace.recomputed (last hash differs from the anchor); `membrane trace
    verify` adds trace.missing (a run's file is gone) and trace.unknown_run (a planted file)."""

    run_id: str
    ok: bool
    length: int
    head: str
    problem: str | None = None
    code: str | None = None


def verify_chain(path: Path, anchor: tuple[int, str] | None) -> VerifyResult:
    """Check seq, prev links, each hash, and (when anchored) the length and last hash."""
    run_id = path.stem
    prev, n = "", 0
    try:
        for lineno, payload in read_trace(path):
            try:
                EVENT_ADAPTER.validate_python(payload)
            except ValidationError as exc:
                return VerifyResult(
                    run_id,
                    False,
                    n,
                    prev,
                    f"line {lineno}: not a trace event: {exc.errors()[0]['msg']}",
                    "trace.not_event",
                )
            if payload.get("seq") != n:
                return VerifyResult(
                    run_id,
                    False,
                    n,
                    prev,
                    f"line {lineno}: seq {payload.get('seq')} where {n} was due (deleted or reordered record)",
                    "trace.reordered",
                )
            if payload.get("prev") != prev:
                return VerifyResult(
                    run_id,
                    False,
                    n,
                    prev,
                    f"line {lineno}: broken link to the previous record",
                    "trace.broken_link",
                )
            if event_hash(payload) != payload.get("hash"):
                return VerifyResult(
                    run_id,
                    False,
                    n,
                    prev,
                    f"line {lineno}: record was edited (hash mismatch)",
                    "trace.edited",
                )
            prev, n = payload["hash"], n + 1
    except TraceError as exc:
        return VerifyResult(run_id, False, n, prev, str(exc), "trace.not_json")
    if anchor is None:
        return VerifyResult(
            run_id,
            False,
            n,
            prev,
            "no ledger anchor for this run (interrupted or unknown)",
            "trace.unanchored",
        )
    length, head = anchor
    if n != length:
        return VerifyResult(
            run_id,
            False,
            n,
            prev,
            f"{n} records but the ledger anchored {length} (truncated or extended)",
            "trace.truncated",
        )
    if prev != head:
        return VerifyResult(
            run_id,
            False,
            n,
            prev,
            "last hash differs from the ledger anchor (chain recomputed)",
            "trace.recomputed",
        )
    return VerifyResult(run_id, True, n, prev)

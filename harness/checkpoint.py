"""The workspace checkpoint (issue 17): tamper evidence that survives a local attacker.

Each run's anchor (trace length and last hash) sits in the ledger next to the traces, so
someone who can rewrite both can rewrite history unnoticed. The ledger also keeps an
append-only log of every anchor a run was given, in order (`anchor_log`: run, trace length,
trace head, status, the content it published). The checkpoint is a hash chain over that
log: h0 = sha256("membrane-checkpoint-v1"), h_i = sha256(h_{i-1} || entry_i), and the
checkpoint is (size N, root h_N). `membrane trace checkpoint` prints it for the user to keep
elsewhere (a git commit, a ticket, a transparency log).

`membrane trace verify --checkpoint ROOT|FILE` proves that today's workspace extends it: the
first N entries of today's log must chain to ROOT (a removed, edited, reordered or
recomputed entry changes it), and each of them must still hold in the workspace: the run's
trace still has, at that length, a record with that hash (its chain intact up to there), the
run's ledger anchor is its newest log entry, and the content it published is still its
commit's. Entries after N are listed as new.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from harness.errors import ConfigError, TraceError
from harness.ledger import AnchorEntry, Ledger
from harness.trace.chain import event_hash, read_trace
from harness.workspace import Workspace

__all__ = [
    "Checkpoint",
    "CheckpointCheck",
    "make_checkpoint",
    "parse_checkpoint",
    "verify_against",
    "verify_published_files",
]

_GENESIS = hashlib.sha256(b"membrane-checkpoint-v1").hexdigest()
_HEX = re.compile(r"\b[0-9a-f]{64}\b")


@dataclass(frozen=True)
class Checkpoint:
    size: int  # how many anchor-log entries it covers
    root: str  # the chain's hash after them

    def text(self) -> str:
        return f"membrane-checkpoint v1 size={self.size} root={self.root}"


@dataclass
class CheckpointCheck:
    """What `trace verify --checkpoint` found. `problems`: (code, run, what) for each
    entry before the checkpoint that no longer holds; `new`: runs anchored after it."""

    checkpoint: Checkpoint | None
    size_now: int
    problems: list[tuple[str, str, str]] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    # runs before it whose trace `membrane gc` removed: the anchor is checked, the records
    # can no longer be
    pruned: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.checkpoint is not None and not self.problems


def _entry_bytes(e: AnchorEntry) -> bytes:
    return orjson.dumps([e.seq, e.run_id, e.trace_len, e.trace_head, e.status, e.content_hash])


def _chain(entries: list[AnchorEntry]) -> list[str]:
    """h_1 .. h_N."""
    out, h = [], _GENESIS
    for e in entries:
        h = hashlib.sha256(bytes.fromhex(h) + _entry_bytes(e)).hexdigest()
        out.append(h)
    return out


def _log(ws: Workspace) -> list[AnchorEntry]:
    if not ws.ledger_path.is_file():
        raise ConfigError(
            "no ledger in this workspace (nothing has run here yet)",
            file=ws.root,
            hint="run `membrane batch` first, or pass --workspace",
        )
    ledger = Ledger.reader(ws.ledger_path)
    try:
        return ledger.anchor_log()
    finally:
        ledger.close()


def make_checkpoint(ws: Workspace) -> Checkpoint:
    """The checkpoint of the workspace's anchor log as it is now."""
    entries = _log(ws)
    chain = _chain(entries)
    return Checkpoint(len(entries), chain[-1] if chain else _GENESIS)


def parse_checkpoint(given: str) -> str:
    """The root hash in `given`: the hash itself, the text `trace checkpoint` prints, or a
    file holding either (or its --json)."""
    text = given.strip()
    path = Path(text)
    try:
        is_file = not _HEX.fullmatch(text.lower()) and path.is_file()
    except (OSError, ValueError):  # not a usable path (too long, a NUL byte)
        is_file = False
    if is_file:
        with open(path, encoding="utf-8", errors="replace") as fh:
            raw = fh.read(1_000_000)
        try:
            data = json.loads(raw)
            text = str(data.get("root", "")) if isinstance(data, dict) else raw
        except ValueError:
            text = raw
    found = _HEX.findall(text.lower())
    if len(set(found)) != 1:
        raise ConfigError(
            f"{given!r} is not a checkpoint",
            file=path if is_file else None,
            hint="pass the root hash `membrane trace checkpoint` printed (64 hex digits), "
            "or a file holding it",
        )
    return str(found[0])


def _hash_at(path: Path, length: int) -> str | None:
    """The hash of record `length - 1` of a trace whose chain (seq, links, each record's
    hash) holds up to there, or None. Reads no further than that record."""
    if not path.is_file() or length < 1:
        return None
    prev = ""
    try:
        for n, (_line, ev) in enumerate(read_trace(path)):
            if ev.get("seq") != n or ev.get("prev") != prev or event_hash(ev) != ev.get("hash"):
                return None
            prev = str(ev["hash"])
            if n == length - 1:
                return prev
    except TraceError:
        return None
    return None


def verify_against(ws: Workspace, root: str) -> CheckpointCheck:
    """Does today's workspace extend the checkpoint whose root is `root`?"""
    entries = _log(ws)
    chain = _chain(entries)
    if root == _GENESIS:
        return CheckpointCheck(Checkpoint(0, root), len(entries), new=[e.run_id for e in entries])
    if root not in chain:
        return CheckpointCheck(
            None,
            len(entries),
            problems=[
                (
                    "checkpoint.not_extended",
                    "",
                    "no prefix of today's anchor log hashes to this checkpoint: an anchor "
                    "before it was removed, edited, reordered or recomputed (or the "
                    "checkpoint is of another workspace)",
                )
            ],
        )
    size = chain.index(root) + 1
    check = CheckpointCheck(Checkpoint(size, root), len(entries))
    ledger = Ledger.reader(ws.ledger_path)
    try:
        runs = {r.run_id: r for r in ledger.runs()}
        commits = {c.run_id: c for c in ledger.all_commits()}
        pruned = ledger.pruned("trace")  # `membrane gc`: the anchor kept, the file gone
    finally:
        ledger.close()
    newest = {e.run_id: e for e in entries}
    for e in entries[:size]:
        run = runs.get(e.run_id)
        if run is None:
            check.problems.append(("checkpoint.run_removed", e.run_id, "its ledger row is gone"))
            continue
        if newest[e.run_id] is e and (run.trace_len, run.trace_head) != (e.trace_len, e.trace_head):
            check.problems.append(
                (
                    "checkpoint.anchor_rewritten",
                    e.run_id,
                    f"the ledger anchors {run.trace_len} record(s) ending {str(run.trace_head)[:12]}, "
                    f"the checkpointed log {e.trace_len} ending {e.trace_head[:12]}",
                )
            )
        if e.run_id in pruned and not ws.trace_path(e.run_id).exists():
            check.pruned.append(e.run_id)
        elif _hash_at(ws.trace_path(e.run_id), e.trace_len) != e.trace_head:
            check.problems.append(
                (
                    "checkpoint.trace_changed",
                    e.run_id,
                    f"its trace no longer holds record {e.trace_len - 1} with hash "
                    f"{e.trace_head[:12]} (edited, truncated, reordered or rewritten)",
                )
            )
        commit = commits.get(e.run_id)
        if (
            e.status == "COMMITTED"
            and e.content_hash
            and (commit is None or commit.content_hash != e.content_hash)
        ):
            check.problems.append(
                (
                    "checkpoint.commit_changed",
                    e.run_id,
                    f"it published {e.content_hash[:12]}, the ledger now says "
                    f"{commit.content_hash[:12] if commit else 'nothing'}",
                )
            )
    check.new = list(dict.fromkeys(e.run_id for e in entries[size:]))
    return check


def verify_published_files(ws: Workspace) -> list[tuple[str, str, str]]:
    """The files derived from the ledger, checked against it: `current/corpus.jsonl` is the
    newest committed version of each artifact, byte for byte (`corpus.differs`; not checked
    while a batch writes, which rebuilds it lazily), and every superseded version is kept
    whole in `archive/` (or still in `current/` until recovery moves it): `archive.edited`,
    `archive.missing`."""
    ledger = Ledger.reader(ws.ledger_path)
    try:
        latest = ledger.latest_commits()
        every = ledger.all_commits()
        pruned = ledger.pruned("archive")  # removed by `membrane gc`, a tombstone each
    finally:
        ledger.close()
    problems: list[tuple[str, str, str]] = []
    objects = ws.current / "artifacts"
    if not ws.busy():
        want = b""
        for row in latest:
            path = objects / f"{row.content_hash}.json"
            want += (path.read_bytes().rstrip(b"\n") if path.is_file() else b"") + b"\n"
        corpus = ws.current / "corpus.jsonl"
        have = corpus.read_bytes() if corpus.is_file() else b""
        if have != want:
            problems.append(
                (
                    "corpus.differs",
                    "",
                    f"{corpus} is not the newest committed version of each artifact (edited, "
                    "or stale after a kill: `membrane recover` rebuilds it from the ledger)",
                )
            )
    live = {r.content_hash for r in latest}
    archived = ws.archive / "artifacts"
    for row in every:
        if row.content_hash in live:
            continue
        if row.content_hash in pruned and not (archived / f"{row.content_hash}.json").exists():
            continue
        found = [
            p
            for p in (archived / f"{row.content_hash}.json", objects / f"{row.content_hash}.json")
            if p.is_file()
        ]
        if not found:
            problems.append(
                (
                    "archive.missing",
                    row.run_id,
                    f"{row.artifact_id} v{row.version}: its superseded file is gone",
                )
            )
        elif hashlib.sha256(found[0].read_bytes()).hexdigest() != row.content_hash:
            problems.append(
                ("archive.edited", row.run_id, f"{found[0]} was edited after it was superseded")
            )
    return problems

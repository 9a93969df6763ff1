"""Corrections in a workspace: capture -> detect -> scrub -> distill -> ledger; analyze.

    with open_pipeline(root) as p:                 # refuses when the feature is off
        p.capture(text, reviewer=..., session=..., artifact=..., source="cli")
        p.import_file(path)                        # all lines valid, or nothing imported
        p.analyze()                                # drain backlog, promote, route, watch

Every way in (`membrane correct`, `review approve/reject --note`, `corrections import`, the
HTTP API) goes through `CorrectionInput` (the same validation and size caps) and `capture`.
The note is scrubbed first; after that only the scrubbed text exists in this process, and it
is stored nowhere but the backlog (while the model is throttled) — a distilled capture keeps
its metadata and the lessons, never its text.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.corpus import load_json
from harness.errors import ConfigError, CorpusError
from harness.learning.correction_store import Capture, CorrectionStore, parse_at
from harness.learning.detect import Detection, classify
from harness.learning.distill import (
    Distillation,
    Distiller,
    DistillerThrottled,
    FallbackDistiller,
    Vocabulary,
    guard,
)
from harness.learning.route import Recurrence, Watch, analyze
from harness.learning.scrub import scrub
from harness.learning.similar import Similarity
from harness.models import ARTIFACT_ID_PATTERN
from harness.workspace import Config, CorrectionsConfig, Workspace

__all__ = [
    "CaptureResult",
    "CorrectionInput",
    "CorrectionsDisabled",
    "Pipeline",
    "default_session",
    "open_pipeline",
    "store_path",
    "utc_now",
]

_LINE_BYTES = 64 * 1024


class CorrectionsDisabled(ConfigError):
    """`[learning.corrections] enabled = false` (the default)."""


def store_path(ws: Workspace) -> Path:
    return ws.state / "learning" / "corrections.sqlite"


def default_session() -> str:
    """$MEMBRANE_SESSION, else the terminal session this command runs in."""
    return os.environ.get("MEMBRANE_SESSION") or f"shell-{os.getppid()}"


def _utc(at: str) -> str:
    return parse_at(at).astimezone(UTC).isoformat(timespec="seconds")


class CorrectionInput(BaseModel):
    """One correction at the trust boundary (every way in)."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    text: str = Field(min_length=1, max_length=100_000)
    at: str = Field(max_length=64)
    session: str = Field(min_length=1, max_length=200, pattern=r"^[\w.:@/+-]+$")
    reviewer: str | None = Field(
        default=None, min_length=1, max_length=120, pattern=r"^[^\x00-\x1f\x7f]+$"
    )
    artifact: str | None = Field(default=None, pattern=ARTIFACT_ID_PATTERN)
    topic: str | None = Field(
        default=None, min_length=1, max_length=120, pattern=r"^[^\x00-\x1f\x7f]+$"
    )

    @field_validator("at")
    @classmethod
    def _iso(cls, v: str) -> str:
        try:
            parse_at(v)
        except ValueError as exc:
            raise ValueError(f"not an ISO 8601 time with a UTC offset: {exc}") from exc
        return v

    @field_validator("text")
    @classmethod
    def _printable(cls, v: str) -> str:
        if any(ord(c) < 32 and c not in "\n\t\r" for c in v) or "\x7f" in v:
            raise ValueError("contains control characters")
        return v


@dataclass
class CaptureResult:
    capture_id: str
    category: str
    policy: bool
    status: str  # distilled | backlog | skipped | duplicate
    method: str | None = None
    records: list[str] = field(default_factory=list)
    scrubbed: tuple[str, ...] = ()
    echo_refused: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "capture": self.capture_id,
            "category": self.category,
            "policy": self.policy,
            "status": self.status,
            "method": self.method,
            "records": self.records,
            "scrubbed": list(self.scrubbed),
            "echo_refused": self.echo_refused,
        }


class Pipeline:
    def __init__(
        self,
        ws: Workspace,
        settings: CorrectionsConfig,
        store: CorrectionStore,
        vocab: Vocabulary,
        distiller: Distiller,
        similarity: Similarity,
        clock: Callable[[], str],
    ) -> None:
        self.ws = ws
        self.settings = settings
        self.store = store
        self.vocab = vocab
        self.distiller = distiller
        self.similarity = similarity
        self.clock = clock
        self.fallback = FallbackDistiller()
        self.throttled = False

    # -- the way in ------------------------------------------------------------------------
    def validate(self, raw: dict[str, Any]) -> CorrectionInput:
        item = CorrectionInput.model_validate(raw)
        if len(item.text) > self.settings.max_note_chars:
            raise ValueError(
                f"the note is {len(item.text)} characters; at most {self.settings.max_note_chars} "
                "([learning.corrections] max_note_chars)"
            )
        return item

    def _shapes(self, reviewer: str) -> bool:
        primary = self.settings.reviewers
        return not primary or reviewer in primary

    def capture(self, item: CorrectionInput, source: str) -> CaptureResult:
        """Scrub, detect, distill (or back-log), record. Idempotent: the same note at the same
        time in the same session by the same reviewer is one capture."""
        clean = scrub(item.text)
        text = clean.text
        detection = classify(text)
        reviewer = item.reviewer or "unknown"
        sha = hashlib.sha256(text.encode()).hexdigest()
        at = _utc(item.at)
        cid = Capture.make_id(sha, at, item.session, reviewer, item.artifact)
        if self.store.has_capture(cid):
            return CaptureResult(cid, detection.category, detection.policy, "duplicate")
        cap = Capture(
            id=cid,
            at=at,
            session=item.session,
            reviewer=reviewer,
            artifact=item.artifact,
            topic=item.topic,
            source=source,
            category=detection.category,
            policy=detection.policy,
            injection=detection.injection,
            shapes=self._shapes(reviewer),
            scrubbed=clean.found,
            text_sha256=sha,
            day=parse_at(item.at).date().isoformat(),
        )
        now = self.clock()
        if detection.category in ("frustration", "other") and not detection.policy:
            # nothing to distill from exasperation or thanks; the fallback still looks for a
            # recognisable gap ("X is an alias of Y" has no correction cue)
            fb = self.fallback.distill(text, detection, self.vocab)
            if all(e.kind == "noise" for e in fb.envelopes):
                with self.store.transaction():
                    self.store.add_capture(cap, "skipped", now)
                return CaptureResult(
                    cid, detection.category, False, "skipped", scrubbed=clean.found
                )
        try:
            dist = self._distill(text, detection)
        except DistillerThrottled:
            if self.settings.backlog_max > 0:
                with self.store.transaction():
                    self.store.add_capture(cap, "backlog", now)
                    self.store.backlog_put(
                        cid,
                        text,
                        now,
                        max_entries=self.settings.backlog_max,
                        ttl_days=self.settings.backlog_ttl_days,
                    )
                return CaptureResult(
                    cid, detection.category, detection.policy, "backlog", scrubbed=clean.found
                )
            dist = self.fallback.distill(text, detection, self.vocab)  # no backlog: never lost
        with self.store.transaction():
            self.store.add_capture(cap, "distilled", now, dist.method, dist.echo_refused)
            records = self._record(dist, cap, now)
        return CaptureResult(
            cid,
            detection.category,
            detection.policy,
            "distilled",
            dist.method,
            records,
            clean.found,
            dist.echo_refused,
        )

    def _distill(self, text: str, detection: Detection) -> Distillation:
        fallback = self.fallback.distill(text, detection, self.vocab)
        if isinstance(self.distiller, FallbackDistiller):
            return fallback
        if self.throttled:
            raise DistillerThrottled("the model was throttled earlier in this command")
        try:
            model = self.distiller.distill(text, detection, self.vocab)
        except DistillerThrottled:
            self.throttled = True
            raise
        except Exception:  # an invalid answer: the deterministic distillation stands
            return fallback
        model = guard(model, fallback, text, self.vocab)
        if detection.policy:  # the model never decides that a relaxation is not one
            return fallback
        return model

    def _record(self, dist: Distillation, cap: Capture, now: str) -> list[str]:
        out = []
        for env in dist.envelopes:
            if env.kind == "noise":
                continue
            # the lesson is scrubbed again before it is persisted
            lesson = scrub(env.lesson).text
            kept = env if lesson == env.lesson else env.model_copy(update={"lesson": lesson})
            rid, _ = self.store.record_envelope(kept, cap, self.similarity, now)
            out.append(rid)
        return out

    def import_file(self, path: Path, reviewer: str | None = None) -> dict[str, Any]:
        """`corrections import FILE.jsonl`: every line is validated first; one bad line is a
        `file:line` error and nothing is imported."""
        items = self.read_jsonl(path, reviewer)
        with self.store.transaction():  # one commit (one fsync) for the file
            results = [self.capture(item, "import") for item in items]
        return {
            "file": str(path),
            "lines": len(items),
            "captured": sum(r.status in ("distilled", "backlog", "skipped") for r in results),
            "duplicates": sum(r.status == "duplicate" for r in results),
            "backlog": sum(r.status == "backlog" for r in results),
            "records": sorted({x for r in results for x in r.records}),
        }

    def read_jsonl(self, path: Path, reviewer: str | None = None) -> list[CorrectionInput]:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise CorpusError(f"cannot read it: {exc.strerror}", file=path) from exc
        lines = raw.split(b"\n")
        if len(lines) > self.settings.max_import_lines + 1:
            raise CorpusError(
                f"more than {self.settings.max_import_lines} lines "
                "([learning.corrections] max_import_lines)",
                file=path,
            )
        items: list[CorrectionInput] = []
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if len(line) > _LINE_BYTES:
                raise CorpusError(f"the line is over {_LINE_BYTES} bytes", file=path, line=n)
            data = load_json(line, path, n)
            if not isinstance(data, dict):
                raise CorpusError("not a JSON object", file=path, line=n)
            if reviewer is not None and "reviewer" not in data:
                data["reviewer"] = reviewer
            try:
                items.append(self.validate(data))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(x) for x in first["loc"]) or "line"
                raise CorpusError(
                    f"{where}: {first['msg']}",
                    file=path,
                    line=n,
                    hint='each line: {"text", "at" (ISO 8601 with offset), '
                    '"session", "reviewer"?, "artifact"?, "topic"?}',
                ) from exc
            except ValueError as exc:
                raise CorpusError(str(exc), file=path, line=n) from exc
        return items

    # -- the tick --------------------------------------------------------------------------
    def drain(self) -> dict[str, int]:
        """Expire old backlog entries, then distill what waits while the model answers."""
        now = self.clock()
        out = {"expired": 0, "drained": 0, "still_waiting": 0}
        with self.store.transaction():
            out["expired"] = len(self.store.backlog_expire(now))
        for entry in self.store.backlog():
            if self.throttled:
                out["still_waiting"] += 1
                continue
            detection = classify(entry.text)
            try:
                dist = self._distill(entry.text, detection)
            except DistillerThrottled:
                with self.store.transaction():
                    self.store.backlog_attempted(entry.capture.id)
                out["still_waiting"] += 1
                continue
            with self.store.transaction():
                self._record(dist, entry.capture, now)
                self.store.backlog_drop(entry.capture.id, "distilled")
                self.store.set_capture_status(
                    entry.capture.id, "distilled", dist.method, dist.echo_refused
                )
            out["drained"] += 1
        return out

    def analyze(self) -> dict[str, Any]:
        """One tick: drain the backlog (breaker-gated), promote, route, watch."""
        drained = self.drain()
        s = self.settings
        with self.store.transaction():
            tick = analyze(
                self.store,
                Recurrence(s.min_support, s.min_days, s.min_sessions),
                s.max_routes_per_tick,
                self.clock(),
                Watch(s.verify_days, s.inconclusive_days),
            )
        return {"backlog": drained, **tick.as_dict()}


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@contextmanager
def open_pipeline(
    root: Path,
    *,
    config: Config | None = None,
    vocab: Vocabulary | None = None,
    distiller: Distiller | None = None,
    similarity: Similarity | None = None,
    clock: Callable[[], str] = utc_now,
    replay: bool = False,
) -> Iterator[Pipeline]:
    """The workspace's corrections pipeline; CorrectionsDisabled when the feature is off."""
    from harness.corrections.wiring import make_distiller, make_similarity, vocabulary

    ws = Workspace(root)
    config = config or ws.config()
    s = config.learning.corrections
    if not s.enabled:
        raise CorrectionsDisabled(
            "corrections are off in this workspace",
            file=ws.config_path,
            hint="set [learning.corrections] enabled = true in membrane.toml",
        )
    store = CorrectionStore(store_path(ws))
    try:
        yield Pipeline(
            ws,
            s,
            store,
            vocab if vocab is not None else vocabulary(ws, config),
            distiller if distiller is not None else make_distiller(ws, config, replay),
            similarity if similarity is not None else make_similarity(s),
            clock,
        )
    finally:
        store.close()

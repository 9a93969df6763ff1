"""The workspace: the folder membrane runs in, its layout and its `membrane.toml`.

membrane.toml      config (pack, proposer, seed, budgets, prose_workers)
scratch/           disposable staging: each proposer attempt's candidate, <sha256>.json
current/           the committed corpus: corpus.jsonl, artifacts/, metrics/
archive/           superseded committed versions
trace/<run_id>.jsonl
.membrane/         ledger.sqlite, inputs/ (content-addressed run inputs), held/ (artifacts
                   waiting for a person, content-addressed), caches, lock, transcripts/
                   (model request -> response, content-addressed)
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import ConfigError
from harness.storage import from_os_error, is_storage_errno

__all__ = [
    "LLM_ENV_PREFIX",
    "AcpConfig",
    "Config",
    "CorrectionsConfig",
    "LlmConfig",
    "SyncGroup",
    "Workspace",
    "atomic_write",
    "resolve_workspace",
]

CONFIG_NAME = "membrane.toml"
LLM_ENV_PREFIX = "MEMBRANE_LLM_"


class LlmConfig(BaseModel):
    """`[llm]`: the model endpoint LLM proposers (`openai`, `hermes`) talk to.

    Every field can be overridden by an environment variable `MEMBRANE_LLM_<FIELD>` (e.g.
    `MEMBRANE_LLM_BASE_URL`, `MEMBRANE_LLM_MODEL`); see `with_env`. The API key itself is
    never in the file: `api_key_env` names the variable that holds it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = Field(default="http://127.0.0.1:8000/v1", pattern=r"^https?://[^\s]+$")
    model: str = ""  # required by the LLM proposers
    api_key_env: str = Field(default="OPENAI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$|^$")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int | None = None  # sent to the endpoint; None: the workspace `seed`
    max_completion_tokens: int = Field(default=4096, ge=1, le=1_000_000)
    response_format: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    tools: bool = True  # offer the scaffold tools by function calling
    max_tool_rounds: int = Field(default=6, ge=0, le=100)
    max_answer_chars: int = Field(default=200_000, ge=1_000, le=10_000_000)
    timeout_s: float = Field(default=120.0, gt=0, le=3600)  # per call
    run_timeout_s: float = Field(default=900.0, gt=0, le=86_400)  # per run, all calls
    retries: int = Field(default=3, ge=0, le=20)  # extra tries of a failed call
    backoff_s: float = Field(default=1.0, ge=0, le=600)  # base of the exponential backoff
    backoff_max_s: float = Field(default=30.0, ge=0, le=3600)
    breaker_failures: int = Field(default=3, ge=1, le=1000)  # consecutive failed calls
    cache: bool = True  # answer a request seen before from .membrane/transcripts/

    def with_env(self, environ: Mapping[str, str]) -> LlmConfig:
        """These settings with `MEMBRANE_LLM_<FIELD>` overrides applied (validated)."""
        updates = {
            name: environ[LLM_ENV_PREFIX + name.upper()]
            for name in type(self).model_fields
            if LLM_ENV_PREFIX + name.upper() in environ
        }
        if not updates:
            return self
        try:
            return LlmConfig.model_validate({**self.model_dump(), **updates})
        except ValidationError as exc:
            first = exc.errors()[0]
            var = LLM_ENV_PREFIX + str(first["loc"][0]).upper() if first["loc"] else "?"
            raise ConfigError(f"${var} is invalid: {first['msg']}") from exc


_EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class AcpConfig(BaseModel):
    """`[acp]`: the agent the `acp` proposer starts and speaks the Agent Client Protocol to
    (README "ACP proposer"). `command` is argv (no shell); the agent gets only the variables
    of `pass_env` (names, values from membrane's environment) and of `env` (values)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: tuple[str, ...] = Field(default=(), max_length=100)
    name: str = Field(default="", max_length=200)  # in the transcript key; default: argv[0]'s name
    env: dict[_EnvName, str] = Field(default_factory=dict)
    pass_env: tuple[_EnvName, ...] = Field(default=("PATH", "LANG", "LC_ALL"), max_length=100)
    start_timeout_s: float = Field(default=60.0, gt=0, le=3600)  # spawn + initialize
    prompt_timeout_s: float = Field(default=300.0, gt=0, le=86_400)  # one attempt's turn
    run_timeout_s: float = Field(default=900.0, gt=0, le=86_400)  # all attempts of a run
    breaker_failures: int = Field(default=3, ge=1, le=1000)  # agent failures in a row
    max_answer_chars: int = Field(default=200_000, ge=1_000, le=10_000_000)
    cache: bool = True  # answer a turn seen before from .membrane/transcripts/


class CorrectionsConfig(BaseModel):
    """`[learning.corrections]`: reviewers' corrections -> gated preferences (off by default).
    See README "Corrections and preferences"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    # the primary reviewers, whose notes shape behaviour (empty: every reviewer is primary)
    reviewers: tuple[str, ...] = Field(default=(), max_length=100)
    # "auto": the [llm] model when one is configured, else the deterministic fallback
    distiller: Literal["auto", "model", "fallback"] = "auto"
    distill_budget: int = Field(default=100, ge=0, le=1_000_000)  # model calls per command
    # dedup by meaning: "auto" (lexical, or lexical-or-embeddings>=0.85 when the extra is
    # installed), "lexical" (concept tokens), "embeddings" (the extra's sentence vectors);
    # measured: `python -m bench corrections`
    similarity: Literal["auto", "lexical", "embeddings"] = "auto"
    either_threshold: float = Field(default=0.85, gt=0.0, le=1.0)  # the cosine "auto" adds
    lexical_threshold: float = Field(default=0.5, gt=0.0, le=1.0)
    embedding_threshold: float = Field(default=0.75, gt=0.0, le=1.0)
    min_support: int = Field(default=3, ge=1, le=1000)
    min_days: int = Field(default=2, ge=1, le=1000)
    min_sessions: int = Field(default=2, ge=1, le=1000)
    max_routes_per_tick: int = Field(default=5, ge=0, le=10_000)
    backlog_max: int = Field(default=1000, ge=0, le=1_000_000)  # 0: no backlog
    backlog_ttl_days: int = Field(default=30, ge=0, le=36_500)  # 0: entries never expire
    verify_days: int = Field(default=7, ge=1, le=36_500)
    inconclusive_days: int = Field(default=14, ge=1, le=36_500)
    max_note_chars: int = Field(default=4000, ge=16, le=100_000)
    max_import_lines: int = Field(default=10_000, ge=1, le=10_000_000)
    context_bytes: int = Field(default=2048, ge=0, le=1_000_000)  # preferences per proposal
    self_violation: bool = False  # record proposals that contradict a preference


class LearningConfig(BaseModel):
    """`[learning]` in membrane.toml."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # apply each proposer's learned overlay to its runs (false: compute and report only)
    apply_overlays: bool = True
    stale_days: int = Field(default=30, ge=1, le=36_500)  # flag an overlay this quiet
    # lessons: a gated pass after each batch learns them; proposers get the active ones
    lessons: bool = True
    lesson_budget: int = Field(default=20, ge=1, le=10_000)  # live lessons per scope
    lesson_context_bytes: int = Field(default=4096, ge=0, le=1_000_000)  # injected per run
    # who proposes lessons after a batch: the trace miner (offline, deterministic), or the
    # `[llm]` model ("llm", through the openai proposer's client and transcripts)
    reviewer: Literal["trace-miner", "llm"] = "trace-miner"
    corrections: CorrectionsConfig = Field(default_factory=CorrectionsConfig)


class Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pack: str | None = None  # pack folder, relative to the workspace
    proposer: str = "offline"
    seed: int = 0
    max_attempts: int | None = Field(default=None, ge=1, le=50)  # overrides the pack policy
    cohort_size: int = Field(default=256, ge=1, le=100_000)
    # PROSE_GATE processes for large cohorts (1: in-process only; 0: one per CPU)
    prose_workers: int = Field(default=1, ge=0, le=256)
    max_tokens_per_run: int | None = Field(default=None, ge=1)  # model tokens, all calls
    max_tokens_per_batch: int | None = Field(default=None, ge=1)
    llm: LlmConfig = Field(default_factory=LlmConfig)
    acp: AcpConfig = Field(default_factory=AcpConfig)
    learning: LearningConfig = Field(default_factory=LearningConfig)


def atomic_write(path: Path, data: bytes | Iterable[bytes]) -> None:
    """temp file, fsync, os.replace, fsync of the folder: all or nothing. `data` may be
    an iterable of chunks, written as they come (a big file is never whole in memory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
            else:
                fh.writelines(data)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:  # a full disk, say: no half file left, and the error names it
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:  # the chunks' producer failed (a tampered file): no half file
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _load_syncfs() -> Callable[[int], int] | None:
    """Linux's syncfs(2) (one call makes every dirty page and inode of one filesystem
    durable), or None where libc has none (macOS)."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    return cast("Callable[[int], int]", fn)


_SYNCFS = _load_syncfs()


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


class SyncGroup:
    """Group commit for files (issue 16): many files written whole (temp file, rename) and
    made durable together by one `sync()` before the ledger transaction that names them,
    instead of two fsyncs each (the file, its folder). `sync()` is one syncfs(2) per
    filesystem the files are on; where there is no syncfs it fsyncs each file and each of
    their folders once. Until `sync()` returns nothing names the files, so a crash before
    it leaves only unreferenced files that recovery sweeps; a file left whole-named but
    empty by a power cut is rewritten, never trusted (`write_once` checks the bytes).

        group = SyncGroup()
        group.write(path_a, data_a); group.write(path_b, data_b)
        group.sync()              # both durable; now the ledger may name them
    """

    def __init__(self) -> None:
        self._paths: list[Path] = []

    def __len__(self) -> int:
        return len(self._paths)

    def add(self, path: Path) -> None:
        """A file written (or closed) by someone else, to be made durable by `sync()`."""
        self._paths.append(path)

    def write(self, path: Path, data: bytes) -> None:
        """Write `path` whole (temp file, rename) without an fsync of its own. Plain
        os.open/os.write: a batch writes thousands of these (no buffered file object, no
        tty probe, no mkdir unless the folder is missing)."""
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            try:
                fd = os.open(tmp, _CREATE, 0o666)
            except FileNotFoundError:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(tmp, _CREATE, 0o666)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        except OSError as exc:  # a full disk: no half file left, and the error names it
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            if exc.filename is None:
                raise OSError(exc.errno, exc.strerror, str(path)) from exc
            raise
        os.replace(tmp, path)
        self._paths.append(path)

    def write_once(self, path: Path, data: bytes) -> None:
        """Write a content-addressed file unless the same bytes are there already."""
        try:
            if path.read_bytes() == data:
                self._paths.append(path)  # perhaps written, never synced, by a killed batch
                return
        except FileNotFoundError:
            pass
        self.write(path, data)

    def sync(self) -> None:
        """Make every file written or added so far durable, with its name; then forget them."""
        paths, self._paths = self._paths, []
        if not paths:
            return
        folders = list(dict.fromkeys(p.parent for p in paths))
        if _SYNCFS is not None:
            devices: dict[int, Path] = {}
            for folder in folders:
                devices.setdefault(os.stat(folder).st_dev, folder)
            for folder in devices.values():
                fd = os.open(folder, os.O_RDONLY)
                try:
                    if _SYNCFS(fd) != 0:
                        err = ctypes.get_errno()
                        raise OSError(err, os.strerror(err), str(folder))
                finally:
                    os.close(fd)
            return
        for path in [*dict.fromkeys(paths), *folders]:  # pragma: no cover - not Linux
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def resolve_workspace(arg: str | Path | None) -> Path:
    """--workspace, else $MEMBRANE_WORKSPACE, else the current folder."""
    raw = arg or os.environ.get("MEMBRANE_WORKSPACE") or "."
    path = Path(raw).resolve()
    if path.exists() and not path.is_dir():
        raise ConfigError("the workspace is not a folder", file=path)
    return path


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    @property
    def current(self) -> Path:
        return self.root / "current"

    @property
    def archive(self) -> Path:
        return self.root / "archive"

    @property
    def traces(self) -> Path:
        return self.root / "trace"

    @property
    def state(self) -> Path:
        return self.root / ".membrane"

    def require_runs(self) -> None:
        """A ConfigError (exit 2) when nothing has run here yet (there is no ledger)."""
        if not self.ledger_path.exists():
            raise ConfigError(
                "nothing has run in this workspace yet",
                file=self.root,
                hint="run `membrane batch` first, or pass --workspace",
            )

    @property
    def ledger_path(self) -> Path:
        return self.state / "ledger.sqlite"

    @property
    def inputs(self) -> Path:
        return self.state / "inputs"

    @property
    def cache(self) -> Path:
        return self.state / "cache"

    @property
    def transcripts(self) -> Path:
        return self.state / "transcripts"

    @property
    def held(self) -> Path:
        """Artifacts that passed every gate and wait for a person (never in current/)."""
        return self.state / "held"

    def trace_path(self, run_id: str) -> Path:
        return self.traces / f"{run_id}.jsonl"

    def ensure(self) -> None:
        for d in (self.scratch, self.current, self.traces, self.state, self.inputs, self.cache):
            d.mkdir(parents=True, exist_ok=True)

    def config(self) -> Config:
        if not self.config_path.is_file():
            return Config()
        try:
            text = self.config_path.read_text(encoding="utf-8")
            raw = tomllib.loads(text)
            return Config.model_validate(raw)
        except UnicodeDecodeError as exc:
            raise ConfigError(
                "is not UTF-8 text", file=self.config_path, hint="save it as UTF-8"
            ) from exc
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"line (\d+)", str(exc))
            raise ConfigError(
                f"does not parse: {exc}",
                file=self.config_path,
                line=int(m.group(1)) if m else None,
                hint="fix the TOML syntax at that line",
            ) from exc
        except ValidationError as exc:
            from harness.tomllines import key_lines, locate

            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(
                f"invalid `{where}`: {first['msg']}",
                file=self.config_path,
                line=locate(key_lines(text), first["loc"]),
            ) from exc

    def busy(self) -> bool:
        """Whether a writer (a batch, a review act) holds the workspace right now."""
        path = self.state / "lock"
        if not path.exists():
            return False
        with open(path, "rb") as fh:  # read-only: works on a read-only workspace too
            try:
                fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
            return False

    @contextmanager
    def lock(self) -> Iterator[None]:
        """One writer per workspace: a second batch fails fast instead of interleaving.
        A workspace it cannot write (read-only, full) is a StorageError naming the file."""
        try:
            self.state.mkdir(parents=True, exist_ok=True)
            fh = open(self.state / "lock", "w")  # noqa: SIM115 - closed by the with below
        except OSError as exc:
            if is_storage_errno(exc):
                raise from_os_error(exc, self.state / "lock") from exc
            raise
        with fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ConfigError(
                    "another membrane process is writing this workspace",
                    file=self.root,
                    hint="wait for it to finish",
                ) from None
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

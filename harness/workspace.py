"""The workspace: the folder membrane runs in, its layout and its `membrane.toml`.

membrane.toml      config (pack, proposer, seed, budgets)
scratch/<run_id>/  disposable staging (attempt-NN/proposal.json)
current/           the committed corpus: corpus.jsonl, artifacts/, metrics/
archive/           superseded committed versions
trace/<run_id>.jsonl
.membrane/         ledger.sqlite, inputs/ (content-addressed run inputs), caches, lock
"""

from __future__ import annotations

import fcntl
import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import ConfigError

__all__ = ["Config", "Workspace", "atomic_write", "resolve_workspace"]

CONFIG_NAME = "membrane.toml"


class Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pack: str | None = None  # pack folder, relative to the workspace
    proposer: str = "offline"
    seed: int = 0
    max_attempts: int | None = Field(default=None, ge=1, le=50)  # overrides the pack policy
    cohort_size: int = Field(default=256, ge=1, le=100_000)


def atomic_write(path: Path, data: bytes) -> None:
    """temp file, fsync, os.replace, fsync of the folder: all or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
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

    @property
    def ledger_path(self) -> Path:
        return self.state / "ledger.sqlite"

    @property
    def inputs(self) -> Path:
        return self.state / "inputs"

    @property
    def cache(self) -> Path:
        return self.state / "cache"

    def trace_path(self, run_id: str) -> Path:
        return self.traces / f"{run_id}.jsonl"

    def ensure(self) -> None:
        for d in (self.scratch, self.current, self.traces, self.state, self.inputs, self.cache):
            d.mkdir(parents=True, exist_ok=True)

    def config(self) -> Config:
        if not self.config_path.is_file():
            return Config()
        try:
            raw = tomllib.loads(self.config_path.read_text(encoding="utf-8"))
            return Config.model_validate(raw)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(
                f"does not parse: {exc}", file=self.config_path, hint="fix the TOML syntax"
            ) from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"invalid `{where}`: {first['msg']}", file=self.config_path) from exc

    @contextmanager
    def lock(self) -> Iterator[None]:
        """One writer per workspace: a second batch fails fast instead of interleaving."""
        self.state.mkdir(parents=True, exist_ok=True)
        with open(self.state / "lock", "w") as fh:
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

"""Which pack a workspace works with: `--pack`, else membrane.toml's `pack`, else the pack
its last batch ran with (the ledger remembers it)."""

from __future__ import annotations

from pathlib import Path

from harness.errors import ConfigError
from harness.ledger import Ledger
from harness.pack import Pack, load_pack
from harness.workspace import Config, Workspace

__all__ = ["workspace_pack"]


def workspace_pack(ws: Workspace, config: Config, pack_arg: str | Path | None = None) -> Pack:
    chosen: str | Path | None = pack_arg or config.pack
    if chosen is None and ws.ledger_path.exists():
        ledger = Ledger.reader(ws.ledger_path)  # reading only (works on a read-only workspace)
        try:
            chosen = ledger.last_pack()
        finally:
            ledger.close()
    if chosen is None:
        raise ConfigError("no pack given", hint="pass --pack DIR or set `pack` in membrane.toml")
    path = Path(chosen)
    return load_pack(path if path.is_absolute() or pack_arg else ws.root / path)

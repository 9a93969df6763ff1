"""`membrane report` from what the runs recorded, without the application's imports.

The report reads the ledger (`harness.report.recorded_report`); it needs neither the gates,
the proposers nor the loop, whose imports took about half of the command's time (issue 16:
the command at 2,000 artifacts ~0.6 s, was ~0.9 s). `cli.main` sends `membrane report`
here first; when the workspace's records cannot give the report (`NotRecorded`: a workspace
from an older version, or `--reaudit`), it returns None and the full command path
(`harness.commands`, `harness.api.run_report`) re-audits, saying why. Also the people's
rendering of a report, and the guard every command runs under (`guarded`).
"""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.table import Table

from harness import storage
from harness.errors import StorageError
from harness.learning import report as learn_report
from harness.learning.store import load_state
from harness.locate import workspace_pack
from harness.output import EXIT_OK, emit_json
from harness.report import NotRecorded, Report, recorded_report
from harness.workspace import Workspace, resolve_workspace

__all__ = ["guarded", "print_report", "recorded"]

T = TypeVar("T")
out = Console(highlight=False)


def guarded(root: Path, command: Callable[[], T]) -> T:
    """Run a command on the workspace `root`, its storage failures said as such: a full or
    read-only disk, or a damaged database, is a StorageError naming the file (exit 2)."""
    try:
        return command()
    except StorageError as exc:
        if exc.file is not None:
            raise
        raise StorageError(exc.message, file=root, hint=exc.hint) from exc
    except OSError as exc:  # the workspace's disk refused (read-only, full): say so, exit 2
        if not storage.is_storage_errno(exc):
            raise
        raise storage.from_os_error(exc, root) from exc
    except sqlite3.Error as exc:  # a database of the workspace the ledger did not name
        found = storage.from_sqlite_error(exc, Workspace(root).state)
        if found is None:
            raise
        raise found from exc


def recorded(args: argparse.Namespace) -> int | None:
    """`membrane report` from the records, printed; None when it needs the re-audit."""
    if args.reaudit:
        return None
    root = resolve_workspace(args.workspace)
    return guarded(root, lambda: _recorded(args, root))


def _recorded(args: argparse.Namespace, root: Path) -> int | None:
    ws = Workspace(root)
    ws.require_runs()
    try:
        rep = recorded_report(ws, workspace_pack(ws, ws.config(), args.pack))
    except NotRecorded:
        return None  # the full path re-audits and says why
    status = learn_report.status(ws, load_state(ws)[0], None, datetime.now(UTC))
    rep.learning = learn_report.report_data(ws, status)
    if args.json:
        emit_json(rep.to_dict())
    else:
        print_report(rep)
    return EXIT_OK


def print_report(rep: Report) -> None:
    """The report for people: the figures, notes, runs, costs and learning."""
    b, f = rep.baseline, rep.refined
    title = "every gate on every artifact" if rep.source == "reaudit" else "the runs' verdicts"
    table = Table(title=f"single-shot baseline vs refined ({title})")
    table.add_column("metric")
    table.add_column("baseline", justify="right")
    table.add_column("refined", justify="right")
    rows: list[tuple[str, str, str]] = [
        ("artifacts", f"{b.artifacts}", f"{f.artifacts}"),
        ("artifacts passing every gate", f"{b.passing}", f"{f.passing}"),
        ("placeholder rate", f"{b.placeholder_rate:.1%}", f"{f.placeholder_rate:.1%}"),
        ("value coherence", f"{b.value_coherence:.1%}", f"{f.value_coherence:.1%}"),
        ("RI violations", f"{b.ri_violations}", f"{f.ri_violations}"),
        ("prose: unknown entities", f"{b.prose_unknown_entities}", f"{f.prose_unknown_entities}"),
        ("prose: key coverage", f"{b.prose_coverage:.1%}", f"{f.prose_coverage:.1%}"),
        ("prose: truncated", f"{b.prose_truncated}", f"{f.prose_truncated}"),
        ("prose: mean words", f"{b.mean_words:.0f}", f"{f.mean_words:.0f}"),
        ("attempts per artifact", "1", f"{rep.mean_attempts:.2f} (max {rep.max_attempts})"),
    ]
    for row in rows:
        table.add_row(*row)
    out.print(table)
    for note in rep.notes:
        out.print(f"note: {note}", markup=False)
    out.print("runs: " + ", ".join(f"{n} {s}" for s, n in sorted(rep.runs.items())))
    _print_costs(rep)
    if rep.learning is not None:
        _print_learning(rep.learning)


def _print_learning(data: dict[str, Any]) -> None:
    """The report's learning section: reliability, overlays (stale flagged), patterns."""
    table = Table(title=f"learning ({data['records']} outcome records; membrane learn report)")
    for col in ("proposer", "runs", "reliability", "overlay"):
        table.add_column(col)
    for name, p in data["proposers"].items():
        ov = p["overlay"]
        table.add_row(
            name,
            str(p["runs"]),
            _num(p["reliability"]),
            "none"
            if ov is None
            else f"risk x{ov['risk_multiplier']}, retries {ov['max_retries']}"
            + (", approval" if ov["require_approval"] else "")
            + (" STALE" if p["stale"] else ""),
        )
    out.print(table)
    for p in data["patterns"]:
        out.print(f"pattern {p['key']}: {p['occurrences']} times", markup=False)


_SHOWN_RUN_COSTS = 20


def _print_costs(rep: Report) -> None:
    """Tokens and time per batch, and per run for the runs that called a model."""
    table = Table(title="cost per batch (model tokens and time)")
    for col in ("batch", "runs", "calls", "prompt tok", "completion tok", "model s", "wall s"):
        table.add_column(col, justify="left" if col == "batch" else "right")
    for c in rep.batch_costs:
        table.add_row(
            c.id,
            str(c.runs),
            f"{c.calls} ({c.cached_calls} cached)",
            str(c.tokens_prompt),
            str(c.tokens_completion),
            f"{c.model_seconds:.2f}",
            f"{c.wall_seconds:.2f}",
        )
    out.print(table)
    used = [c for c in rep.run_costs if c.calls]
    if not used:
        return
    runs = Table(title="cost per run (runs that called a model)")
    for col in ("run", "calls", "tokens", "model s", "wall s"):
        runs.add_column(col, justify="left" if col == "run" else "right")
    for c in used[:_SHOWN_RUN_COSTS]:
        runs.add_row(
            c.id, str(c.calls), str(c.tokens), f"{c.model_seconds:.2f}", f"{c.wall_seconds:.2f}"
        )
    out.print(runs)
    tokens = [c.tokens for c in used]
    more = (
        f"; {len(used) - _SHOWN_RUN_COSTS} more with --json" if len(used) > _SHOWN_RUN_COSTS else ""
    )
    out.print(f"per run: mean {sum(tokens) / len(tokens):.0f} tokens, max {max(tokens)}{more}")


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"

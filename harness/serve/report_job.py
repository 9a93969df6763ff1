"""`python -m harness.serve.report_job WORKSPACE`: the report's data as JSON on stdout, for
`membrane serve` (which keeps the gates' engines out of its own process). Exit 2 with the
reason on stderr when it cannot be computed."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from harness.errors import MembraneError
from harness.serve.errors import ApiError
from harness.serve.views import compute_report
from harness.workspace import Workspace


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m harness.serve.report_job WORKSPACE\n")
        return 2
    try:
        data = compute_report(Workspace(Path(argv[0])))
    except (MembraneError, ApiError) as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS))
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a process by harness.serve.views
    sys.exit(main(sys.argv[1:]))

"""`python -m bench NAME [--quick] [--json]`."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

BENCHES = {
    "loop": "bench.loop",
    "value_gate": "bench.value_gate",
    "ri_gate": "bench.ri_gate",
    "prose_gate": "bench.prose_gate",
    "outcomes": "bench.outcomes",
    "learning": "bench.learning",
    "export": "bench.export",
    "serve": "bench.serve",
    "corrections": "bench.corrections",
    "class_columns": "bench.class_columns",
    "ontology": "bench.ontology",
    "e2e": "bench.e2e",
}
RESULTS = Path(__file__).resolve().parent / "results" / "results.jsonl"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="run one benchmark",
        epilog="example:\n  python -m bench loop --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name", choices=sorted(BENCHES))
    p.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--n", type=int, metavar="N", help="corpus size, for benchmarks that take one")
    p.add_argument("--workers", type=int, metavar="N", help="e2e: judge in N worker processes")
    p.add_argument(
        "--executor", choices=("process", "ray"), help="e2e: where --workers run (ray: actors)"
    )
    p.add_argument(
        "--pairs", type=int, metavar="K",
        help="e2e: one-process / --workers 2 pairs for speedup_2_workers (default 3; median)",
    )
    args = p.parse_args(argv)
    module = importlib.import_module(BENCHES[args.name])
    extra = {k: v for k in ("n", "workers", "executor", "pairs") if (v := getattr(args, k))}
    result = module.run(quick=args.quick, **extra)
    result["at"] = datetime.now(UTC).isoformat(timespec="seconds")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with open(RESULTS, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(result, sort_keys=True) + "\n")
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        for k, v in result["figures"].items():
            print(f"{k:>28}: {v}")
        print(f"(appended to {RESULTS})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

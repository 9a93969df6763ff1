"""Benchmarks (not tests): `python -m bench NAME [--quick] [--json]`.

Each benchmark returns {"name", "params", "figures": {metric: value}}; the result is
printed (as one JSON object with --json) and appended to bench/results/results.jsonl.
"""

"""The `membrane serve` command line (kept apart from cli.py: it imports uvicorn)."""

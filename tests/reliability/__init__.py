"""The reliability suite of issue 17 (`make reliability`, `python -m tests.reliability`):
the crash matrix, the soak, and the runner that prints one table with the disk-fault,
tamper and fuzzing suites."""

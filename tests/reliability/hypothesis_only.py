"""A pytest plugin for the reliability runner's fuzzer probe: keep only the tests that
hypothesis drives (`pytest tests -p tests.reliability.hypothesis_only`)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        fn = getattr(item, "obj", None)
        (keep if getattr(fn, "is_hypothesis_test", False) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep

"""Fixtures of the harness tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import api
from tests.harness.pooled import PACK, demo_corpus


@pytest.fixture(scope="session")
def one_process_48(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(corpus, workspace): 48 demo artifacts batched in one process, cohorts of 8; what
    `--workers` and `--executor ray` must commit byte for byte."""
    base = tmp_path_factory.mktemp("one-process")
    corpus = demo_corpus(base, 48)
    result = api.run_batch(base / "ws", corpus, PACK, cohort_size=8)
    assert len(result.runs) == 48
    return corpus, base / "ws"

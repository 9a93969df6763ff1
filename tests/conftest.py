"""Shared fixtures. No test ever talks to a real model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.pack import Pack, load_pack

os.environ["MEMBRANE_ALLOW_MODEL_REQUESTS"] = "0"

ROOT = Path(__file__).resolve().parent.parent
FACILITY = ROOT / "packs" / "facility"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def facility_pack() -> Pack:
    return load_pack(FACILITY)

"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "data"


def _shared_dir() -> Path:
    env = os.environ.get("BATFEED_SHARED")
    return Path(env) if env else REPO.parent / "shared"


@pytest.fixture
def test_data() -> Path:
    """Small fixtures that always ship with the repo (tests/data)."""
    return TEST_DATA


@pytest.fixture
def shared_data() -> Path:
    """../shared/data (real traces); the test is skipped when it is absent."""
    path = _shared_dir() / "data"
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path} (set BATFEED_SHARED to its parent)")
    return path


@pytest.fixture
def kth_trace() -> Path:
    """The KTH-SP2 trace shipped in data/swf (always present)."""
    return REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"

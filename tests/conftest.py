"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Run on both paths of batfeed/kernel.py (compiled, then BATFEED_PURE=1: scripts/test.sh): the
# conformance kits (Batsim's, Maui's), the driver-equivalence tests and the hypothesis properties.
BOTH_PATHS = frozenset({
    "test_conformance.py", "test_engine_suite_replay.py", "test_engine_energy.py", "test_real_batsim.py",
    "test_engine_protocol.py", "test_engine_latency.py", "test_direct_driver.py", "test_kernel.py",
    "test_backfill_properties.py", "test_conservative_fast.py", "test_fcfs.py", "test_los.py",
    "test_maui_properties.py", "test_passes.py", "test_queue_policies.py", "test_tuned_easy.py",
    "test_maui_conformance.py", "test_maui_shortcuts.py", "test_whatif_replay.py", "test_whatif_queue.py",
    "test_lean.py", "test_ties_ocst.py", "test_ties_obps.py",
})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in BOTH_PATHS:
            item.add_marker(pytest.mark.both_paths)
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

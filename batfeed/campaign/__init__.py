"""Campaigns: traces × platforms × schedulers (option grids) × user models × seeds, run in parallel
(a local process pool or a Dask cluster), resumable, into one tidy table (``docs/campaign.md``).

    from batfeed.campaign import run_campaign
    table = run_campaign("campaigns/kth_policies.toml", "runs/kth_policies", workers=2)

The names are imported on first use (``batfeed --help`` does not load pandas).
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {"run_campaign": "core", "CampaignInterrupted": "core", "output_dir": "core", "load_spec": "spec",
          "Campaign": "model", "CampaignError": "model", "WALL_CLOCK_COLUMNS": "table"}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'batfeed.campaign' has no attribute '{name}'")
    return getattr(importlib.import_module(f"batfeed.campaign.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))

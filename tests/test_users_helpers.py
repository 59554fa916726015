"""Shared helpers of the user-model tests (tests/test_users_*.py); this module holds no test.

:func:`replay` runs a recorded trace through a user model wrapping a scheduler on the embedded
engine (dynamic jobs on, no static workload) and returns the result, the ``_jobs.csv`` rows by job
id and the layer object (whose ``model`` holds the replay state).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from batfeed.users import UserModelScheduler

from batfeed.engine import EngineConfig, SimulationResult, simulate

REPO = Path(__file__).resolve().parent.parent
SMALL_4 = REPO / "platforms" / "small_4.xml"          # 4 hosts of 1Gf, ids 0-3, zero latency
USERS_DATA = Path(__file__).resolve().parent / "data" / "users"
SIX = USERS_DATA / "six_jobs.json"
SHORTENED = USERS_DATA / "shortened.json"


def read_rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return {row["job_id"]: row for row in csv.DictReader(f)}


def replay(tmp_path: Path, trace: Path, users: str, scheduler: str = "fcfs", *, platform: Path = SMALL_4,
           ack: bool = False, reuse: bool = False, inner: Any = None, name: str = "out",
           scheduler_options: dict[str, Any] | None = None,
           **options: Any) -> tuple[SimulationResult, dict[str, dict[str, str]], UserModelScheduler]:
    opts = {"scheduler": scheduler, "users": users, "trace": str(trace),
            "scheduler_options": scheduler_options or {}, **options}
    layer = UserModelScheduler(opts, inner=inner)
    config = EngineConfig(enable_dynamic_jobs=True, acknowledge_dynamic_jobs=ack, enable_profile_reuse=reuse)
    result = simulate(platform, [], layer, export=tmp_path / name, config=config)
    c = result.counts
    assert c["submitted"] == sum(v for k, v in c.items() if k != "submitted")
    return result, read_rows(result.jobs_csv), layer


def submits(rows: dict[str, dict[str, str]]) -> dict[str, float]:
    return {jid: float(r["submission_time"]) for jid, r in sorted(rows.items(), key=lambda kv: int(kv[0]))}


def starts(rows: dict[str, dict[str, str]]) -> dict[str, float]:
    return {jid: float(r["starting_time"]) for jid, r in sorted(rows.items(), key=lambda kv: int(kv[0]))
            if r["starting_time"]}

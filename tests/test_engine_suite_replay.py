"""Scenarios of Batsim 4.2.1's own test suite, replayed: the engine sends real Batsim's messages and writes its files.

Recorded by tests/conformance/record_suite.py (real Batsim 4.2.1 with the test's batsched or pybatsim
scheduler, through a ZeroMQ proxy): parallel tasks with communications on small_platform.xml and
cluster512.xml (``parallel`` matrices, ``parallel_homogeneous``/``_total`` with com > 0, L07 latencies and
bandwidth sharing: batfeed/engine/ptask.py), composed profiles with ``repeat`` and walltimes, kills inside
sequences (JOB_KILLED's progress tree), custom mappings with several executors on one host (batsched
``filler``'s mapping; ``test_moldable_perf_degradation``), and ``--no-sched`` (batfeed/engine/batexec.py).
The replay answers each message with the scheduler's recorded reply after checking that the engine's
message equals the one Batsim sent; then ``_jobs.csv`` and ``_machine_states.csv`` must be byte-identical.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from batfeed.batsim_cli import add_batsim_parser
from batfeed.engine import EngineConfig, load_simulation
from batfeed.engine.batexec import run_batexec
from batfeed.engine.platform import load_platform
from batfeed.engine.workload_file import load_workload

SUITE = Path(__file__).resolve().parent / "data" / "engine" / "suite"
RUNS = sorted(p.name for p in SUITE.iterdir() if (p / "run.json").is_file())


class Replay:
    """A transport answering the engine with a recorded scheduler's replies, checking each message first."""

    def __init__(self, messages: list[list[Any]]):
        self.messages = messages
        self.i = 0

    def exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.i < len(self.messages), f"message {self.i}: Batsim sent only {len(self.messages)}"
        sent, reply = self.messages[self.i]
        got = _portable(json.loads(json.dumps(message)))
        sent = _portable(sent)
        if got != sent:
            pairs = zip(sent["events"], got["events"], strict=False)
            k, (a, b) = next(((k, ab) for k, ab in enumerate(pairs) if ab[0] != ab[1]), (-1, (None, None)))
            raise AssertionError(f"message {self.i} differs (now {sent['now']} / {got['now']}, "
                                 f"{len(sent['events'])} / {len(got['events'])} events); event {k}:\n"
                                 f"batsim  {str(a)[:400]}\nbatfeed {str(b)[:400]}")
        self.i += 1
        return reply

    def close(self) -> None:
        pass


def _portable(message: dict[str, Any]) -> dict[str, Any]:
    """SIMULATION_BEGINS names the workload files by their absolute paths: keep their names only."""
    for ev in message["events"]:
        if ev["type"] == "SIMULATION_BEGINS":
            ev["data"]["workloads"] = {k: Path(v).name for k, v in ev["data"]["workloads"].items()}
    return message


def _args(run: dict[str, Any], where: Path) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_batsim_parser(parser.add_subparsers())
    args = parser.parse_args(["batsim", *run["batsim_args"]])
    args.platform = str(where / args.platform)
    args.workload = [str(where / w) for w in args.workload]
    args.events = [str(where / e) for e in args.events]
    return args


@pytest.mark.parametrize("name", RUNS)
def test_replay_equals_real_batsim(tmp_path: Path, name: str) -> None:
    where = SUITE / name
    run = json.loads((where / "run.json").read_text(encoding="utf-8"))
    args = _args(run, where)
    prefix = tmp_path / "out"
    if args.no_sched:
        platform = load_platform(args.platform, args.master_host)
        run_batexec(platform, [load_workload(w, f"w{i}") for i, w in enumerate(args.workload)], prefix)
    else:
        config = EngineConfig(enable_dynamic_jobs=args.enable_dynamic_jobs,
                              acknowledge_dynamic_jobs=args.acknowledge_dynamic_jobs,
                              enable_profile_reuse=args.enable_profile_reuse,
                              forward_profiles_on_submission=args.forward_profiles_on_submission,
                              forward_unknown_events=args.forward_unknown_events, sched_config=args.sched_cfg or "")
        sim = load_simulation(args.platform, args.workload, args.events, config, args.master_host)
        replay = Replay(run["messages"])
        sim.run(replay, prefix)
        assert replay.i == len(run["messages"])
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        assert Path(f"{prefix}{suffix}").read_bytes() == (where / f"batsim{suffix}").read_bytes(), suffix


def test_the_recordings_cover_what_they_claim() -> None:
    text = {name: (SUITE / name / "run.json").read_text(encoding="utf-8") for name in RUNS}
    assert any('"current_task"' in t for t in text.values())           # a progress tree of a killed sequence
    assert any('"mapping"' in t for t in text.values())                # a custom mapping
    assert any('"--no-sched"' in t for t in text.values())
    profiles = json.loads((SUITE / "test_basic1_small-mixed-easyfast" / "test_various_profile_types.json").read_text())
    assert {p["type"] for p in profiles["profiles"].values()} >= {"parallel", "parallel_homogeneous", "composed"}

"""Options are validated for every scheduler and the user-model layer (issue 13, item 4), FCFS honours
``maintenance`` and ``on_machine_down``, and ``batfeed schedulers`` lists every option from the specs
(item 9).  Through the real CLI in a subprocess: exact one-line message, exit code, no traceback."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from batfeed.schedulers.options import show
from cli_helpers import error_line, run_cli, write_inputs

from batfeed.registry import BUILTIN

KNOWN_EASY = "backfill_policy, backfill_theta, maintenance, on_machine_down, policy, reservation, theta, ties"
POLICIES = "FCFS, LCFS, SPF, LPF, LQF, SQF, LEXP, SEXP, LRF, SRF, LAF, SAF"
LAYER = "kill_at_walltime, scheduler, scheduler_options, speed_factor, trace, users, workload_name"


def esc(text: str) -> str:
    """``text`` as a literal regex."""
    import re

    return re.escape(text)


SCHEDULER_CASES = [
    ("easy", {"polcy": "SQF"}, f"unknown option 'polcy' for Easy (did you mean 'policy'?; known: {KNOWN_EASY})"),
    ("fcfs", {"maintenence": []},
     "unknown option 'maintenence' for Fcfs (did you mean 'maintenance'?; known: maintenance, on_machine_down)"),
    ("fcfs", {"policy": "SQF"}, "unknown option 'policy' for Fcfs (known: maintenance, on_machine_down)"),
    ("conservative", {"theta": 10},
     "unknown option 'theta' for Conservative (known: maintenance, on_machine_down, policy)"),
    ("maui", {"intervall": 60},
     "unknown option 'intervall' for Maui (did you mean 'interval'?; known: config, interval, maintenance, "
     "mechanics, on_machine_down, poll)"),
    ("easy", {"theta": "abc"}, "option 'theta' for Easy must be a number of seconds >= 0 or null, got \"abc\""),
    ("easy", {"theta": -1}, "option 'theta' for Easy must be a number of seconds >= 0 or null, got -1"),
    ("easy", {"reservation": "node"},
     "option 'reservation' for Easy must be one of \"count\", \"machines\", got \"node\""),
    ("conservative", {"policy": "sepx"},
     f"option 'policy' for Conservative must be a queue policy ({POLICIES}), got \"sepx\" (did you mean \"SEXP\"?)"),
    ("easy", {"backfill_policy": 3}, f"option 'backfill_policy' for Easy must be a queue policy ({POLICIES}) or null, "
                                     "got 3"),
    ("fcfs", {"on_machine_down": "kill"},
     "option 'on_machine_down' for Fcfs must be one of \"ignore\", \"kill-resubmit\", \"kill-drop\", got \"kill\" "
     "(did you mean \"kill-drop\"?)"),
    ("fcfs", {"maintenance": 5},
     "option 'maintenance' for Fcfs must be a list of windows [{\"start\": s, \"end\": e, \"machines\": \"0-3\"}] "
     "or an events file path, or null, got 5"),
    ("maui", {"poll": "yes"}, "option 'poll' for Maui must be true or false, got \"yes\""),
    ("maui", {"interval": True}, "option 'interval' for Maui must be a number of seconds >= 0 or null, got true"),
    ("maui", {"config": 3}, "option 'config' for Maui must be the path of a maui.cfg or null, got 3"),
]


@pytest.mark.parametrize("scheduler,options,message", SCHEDULER_CASES,
                         ids=[f"{s}-{next(iter(o))}" for s, o, _ in SCHEDULER_CASES])
def test_bad_scheduler_options(tmp_path, scheduler, options, message):
    platform, workload = write_inputs(tmp_path)
    proc = run_cli(["simulate", str(platform), str(workload), "--scheduler", scheduler, "--options",
                    json.dumps(options), "-o", str(tmp_path / "out")], tmp_path)
    error_line(proc, "simulate", esc(message))
    assert not (tmp_path / "out_jobs.csv").exists()


USER_CASES = [
    ("a60", {"sped_factor": 2}, f"unknown option 'sped_factor' for user model 'a60' (did you mean 'speed_factor'?; "
                                f"known: graph; the user-model layer's: {LAYER})"),
    ("a0", {"threshold_min": 5}, f"unknown option 'threshold_min' for user model 'a0' (known: graph; the "
                                 f"user-model layer's: {LAYER})"),
    ("feedback", {"threshold_min": "1h"},
     "option 'threshold_min' for user model 'feedback' must be a number of minutes >= 0, got \"1h\""),
    ("a60", {"graph": "ful"},
     "option 'graph' for user model 'a60' must be one of \"reduced\", \"full\", got \"ful\" (did you mean \"full\"?)"),
    ("rigid", {"speed_factor": 0}, "option 'speed_factor' for the user-model layer must be a number > 0, got 0"),
    ("rigid", {"kill_at_walltime": "no"},
     "option 'kill_at_walltime' for the user-model layer must be true or false, got \"no\""),
    ("rigid", {"workload_name": "a,b"},
     "option 'workload_name' for the user-model layer must be a non-empty string without \"!\", \",\", \"\\\"\", "
     "\"\\n\", \"\\r\", got \"a,b\""),
    ("a6", {}, "unknown user model 'a6' (did you mean 'a60'?; available: rigid, feedback, a0, think-time, a60, "
              "site-phase1, site-phase2)"),
]


@pytest.mark.parametrize("model,options,message", USER_CASES,
                         ids=[f"{m}-{next(iter(o), 'model')}" for m, o, _ in USER_CASES])
def test_bad_user_model_options(tmp_path, model, options, message):
    platform, workload = write_inputs(tmp_path)
    proc = run_cli(["simulate", str(platform), str(workload), "--scheduler", "fcfs", "--users", model,
                    "--user-options", json.dumps(options), "-o", str(tmp_path / "out")], tmp_path)
    error_line(proc, "simulate", esc(message))


def test_the_wrapped_schedulers_options_are_checked_too(tmp_path):
    platform, workload = write_inputs(tmp_path)
    proc = run_cli(["simulate", str(platform), str(workload), "--scheduler", "easy", "--options", '{"thta": 5}',
                    "--users", "rigid", "-o", str(tmp_path / "out")], tmp_path)
    error_line(proc, "simulate", esc(f"unknown option 'thta' for Easy (did you mean 'theta'?; known: {KNOWN_EASY})"))


def test_schedule_command_checks_options_before_binding(tmp_path):
    proc = run_cli(["schedule", "conservative", "--socket", "tcp://127.0.0.1:1", "--options", '{"polic": "SPF"}'],
                   tmp_path, timeout=60)
    error_line(proc, "schedule", esc("unknown option 'polic' for Conservative (did you mean 'policy'?; known: "
                                     "maintenance, on_machine_down, policy)"))


def _rows(prefix: Path) -> dict[str, dict[str, str]]:
    with open(f"{prefix}_jobs.csv", newline="") as fh:
        return {r["job_id"]: r for r in csv.DictReader(fh)}


def test_fcfs_honours_maintenance(tmp_path):
    # machines 0-1 under maintenance in [20, 200), walltimes 100: job 1's span [0, 100) overlaps the window,
    # so it starts on machine 2; job 2 (2 machines) finds only machine 3 outside the window and waits, and
    # job 3 waits behind it (no backfilling).  At 10 job 2 gets 2-3; at 20 job 3 gets 2.
    platform, workload = write_inputs(tmp_path, [(1, 0, 1, 10), (2, 0, 2, 10), (3, 1, 1, 10)])
    maintenance = [{"start": 20, "end": 200, "machines": "0-1"}]
    proc = run_cli(["simulate", str(platform), str(workload), "--scheduler", "fcfs", "--options",
                    json.dumps({"maintenance": maintenance}), "-o", str(tmp_path / "m")], tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    rows = _rows(tmp_path / "m")
    assert (rows["1"]["starting_time"], rows["1"]["allocated_resources"]) == ("0.000000", "2")
    assert (rows["2"]["starting_time"], rows["2"]["allocated_resources"]) == ("10.000000", "2-3")
    assert (rows["3"]["starting_time"], rows["3"]["allocated_resources"]) == ("20.000000", "2")
    plain = run_cli(["simulate", str(platform), str(workload), "--scheduler", "fcfs", "-o", str(tmp_path / "p")],
                    tmp_path)
    assert plain.returncode == 0
    assert {k: r["allocated_resources"] for k, r in _rows(tmp_path / "p").items()} == {"1": "0", "2": "1-2", "3": "3"}


def test_fcfs_honours_on_machine_down(tmp_path):
    platform, workload = write_inputs(tmp_path, [(1, 0, 1, 50), (2, 0, 1, 50)])
    events = tmp_path / "events.txt"
    events.write_text(json.dumps({"timestamp": 10, "type": "machine_unavailable", "resources": "0"}) + "\n"
                      + json.dumps({"timestamp": 20, "type": "machine_available", "resources": "0"}) + "\n")
    proc = run_cli(["simulate", str(platform), str(workload), "--scheduler", "fcfs", "--events", str(events),
                    "--options", '{"on_machine_down": "kill-drop"}', "-o", str(tmp_path / "k")], tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    rows = _rows(tmp_path / "k")
    assert (rows["1"]["final_state"], rows["1"]["finish_time"]) == ("COMPLETED_KILLED", "10.000000")
    assert rows["2"]["final_state"] == "COMPLETED_SUCCESSFULLY"


def test_schedulers_lists_every_scheduler_and_model_from_the_specs(tmp_path):
    from batfeed.users import MODELS
    from batfeed.users.options import LAYER_SPECS

    from batfeed.registry import make_scheduler

    proc = run_cli(["schedulers"], tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    text = proc.stdout
    lines = text.splitlines()
    specs = {name: type(make_scheduler(name)).OPTIONS for name in BUILTIN}
    specs |= {name: cls.OPTIONS for name, cls in MODELS.items()}
    specs["every model"] = LAYER_SPECS
    for title, options in specs.items():
        start = next(i for i, line in enumerate(lines) if line.startswith(title) or f"/ {title}" in line)
        block = lines[start + 1: next((i for i in range(start + 1, len(lines)) if not lines[i]), len(lines))]
        names = [line.split()[0] for line in block if line.startswith("  ") and not line.startswith("   ")]
        assert names == (sorted(options) or ["(no"]), title
        for name, spec in options.items():
            assert any(line.split()[0] == name and f"default {show(spec.default)}; {spec.expected()[:20]}" in line
                       for line in block), (title, name)

"""``batfeed batsim`` (batfeed/batsim_cli.py): Batsim 4.2.1's own command line on the engine (issue 26, item 4).

A script's ``batsim -p P -w W -e PREFIX -s ENDPOINT`` runs unchanged with ``batfeed batsim`` in place of
``batsim``: same options and defaults, the scheduler at ``-s`` is connected to as Batsim does, the outputs are
the ones the engine writes for ``batfeed simulate``; options for what the engine does not model are refused
with one line naming the feature, before anything runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import CLI, error_line, run_cli, write_inputs

from batfeed.read_jobs import read_jobs_csv as read_jobs
from batfeed.runner import free_tcp_port

# the same 3 jobs on 4 hosts as cli_helpers.JOBS, plus a 4th that must wait for two machines
JOBS = [(1, 0, 1, 10), (2, 0, 1, 2), (3, 5, 1, 10), (4, 6, 3, 4)]


def _serve(tmp: Path, name: str = "easy") -> tuple[subprocess.Popen[bytes], str]:
    endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
    with open(tmp / "schedule.log", "wb") as log:
        proc = subprocess.Popen([*CLI, "schedule", name, "--socket", endpoint, "--timeout", "60"], cwd=tmp,
                                stdout=log, stderr=subprocess.STDOUT)
    return proc, endpoint


def _run_batsim(tmp: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    sched, endpoint = _serve(tmp)
    try:
        proc = run_cli(["batsim", *args, "-s", endpoint], tmp, timeout=120)
        assert sched.wait(timeout=30) == 0, (tmp / "schedule.log").read_text()
        return proc
    finally:
        if sched.poll() is None:
            sched.kill()
        sched.wait(timeout=10)


def test_batsim_command_line_gives_the_engines_outputs(tmp_path: Path) -> None:
    platform, workload = write_inputs(tmp_path, JOBS)
    events = tmp_path / "events.json"
    events.write_text('{"timestamp": 3, "type": "machine_unavailable", "resources": "3"}\n'
                      '{"timestamp": 20, "type": "machine_available", "resources": "3"}\n')
    ref = run_cli(["simulate", str(platform), str(workload), "--events", str(events), "--scheduler", "easy",
                   "-o", "ref/out"], tmp_path)
    assert ref.returncode == 0, ref.stderr
    proc = _run_batsim(tmp_path, ["-p", str(platform), "-w", str(workload), "--events", str(events),
                                  "-e", "bs/out", "--disable-schedule-tracing", "-q"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == "", "quiet: nothing on success"
    for out in ("jobs", "machine_states"):
        assert (tmp_path / "bs" / f"out_{out}.csv").read_text() == (tmp_path / "ref" / f"out_{out}.csv").read_text()
    manifest = json.loads((tmp_path / "bs" / "out_manifest.json").read_text())
    assert manifest["call"].startswith("batfeed batsim -p ")


def test_batsim_defaults_and_switches(tmp_path: Path) -> None:
    """Default prefix ``out`` (Batsim's), --disable-machine-state-tracing writes no _machine_states.csv,
    --mmax-workload keeps nb_res machines, --sched-cfg-file goes to SIMULATION_BEGINS."""
    platform, workload = write_inputs(tmp_path, JOBS)
    data = json.loads(workload.read_text())
    data["nb_res"] = 3
    workload.write_text(json.dumps(data))
    (tmp_path / "cfg.txt").write_text('{"a": 1}')
    proc = _run_batsim(tmp_path, ["-p", str(platform), "-w", str(workload), "--disable-machine-state-tracing",
                                  "--mmax-workload", "--sched-cfg-file", "cfg.txt"])
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out_jobs.csv").is_file() and not (tmp_path / "out_machine_states.csv").exists()
    assert "no Pajé trace: batfeed does not write out_schedule.trace" in proc.stderr
    manifest = json.loads((tmp_path / "out_manifest.json").read_text())
    switches = manifest["engine"]["batsim_switches"]
    assert switches["mmax"] == 3 and switches["sched_config"] == '{"a": 1}'
    assert switches["disable_machine_state_tracing"] is True
    assert {r for r in read_jobs(tmp_path / "out_jobs.csv")["allocated_resources"]} <= {"0", "1", "2", "0-2"}


@pytest.mark.parametrize("args,shown,what", [
    (["-W", "wf.xml"], "-W/--workflow", "workflows"),
    (["--WS", "wf.xml", "10"], "--WS/--workflow-start", "workflows"),
    (["--enable-redis"], "--enable-redis", "Redis"),
    (["--enable-compute-sharing"], "--enable-compute-sharing", "compute sharing"),
    (["-r", "host8:master"], "-r/--add-role-to-hosts", r"host roles given on the command line \(.*\)"),
    (["--sg-cfg", "network/model:CM02"], "--sg-cfg", r"other SimGrid settings than Batsim's \(.*\)"),
])
def test_what_the_engine_does_not_model_is_refused_in_one_line(tmp_path: Path, args: list[str], shown: str,
                                                               what: str) -> None:
    platform, workload = write_inputs(tmp_path)
    proc = run_cli(["batsim", "-p", str(platform), "-w", str(workload), *args], tmp_path, timeout=60)
    error_line(proc, "batsim", rf"{shown} needs {what}, which batfeed's engine does not model; run this simulation "
                               r"with real Batsim \(docs/engine\.md says what the engine models\)")
    assert not (tmp_path / "out_jobs.csv").exists()


def test_no_sched_runs_every_job_at_once_without_a_scheduler(tmp_path: Path) -> None:
    """Batsim's batexec mode: no socket, every job at time 0 on machines 0..res-1 (sharing them), no job rows."""
    platform, workload = write_inputs(tmp_path)
    proc = run_cli(["batsim", "-p", str(platform), "-w", str(workload), "--no-sched", "-e", "out/x"], tmp_path,
                   timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "jobs ran" in proc.stderr
    assert (tmp_path / "out/x_jobs.csv").read_text().count("\n") == 1          # the header only
    rows = (tmp_path / "out/x_machine_states.csv").read_text().splitlines()
    assert rows[0] == "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing"
    assert rows[1].startswith("0,0,0,0,") and len(rows) == 1 + 2 * 3     # a row per job start and end
    events = tmp_path / "ev.json"
    events.write_text("[]")
    proc = run_cli(["batsim", "-p", str(platform), "-w", str(workload), "--no-sched", "--events", str(events)],
                   tmp_path, timeout=60)
    error_line(proc, "batsim", r"--events with --no-sched: without a server nobody receives the events .*")


@pytest.mark.parametrize("args,pattern", [
    ([], r"-p/--platform is required \(batsim -p <platform_file> \[-w <workload_file>\.\.\.\] \.\.\.\)"),
    (["-p", "nope.xml"], r"nope\.xml: Platform file cannot be read"),
    (["-p", "{platform}", "-w", "nope.json"], r"nope\.json: Workload file cannot be read"),
    (["-p", "{platform}", "-v", "loud"], r"--verbosity must be one of quiet, network-only, information, debug "
                                         r"\(got 'loud'\)"),
    (["-p", "{platform}", "--mmax", "-1"], r"--mmax must be >= 0 \(got -1\)"),
])
def test_bad_batsim_arguments_are_one_line(tmp_path: Path, args: list[str], pattern: str) -> None:
    platform, _ = write_inputs(tmp_path)
    proc = run_cli(["batsim", *(a.format(platform=platform) for a in args)], tmp_path, timeout=60)
    error_line(proc, "batsim", pattern)


def test_versions() -> None:
    out = subprocess.run([*CLI, "batsim", "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("4.2.1 (batfeed ")
    out = subprocess.run([*CLI, "batsim", "--simgrid-version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == "3.32.0\n"

"""An exception in a scheduler's own code is one line naming the scheduler, the callback, the
simulated time, the job and the file:line, with exit code 1 and no traceback (unless --debug or
BATFEED_DEBUG=1), whatever the driver or transport (batfeed/crash.py, docs/cli.md "Errors").

Every test runs the real CLI in a subprocess (tests/cli_helpers.py) on 3 jobs on 4 hosts: w0!1 and
w0!2 submitted at t=0, w0!2 completes at t=2, w0!3 submitted at t=5.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import error_line, run_cli, write_inputs

CALLBACK_SCHED = '''\
from batfeed.schedulers.fcfs import Fcfs


class CbCrash(Fcfs):
    def {callback}(self, *args):
        helper(self)


def helper(sched):
    raise RuntimeError("boom")
'''
HELPER_LINE = 10        # the raise, in helper()

# callback -> (t, job) of its first call (FCFS on the workload of the module docstring)
CALLBACKS = {
    "onSimulationBegins": ("0.000000", ""),
    "onAfterBatsimInit": ("0.000000", ""),
    "onJobSubmission": ("0.000000", " (job w0!1)"),
    "onJobCompletion": ("2.000000", " (job w0!2)"),
    "onNoMoreJobsInWorkloads": ("5.000000", ""),
    "onNoMoreEvents": ("0.000000", ""),
}


def write_callback_sched(tmp: Path, callback: str) -> Path:
    path = tmp / "cbCrash.py"
    path.write_text(CALLBACK_SCHED.format(callback=callback))
    return path


def simulate_args(tmp: Path, scheduler: str, *extra: str) -> list[str]:
    platform, workload = write_inputs(tmp)
    return ["simulate", str(platform), str(workload), "--scheduler", scheduler, "--export", str(tmp / "out"),
            *extra]


@pytest.mark.parametrize("driver", ["direct", "pybatsim"])
@pytest.mark.parametrize("callback", list(CALLBACKS))
def test_exception_in_any_callback_is_one_line(tmp_path: Path, callback: str, driver: str) -> None:
    write_callback_sched(tmp_path, callback)
    proc = run_cli(simulate_args(tmp_path, "cbCrash.py", "--driver", driver), tmp_path)
    t, job = CALLBACKS[callback]
    error_line(proc, "simulate", re.escape(f"scheduler 'cbCrash.py' (class CbCrash) raised RuntimeError in {callback} "
                                           f"at t={t}{job}: boom [cbCrash.py:{HELPER_LINE}]"))
    assert not (tmp_path / "out_jobs.csv").exists()


def test_exception_over_zmq_is_the_same_line(tmp_path: Path) -> None:
    """The scheduler process reports it (one line, no traceback); simulate passes it on."""
    write_callback_sched(tmp_path, "onJobCompletion")
    proc = run_cli(simulate_args(tmp_path, "cbCrash.py", "--transport", "zmq", "--timeout", "60"), tmp_path)
    error_line(proc, "simulate", re.escape("scheduler 'cbCrash.py' (class CbCrash) raised RuntimeError in "
                                           f"onJobCompletion at t=2.000000 (job w0!2): boom [cbCrash.py:{HELPER_LINE}] "
                                           "(the scheduler process exited with code 1)"))


INIT_CRASH = '''\
from batsim.batsim import BatsimScheduler


class InitCrash(BatsimScheduler):
    def __init__(self, options):
        super().__init__(options)
        raise ValueError(f"bad value {options.get('x')!r} for option x")
'''


@pytest.mark.parametrize("name", ["initCrash.py", "initCrash:InitCrash"])
def test_exception_in_init(tmp_path: Path, name: str) -> None:
    (tmp_path / "initCrash.py").write_text(INIT_CRASH)
    proc = run_cli(simulate_args(tmp_path, name, "--options", '{"x": 3}'), tmp_path, env={"PYTHONPATH": str(tmp_path)})
    error_line(proc, "simulate", re.escape(f"scheduler '{name}' (class InitCrash) raised ValueError in __init__: "
                                           "bad value 3 for option x [initCrash.py:7]"))


def test_syntax_error_in_scheduler_file(tmp_path: Path) -> None:
    (tmp_path / "badSyntax.py").write_text("from batfeed.schedulers.fcfs import Fcfs\n\n"
                                           "class BadSyntax(Fcfs)\n    pass\n")
    proc = run_cli(simulate_args(tmp_path, "badSyntax.py"), tmp_path)
    error_line(proc, "simulate", r"scheduler 'badSyntax\.py' raised SyntaxError while loading: .+ \[badSyntax\.py:3\]")


def test_missing_import_in_scheduler_file(tmp_path: Path) -> None:
    (tmp_path / "missingImport.py").write_text("from batfeed.schedulers.fcfs import Fcfs\n"
                                               "import no_such_module_of_batfeed\n\n\n"
                                               "class MissingImport(Fcfs):\n    pass\n")
    proc = run_cli(simulate_args(tmp_path, "missingImport.py"), tmp_path)
    error_line(proc, "simulate", re.escape("scheduler 'missingImport.py' raised ModuleNotFoundError while loading: "
                                           "No module named 'no_such_module_of_batfeed' [missingImport.py:2]"))


def test_bare_assert_shows_its_source_line(tmp_path: Path) -> None:
    (tmp_path / "asserting.py").write_text("from batsim.batsim import BatsimScheduler\n\n\n"
                                           "class Asserting(BatsimScheduler):\n"
                                           "    def onJobSubmission(self, job):\n"
                                           "        assert job.requested_resources > 1\n")
    proc = run_cli(simulate_args(tmp_path, "asserting.py"), tmp_path)
    error_line(proc, "simulate", re.escape("scheduler 'asserting.py' (class Asserting) raised AssertionError in "
                                           "onJobSubmission at t=0.000000 (job w0!1): assert job.requested_resources "
                                           "> 1 [asserting.py:6]"))


def test_error_in_engine_call_names_user_line_via_engine(tmp_path: Path) -> None:
    """A wrong argument to a decision fails inside batfeed's facade: the user's line first, then where."""
    (tmp_path / "badAlloc.py").write_text("from batfeed.schedulers.fcfs import Fcfs\n\n\n"
                                          "class BadAlloc(Fcfs):\n"
                                          "    def onJobSubmission(self, job):\n"
                                          "        job.allocation = '0-1'\n"
                                          "        self.bs.execute_jobs([job])\n")
    proc = run_cli(simulate_args(tmp_path, "badAlloc.py"), tmp_path)
    error_line(proc, "simulate", r"scheduler 'badAlloc\.py' \(class BadAlloc\) raised AttributeError in "
                                 r"onJobSubmission at t=0\.000000 \(job w0!1\): 'str' object has no attribute '_itvs' "
                                 r"\[badAlloc\.py:7, via batfeed/engine/direct\.py:\d+\]")


SCHEDFCFS = (r"scheduler 'schedFcfs' \(class SchedFcfs\) raised AssertionError in onJobSubmission at t=0\.000000 "
             r"\(job w0!1\): Invalid start time for the allocation was given \(pybatsim's batsim\.sched API cannot "
             r"allocate at t=0: give the jobs subtimes >= 1\) \[schedulers/schedFcfs\.py:\d+, via "
             r"batsim/sched/alloc\.py:\d+\]")


@pytest.mark.parametrize("transport", ["inprocess", "zmq"])
def test_pybatsim_schedfcfs_asserting_at_t0(tmp_path: Path, transport: str) -> None:
    """pybatsim's example schedulers are the user's code: its file first, via pybatsim's assert."""
    proc = run_cli(simulate_args(tmp_path, "schedFcfs", "--transport", transport,
                                 *(["--timeout", "60"] if transport == "zmq" else [])), tmp_path)
    tail = r" \(the scheduler process exited with code 1\)" if transport == "zmq" else ""
    error_line(proc, "simulate", SCHEDFCFS + tail)


def test_user_model_layer_names_the_wrapped_scheduler(tmp_path: Path) -> None:
    write_callback_sched(tmp_path, "onJobSubmission")
    proc = run_cli(simulate_args(tmp_path, "cbCrash.py", "--users", "rigid"), tmp_path)
    error_line(proc, "simulate", re.escape("scheduler 'cbCrash.py' (class CbCrash, user model rigid) raised "
                                           "RuntimeError in onJobSubmission at t=0.000000 (job replay!1): boom "
                                           f"[cbCrash.py:{HELPER_LINE}]"))


def test_schedule_command_reports_load_errors(tmp_path: Path) -> None:
    (tmp_path / "initCrash.py").write_text(INIT_CRASH)
    proc = run_cli(["schedule", "initCrash.py", "--socket", "tcp://127.0.0.1:1", "--timeout", "5"], tmp_path)
    error_line(proc, "schedule", re.escape("scheduler 'initCrash.py' (class InitCrash) raised ValueError in "
                                           "__init__: bad value None for option x [initCrash.py:7]"))


# ------------------------------------------------------------------------------------------- --debug
@pytest.mark.parametrize("how", ["global", "after-command", "env"])
def test_debug_prints_the_traceback(tmp_path: Path, how: str) -> None:
    write_callback_sched(tmp_path, "onJobSubmission")
    args = simulate_args(tmp_path, "cbCrash.py")
    env = None
    if how == "global":
        args = ["--debug", *args]
    elif how == "after-command":
        args = [*args, "--debug"]
    else:
        env = {"BATFEED_DEBUG": "1"}
    proc = run_cli(args, tmp_path, env)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback (most recent call last):"), proc.stderr
    assert 'cbCrash.py", line 10, in helper' in proc.stderr
    assert "RuntimeError: boom" in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("batfeed simulate: error: scheduler 'cbCrash.py' (class CbCrash) raised RuntimeError")


def test_debug_over_zmq_shows_the_scheduler_process_traceback(tmp_path: Path) -> None:
    write_callback_sched(tmp_path, "onJobSubmission")
    proc = run_cli(["--debug", *simulate_args(tmp_path, "cbCrash.py", "--transport", "zmq", "--timeout", "60")],
                   tmp_path)
    assert proc.returncode == 1
    assert "--- the scheduler process's stderr ---" in proc.stderr
    child = proc.stderr.split("--- the scheduler process's stderr ---", 1)[1]
    assert "Traceback" in child and 'cbCrash.py", line 10, in helper' in child
    assert proc.stderr.strip().splitlines()[-1].endswith("(the scheduler process exited with code 1)")


def test_internal_error_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                    tmp_path: Path) -> None:
    """An exception no check anticipated (a batfeed bug) is still one line, exit 1 (in-process main())."""
    import batfeed.cli as cli
    import batfeed.crash as crash

    def broken(args: object) -> int:
        raise KeyError("surprise")

    monkeypatch.setattr(cli, "cmd_platform", broken)
    monkeypatch.setattr(crash, "_debug", False)          # restored after the test (--debug below sets it)
    monkeypatch.delenv("BATFEED_DEBUG", raising=False)
    assert cli.main(["platform", "4", "-o", str(tmp_path / "p.xml")]) == 1
    err = capsys.readouterr().err
    assert err == ("batfeed platform: internal error: KeyError: 'surprise' (a bug in batfeed? --debug or "
                   "BATFEED_DEBUG=1 prints the traceback)\n")
    assert cli.main(["--debug", "platform", "4", "-o", str(tmp_path / "p.xml")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and err.endswith("prints the traceback)\n")

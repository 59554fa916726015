"""Integration scenarios for docker/run-integration.sh (standard library, plus PyYAML for the compose files).

A scenario is a folder (``docker/scenarios/NAME``) with a ``scenario.json``::

    {"description": "...",
     "platform": "../../../platforms/small_4.xml",   # paths relative to the scenario folder
     "workload": "workload.json",
     "events": "events.txt",                        # only (and required) for variant "events"
     "scheduler": "fcfs",                           # a batfeed scheduler name, or a .py file of the folder
     "options": {},                                 # scheduler options (JSON object)
     "variant": "base",                             # base | events | dynamic -> compose override file
     "expect": {"jobs": 6, "final_states": {"REJECTED": 1, ...}, "dynamic_jobs": 0},
     "reference": "expected_jobs.csv"}              # optional: hand-computed schedule to compare with

``prepare`` copies the inputs into a work directory under the fixed names of the compose file's Batsim
command line (platform.xml, workload.json, events.txt; the scheduler file if any) and creates out/.
The Batsim command line always comes from docker/docker-compose.yml (+ the variant's override file):
``batsim-args`` rewrites it for a local ``batsim`` binary, ``simulate-args`` translates it for
batfeed's embedded engine, so the three modes of run-integration.sh run the same simulation, and
``check`` applies the same output checks whichever Batsim produced them.  Only ``batsim-args`` and
``simulate-args`` read the compose files (docker/compose_config.py, PyYAML): run them with the
repository's .venv/bin/python (run-integration.sh does); without PyYAML they fail with a one-line error.

Subcommands (errors: one line on stderr, exit 1; usage errors exit 2)::

    scenario_tool.py prepare SCENARIO WORKDIR
    scenario_tool.py get SCENARIO name|variant|options|description
    scenario_tool.py scheduler SCENARIO DATA_ROOT
    scenario_tool.py compose-files SCENARIO
    scenario_tool.py batsim-args SCENARIO DATA_DIR SOCKET
    scenario_tool.py simulate-args SCENARIO DATA_DIR
    scenario_tool.py check SCENARIO WORKDIR
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compose_config import ComposeError, service_command  # noqa: E402

BASE_COMPOSE = HERE / "docker-compose.yml"
VARIANTS = {"base": [], "events": [HERE / "compose.events.yml"], "dynamic": [HERE / "compose.dynamic.yml"]}
DATA = "/data"
FIXED_NAMES = {"platform": "platform.xml", "workload": "workload.json", "events": "events.txt"}
JOBS_HEADER = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,"
               "final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,"
               "allocated_resources,consumed_energy,metadata")
FINAL_STATES = {"COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED",
                "REJECTED"}
REFERENCE_COLUMNS = ("final_state", "starting_time", "finish_time", "allocated_resources")
# batsim flags -> batfeed simulate flags (None: dropped); see docs/cli.md
SIMULATE_FLAGS = {"--enable-dynamic-jobs", "--acknowledge-dynamic-jobs", "--enable-profile-reuse",
                  "--forward-profiles-on-submission", "--forward-unknown-events"}
SIMULATE_OPTIONS = {"-e": "--export", "--export": "--export", "--events": "--events", "--sched-cfg": "--sched-cfg",
                    "-m": "--master-host", "--master-host": "--master-host", "--mmax": "--mmax",
                    "-s": None, "--socket-endpoint": None}


class ScenarioError(Exception):
    pass


# ------------------------------------------------------------------------------------------ scenario
class Scenario:
    def __init__(self, folder: str | Path):
        self.folder = Path(folder).resolve()
        path = self.folder / "scenario.json"
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ScenarioError(f"{path}: no such scenario file") from None
        except json.JSONDecodeError as err:
            raise ScenarioError(f"{path}: invalid JSON ({err.msg}, line {err.lineno})") from None
        self.name = self.folder.name
        self.spec: dict[str, Any] = spec
        required = {"description": str, "platform": str, "workload": str, "scheduler": str, "options": dict,
                    "variant": str, "expect": dict}
        for key, kind in required.items():
            if not isinstance(spec.get(key), kind):
                raise ScenarioError(f"{path}: '{key}' must be a {kind.__name__}")
        unknown = set(spec) - set(required) - {"events", "reference"}
        if unknown:
            raise ScenarioError(f"{path}: unknown keys {sorted(unknown)}")
        if spec["variant"] not in VARIANTS:
            raise ScenarioError(f"{path}: variant must be one of {sorted(VARIANTS)}, got {spec['variant']!r}")
        if (spec["variant"] == "events") != ("events" in spec):
            raise ScenarioError(f"{path}: an 'events' file goes with (and only with) variant 'events'")
        for key in ("platform", "workload", "events", "reference"):
            if key in spec and not (self.folder / spec[key]).is_file():
                raise ScenarioError(f"{path}: {key} file not found: {self.folder / spec[key]}")
        if self.scheduler_file is not None and not self.scheduler_file.is_file():
            raise ScenarioError(f"{path}: scheduler file not found: {self.scheduler_file}")

    @property
    def variant(self) -> str:
        return self.spec["variant"]

    @property
    def scheduler_file(self) -> Path | None:
        name = self.spec["scheduler"]
        return self.folder / name if name.endswith(".py") else None

    def input(self, key: str) -> Path:
        return self.folder / self.spec[key]

    def compose_files(self) -> list[Path]:
        return [BASE_COMPOSE, *VARIANTS[self.variant]]

    def batsim_command(self) -> list[str]:
        """Batsim's arguments (without the program name) as the compose files give them."""
        return service_command(self.compose_files(), "batsim")

    def scheduler_arg(self, data_root: str) -> str:
        file = self.scheduler_file
        return f"{data_root.rstrip('/')}/{file.name}" if file else self.spec["scheduler"]

    def prepare(self, workdir: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "out").mkdir(exist_ok=True)
        for key, fixed in FIXED_NAMES.items():
            if key in self.spec:
                shutil.copyfile(self.input(key), workdir / fixed)
        if self.scheduler_file:
            shutil.copyfile(self.scheduler_file, workdir / self.scheduler_file.name)


def local_path(arg: str, data_dir: str) -> str:
    if arg == DATA or arg.startswith(DATA + "/"):
        return str(Path(data_dir).resolve()) + arg[len(DATA):]
    return arg


def batsim_args(scenario: Scenario, data_dir: str, socket: str) -> list[str]:
    """The compose Batsim command for a local batsim: /data -> data_dir, -s -> socket."""
    args = scenario.batsim_command()
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] in ("-s", "--socket-endpoint"):
            out += [args[i], socket]
            i += 2
            continue
        out.append(local_path(args[i], data_dir))
        i += 1
    return out


def simulate_args(scenario: Scenario, data_dir: str) -> list[str]:
    """The compose Batsim command as ``batfeed simulate`` arguments (same inputs, flags and outputs)."""
    return translate_to_simulate(scenario.batsim_command(), data_dir)


def translate_to_simulate(batsim_command: list[str], data_dir: str) -> list[str]:
    """Batsim arguments (paths under /data) -> ``batfeed simulate`` arguments (paths under data_dir)."""
    args = [local_path(a, data_dir) for a in batsim_command]
    platform: str | None = None
    workloads: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-p", "--platform", "-w", "--workload") or arg in SIMULATE_OPTIONS:
            if i + 1 == len(args):
                raise ScenarioError(f"batsim option {arg} has no value in the compose command")
            value = args[i + 1]
            if arg in ("-p", "--platform"):
                platform = value
            elif arg in ("-w", "--workload"):
                workloads.append(value)
            elif SIMULATE_OPTIONS[arg]:
                rest += [SIMULATE_OPTIONS[arg], value]
            i += 2
        elif arg in SIMULATE_FLAGS:
            rest.append(arg)
            i += 1
        else:
            raise ScenarioError(f"batsim argument {arg!r} has no equivalent in `batfeed simulate`")
    if platform is None or not workloads:
        raise ScenarioError("the compose Batsim command needs -p PLATFORM and -w WORKLOAD")
    return ["simulate", platform, *workloads, *rest]


# -------------------------------------------------------------------------------------------- checks
def _batsim_job_id(job_id: Any) -> str:
    text = str(job_id)
    return text.split("!", 1)[1] if "!" in text else text


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def check_outputs(scenario: Scenario, workdir: Path) -> tuple[list[str], str]:
    """Problems found in WORKDIR/out/batsim_* (empty list: all good) and a one-line summary."""
    problems: list[str] = []
    jobs_csv = workdir / "out" / "batsim_jobs.csv"
    if not jobs_csv.is_file():
        return [f"{jobs_csv}: missing (Batsim writes it at the end of the simulation)"], ""
    lines = jobs_csv.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != JOBS_HEADER:
        got = lines[0] if lines else "<empty file>"
        return [f"{jobs_csv}: header differs from Batsim's\n  expected: {JOBS_HEADER}\n  got:      {got}"], ""
    rows = list(csv.DictReader(lines))
    columns = JOBS_HEADER.split(",")

    seen: dict[tuple[str, str], dict[str, str]] = {}
    for n, row in enumerate(rows, start=2):
        where = f"{jobs_csv.name}:{n}"
        if None in row or any(row[c] is None for c in columns):
            problems.append(f"{where}: expected {len(columns)} fields")
            continue
        key = (row["workload_name"], row["job_id"])
        if key in seen:
            problems.append(f"{where}: job {key[0]}!{key[1]} appears twice")
        seen[key] = row
        state = row["final_state"]
        if state not in FINAL_STATES:
            problems.append(f"{where}: unknown final_state {state!r}")
            continue
        if (row["success"] == "1") != (state == "COMPLETED_SUCCESSFULLY") or row["success"] not in ("0", "1"):
            problems.append(f"{where}: success={row['success']} does not match final_state {state}")
        if state == "REJECTED":
            if row["starting_time"] or row["finish_time"] or row["allocated_resources"]:
                problems.append(f"{where}: a rejected job has a start, finish or allocation")
            continue
        sub, start, exe, fin = (_number(row[c]) for c in
                                ("submission_time", "starting_time", "execution_time", "finish_time"))
        if None in (sub, start, exe, fin) or not row["allocated_resources"]:
            problems.append(f"{where}: a {state} job needs numeric times and an allocation")
        elif start < sub - 1e-6 or not math.isclose(fin, start + exe, abs_tol=1e-5):
            problems.append(f"{where}: inconsistent times (submission {sub}, start {start}, execution {exe}, "
                            f"finish {fin})")

    # every job of the static workload accounted for, exactly once (Batsim names it w0)
    workload = json.loads((workdir / FIXED_NAMES["workload"]).read_text(encoding="utf-8"))
    static = {("w0", _batsim_job_id(j["id"])) for j in workload["jobs"]}
    for key in sorted(static - set(seen)):
        problems.append(f"job {key[0]}!{key[1]} of the workload is missing from {jobs_csv.name} "
                        "(neither completed nor rejected)")
    dynamic = [k for k in seen if k[0] != "w0"]
    for key in sorted(k for k in seen if k[0] == "w0" and k not in static):
        problems.append(f"{jobs_csv.name}: job {key[0]}!{key[1]} is not in the workload")
    if dynamic and scenario.variant != "dynamic":
        problems.append(f"{jobs_csv.name}: {len(dynamic)} jobs outside workload w0 without dynamic jobs")

    expect = scenario.spec["expect"]
    states: dict[str, int] = {}
    for row in rows:
        states[row["final_state"]] = states.get(row["final_state"], 0) + 1
    if "jobs" in expect and len(rows) != expect["jobs"]:
        problems.append(f"{jobs_csv.name}: {len(rows)} jobs, expected {expect['jobs']}")
    if "dynamic_jobs" in expect and len(dynamic) != expect["dynamic_jobs"]:
        problems.append(f"{jobs_csv.name}: {len(dynamic)} dynamic jobs, expected {expect['dynamic_jobs']}")
    for state, count in expect.get("final_states", {}).items():
        if states.get(state, 0) != count:
            problems.append(f"{jobs_csv.name}: {states.get(state, 0)} jobs {state}, expected {count}")

    # _schedule.csv agrees with _jobs.csv
    schedule_csv = workdir / "out" / "batsim_schedule.csv"
    if not schedule_csv.is_file():
        problems.append(f"{schedule_csv}: missing")
    else:
        srows = list(csv.DictReader(schedule_csv.read_text(encoding="utf-8").splitlines()))
        if len(srows) != 1:
            problems.append(f"{schedule_csv.name}: expected one header and one row")
        else:
            wanted = {"nb_jobs": len(rows), "nb_jobs_rejected": states.get("REJECTED", 0),
                      "nb_jobs_success": states.get("COMPLETED_SUCCESSFULLY", 0)}
            for col, value in wanted.items():
                got = _number(srows[0].get(col) or "")
                if got != value:
                    problems.append(f"{schedule_csv.name}: {col}={srows[0].get(col)}, {jobs_csv.name} says {value}")

    if "reference" in scenario.spec:
        problems += compare_reference(scenario.input("reference"), seen)

    summary = (f"{len(rows)} jobs accounted for ({len(static)} static, {len(dynamic)} dynamic): "
               + ", ".join(f"{s}={c}" for s, c in sorted(states.items())))
    return problems, summary


def compare_reference(reference: Path, seen: dict[tuple[str, str], dict[str, str]]) -> list[str]:
    problems = []
    expected = {(r["workload_name"], r["job_id"]): r
                for r in csv.DictReader(reference.read_text(encoding="utf-8").splitlines())}
    if set(expected) != set(seen):
        problems.append(f"{reference.name}: jobs differ (missing {sorted(set(expected) - set(seen))}, "
                        f"extra {sorted(set(seen) - set(expected))})")
    for key in sorted(set(expected) & set(seen)):
        for col in REFERENCE_COLUMNS:
            want, got = expected[key][col], seen[key][col]
            a, b = _number(want), _number(got)
            same = math.isclose(a, b, abs_tol=1e-5) if a is not None and b is not None else want == got
            if not same:
                problems.append(f"job {key[0]}!{key[1]}: {col} = {got!r}, reference {reference.name} says {want!r}")
    return problems


# ------------------------------------------------------------------------------------------------ CLI
USAGE = __doc__.split("Subcommands (errors: one line on stderr, exit 1; usage errors exit 2)::")[1]


def main(argv: list[str]) -> int:
    arity = {"prepare": 2, "get": 2, "scheduler": 2, "compose-files": 1, "batsim-args": 3, "simulate-args": 2,
             "check": 2}
    if not argv or argv[0] not in arity or len(argv) != arity[argv[0]] + 1:
        print(f"usage:{USAGE}", file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    try:
        scenario = Scenario(args[0])
        if cmd == "prepare":
            scenario.prepare(Path(args[1]))
        elif cmd == "get":
            field = args[1]
            if field == "name":
                print(scenario.name)
            elif field == "options":
                print(json.dumps(scenario.spec["options"], separators=(",", ":")))
            elif field in ("variant", "description"):
                print(scenario.spec[field])
            else:
                raise ScenarioError(f"unknown field {field!r}")
        elif cmd == "scheduler":
            print(scenario.scheduler_arg(args[1]))
        elif cmd == "compose-files":
            print("\n".join(str(p) for p in scenario.compose_files()))
        elif cmd == "batsim-args":
            print("\n".join(batsim_args(scenario, args[1], args[2])))
        elif cmd == "simulate-args":
            print("\n".join(simulate_args(scenario, args[1])))
        elif cmd == "check":
            problems, summary = check_outputs(scenario, Path(args[1]))
            if problems:
                print(f"FAILED {scenario.name}: {len(problems)} problem(s) in {args[1]}/out", file=sys.stderr)
                for p in problems:
                    print(f"  - {p}", file=sys.stderr)
                return 1
            print(f"ok {scenario.name}: {summary}")
    except (ScenarioError, ComposeError, OSError, ValueError, KeyError) as err:
        print(f"scenario_tool.py {cmd}: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

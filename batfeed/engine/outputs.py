"""``PREFIX_jobs.csv`` and ``PREFIX_schedule.csv`` exactly as Batsim 4.2 writes them.

Follows Batsim's ``JobsTracer::write_job`` / ``finalize`` (reference §10): one row per job in
completion/rejection order, doubles printed like C++ ``std::to_string`` (``%f``), rejected
jobs with empty time columns, ``consumed_energy`` -1 without energy, quoted metadata; the
schedule file is one header and one row with keys in lexicographic order, means divided by
the number of jobs *including* rejected ones, makespan measured from time 0.
"""

from __future__ import annotations

import math
from pathlib import Path

from batfeed.engine.machines import COMPUTING, IDLE, UNAVAILABLE
from batfeed.engine.workload import REJECTED, SUCCESS, Job

JOBS_COLUMNS = ("job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
                "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
                "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
                "metadata")
JOBS_HEADER = ",".join(JOBS_COLUMNS)


def cdiv(a: float, b: float) -> float:
    """IEEE division as C does it (x/0 = ±inf, 0/0 = NaN) instead of raising."""
    if b:
        return a / b
    if a == 0 or math.isnan(a):
        return -math.nan  # glibc prints 0.0/0.0 as "-nan"
    return math.copysign(math.inf, a)


def fmt(x: float) -> str:
    """C++ ``std::to_string(double)``."""
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return f"{x:f}"


class JobsTracer:
    """Collects the finished jobs (completion/rejection order) and the counts behind ``_schedule.csv``.

    Rows are formatted only when a file is written (:meth:`write_jobs_csv`); in-memory runs read
    :attr:`jobs` or :meth:`columns` instead.
    """

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.nb_jobs = self.nb_finished = self.nb_success = self.nb_killed = self.nb_rejected = 0
        self.makespan = 0.0
        # with -E, the consumed_energy column (job id -> "%Lf" text, batfeed.engine.energy); else -1 for all
        self.energy: dict[str, str] | None = None

    def write_job(self, job: Job) -> None:
        self.jobs.append(job)
        self.nb_jobs += 1
        if job.state == REJECTED:
            self.nb_rejected += 1
            return
        self.nb_finished += 1
        if job.state == SUCCESS:
            self.nb_success += 1
        else:
            self.nb_killed += 1
        if job.runtime == 0:
            job.runtime = 1e-5     # Batsim: "computed in null time. Putting epsilon instead."
        finish = job.start + job.runtime
        if finish > self.makespan:
            self.makespan = finish

    def rows(self):
        """The ``_jobs.csv`` data lines, formatted like Batsim's JobsTracer::write_job."""
        energy = self.energy
        for job in self.jobs:
            head = (f"{job.name},{job.workload},{job.profile},{job.subtime:f},{job.requested_resources},"
                    f"{job.walltime:f},")
            if job.state == REJECTED:
                yield f'{head}0,{REJECTED},,,,,,,,,"{job.metadata}"'
                continue
            start, runtime, sub = job.start, job.runtime, job.subtime
            finish = start + runtime
            turnaround = finish - sub
            yield (f"{head}{1 if job.state == SUCCESS else 0},{job.state},{start:f},{runtime:f},{finish:f},"
                   f"{start - sub:f},{turnaround:f},{fmt(cdiv(turnaround, runtime))},{job.alloc},"
                   f"{'-1.000000' if energy is None else energy.get(job.id, '-1.000000')},"
                   f'"{job.metadata}"')

    def write_jobs_csv(self, path: str | Path) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(JOBS_HEADER + "\n")
            for row in self.rows():
                fh.write(row)
                fh.write("\n")

    def _finished(self) -> tuple[list[float], list[float], list[float]]:
        waits, turns, slows = [], [], []
        for job in self.jobs:
            if job.state != REJECTED:
                finish = job.start + job.runtime
                waits.append(job.start - job.subtime)
                t = finish - job.subtime
                turns.append(t)
                slows.append(cdiv(t, job.runtime))
        return waits, turns, slows

    def schedule_values(self, *, nb_machines: int, machine_time: dict[str, float], version: str,
                        scheduling_time: float, simulation_time: float,
                        energy: dict[str, str] | None = None) -> dict[str, str]:
        """The ``_schedule.csv`` row; ``energy``: the values of a ``-E`` run (``consumed_joules``,
        ``nb_machine_switches``, ``nb_grouped_switches``), whose ``machine_time`` has the sleeping and
        switching states too."""
        n = self.nb_jobs
        waits, turnarounds, slowdowns = self._finished()

        def mean(values: list[float]) -> float:
            return cdiv(math.fsum(values), n)
        values = {
            "batsim_version": version,
            "consumed_joules": fmt(0.0),
            "makespan": fmt(self.makespan),
            "max_slowdown": fmt(max(slowdowns, default=0.0)),
            "max_turnaround_time": fmt(max(turnarounds, default=0.0)),
            "max_waiting_time": fmt(max(waits, default=0.0)),
            "mean_slowdown": fmt(mean(slowdowns)),
            "mean_turnaround_time": fmt(mean(turnarounds)),
            "mean_waiting_time": fmt(mean(waits)),
            "nb_computing_machines": str(nb_machines),
            "nb_grouped_switches": "0",
            "nb_jobs": str(n),
            "nb_jobs_finished": str(self.nb_finished),
            "nb_jobs_killed": str(self.nb_killed),
            "nb_jobs_rejected": str(self.nb_rejected),
            "nb_jobs_success": str(self.nb_success),
            "nb_machine_switches": "0",
            "scheduling_time": fmt(scheduling_time),
            "simulation_time": fmt(simulation_time),
            "success_rate": fmt(cdiv(self.nb_success, n)),
            "time_computing": fmt(machine_time[COMPUTING]),
            "time_idle": fmt(machine_time[IDLE]),
            "time_sleeping": fmt(machine_time.get("sleeping", 0.0)),
            "time_switching_off": fmt(machine_time.get("switching_off", 0.0)),
            "time_switching_on": fmt(machine_time.get("switching_on", 0.0)),
            "time_unavailable": fmt(machine_time[UNAVAILABLE]),
        }
        if energy:
            values.update(energy)
        return dict(sorted(values.items()))

    @staticmethod
    def write_schedule_csv(path: str | Path, values: dict[str, str]) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(",".join(values) + "\n")
            fh.write(",".join(values.values()) + "\n")

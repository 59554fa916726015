"""``PREFIX_jobs.csv`` and ``PREFIX_schedule.csv`` exactly as Batsim 4.2 writes them.

Follows Batsim's ``JobsTracer::write_job`` / ``finalize`` (reference §10): one row per job in
completion/rejection order, doubles printed like C++ ``std::to_string`` (``%f``), rejected
jobs with empty time columns, ``consumed_energy`` -1 without energy, quoted metadata; the
schedule file is one header and one row with keys in lexicographic order, means divided by
the number of jobs *including* rejected ones, makespan measured from time 0.
"""

from __future__ import annotations

import math
import os
from array import array
from pathlib import Path
from typing import TextIO

from batfeed.engine.machines import COMPUTING, IDLE, UNAVAILABLE
from batfeed.engine.workload import REJECTED, SUCCESS, Job

JOBS_COLUMNS = ("job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
                "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
                "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy",
                "metadata")
JOBS_HEADER = ",".join(JOBS_COLUMNS)
# a row (%f is C++'s std::to_string(double), as fmt); one %-format is faster than an f-string of as many fields
_ROW = '%s,%s,%s,%f,%s,%f,%s,%s,%f,%f,%f,%f,%f,%s,%s,%s,"%s"'
_REJECTED_ROW = f'%s,%s,%s,%f,%s,%f,0,{REJECTED},,,,,,,,,"%s"'


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
    """Streams ``_jobs.csv`` (completion/rejection order) and keeps what ``_schedule.csv`` needs.

    Like Batsim's ``JobsTracer::write_job``, a finished job's row is formatted when it is written, into
    ``PREFIX_jobs.csv.part`` (:meth:`open`), renamed ``PREFIX_jobs.csv`` by :meth:`finish` at the end of
    the run (:meth:`discard` removes it when the run aborts). Besides the counts, only the waiting and
    turnaround times and slowdowns of the finished jobs are kept (8 bytes each, for the exact means and
    the maxima), so the engine can forget a finished job. Without a file, no row is formatted;
    :attr:`jobs` (the finished jobs in order) is kept only when asked for (``keep_jobs``, in-memory runs
    that have no other list of their jobs, :mod:`batfeed.api`).
    """

    def __init__(self, keep_jobs: bool = False) -> None:
        self.jobs: list[Job] | None = [] if keep_jobs else None
        self.nb_jobs = self.nb_finished = self.nb_success = self.nb_killed = self.nb_rejected = 0
        self.makespan = 0.0
        self.waits, self.turnarounds, self.slowdowns = array("d"), array("d"), array("d")
        # with -E, the consumed_energy column (job id -> "%Lf" text, batfeed.engine.energy), known before the
        # job is written (its executor ends before JOB_COMPLETED reaches the server); else -1 for all
        self.energy: dict[str, str] | None = None
        self._fh: TextIO | None = None
        self.path: Path | None = None            # the PREFIX_jobs.csv being written (as .part until finish)

    # ------------------------------------------------------------------ the stream
    def open(self, path: str | Path) -> None:
        """Start ``path`` (written as ``path.part``, renamed by :meth:`finish`) with the header."""
        self.path = Path(path)
        self._fh = open(self._part(), "w", encoding="utf-8", buffering=1 << 16)
        self._fh.write(JOBS_HEADER + "\n")

    def _part(self) -> Path:
        assert self.path is not None
        return self.path.with_name(self.path.name + ".part")

    def finish(self) -> Path | None:
        """Close the stream and give the file its name; returns it (None without a file)."""
        if self._fh is None:
            return None
        fh, self._fh = self._fh, None
        fh.close()
        os.replace(self._part(), self.path)   # type: ignore[arg-type]
        return self.path

    def discard(self) -> None:
        """An aborted run: close and remove the partial ``.part`` file (an older ``PREFIX_jobs.csv`` stays)."""
        if self._fh is None:
            return
        fh, self._fh = self._fh, None
        fh.close()
        self._part().unlink(missing_ok=True)

    def write_jobs_csv(self, path: str | Path) -> None:
        """A ``_jobs.csv`` of the jobs written so far without a stream (its header only when none were)."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(JOBS_HEADER + "\n")
            fh.writelines(self.row(job) + "\n" for job in self.jobs or ())

    # ------------------------------------------------------------------ one finished job
    def write_job(self, job: Job) -> None:
        if self.jobs is not None:
            self.jobs.append(job)
        self.nb_jobs += 1
        if job.state == REJECTED:
            self.nb_rejected += 1
        else:
            self.nb_finished += 1
            if job.state == SUCCESS:
                self.nb_success += 1
            else:
                self.nb_killed += 1
            if job.runtime == 0:
                job.runtime = 1e-5     # Batsim: "computed in null time. Putting epsilon instead."
            start, sub, runtime = job.start, job.subtime, job.runtime
            finish = start + runtime
            if finish > self.makespan:
                self.makespan = finish
            t = finish - sub
            self.waits.append(start - sub)
            self.turnarounds.append(t)
            self.slowdowns.append(t / runtime if runtime else cdiv(t, runtime))
        if self._fh is not None:
            self._fh.write(self.row(job) + "\n")
        elif self.energy and self.jobs is None:       # -E without a file: nothing reads it
            self.energy.pop(job.id, None)

    def row(self, job: Job) -> str:
        """The job's ``_jobs.csv`` data line, formatted like Batsim's JobsTracer::write_job."""
        if job.state == REJECTED:
            return _REJECTED_ROW % (job.name, job.workload, job.profile, job.subtime, job.requested_resources,
                                    job.walltime, job.metadata)
        start, runtime, sub = job.start, job.runtime, job.subtime
        finish = start + runtime
        turnaround = finish - sub
        ivs = job.intervals
        if len(ivs) == 1:                     # most jobs: Job.alloc without its generator
            a, b = ivs[0]
            alloc = f"{a}-{b}" if b > a else str(a)
        else:
            alloc = job.alloc
        stretch = turnaround / runtime if runtime else cdiv(turnaround, runtime)
        energy = self.energy
        return _ROW % (job.name, job.workload, job.profile, sub, job.requested_resources, job.walltime,
                       1 if job.state == SUCCESS else 0, job.state, start, runtime, finish, start - sub, turnaround,
                       f"{stretch:f}" if stretch == stretch else fmt(stretch), alloc,
                       "-1.000000" if energy is None else energy.pop(job.id, "-1.000000"), job.metadata)

    def schedule_values(self, *, nb_machines: int, machine_time: dict[str, float], version: str,
                        scheduling_time: float, simulation_time: float,
                        energy: dict[str, str] | None = None) -> dict[str, str]:
        """The ``_schedule.csv`` row; ``energy``: the values of a ``-E`` run (``consumed_joules``,
        ``nb_machine_switches``, ``nb_grouped_switches``), whose ``machine_time`` has the sleeping and
        switching states too."""
        n = self.nb_jobs
        waits, turnarounds, slowdowns = self.waits, self.turnarounds, self.slowdowns

        def mean(values: array[float]) -> float:
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

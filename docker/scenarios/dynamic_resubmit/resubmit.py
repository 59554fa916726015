"""Toy user model for the dynamic-jobs variant (a stand-in until batfeed's user models, issue 5).

FCFS on the lowest-numbered free machines.  Each time a job of the static workload completes, its
"user" at once submits one follow-up job (same number of machines, 10 s) through Batsim's dynamic
jobs: REGISTER_PROFILE ``dyn/p<id>`` (one profile per job: Batsim 4 garbage-collects a profile once
a job using it is gone) then REGISTER_JOB ``dyn!<id>``.  Once every static job is done, NOTIFY
``registration_finished`` lets Batsim end the simulation.

Needs Batsim's ``--enable-dynamic-jobs`` without acknowledgements (docker/compose.dynamic.yml).
Only pybatsim is used, so the file runs with ``batfeed schedule /data/resubmit.py``, ``batfeed simulate
--scheduler resubmit.py`` and ``pybatsim resubmit.py -t 0`` alike (class ``Resubmit``: pybatsim's
file-name convention).
"""

from __future__ import annotations

from batsim.batsim import BatsimScheduler
from procset import ProcSet

FOLLOW_UP_DELAY = 10.0


class Resubmit(BatsimScheduler):
    def onSimulationBegins(self):
        self.nb_machines = self.bs.nb_compute_resources
        self.free = ProcSet((0, self.nb_machines - 1))
        self.queue = []
        self.static_submitted = 0
        self.static_done = 0
        self.no_more_static = False
        self.registration_finished = False

    def onJobSubmission(self, job):  # static jobs only (no acknowledgement of dynamic ones)
        self.static_submitted += 1
        if not 0 < job.requested_resources <= self.nb_machines:
            self.bs.reject_jobs([job])
            self.static_done += 1
        else:
            self.queue.append(job)

    def onJobCompletion(self, job):
        self.free |= job.allocation
        if job.workload == "w0":
            self.static_done += 1
            name = job.id.split("!", 1)[1]
            self.bs.register_profiles("dyn", {f"p{name}": {"type": "delay", "delay": FOLLOW_UP_DELAY}})
            self.queue.append(self.bs.register_job(f"dyn!{name}", job.requested_resources, -1, f"p{name}"))

    def onNoMoreJobsInWorkloads(self):
        self.no_more_static = True

    def onNoMoreEvents(self):
        started = []
        while self.queue and self.queue[0].requested_resources <= len(self.free):
            job = self.queue.pop(0)
            job.allocation = ProcSet(*list(self.free)[:job.requested_resources])
            self.free -= job.allocation
            started.append(job)
        if started:
            self.bs.execute_jobs(started)
        if self.no_more_static and self.static_done == self.static_submitted and not self.registration_finished:
            self.bs.notify_registration_finished()
            self.registration_finished = True

"""A job's executor actor for the profiles that take several steps: Batsim 4.2's ``execute_task``.

Batsim runs a job in one actor (``execute_job_process``, ``src/jobs_execution.cpp``) that executes its
profile's task tree (``initialize_sequential_tasks``): a ``composed`` profile runs its ``seq`` ``repeat``
times, each sub-profile in turn, and stops at the first one that does not return 0; a ``delay`` leaf sleeps
(``do_delay_task``), a parallel leaf runs an ``L07Action`` and waits for it (``execute_parallel_task``,
``ptask->wait_for(remaining_time)`` when the job has a walltime).  The walltime is one budget
(``remaining_time``) that every leaf uses up, with Batsim's own arithmetic (a delay leaf subtracts its
delay, a parallel leaf the time it waited).

:meth:`Executor.run` is that recursion as a generator: it yields what the actor waits for next —
``("sleep", seconds)`` or ``("ptask", profile, timeout)`` (timeout < 0: none) — and is resumed with how the
wait ended (``"done"`` or ``"timeout"``); it returns the job's return code (0 success, > 0 failed, -1
walltime reached).  :meth:`Executor.progress` is the task tree a JOB_KILLED reports
(``generate_task_tree`` in ``src/protocol.cpp``).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from batfeed.engine.workload import Profile

Request = tuple[Any, ...]


class Executor:
    """The state of one job's executor: its walltime budget and where it is in its task tree."""

    __slots__ = ("clock", "hosts", "remaining", "stack", "leaf", "leaf_start", "leaf_work", "serial", "gen")

    def __init__(self, profile: Profile, walltime: float, clock: Callable[[], float], hosts: list[int]):
        self.clock = clock
        self.hosts = hosts                # the machine of each executor (rank) of its parallel tasks
        self.remaining = walltime        # remaining_time: < 0 without walltime
        self.stack: list[list[Any]] = []  # the composed profiles being run: [profile, current_task_index]
        self.leaf: Profile | None = None  # the leaf being run, since leaf_start
        self.leaf_start = -1.0
        self.leaf_work: Any = None        # a delay leaf's delay; a parallel leaf's timer entry
        self.serial = 0                   # the wait in progress (a timer of an older wait is stale)
        self.gen: Generator[Request, str, int] = self.run(profile)

    def run(self, prof: Profile) -> Generator[Request, str, int]:
        """``execute_task``."""
        if prof.type == "composed":
            node = [prof, -1]
            self.stack.append(node)
            subs = prof.subs
            for it in range(prof.repeat):
                for i, sub in enumerate(subs):
                    node[1] = it * len(subs) + i
                    ret = yield from self.run(sub)
                    if ret != 0:
                        return ret
            self.stack.pop()
            return prof.ret
        self.leaf, self.leaf_start = prof, self.clock()
        if prof.type == "delay":
            self.leaf_work = prof.work
            rem = self.remaining
            if rem < 0 or prof.work < rem:           # do_delay_task
                yield ("sleep", prof.work)
                if self.remaining > 0:
                    self.remaining -= prof.work
                return prof.ret
            yield ("sleep", rem)
            self.remaining = 0.0
            return -1
        before = self.clock()
        if self.remaining < 0:                       # execute_parallel_task
            how = yield ("ptask", prof, -1.0)
        else:
            how = yield ("ptask", prof, self.remaining)
            self.remaining = self.remaining - (self.clock() - before)
        return -1 if how == "timeout" else prof.ret

    def progress(self, leaf_progress: float) -> dict[str, Any]:
        """The task tree of a killed job, ``leaf_progress`` being its running leaf's."""
        tree: dict[str, Any] = {"profile_name": self.leaf.name if self.leaf else "", "progress": leaf_progress}
        for node in self.stack[::-1]:          # [profile, index] (mypyc 2.4 crashes on reversed() here)
            prof, index = node[0], node[1]
            tree = {"profile_name": prof.name, "current_task_index": index, "current_task": tree}
        return tree

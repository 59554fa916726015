"""Rigid replay: every job is submitted at its recorded time a_i, whatever the system does.

The open-loop baseline of *Replay with Feedback* (models.md §D): â_i = a_i, so every lateness is 0.
Through the user-model layer the jobs reach the scheduler in Batsim's static order (submit time,
then id string), so a rigid replay schedules exactly like a static run of the same workload.
"""

from __future__ import annotations

from batfeed.users.base import UserModel


class RigidReplay(UserModel):
    name = "rigid"

    def start(self) -> None:
        for j in self.trace.jobs:
            self.release(j.subtime, j.index)

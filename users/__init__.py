"""User-behaviour models that replay a recorded trace through Batsim's dynamic job registration.

- :mod:`batfeed.users.base`: the layer that wraps any scheduler (:class:`UserModelScheduler`);
- :mod:`batfeed.users.replay`: rigid replay (recorded submission times);
- :mod:`batfeed.users.feedback`: replay with feedback (sessions, think times), a0 and a60;
- :mod:`batfeed.users.sessions`: session partitioning and dependency graphs;
- :mod:`batfeed.users.trace`: reading the recorded trace.
"""

from __future__ import annotations

from batfeed.users.base import UserModel, UserModelError, UserModelScheduler, make_model
from batfeed.users.feedback import A60, FeedbackReplay, ThinkTimeOnly
from batfeed.users.replay import RigidReplay

# name -> model class ("--users NAME"); a0/a60 fix the session threshold, feedback takes threshold_min
MODELS: dict[str, type[UserModel]] = {
    "rigid": RigidReplay,
    "feedback": FeedbackReplay,
    "a0": ThinkTimeOnly,
    "think-time": ThinkTimeOnly,
    "a60": A60,
}

__all__ = ["MODELS", "A60", "FeedbackReplay", "RigidReplay", "ThinkTimeOnly", "UserModel", "UserModelError",
           "UserModelScheduler", "make_model"]

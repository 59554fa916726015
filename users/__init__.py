"""User-behaviour models that replay a recorded trace through Batsim's dynamic job registration.

- :mod:`batfeed.users.base`: the layer that wraps any scheduler (:class:`UserModelScheduler`);
- :mod:`batfeed.users.replay`: rigid replay (recorded submission times);
- :mod:`batfeed.users.feedback`: replay with feedback (sessions, think times), a0 and a60;
- :mod:`batfeed.users.sessions`: session partitioning and dependency graphs;
- :mod:`batfeed.users.site`: Shmueli's site-level users (Phase-1, Phase-2), which generate their jobs;
- :mod:`batfeed.users.trace`: reading the recorded trace.
"""

from __future__ import annotations

from batfeed.users.base import UserModel, UserModelError, UserModelScheduler, make_model
from batfeed.users.feedback import A60, FeedbackReplay, ThinkTimeOnly
from batfeed.users.replay import RigidReplay
from batfeed.users.site import SitePhase1, SitePhase2

# name -> model class ("--users NAME"); a0/a60 fix the session threshold, feedback takes threshold_min
MODELS: dict[str, type[UserModel]] = {
    "rigid": RigidReplay,
    "feedback": FeedbackReplay,
    "a0": ThinkTimeOnly,
    "think-time": ThinkTimeOnly,
    "a60": A60,
    "site-phase1": SitePhase1,
    "site-phase2": SitePhase2,
}

__all__ = ["MODELS", "A60", "FeedbackReplay", "RigidReplay", "SitePhase1", "SitePhase2", "ThinkTimeOnly", "UserModel",
           "UserModelError", "UserModelScheduler", "make_model"]

"""Option specs of the user-model layer and of the user models (:mod:`batfeed.schedulers.options`)."""

from __future__ import annotations

from batfeed.schedulers.options import Option

LAYER_SPECS: dict[str, Option] = {o.name: o for o in (
    Option("scheduler", "string", "fcfs", "the wrapped scheduler (a name as for --scheduler)"),
    Option("scheduler_options", "object", {}, "the wrapped scheduler's options", nullable=True),
    Option("users", "string", None, "user model: rigid, feedback, a0 (think-time), a60, site-phase1, "
           "site-phase2 (required)"),
    Option("trace", "path", None, "recorded workload (JSON, .json.gz or SWF) the model replays (required)"),
    Option("workload_name", "string", "replay", "Batsim workload of the registered jobs (_jobs.csv's "
           "workload_name)", forbid="!,\"\n\r"),
    Option("speed_factor", "number", 1.0, "platform speed ratio: run times divided by it, walltimes kept",
           minimum=0, above=True),
    Option("kill_at_walltime", "bool", True, "false: jobs that the speed factor pushes past their walltime get "
           "walltime = run time + 1 s instead of being killed"),
)}

THRESHOLD = Option("threshold_min", "number", 60.0, "session threshold: a new session starts when the "
                   "inter-arrival is >= this", minimum=0, unit="minutes")
GRAPH = Option("graph", "choice", "reduced", "dependency graph: reduced (transitive reduction) or full "
               "(every earlier session)", choices=("reduced", "full"))

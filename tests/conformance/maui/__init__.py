"""Maui conformance kit: batfeed's ``maui`` scheduler against the reference Maui 3 simulator, job by job.

- :mod:`conformance.maui.scenarios` — the scenarios (nodes, polling interval, maui.cfg lines, a seeded
  job list with users/groups), kept as source;
- :mod:`conformance.maui.traces` — Maui's v230 resource/workload traces, its maui.cfg, and the parser of
  ``stats/simstat.out``;
- :mod:`conformance.maui.record` — runs a Maui simulator binary (``$MAUI``) on the scenarios and stores
  Maui's start time per job in ``tests/data/maui_ref/<name>.csv``;
- :mod:`conformance.maui.compare` — runs batfeed's ``maui`` scheduler on a scenario (the normal
  ``run_simulation`` path) and compares its starts with a recording (``tests/test_maui_conformance.py``).

The reference simulator is built outside the repository (TempleHPC/maui-scheduler c486472 with the
trace-time patch: ``../shared/tools/maui-ref/README.md``); only the recordings are committed.
"""

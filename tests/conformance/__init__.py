"""Conformance kit: compare batfeed's embedded engine with real Batsim 4.2.1, message by message.

- :mod:`conformance.probe` — a deterministic, order-sensitive raw Batsim-4 scheduler (``Probe``), its
  ZeroMQ server (``serve``) and a CLI to run it against a real Batsim;
- :mod:`conformance.scenarios` — seeded and hand-written scenarios (platform, workloads, events files,
  Batsim switches, probe options);
- :mod:`conformance.record` — runs real Batsim on scenarios and stores the streams and outputs in
  ``tests/data/conformance/<name>/``;
- :mod:`conformance.compare` — loading recordings, the in-process transport and the comparisons used
  by ``tests/test_conformance.py``.

Import it as ``conformance`` (pytest puts ``tests/`` on ``sys.path``; the scripts do it themselves).
"""

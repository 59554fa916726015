"""Queue-ordering policies of Gaussier, Lelong, Reis, Trystram, *Online Tuning of EASY-Backfilling
using Queue Reordering Policies* (models.md §A, table of the 12 policies).

Every key uses the requested time p̃ (walltime; ``inf`` when the job has none) and the requested
number of machines q, never the actual runtime; the front of the queue is the smallest key.  Ties
are broken by submission order (Batsim's order: submit time, then job id string), so sorting is
stable.  ``SEXP``/``LEXP`` depend on the current time (wait = now − r) and are re-sorted at each
decision; the others are static and kept in a sorted index.

A key function receives the queue entry (attributes ``r``, ``p``, ``q``, ``seq`` and the pybatsim
``job`` with its custom fields in ``job.json_dict``) and ``now``::

    register_policy("BIGUSERLAST", lambda e, now: e.job.json_dict.get("user") == "u1")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class Policy(NamedTuple):
    name: str
    key: Callable[[Any, float], Any]
    dynamic: bool
    # optional vectorised form of a dynamic float key: (submit times r, requested times p, now) -> keys,
    # numpy arrays, bitwise equal to ``key`` entry by entry (the queue re-keys with it in one pass)
    vkey: Callable[[Any, Any, float], Any] | None = None


def _exp(e: Any, now: float) -> float:
    """Expansion factor (wait + p̃) / p̃ = 1 + wait / p̃ (1 for a job without walltime)."""
    return 1.0 + (now - e.r) / e.p


POLICIES: dict[str, Policy] = {}


def register_policy(name: str, key: Callable[[Any, float], Any], dynamic: bool = False) -> Policy:
    """Add (or replace) a policy; ``dynamic`` keys depend on ``now`` and are recomputed at each decision."""
    if not name or not isinstance(name, str):
        raise ValueError("a policy needs a non-empty name")
    pol = Policy(name.upper(), key, dynamic)
    POLICIES[pol.name] = pol
    return pol


def get_policy(name: str) -> Policy:
    pol = POLICIES.get(str(name).upper())
    if pol is None:
        raise ValueError(f"unknown queue policy '{name}' (known: {', '.join(POLICIES)})")
    return pol


for _name, _key, _dyn in (
    ("FCFS", lambda e, now: e.r, False),            # 1  submission time ascending
    ("LCFS", lambda e, now: -e.r, False),           # 2  submission time descending
    ("SPF", lambda e, now: e.p, False),             # 3  p̃ ascending
    ("LPF", lambda e, now: -e.p, False),            # 4  p̃ descending
    ("LQF", lambda e, now: -e.q, False),            # 5  q descending
    ("SQF", lambda e, now: e.q, False),             # 6  q ascending
    ("LEXP", lambda e, now: -_exp(e, now), True),   # 7  (wait + p̃)/p̃ descending
    ("SEXP", _exp, True),                           # 8  (wait + p̃)/p̃ ascending
    ("LRF", lambda e, now: -e.p / e.q, False),      # 9  p̃/q descending
    ("SRF", lambda e, now: e.p / e.q, False),       # 10 p̃/q ascending
    ("LAF", lambda e, now: -e.p * e.q, False),      # 11 p̃·q descending
    ("SAF", lambda e, now: e.p * e.q, False),       # 12 p̃·q ascending
):
    register_policy(_name, _key, _dyn)

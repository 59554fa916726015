"""Site-level user behaviour fitted from SWF logs: the empirical distributions of Shmueli's Phase-1/Phase-2
users and CREASY's continuation probability (models.md §C [SHM], "Definitions", Eq. 5.1).

Per user, valid jobs are sorted by submit (ties: file order); ``end = submit + wait + run``, response
``R = wait + run``.  Choices where the thesis is silent (models.md "UNDEF → REC"):

- skipped records: ``run < 0``, ``procs ≤ 0``, ``wait < 0`` or ``submit < 0`` (no end time); ``procs`` =
  allocated processors, else requested ones;
- batch: a job joins the current batch iff submitted strictly *before* the end of the user's previous job
  (in submit order, i.e. the batch's last submitted job); submitted at that end or later starts a new batch.
  Hence the think time after a batch (next batch's first submit − end of the batch's last submitted job) is
  never negative; ``negative_think_share`` is the share of *job-level* think times (next submit of the user −
  end of the job, over consecutive job pairs) that are negative, i.e. of jobs that joined a batch;
- session: batches separated by a think time ≤ 20 min (1200 s inclusive); ``short_think_s`` = after-batch
  thinks in [0, 1200] s, ``break_s`` = (1200, 28800] s, longer breaks dropped (the thesis' 8 h filter);
- a user's last batch has no think time: it is censored (not in the think table nor the p_cont fit);
- think table: after-batch think times (unfiltered: the thesis' R5 medians exceed 8 h) against the response
  and slowdown of the batch's last submitted job; slowdown = max(1, R / max(run, 1 s)) (bins start at 1);
  bins are right-closed (R = 5 min is R1, SD = 2 is S2); a cell without data is null;
- p_cont: for each non-final batch, continued = think ≤ 20 min, x = R of its last job in minutes; jobs are
  binned by :data:`P_CONT_EDGES`, bins with < ``min_count`` (20) jobs dropped, and ``a/(b·x + 1)`` is fitted by
  unweighted least squares on (mean R of the bin, continued share) — ``a`` in closed form per ``b``, ``b``
  by a log grid then golden-section refinement;
- ``size_repeat``: run lengths of consecutive equal sizes per user over all the user's jobs (a user's last
  run included); sizes are pooled as recorded and ``machine_procs`` is the largest source machine
  (header MaxProcs, else the largest job);
- activity: submit times, local time = UnixStartTime + submit in the header's TimeZoneString (the numeric
  TimeZone field is ignored); without TimeZoneString UTC is assumed, without UnixStartTime submits are
  taken as epochs (a note says so); the window 07:30–17:30 and Mon–Fri include their boundary instants;
- continuous distributions: 101 quantiles (``numpy.quantile``, linear), sampled by inverse CDF with linear
  interpolation; an empty one is stored as ``[]`` and cannot be sampled.
"""

from __future__ import annotations

import json
import math
import zoneinfo
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from batfeed.adapters.swf import _header_int, read_swf

from batfeed.errors import BatfeedError, InputError

__all__ = ["BUILTIN", "DEFAULT_MODEL", "FORMAT", "P_CONT_EDGES", "THESIS_P_CONT", "THESIS_THINK_TABLE", "TraceStats",
           "analyse_user", "fit_p_cont", "fit_site", "load_model", "read_trace", "sample",
           "think_table"]

FORMAT = "batfeed-site-users/1"
DEFAULT_MODEL = Path(__file__).parent / "data" / "site_users_default.json"
# built-in models by name (users/site_thesis.py writes the thesis's two with 'batfeed fit-users --thesis')
BUILTIN = {"default": DEFAULT_MODEL, **{f"thesis-{ph}": DEFAULT_MODEL.with_name(f"site_users_thesis_{ph}.json")
                                        for ph in ("phase1", "phase2")}}
SESSION_S = 1200.0
BREAK_MAX_S = 28800.0
DAY_WINDOW = ("07:30", "17:30")
R_EDGES_MIN = (5.0, 15.0, 45.0, 135.0)
SD_EDGES = (1.41, 2.0, 4.0, 16.0)
R_LABELS = ["R1 0-5", "R2 5-15", "R3 15-45", "R4 45-135", "R5 >135"]
SD_LABELS = ["S1 1-1.41", "S2 -2", "S3 -4", "S4 -16", "S5 >16"]
THESIS_THINK_TABLE = [[3.6, 6.6, 8.2, 8.8, 8.9], [9.5, 14, 18, 19, 18], [17, 49, 50, 41, 40],
                      [119, 149, 159, 195, 119], [524, 600, 652, 712, 702]]
THESIS_P_CONT = {"a": 0.8, "b": 0.05}
P_CONT_EDGES = (0, 1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 135, 180, 270, 360, 540, 720, 1080, 1440, 2880, math.inf)
_CONT = ("intra_batch_gap_s", "short_think_s", "break_s", "runtime_s")
_DISC = ("batch_width", "size", "size_repeat")


@dataclass
class TraceStats:
    """Raw per-trace observations (seconds; one entry per batch, gap, think, job or size run)."""

    trace: str
    jobs: int = 0
    users: int = 0
    skipped: int = 0
    machine_procs: int = 0
    notes: list[str] = field(default_factory=list)
    widths: list[int] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    thinks: list[float] = field(default_factory=list)      # after each non-final batch
    think_resp: list[float] = field(default_factory=list)  # R of the batch's last submitted job
    think_sd: list[float] = field(default_factory=list)    # its slowdown
    sizes: list[int] = field(default_factory=list)
    size_runs: list[int] = field(default_factory=list)
    runtimes: list[float] = field(default_factory=list)
    estimate_factors: list[float] = field(default_factory=list)   # requested time / run time (both > 0)
    job_thinks: int = 0
    negative: int = 0
    split: int = 0               # batches split by max_gap_s
    sessions: int = 0
    day: int = 0
    weekday: int = 0


def analyse_user(submit: list[float], wait: list[float], run: list[float], procs: list[int],
                 st: TraceStats, max_gap_s: float | None = None) -> None:
    """Add one user's jobs (sorted by submit) to ``st``: batches, gaps, thinks, sessions, size runs.
    ``max_gap_s``: a job submitted more than this after the previous one starts a new batch even while
    that job runs (the pause is not an intra-batch gap; its negative think time is not a think)."""
    n = len(submit)
    if not n:
        return
    end = [s + w + r for s, w, r in zip(submit, wait, run, strict=True)]
    width, st.sessions, rep = 1, st.sessions + 1, 1
    for i in range(1, n + 1):
        if i < n:
            st.job_thinks += 1
            think = submit[i] - end[i - 1]
            gap = submit[i] - submit[i - 1]
            if think < 0 and (max_gap_s is None or gap <= max_gap_s):     # joins the batch
                st.negative += 1
                st.gaps.append(gap)
                width += 1
            elif think < 0:        # a pause longer than max_gap_s: a new batch, no think time
                st.negative += 1
                st.split += 1
                st.widths.append(width)
                width = 1
            else:                  # closes the batch: think from its last submitted job
                resp = wait[i - 1] + run[i - 1]
                st.widths.append(width)
                st.thinks.append(think)
                st.think_resp.append(resp)
                st.think_sd.append(max(1.0, resp / max(run[i - 1], 1.0)))
                st.sessions += think > SESSION_S
                width = 1
            if procs[i] == procs[i - 1]:
                rep += 1
                continue
        else:
            st.widths.append(width)  # the final batch (censored think)
        st.size_runs.append(rep)
        rep = 1


def _header_value(header: dict[str, str], key: str) -> str | None:
    wanted = key.lower()
    return next((v.strip() for k, v in header.items() if k.replace(" ", "").lower() == wanted and v.strip()), None)


def _activity(header: dict[str, str], submits: np.ndarray, st: TraceStats) -> None:
    start = _header_value(header, "UnixStartTime")
    try:
        base = float(start) if start is not None else 0.0
    except ValueError:
        base = 0.0
        start = None
    if start is None:
        st.notes.append("no UnixStartTime: submit times taken as epochs")
    tz: Any = zoneinfo.ZoneInfo("UTC")
    if (name := _header_value(header, "TimeZoneString")) is None:
        st.notes.append("no TimeZoneString: local time assumed UTC")
    else:
        try:
            tz = zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            st.notes.append(f"unknown TimeZoneString {name!r}: local time assumed UTC")
    t = pd.to_datetime(base + submits, unit="s", utc=True).tz_convert(tz)
    sec = t.hour * 3600 + t.minute * 60 + t.second
    st.day = int(((sec >= 27000) & (sec <= 63000)).sum())
    st.weekday = int((t.day_of_week < 5).sum())


def read_trace(path: str | Path, max_gap_s: float | None = None, nodes: bool = False) -> TraceStats:
    """Read an SWF trace and collect its :class:`TraceStats` (``max_gap_s``: :func:`analyse_user`).
    ``nodes``: sizes in nodes where the header's MaxProcs is a multiple k > 1 of MaxNodes (ceil(procs / k);
    the machine is then MaxNodes), so that an SMP log counts the unit the single-processor-node logs count."""
    header, records = read_swf(path)
    name = Path(path).name
    for suffix in (".gz", ".xz", ".swf"):
        name = name.removesuffix(suffix)
    st = TraceStats(trace=name)
    unit = 1
    if nodes:
        mp, mn = _header_int(header, "MaxProcs"), _header_int(header, "MaxNodes")
        if mp and mn and mp > mn and mp % mn == 0:
            unit = mp // mn
            st.notes.append(f"sizes in nodes of {unit} processors (MaxProcs {mp} / MaxNodes {mn})")
    per_user: dict[int, list[tuple[float, int, float, float, int]]] = defaultdict(list)
    for k, rec in enumerate(records):
        procs = rec.alloc_procs if rec.alloc_procs > 0 else rec.req_procs
        procs = -(-procs // unit)
        if rec.run < 0 or procs <= 0 or rec.wait < 0 or rec.submit < 0:
            st.skipped += 1
            continue
        per_user[rec.user].append((rec.submit, k, rec.wait, rec.run, procs))
        if rec.req_time > 0 and rec.run > 0:
            st.estimate_factors.append(rec.req_time / rec.run)
    if not per_user:
        raise InputError(f"no usable job ({st.skipped} skipped: run < 0, procs <= 0, wait < 0 or submit < 0)",
                         str(path))
    submits = []
    for jobs in per_user.values():
        jobs.sort()
        cols = list(zip(*jobs, strict=True))
        submits.extend(cols[0])
        st.sizes.extend(cols[4])
        st.runtimes.extend(cols[3])
        analyse_user(list(cols[0]), list(cols[2]), list(cols[3]), list(cols[4]), st, max_gap_s)
    st.jobs, st.users = len(submits), len(per_user)
    st.machine_procs = (_header_int(header, "MaxNodes") if unit > 1 else None) or _header_int(header, "MaxProcs") \
        or max(st.sizes)
    _activity(header, np.asarray(submits, dtype=float), st)
    return st


def think_table(resp_s: Any, sd: Any, think_s: Any) -> tuple[list[list[float | None]], list[list[int]]]:
    """Median think time (minutes) and count per (response, slowdown) bin of models.md §C (right-closed)."""
    r = np.asarray(resp_s, dtype=float) / 60.0
    s, th = np.asarray(sd, dtype=float), np.asarray(think_s, dtype=float) / 60.0
    ri = np.searchsorted(R_EDGES_MIN, r, side="left")
    si = np.searchsorted(SD_EDGES, s, side="left")
    med: list[list[float | None]] = [[None] * 5 for _ in range(5)]
    cnt = [[0] * 5 for _ in range(5)]
    for i in range(5):
        for j in range(5):
            cell = th[(ri == i) & (si == j)]
            cnt[i][j] = int(cell.size)
            if cell.size:
                med[i][j] = round(float(np.median(cell)), 3)
    return med, cnt


def fit_p_cont(resp_min: Any, continued: Any, edges: tuple[float, ...] = P_CONT_EDGES,
               min_count: int = 20) -> tuple[float, float, list[tuple[float, float, int]]]:
    """Least-squares ``p(R) = a/(b·R + 1)`` on binned continuation shares: (a, b, [(mean R, share, n)])."""
    r = np.asarray(resp_min, dtype=float)
    c = np.asarray(continued, dtype=float)
    idx = np.searchsorted(edges, r, side="right") - 1
    bins = []
    for k in range(len(edges) - 1):
        sel = idx == k
        if sel.sum() >= min_count:
            bins.append((float(r[sel].mean()), float(c[sel].mean()), int(sel.sum())))
    if len(bins) < 2:
        raise BatfeedError(f"p_cont fit needs >= 2 response bins with >= {min_count} batches (got {len(bins)})")
    x = np.array([b[0] for b in bins])
    y = np.array([b[1] for b in bins])

    def sse(logb: float) -> tuple[float, float]:
        # math.fsum, not BLAS's dot: OpenBLAS picks its kernel by CPU (Haswell, SkylakeX, ...), and the flat
        # optimum moved the fitted a, b in their 9th digit from one machine to another.
        f = 1.0 / (math.exp(logb) * x + 1.0)
        a = math.fsum(f * y) / math.fsum(f * f)
        return math.fsum((a * f - y) ** 2), a

    grid = np.linspace(math.log(1e-5), math.log(1e2), 1401)
    k = int(np.argmin([sse(g)[0] for g in grid]))
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    g = (math.sqrt(5) - 1) / 2
    for _ in range(80):  # golden section on log b
        m1, m2 = hi - g * (hi - lo), lo + g * (hi - lo)
        if sse(m1)[0] <= sse(m2)[0]:
            hi = m2
        else:
            lo = m1
    logb = (lo + hi) / 2
    return sse(logb)[1], math.exp(logb), bins


def _quantiles(x: list[float]) -> dict[str, list[float]]:
    if not x:
        return {"quantiles": []}
    return {"quantiles": [float(v) for v in np.quantile(np.asarray(x, dtype=float), np.linspace(0, 1, 101))]}


def _pmf(x: list[int]) -> dict[str, list]:
    counts = sorted(Counter(x).items())
    total = sum(n for _, n in counts)
    return {"values": [int(v) for v, _ in counts], "probs": [n / total for _, n in counts]}


def fit_site(traces: list[TraceStats]) -> tuple[dict[str, Any], list[tuple[float, float, int]]]:
    """Pool the traces into a ``batfeed-site-users/1`` model (and the p_cont bins used by the fit)."""
    def pool(attr: str) -> list:
        return [v for t in traces for v in getattr(t, attr)]

    thinks, resp, sd = pool("thinks"), pool("think_resp"), pool("think_sd")
    runtimes = np.asarray(pool("runtimes"), dtype=float)
    jobs = sum(t.jobs for t in traces)
    med, _ = think_table(resp, sd, thinks)
    a, b, bins = fit_p_cont(np.asarray(resp) / 60.0, np.asarray(thinks) <= SESSION_S)
    model = {
        "format": FORMAT,
        "sources": [{"trace": t.trace, "jobs": t.jobs, "users": t.users, "skipped": t.skipped,
                     "machine_procs": t.machine_procs} for t in traces],
        "batch_width": _pmf(pool("widths")),
        "intra_batch_gap_s": _quantiles(pool("gaps")),
        "short_think_s": _quantiles([x for x in thinks if x <= SESSION_S]),
        "break_s": _quantiles([x for x in thinks if SESSION_S < x <= BREAK_MAX_S]),
        "size": _pmf(pool("sizes")),
        "size_repeat": _pmf(pool("size_runs")),
        "runtime_s": _quantiles(list(runtimes)),
        "estimate_factor": _quantiles(pool("estimate_factors")),
        "machine_procs": max(t.machine_procs for t in traces),
        "p_cont": {"a": a, "b": b, "unit": "minutes", "thesis": dict(THESIS_P_CONT)},
        "activity": {"day_share": sum(t.day for t in traces) / jobs,
                     "weekday_share": sum(t.weekday for t in traces) / jobs, "day_window": list(DAY_WINDOW)},
        "think_table_min": {"rows": R_LABELS, "cols": SD_LABELS, "values": med, "thesis": THESIS_THINK_TABLE},
        "runtime_classes": {"le_1min": float((runtimes <= 60).mean()),
                            "1_10min": float(((runtimes > 60) & (runtimes <= 600)).mean()),
                            "gt_10min": float((runtimes > 600).mean())},
        "negative_think_share": sum(t.negative for t in traces) / max(1, sum(t.job_thinks for t in traces)),
    }
    return model, bins


def load_model(path_or_dict: str | Path | dict[str, Any] | None = None) -> dict[str, Any]:
    """A checked ``batfeed-site-users/1`` model from a dict, a JSON file or a :data:`BUILTIN` name (default:
    the built-in ``default``)."""
    src = "in-memory"
    if path_or_dict is None:
        path_or_dict = DEFAULT_MODEL
    elif isinstance(path_or_dict, str) and path_or_dict in BUILTIN:
        path_or_dict = BUILTIN[path_or_dict]
    if isinstance(path_or_dict, dict):
        model = path_or_dict
    else:
        src = str(path_or_dict)
        try:
            model = json.loads(Path(path_or_dict).read_text())
        except OSError as err:
            raise InputError(f"cannot read: {err.strerror or err}", src) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise InputError(f"not valid JSON ({err})", src) from None
    if not isinstance(model, dict) or model.get("format") != FORMAT:
        got = model.get("format") if isinstance(model, dict) else type(model).__name__
        raise InputError(f"not a site-user model (format {got!r}, expected {FORMAT!r})", src)
    for key in (*_CONT, *_DISC, "p_cont", "machine_procs", "activity"):
        if key not in model:
            raise InputError(f"site-user model: missing key {key!r}", src)
    for key in _CONT:
        d = model[key] if isinstance(model[key], dict) else {}
        parts = d.get("classes") if "classes" in d else [{"p": 1.0, **d}]
        if not isinstance(parts, list) or not parts or not all(isinstance(c, dict) for c in parts) \
                or abs(sum(c.get("p", -1) for c in parts) - 1) > 1e-6 or not all(_good_q(c.get("quantiles"))
                                                                         for c in parts):
            raise InputError(f"site-user model: {key!r} needs 'quantiles': 101 non-decreasing numbers (or "
                             "'classes': a list of {p, quantiles} whose p sum to 1)", src)
    for key in _DISC:
        d = model[key]
        v, p = (d.get("values"), d.get("probs")) if isinstance(d, dict) else (None, None)
        if not (isinstance(v, list) and isinstance(p, list) and v and len(v) == len(p)
                and all(isinstance(x, int | float) and x >= 0 for x in p) and abs(sum(p) - 1) < 1e-6):
            raise InputError(f"site-user model: {key!r} needs 'values' and 'probs' (same length, summing to 1)", src)
    pc = model["p_cont"]
    if not (isinstance(pc, dict) and all(isinstance(pc.get(k), int | float) for k in ("a", "b"))):
        raise InputError("site-user model: 'p_cont' needs numbers 'a' and 'b'", src)
    return model


def _good_q(q: Any) -> bool:
    return isinstance(q, list) and len(q) in (0, 101) and all(
        isinstance(v, int | float) and math.isfinite(v) for v in q) and not any(np.diff(q) < 0)


def sample(dist: dict[str, Any], rng: np.random.Generator, size: int | None = None) -> Any:
    """Draw from a model distribution: inverse CDF (linear) of ``quantiles``, ``rng.choice`` of a pmf, or a
    ``classes`` mixture (a class drawn by its ``p``, then its quantiles; one draw at a time)."""
    if "classes" in dist:
        if size is not None:
            return np.array([sample(dist, rng) for _ in range(size)])
        cls = dist["classes"]
        k = int(np.searchsorted(np.cumsum([c["p"] for c in cls]), rng.random(), side="right"))
        return sample(cls[min(k, len(cls) - 1)], rng)
    if "quantiles" in dist:
        q = dist["quantiles"]
        if not q:
            raise BatfeedError("cannot sample an empty distribution (no observation in the fitted traces)")
        u = rng.random(size) * (len(q) - 1)
        x = np.interp(u, np.arange(len(q)), q)
        return float(x) if size is None else x
    x = rng.choice(np.asarray(dist["values"]), size=size, p=np.asarray(dist["probs"], dtype=float))
    return x.item() if size is None else x

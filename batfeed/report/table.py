"""Metrics of several runs side by side: ``batfeed metrics A_jobs.csv B_jobs.csv`` and the report's table."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from batfeed.metrics import _fmt, machines_source

__all__ = ["metric_rows", "format_side_by_side", "run_names"]


def run_names(paths: Sequence[str | Path]) -> list[str]:
    """A short name per file: its prefix (``runs/easy_jobs.csv`` -> ``easy``); names that clash get
    their parent folders until they differ (``a/easy``, ``b/easy``)."""
    parts = [Path(p) for p in paths]
    base = [p.name[: -len("_jobs.csv")] if p.name.endswith("_jobs.csv") else p.stem for p in parts]
    names = list(base)
    for depth in range(1, 1 + max((len(p.parent.parts) for p in parts), default=0)):
        if len(set(names)) == len(names):
            break
        for i, p in enumerate(parts):
            if names.count(names[i]) > 1:
                names[i] = "/".join([*p.parent.parts[-depth:], base[i]])
    seen: dict[str, int] = {}
    for i, n in enumerate(names):        # still equal (the same file twice): number them
        seen[n] = seen.get(n, 0) + 1
        if seen[n] > 1:
            names[i] = f"{n}#{seen[n]}"
    return names


def metric_rows(metrics: Sequence[dict]) -> list[tuple[str, list[str]]]:
    """(label, one formatted value per run) for the main metrics of :func:`batfeed.metrics.compute_metrics`."""
    rows: list[tuple[str, list[str]]] = [("jobs", [_fmt(m["nb_jobs"]) for m in metrics]),
                                         ("  executed", [_fmt(m["nb_executed"]) for m in metrics])]
    states = list(dict.fromkeys(s for m in metrics for s in m["by_state"]))
    rows += [(f"  {s}", [_fmt(m["by_state"].get(s, 0)) for m in metrics]) for s in states]
    tau = ", ".join(sorted({f"{m['tau']:g}" for m in metrics}))
    for label, key, stats in (("wait (s)", "wait", ("mean", "p50", "p90", "p99", "max")),
                              ("response (s)", "response", ("mean", "p50", "p90", "max")),
                              ("slowdown", "slowdown", ("mean", "p50", "p90", "max")),
                              (f"bounded slowdown (tau={tau}s)", "bounded_slowdown", ("mean", "p50", "p90", "p99",
                                                                                        "max"))):
        rows += [(f"{label} {s}", [_fmt(m[key].get(s)) for m in metrics]) for s in stats]
    rows += [
        ("makespan (max finish - min submit, s)", [_fmt(m["makespan"]) for m in metrics]),
        ("throughput (jobs/hour)", [_fmt(m["throughput_per_hour"]) for m in metrics]),
        ("utilisation (%)", ["n/a" if m["utilisation"] is None else f"{100 * m['utilisation']:.2f}"
                             for m in metrics]),
        ("mean busy resources", [_fmt(m["mean_busy_resources"]) for m in metrics]),
        ("resources N", [_fmt(m["nb_resources"]) for m in metrics]),
    ]  # fmt: skip
    return rows


def format_side_by_side(metrics: Sequence[dict], names: Sequence[str]) -> str:
    """One column per run, headed by its name; notes on N and on the job sets below the table."""
    rows = metric_rows(metrics)
    width = max(len("metric"), *(len(label) for label, _ in rows))
    cols = [max(10, len(n), *(len(r[1][i]) for r in rows)) for i, n in enumerate(names)]
    lines = [f"{'metric':<{width}}" + "".join(f"  {n:>{c}}" for n, c in zip(names, cols, strict=True))]
    lines += [f"{label:<{width}}" + "".join(f"  {v:>{c}}" for v, c in zip(values, cols, strict=True))
              for label, values in rows]
    lines.append("per-job metrics over the executed jobs of each run (rejected jobs excluded, counted in jobs); "
                 "bounded slowdown = max(1, response / max(runtime, tau)); makespan = max finish - min submit")
    for n, m in zip(names, metrics, strict=True):
        w = m["utilisation_window"]
        window = "n/a" if w is None else f"[{_fmt(w[0])}, {_fmt(w[1])})"
        lines.append(f"{n}: {m.get('source') or ''}; N {_fmt(m['nb_resources'])} ({machines_source(m)}); "
                     f"utilisation window {window}")
    return "\n".join(lines)

"""The report's matplotlib figures (``Figure`` objects, no pyplot state): comparison bars, CDFs, timelines,
Gantt charts.

Each function draws one figure and saves it as PNG (and SVG on request); it returns the file names.
Colours are per configuration (tab10), the same in every figure.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # no pyplot: no global state, no backend switch
from matplotlib.ticker import FuncFormatter

from batfeed.report.data import Config
from batfeed.report.gantt import draw_gantt
from batfeed.report.series import human_duration, nice_bins, time_unit, utilisation_and_queue
from batfeed.report.stats import mean_ci

__all__ = ["COLOURS", "cdf_figure", "comparison_figure", "gantt_figure", "save", "timeline_figure"]

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
DPI = 90
TIME_TICKS = ((1, "1 s"), (10, "10 s"), (60, "1 min"), (600, "10 min"), (3600, "1 h"), (86400, "1 day"),
              (7 * 86400, "1 week"), (60 * 86400, "60 days"))


def colour(i: int) -> str:
    return COLOURS[i % len(COLOURS)]


def _small_png(buffer: io.BytesIO, path: Path) -> None:
    """The PNG with a 256-colour palette (no dithering): a third of the size, the same to the eye."""
    from PIL import Image

    buffer.seek(0)
    with Image.open(buffer) as im:
        im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                                   dither=Image.Dither.NONE).save(path, optimize=True)


def save(fig: Figure, out: Path, name: str, svg: bool) -> list[str]:
    """``name.png`` (and ``name.svg``) in ``out``; the file names written."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    _small_png(buffer, out / f"{name}.png")
    files = [f"{name}.png"]
    if svg:
        fig.savefig(out / f"{name}.svg", metadata={"Date": None})
        files.append(f"{name}.svg")
    return files


# --------------------------------------------------------------------------- comparison


COMPARED = (("mean wait", ("wait", "mean"), "time"), ("90th percentile of the wait", ("wait", "p90"), "time"),
            ("mean bounded slowdown", ("bounded_slowdown", "mean"), ""), ("utilisation", ("utilisation",), "%"))


def _metric(m: dict, path: tuple[str, ...]) -> float | None:
    v = m
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    return float(v) if isinstance(v, int | float) else None


def _num(x: float, digits: int = 3) -> str:
    """``digits`` significant digits, thousands separated: 6,826 / 92.1 / 0.0624."""
    return f"{x:,.0f}" if abs(x) >= 10 ** digits else f"{x:#.{digits}g}".rstrip(".")


def comparison_figure(configs: Sequence[Config], out: Path, svg: bool = False) -> tuple[list[str], str]:
    """Horizontal bars, one per configuration: the mean over its seeds, ± the 95 % CI (Student t) when
    it has several; the seeds' own values as dots.  Returns the files and the caption's note."""
    n = len(configs)
    fig = Figure(figsize=(10, 1.6 + 0.75 * n * 2), layout="constrained")
    axes = fig.subplots(2, 2, sharey=True).ravel()
    y = np.arange(n)[::-1]
    max_seeds = max(len(c.runs) for c in configs)
    for ax, (title, path, unit) in zip(axes, COMPARED, strict=True):
        values = [[_metric(r.metrics, path) for r in c.runs] for c in configs]
        stats = [mean_ci(v) for v in values]
        means = np.array([np.nan if m is None else m for m, _ in stats])
        half = np.array([0.0 if h is None else h for _, h in stats])
        finite = means[np.isfinite(means) & (means > 0)]
        log = len(finite) > 1 and finite.max() / finite.min() > 20
        scale, shown = (100.0, "%") if unit == "%" else (1.0, "")
        if unit == "time":
            ref = float(np.sqrt(finite.min() * finite.max()) if log else np.nanmax(means)) if len(finite) else 1.0
            shown, per = time_unit(ref)
            scale = 1 / per
        m_s, h_s = means * scale, half * scale
        ax.barh(y, np.nan_to_num(m_s), color=[colour(i) for i in range(n)], height=0.6)
        right = m_s + h_s                              # where each bar's text starts
        if max_seeds > 1:
            has = np.array([h is not None for _, h in stats])
            ax.errorbar(m_s[has], y[has], xerr=h_s[has], fmt="none", ecolor="black", capsize=4, lw=1.2)
            for i, v in enumerate(values):
                pts = np.array([np.nan if x is None else x * scale for x in v])
                if len(pts) > 1:
                    ax.plot(pts, np.full(len(pts), y[i]), "o", ms=3, color="black", alpha=0.6)
                    right[i] = np.nanmax(np.r_[right[i], pts])
        top = float(np.nanmax(m_s + h_s)) if np.isfinite(m_s).any() else 1.0
        if log:
            ax.set_xscale("log")
            ax.set_xlim(float(np.nanmin(m_s[m_s > 0])) / 4, top * 12)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
        elif unit == "%":
            ax.set_xlim(0, 118)
            ax.set_xticks([0, 25, 50, 75, 100])
        else:
            ax.set_xlim(0, top * 1.3 if top > 0 else 1)
        for i, m in enumerate(m_s):
            text = "n/a" if not np.isfinite(m) else _num(m) + (f" ± {_num(h_s[i], 2)}" if stats[i][1] else "")
            at = right[i] * (1.15 if log else 1) + (0 if log else top * 0.03) if np.isfinite(m) else 0
            ax.text(at, y[i], f"{text} {shown}".rstrip(), va="center", fontsize=9)
        ax.set_title(title + (f" ({shown}" + (", log scale)" if log else ")") if shown else
                              (" (log scale)" if log else "")), fontsize=11)
        ax.grid(axis="x", alpha=0.3)
        ax.set_yticks(y, [c.label for c in configs])
    if max_seeds > 1:
        note = (f"Bars: mean over the seeds of each configuration ({', '.join(str(len(c.runs)) for c in configs)} "
                "runs); error bars: 95 % confidence interval of the mean (Student t, n − 1 degrees of freedom); "
                "dots: the runs.")
        if min(len(c.runs) for c in configs) == 1:
            note += " A configuration with one run has no interval."
    else:
        note = "One run per configuration: the bars are single values, with no confidence interval."
    return save(fig, out, "comparison", svg), note


# --------------------------------------------------------------------------- CDFs


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = np.sort(values[np.isfinite(values)])
    return v, np.arange(1, len(v) + 1) / max(len(v), 1)


def cdf_figure(configs: Sequence[Config], out: Path, tau: float, svg: bool = False) -> list[str]:
    """Empirical CDFs of the wait and of the bounded slowdown, pooled over each configuration's runs."""
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax_w, ax_b = fig.subplots(1, 2)
    top = 1.0
    for i, c in enumerate(configs):
        frames = [r.frame[r.frame["final_state"] != "REJECTED"] for r in c.runs]
        wait = np.concatenate([f["waiting_time"].to_numpy(dtype=float) for f in frames])
        run = np.concatenate([f["execution_time"].to_numpy(dtype=float) for f in frames])
        resp = np.concatenate([f["turnaround_time"].to_numpy(dtype=float) for f in frames])
        bsld = np.maximum(1.0, resp / np.maximum(run, tau))
        x, p = _ecdf(np.maximum(wait, 1.0))
        label = c.label + (f" ({len(c.runs)} runs pooled)" if len(c.runs) > 1 else "")
        ax_w.step(np.r_[1.0, x], np.r_[0.0, p], where="post", color=colour(i), lw=1.6, label=label)
        top = max(top, float(x[-1]) if len(x) else 1.0)
        x, p = _ecdf(bsld)
        ax_b.step(np.r_[1.0, x], np.r_[0.0, p], where="post", color=colour(i), lw=1.6, label=label)
    ax_w.set_xscale("log")
    ticks = [(v, t) for v, t in TIME_TICKS if v <= top * 1.5]
    ax_w.set_xticks([v for v, _ in ticks], [t for _, t in ticks], rotation=30)
    ax_w.minorticks_off()
    ax_w.set_xlabel("wait (log scale; waits under 1 s drawn at 1 s)")
    ax_w.set_title("wait: fraction of jobs waiting at most x", fontsize=11)
    ax_b.set_xscale("log")
    ax_b.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
    ax_b.set_xlabel(f"bounded slowdown (τ = {tau:g} s, log scale)")
    ax_b.set_title("bounded slowdown: fraction of jobs at most x", fontsize=11)
    for ax in (ax_w, ax_b):
        ax.set_xlim(left=1)
        ax.set_ylim(0, 1.01)
        ax.set_ylabel("fraction of executed jobs")
        ax.grid(alpha=0.3)
    ax_b.legend(loc="lower right", fontsize=9)
    return save(fig, out, "cdf", svg)


# --------------------------------------------------------------------------- timelines


def time_range(runs: Sequence) -> tuple[float, float]:
    """[first submit, last finish] over ``runs`` ([0, 1] without any job)."""
    times = np.concatenate([r.frame[c].to_numpy(dtype=float) for r in runs for c in ("submission_time",
                                                                                       "finish_time")])
    times = times[np.isfinite(times)]
    if not len(times):
        return 0.0, 1.0
    t0, t1 = float(times.min()), float(times.max())
    return t0, t1 if t1 > t0 else t0 + 1.0


def timeline_figure(configs: Sequence[Config], out: Path, svg: bool = False) -> tuple[list[str], str]:
    """Utilisation (one panel per configuration, its first run) and queue length (all together) per time bin."""
    runs = [c.runs[0] for c in configs]
    t0, t1 = time_range(runs)
    edges = nice_bins(t0, t1, 300)
    width = float(edges[1] - edges[0])
    unit, scale = time_unit(t1 - t0)
    mid = (edges[:-1] + edges[1:]) / 2 / scale
    n = len(runs)
    fig = Figure(figsize=(10, 1.3 * n + 3.2), layout="constrained")
    axes = fig.subplots(n + 1, 1, sharex=True, height_ratios=[1] * n + [2.2])
    queues = []
    for i, r in enumerate(runs):
        util, queue = utilisation_and_queue(r.frame, r.metrics["nb_resources"], edges)
        queues.append(queue)
        ax = axes[i]
        if util is not None:
            ax.fill_between(mid, 100 * util, step="mid", color=colour(i), alpha=0.8, lw=0)
            mean = r.metrics.get("utilisation")
            if mean is not None:
                ax.axhline(100 * mean, color="black", lw=0.8, ls="--")
        ax.set_ylim(0, 105)
        ax.set_yticks([0, 50, 100])
        ax.set_ylabel("%", rotation=0, labelpad=8)
        mean_text = "n/a, N unknown" if util is None else f"{100 * (r.metrics['utilisation'] or 0):.1f} %, dashed"
        ax.set_title(f"{configs[i].label}: utilisation (mean {mean_text})", fontsize=9.5, loc="left", pad=3)
        ax.grid(alpha=0.3)
    ax = axes[-1]
    for i, queue in enumerate(queues):
        ax.plot(mid, queue, color=colour(i), lw=1.2, label=configs[i].label, drawstyle="steps-mid")
    peak = max((float(q.max()) for q in queues if len(q)), default=0.0)
    low = min((float(q.max()) for q in queues if len(q)), default=0.0)
    if peak > 0 and low > 0 and peak / low > 20:
        ax.set_yscale("symlog", linthresh=1)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
        ax.set_ylabel("waiting jobs (log scale above 1)")
    else:
        ax.set_ylabel("waiting jobs")
    ax.set_ylim(bottom=0)
    ax.set_title("queue length: mean number of submitted jobs not started yet", fontsize=9.5, loc="left", pad=3)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=min(4, n), fontsize=9)
    ax.grid(alpha=0.3)
    ax.set_xlabel(f"time ({unit} since t = 0)")
    ax.set_xlim(edges[0] / scale, edges[-1] / scale)
    note = (f"Time averages over bins of {human_duration(width)}" + (" (the first run of each configuration)"
            if any(len(c.runs) > 1 for c in configs) else "") + ".")
    return save(fig, out, "timeline", svg), note


# --------------------------------------------------------------------------- Gantt


def gantt_figure(configs: Sequence[Config], out: Path, name: str, window: tuple[float, float] | None,
                 max_jobs: int, svg: bool = False, colour_by: str = "auto") -> tuple[list[str], list[str]]:
    """A Gantt panel per configuration (its first run): machines × time.  Returns files and per-panel notes."""
    runs = [c.runs[0] for c in configs]
    if window is None:
        t0, t1 = time_range(runs)
    else:
        t0, t1 = window
    n = len(runs)
    fig = Figure(figsize=(10, 2.3 * n + 0.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(n, 1, sharex=True))
    notes = []
    unit, scale = time_unit(t1 - t0)
    for ax, c, r in zip(axes, configs, runs, strict=True):
        notes.append(draw_gantt(fig, ax, r.frame, r.metrics["nb_resources"], (t0, t1), scale, max_jobs, colour_by))
        ax.set_title(c.label, fontsize=10, loc="left")
    axes[-1].set_xlabel(f"time ({unit} since t = 0)")
    return save(fig, out, name, svg), notes

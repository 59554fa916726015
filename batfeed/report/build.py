"""``batfeed report``: runs in, ``index.html`` + figures out (see docs/report.md)."""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path

from batfeed.errors import BatfeedError
from batfeed.outpaths import writable_dir
from batfeed.report import html
from batfeed.report.data import configurations, find_runs, load_runs
from batfeed.report.figures import COMPARED, cdf_figure, colour, comparison_figure, gantt_figure, timeline_figure
from batfeed.report.series import time_unit

MAX_PANELS = 8                  # configurations drawn in the per-configuration figures (timeline, Gantt)
GANTT_MAX_JOBS = 2000


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_") or "run"


def parse_window(text: str | None) -> tuple[float, float] | None:
    """``T0:T1`` (seconds) -> (T0, T1)."""
    if not text:
        return None
    try:
        a, b = (float(x) for x in text.split(":"))
    except ValueError:
        raise BatfeedError(f"--gantt-window must be T0:T1 in seconds, e.g. 86400:172800, got {text!r}") from None
    if not b > a:
        raise BatfeedError(f"--gantt-window must have T0 < T1, got {text!r}")
    return a, b


def write_report(inputs: Sequence[str | Path], output: str | Path, *, labels: Sequence[str] | None = None,
                 svg: bool = False, tau: float = 10.0, nb_resources: int | None = None,
                 platform: str | Path | None = None, gantt_window: tuple[float, float] | None = None,
                 gantt_max_jobs: int = GANTT_MAX_JOBS, title: str | None = None, call: str | None = None,
                 warn: Callable[[str], None] | None = None) -> Path:
    """Write ``OUTPUT/index.html``, its figures and copies of the runs' manifests; returns the page.

    ``inputs``: ``_jobs.csv`` files, folders of them, or campaign folders.  ``labels``: one per run
    (default: from the manifests, else the file names).  ``gantt_window``: also draw the Gantt chart
    of [T0, T1) in detail.  ``gantt_max_jobs``: above this many jobs a Gantt panel is aggregated."""
    if gantt_max_jobs < 1:
        raise BatfeedError(f"--gantt-max-jobs must be >= 1, got {gantt_max_jobs}")
    out = writable_dir(output, "-o/--output")
    warn = warn or (lambda message: print(f"batfeed report: warning: {message}", file=sys.stderr))
    runs = load_runs(find_runs(inputs), labels, tau=tau, nb_resources=nb_resources, platform=platform, warn=warn)
    configs = configurations(runs)
    colours = {r.label: colour(i) for i, c in enumerate(configs) for r in c.runs}
    shown = configs[:MAX_PANELS]
    cut = (f" Only the first {MAX_PANELS} of the {len(configs)} configurations are drawn here."
           if len(configs) > MAX_PANELS else "")

    comp_files, comp_note = comparison_figure(configs, out, svg)
    cdf_files = cdf_figure(configs, out, tau, svg)
    time_files, time_note = timeline_figure(shown, out, svg)
    gantt_files, gantt_notes = gantt_figure(shown, out, "gantt", None, gantt_max_jobs, svg)
    window_part = ""
    if gantt_window is not None:
        files, notes = gantt_figure(shown, out, "gantt_window", gantt_window, gantt_max_jobs, svg)
        window_part = html._figure(files, "Gantt chart of a time window", _gantt_caption(
            _window_text(gantt_window), shown, notes) + cut)

    manifests = {}
    if any(r.manifest_path for r in runs):
        (out / "manifests").mkdir(exist_ok=True)
    for r in runs:
        if r.manifest_path is not None:
            name = f"manifests/{_slug(r.label)}.json"
            shutil.copyfile(r.manifest_path, out / name)
            manifests[r.label] = name

    from batfeed import __version__
    from batfeed.manifest import git_info, utc_now

    git = git_info()
    made = f"batfeed {__version__}"
    if git:
        made += f" (commit {git['commit'][:12]}{', with uncommitted changes' if git['dirty'] else ''})"
    nconf = len(configs)
    header = (f'<p class="note">{len(runs)} run(s) in {nconf} configuration(s); written {escape(utc_now()[:16])} UTC '
              f"by {escape(made)}" + (f" with <code>{escape(call)}</code>" if call else "") + ".</p>")
    header += ('<p class="note">Per-job metrics (wait, response, slowdown, bounded slowdown) are over the executed '
               "jobs of each run; rejected jobs are excluded from them and counted in the job totals.</p>")
    seeds = any(len(c.runs) > 1 for c in configs)
    sections = [
        ("runs", "Runs", html.runs_table(runs, manifests, colours)),
        ("comparison", "Comparison", html._figure(comp_files, "bars comparing the configurations", escape(comp_note))
         + (html.seeds_table(configs, COMPARED) if seeds else "")),
        ("metrics", "Metrics", html.metrics_table(runs) + _metrics_note(runs, tau)),
        ("timeline", "Utilisation and queue length", html._figure(time_files, "utilisation and queue length over time",
                                                                  escape(time_note + cut))),
        ("cdf", "Wait and bounded slowdown", html._figure(cdf_files, "CDFs of the wait and bounded slowdown", escape(
            "Empirical CDFs over the executed jobs" + (", pooled over each configuration's seeds." if seeds else "."))
            )),
        ("gantt", "Gantt charts", html._figure(gantt_files, "Gantt charts", _gantt_caption(
            "The whole run", shown, gantt_notes) + cut) + window_part),
        ("provenance", "Provenance", html.provenance(runs, manifests)),
    ]
    page = html.page(title or "batfeed report: " + ", ".join(c.label for c in configs[:6])
                     + (" …" if nconf > 6 else ""), header, sections)
    return html.write_page(out / "index.html", page)


def _gantt_caption(what: str, configs: Sequence, notes: Sequence[str]) -> str:
    parts = [f"{escape(what)}, machines × time, the first run of each configuration."]
    counts, drawn = zip(*(n.split(": ", 1) for n in notes), strict=True)
    if len(set(drawn)) == 1:
        parts.append(escape(drawn[0][0].upper() + drawn[0][1:]))
        parts.append("Jobs: " + ", ".join(f"<b>{escape(c.label)}</b> {escape(k)}"
                                                for c, k in zip(configs, counts, strict=True)) + ".")
    else:
        parts += [f"<b>{escape(c.label)}</b>: {escape(n)}" for c, n in zip(configs, notes, strict=True)]
    return " ".join(parts)


def _window_text(window: tuple[float, float]) -> str:
    unit, size = time_unit(window[1] - window[0])
    return (f"Detail of [{window[0] / size:,.4g}, {window[1] / size:,.4g}) {unit} "
            f"([{window[0]:,.0f} s, {window[1]:,.0f} s))")


def _metrics_note(runs: Sequence, tau: float) -> str:
    ms = [r.metrics for r in runs]
    n = {m["nb_resources"] for m in ms}
    text = (f"wait = start − submit; response = finish − submit; slowdown = response / runtime; bounded slowdown "
            f"= max(1, response / max(runtime, τ = {tau:g} s)); makespan = last finish − first submit; "
            "utilisation = Σ size × run time ∩ [first submit, last finish) / (N × that window); percentiles "
            "with linear interpolation (numpy).")
    if len(n) > 1:
        text += " The runs have different N."
    return f'<p class="note">{escape(text)}</p>'

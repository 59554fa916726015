"""The report's ``index.html``: one self-contained page (inline CSS, no JavaScript) linking the figures
and the copies of the runs' manifests next to it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from batfeed.report.data import Config, Run
from batfeed.report.stats import mean_ci
from batfeed.report.table import metric_rows

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1040px; margin: 1.5em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em;
margin-top: 1.8em; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.6em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.55em; vertical-align: top; }
th { background: #f3f3f3; text-align: left; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption, .note { color: #555; font-size: 0.9em; } code { font-size: 0.92em; background: #f6f6f6; padding: 0 0.2em; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.35em; vertical-align: -0.1em; }
nav a { margin-right: 0.9em; } details { margin: 0.4em 0; }
"""


def _e(x: Any) -> str:
    return escape(str(x), quote=True)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int = 1, raw: bool = False) -> str:
    """An HTML table; cells are escaped unless ``raw``; columns from ``numeric_from`` are right-aligned."""
    out = ["<table>", "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        cells = []
        for k, cell in enumerate(row):
            text = cell if raw else _e(cell)
            cells.append(f'<td class="num">{text}</td>' if k >= numeric_from else f"<td>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _figure(files: Sequence[str], alt: str, caption: str) -> str:
    png = files[0]
    svg = next((f for f in files if f.endswith(".svg")), None)
    link = f' (<a href="{_e(svg)}">SVG</a>)' if svg else ""
    return (f'<figure><img src="{_e(png)}" alt="{_e(alt)}" loading="lazy">'
            f"<figcaption>{caption}{link}</figcaption></figure>")


def _options(d: dict[str, Any] | None) -> str:
    if not d:
        return "(none)"
    return ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in d.items())


def _size(n: Any) -> str:
    return "n/a" if not isinstance(n, int) else f"{n / 2**20:,.1f} MiB"


def runs_table(runs: Sequence[Run], manifests: dict[str, str], colours: dict[str, str]) -> str:
    rows = []
    for r in runs:
        m, met = r.manifest or {}, r.metrics
        jobs = m.get("jobs") or {}
        counts = (f"{met['nb_jobs']:,} / {met['nb_success']:,} / {met['nb_rejected']:,} / "
                  f"{met['nb_killed'] + met['nb_walltime'] + met['nb_failed']:,}")
        if jobs and jobs.get("submitted") != met["nb_jobs"]:
            counts += f" (manifest: {jobs.get('submitted')} submitted)"
        sched = m.get("scheduler") or {}
        users = m.get("users") or {}
        what = (f"<code>{_e(sched.get('name'))}</code> {_e(_options(sched.get('options')))}" if sched else
                "unknown (no manifest)")
        if users:
            what += f"<br>user model <code>{_e(users.get('name'))}</code> {_e(_options(users.get('options')))}"
        link = (f'<a href="{_e(manifests[r.label])}">manifest</a>' if r.label in manifests else "none")
        n_src = {"schedule": "from its _schedule.csv", "platform": "from --platform", "argument": "given",
                 "inferred": "inferred: highest machine id + 1"}.get(met["nb_resources_source"], "")
        rows.append([f'<span class="swatch" style="background:{colours.get(r.label, "#fff")}"></span>{_e(r.label)}',
                     f"<code>{_e(r.jobs_csv)}</code>", counts, f"{met['nb_resources']} ({_e(n_src)})",
                     _e("" if r.seed is None else r.seed), what, link])
    return _table(["run", "jobs file", "jobs: all / completed / rejected / killed", "machines N", "seed",
                   "scheduler and options (defaults filled in)", "manifest"], rows, numeric_from=99, raw=True)


def metrics_table(runs: Sequence[Run]) -> str:
    rows = metric_rows([r.metrics for r in runs])
    rows = [[label.replace("  ", "\u2003", 1) if label.startswith("  ") else label, *values] for label, values in rows]
    return _table(["metric", *(r.label for r in runs)], rows)


def seeds_table(configs: Sequence[Config], compared: Sequence[tuple[str, tuple[str, ...], str]]) -> str:
    """Mean ± 95 % CI half-width across seeds, per configuration."""
    rows = []
    for c in configs:
        row = [c.label, str(len(c.runs))]
        for _, path, unit in compared:
            vals = []
            for r in c.runs:
                v: Any = r.metrics
                for k in path:
                    v = v.get(k) if isinstance(v, dict) else None
                vals.append(v)
            mean, half = mean_ci(vals)
            k = 100.0 if unit == "%" else 1.0
            row.append("n/a" if mean is None else f"{k * mean:,.4g}" + ("" if half is None else f" ± {k * half:,.3g}"))
        rows.append(row)
    head = ["configuration", "runs", *(f"{t} ({'s' if u == 'time' else u})" if u else t for t, _, u in compared)]
    return _table(head, rows)


def provenance(runs: Sequence[Run], manifests: dict[str, str]) -> str:
    out = []
    for r in runs:
        m = r.manifest
        if not m:
            out.append(f"<details><summary>{_e(r.label)}: no manifest next to <code>{_e(r.jobs_csv)}</code> "
                       "(provenance unknown)</summary></details>")
            continue
        v, git, host = m.get("versions") or {}, m.get("git"), m.get("host") or {}
        commit = "not a git checkout (or git absent)" if not git else (
            f"<code>{_e(git.get('commit'))}</code>" + (" (uncommitted changes)" if git.get("dirty") else ""))
        items = [("call", f"<code>{_e(m.get('call'))}</code>"),
                 ("versions", _e(", ".join(f"{k} {val}" for k, val in v.items() if val))),
                 ("batfeed commit", commit),
                 ("started (UTC)", _e(m.get("started_utc"))),
                 ("wall time", _e(f"{m.get('wall_time_s', 0):.2f} s (engine {m.get('engine_wall_time_s', 0):.2f} s)")),
                 ("peak RSS", _e(_size(m.get("peak_rss_bytes"))) + " (the process's peak)"),
                 ("engine", _e(f"{(m.get('engine') or {}).get('transport')} transport, "
                               f"{(m.get('engine') or {}).get('driver')} driver")),
                 ("host", _e(f"{host.get('name')} ({host.get('platform')})"))]
        inputs = m.get("inputs") or {}
        rows = []
        for role, entries in inputs.items():
            for e in entries.values() if role == "option_files" else (
                    entries if isinstance(entries, list) else [entries]):
                if isinstance(e, dict):
                    where = e.get("path") or ("in memory" + (f", {e['nb_machines']} machines"
                                                             if "nb_machines" in e else ""))
                    rows.append([role, str(where), str(e.get("sha256") or "")])
        body = "".join(f"<tr><th>{k}</th><td>{val}</td></tr>" for k, val in items)
        link = f' — <a href="{_e(manifests[r.label])}">manifest</a>' if r.label in manifests else ""
        out.append(f"<details open><summary><b>{_e(r.label)}</b>{link}</summary><table>{body}</table>"
                   + _table(["input", "path", "SHA-256"], rows, numeric_from=99) + "</details>")
    return "\n".join(out)


def page(title: str, header: str, sections: Sequence[tuple[str, str, str]]) -> str:
    """The whole page: ``sections`` are (id, heading, HTML body)."""
    nav = " ".join(f'<a href="#{sid}">{_e(h)}</a>' for sid, h, _ in sections)
    body = "\n".join(f'<h2 id="{sid}">{_e(h)}</h2>\n{html}' for sid, h, html in sections)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>{_e(title)}</title>\n'
            f"<style>{CSS}</style>\n</head>\n<body>\n<h1>{_e(title)}</h1>\n{header}\n<nav>{nav}</nav>\n{body}\n"
            "</body>\n</html>\n")


def write_page(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path

"""The runs of a report: where they are, their manifests, labels, configurations and metrics.

Inputs are ``_jobs.csv`` files, folders of them, or campaign folders (a ``results.parquet`` or
``results.csv`` table whose ``jobs_csv`` and ``manifest`` columns name each run's files, relative to
the folder or absolute; the table is verified first: :func:`campaign_table`).  A run's manifest is
``PREFIX_manifest.json`` next to ``PREFIX_jobs.csv`` (or the campaign table's ``manifest``).  Runs
whose manifests agree on everything but the seed form one *configuration*; the comparison shows its
mean and 95 % confidence interval across seeds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from batfeed.errors import InputError
from batfeed.manifest import SUFFIX, read_manifest
from batfeed.metrics import compute_metrics, resolve_machines
from batfeed.read_jobs import read_jobs_csv
from batfeed.report.table import run_names

__all__ = ["Config", "Run", "Source", "configurations", "find_runs", "load_runs"]

CAMPAIGN_TABLES = ("results.parquet", "results.csv")
SPEC_COLUMNS = ("trace", "platform", "scheduler", "users")
OK_STATUS = ("ok", "done", "success", "completed", "finished")


@dataclass
class Run:
    label: str
    jobs_csv: Path
    frame: pd.DataFrame = field(repr=False)
    metrics: dict[str, Any] = field(repr=False)
    manifest: dict[str, Any] | None = field(repr=False)
    manifest_path: Path | None
    key: str                   # the configuration: everything but the seed
    seed: int | None


@dataclass
class Config:
    """Runs sharing everything but the seed."""

    label: str
    runs: list[Run]

    @property
    def seeds(self) -> list[Any]:
        return [r.seed for r in self.runs]


@dataclass
class Source:
    """Where a run is: its ``_jobs.csv``, its manifest, and for a campaign row its spec columns (the
    seed excluded) and its seed (None when the run did not use it)."""

    jobs_csv: Path
    manifest: Path | None = None
    spec: dict[str, Any] | None = None
    seed: int | None = None


def _is_spec_column(col: str) -> bool:
    return col in SPEC_COLUMNS or col.startswith(("options.", "user_options."))


def _present(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and v != ""


def _again(folder: Path, manifest: dict[str, Any] | None, what: str) -> str:
    spec = (manifest or {}).get("spec_source")
    spec = spec if isinstance(spec, str) and spec and spec != "campaign spec" else "SPEC"
    return f"run 'batfeed campaign {spec} -o {folder}' again to {what}"


def _csv_shape(path: Path) -> str | None:
    """Why ``path`` is not a whole CSV table (a row with another number of fields than the header, a
    last row cut short), else None."""
    import csv

    try:
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as err:
        return f"cannot read ({getattr(err, 'strerror', None) or err})"
    if not text.strip():
        return "empty"
    try:
        reader = csv.reader(text.splitlines(keepends=True))
        width = len(next(reader))
        for row in reader:
            if len(row) != width:
                return f"line {reader.line_num} has {len(row)} fields, the header {width}"
    except csv.Error as err:
        return f"not a CSV table ({err})"
    if not text.endswith("\n"):
        return "the last row is cut short (no line break at the end)"
    return None


def campaign_table(folder: Path) -> tuple[Path, pd.DataFrame]:
    """A campaign folder's table, verified: its ``results.parquet`` (else ``results.csv``) reads
    whole, and in a ``batfeed campaign`` folder (a ``campaign.json``) it has the manifest's number of
    runs, ``run`` 0..n-1, and each ``ok`` row's ``runs/KEY/result.json`` is that run's record.  A
    damaged table or folder is an :class:`InputError` naming the file, never a partial report."""
    from batfeed.campaign.execute import record_problem

    manifest_path = folder / "campaign.json"
    manifest: dict[str, Any] | None = None
    if manifest_path.exists():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise InputError(f"cannot read the campaign manifest ({err}): the folder is damaged; "
                             f"{_again(folder, None, 'rewrite it')}", str(manifest_path)) from None
        if not isinstance(manifest, dict):
            raise InputError(f"not a campaign manifest: {_again(folder, None, 'rewrite it')}", str(manifest_path))
    table = next(folder / name for name in CAMPAIGN_TABLES if (folder / name).is_file())

    def damaged(why: str, path: Path = table, what: str = "rewrite it") -> InputError:
        return InputError(f"{why}: the table is damaged; {_again(folder, manifest, what)}", str(path))

    if table.suffix == ".csv" and (why := _csv_shape(table)):
        raise damaged(why)
    try:
        rows = pd.read_parquet(table) if table.suffix == ".parquet" else pd.read_csv(table)
    except Exception as err:
        text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise damaged(f"cannot read the campaign table ({text})") from None
    n = manifest.get("runs") if manifest else None
    if isinstance(n, int) and not isinstance(n, bool) and len(rows) != n:
        raise damaged(f"{len(rows)} rows, campaign.json says {n} runs")
    if "run" in rows.columns and rows["run"].tolist() != list(range(len(rows))):
        raise damaged(f"the run column is not 0..{len(rows) - 1} in order")
    if manifest is not None and {"key", "status"} <= set(rows.columns):
        ok = rows[rows["status"].astype(str) == "ok"]
        for key in dict.fromkeys(ok["key"].astype(str)):
            record, why = record_problem(folder / "runs" / key)
            if record is None:
                raise InputError(f"{why or 'no such run directory'}: the table says run {key} is done; "
                                 f"{_again(folder, manifest, 'redo it')}", None if why else str(folder / "runs" / key))
            if record["status"] != "ok":
                raise damaged(f"run {key} is ok in the table, {record['status']} in runs/{key}/result.json")
    return table, rows


def _campaign_rows(folder: Path) -> list[Source]:
    """The finished runs of a campaign table (helper of :func:`find_runs`); rows sharing one
    simulation (an unused seed) give one run."""
    table, rows = campaign_table(folder)
    if "jobs_csv" not in rows.columns:
        raise InputError("not a campaign table: no jobs_csv column", str(table))
    if "status" in rows.columns:
        rows = rows[rows["status"].astype(str).str.lower().isin(OK_STATUS)]
    spec_cols = [c for c in rows.columns if _is_spec_column(c)]
    out: dict[Path, Source] = {}
    for _, row in rows.iterrows():
        jobs = row["jobs_csv"]
        if not _present(jobs) or folder / str(jobs) in out:
            continue
        manifest = row.get("manifest")
        used = row.get("seed_used", True)
        used = str(used).lower() in ("true", "1", "1.0") if not isinstance(used, bool) else used
        seed = row.get("seed")
        out[folder / str(jobs)] = Source(
            folder / str(jobs), folder / str(manifest) if _present(manifest) else None,
            {c: (row[c] if _present(row[c]) else None) for c in spec_cols},
            int(seed) if used and _present(seed) else None)
    if not out:
        raise InputError("the campaign table lists no finished run", str(table))
    return list(out.values())


def find_runs(inputs: Sequence[str | Path]) -> list[Source]:
    """Every run named by ``inputs`` (files, folders of ``*_jobs.csv``, campaign folders)."""
    out: list[Source] = []
    for item in map(Path, inputs):
        if item.is_dir():
            if any((item / name).is_file() for name in CAMPAIGN_TABLES):
                out += _campaign_rows(item)
                continue
            found = sorted(item.glob("*_jobs.csv"))
            if not found:
                raise InputError("no *_jobs.csv and no campaign table (results.csv/results.parquet) in this folder",
                                 str(item))
            out += [Source(p) for p in found]
        elif item.is_file():
            out.append(Source(item))
        else:
            raise InputError("file not found", str(item))
    for src in out:
        if src.manifest is None and src.jobs_csv.name.endswith("_jobs.csv"):
            candidate = src.jobs_csv.with_name(src.jobs_csv.name[: -len("_jobs.csv")] + SUFFIX)
            src.manifest = candidate if candidate.is_file() else None
    return out


# --------------------------------------------------------------------------- configurations and labels


def _config_fields(m: dict[str, Any]) -> dict[str, Any]:
    """What defines a configuration in a manifest: everything that changes the schedule but the seed."""
    inputs = m.get("inputs") or {}

    def digests(entries: Any) -> list[Any]:
        if isinstance(entries, dict):
            entries = [entries]
        return [e.get("sha256") or e.get("path") for e in entries or [] if isinstance(e, dict)]

    sched, users = m.get("scheduler") or {}, m.get("users") or {}
    return {
        "scheduler": str(sched.get("name", "")).lower(), "options": sched.get("options"),
        "users": users.get("name"), "user_options": users.get("options"), "layer": users.get("layer_options"),
        "platform": digests(inputs.get("platform")), "workloads": digests(inputs.get("workloads")),
        "events": digests(inputs.get("events")),
        "option_files": digests(list((inputs.get("option_files") or {}).values())),
        "switches": (m.get("engine") or {}).get("batsim_switches"),
    }


def _value(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":"))


def _stem(path: Any) -> str:
    name = Path(str(path)).name
    for ext in (".gz", ".json", ".xml", ".swf", ".txt"):
        name = name.removesuffix(ext)
    return name


def _chosen(part: dict[str, Any], name: str | None, kind: str) -> set[str]:
    """The options given with a value other than the default (all the given ones when the spec is unknown)."""
    from batfeed.run_options import spec_of, user_model_specs

    given = part.get("options_given") or {}
    specs = (spec_of(name)[1] if kind == "scheduler" else user_model_specs(name)) or {}
    return {k for k, v in given.items() if k not in specs or v != specs[k].default}


def auto_labels(manifests: Sequence[dict[str, Any] | None], fallback: Sequence[str]) -> list[str]:
    """A label per run: from its manifest, the scheduler and what varies among the runs (its options,
    the user model and its options, the trace, the platform); else ``fallback`` (the file's prefix)."""
    fields = [_config_fields(m) if m else None for m in manifests]
    known = [f for f in fields if f]

    def varies(key: str, among: list[dict[str, Any]]) -> bool:
        return len({json.dumps(f.get(key), sort_keys=True, default=str) for f in among}) > 1

    labels = []
    for m, f, fb in zip(manifests, fields, fallback, strict=True):
        if not f or not m:
            labels.append(fb)
            continue
        same = [g for g in known if g["scheduler"] == f["scheduler"]]
        parts = [f["scheduler"] or fb]
        opts, chosen = f["options"] or {}, _chosen((m.get("scheduler") or {}), f["scheduler"], "scheduler")
        parts += [f"{k}={_value(opts[k])}" for k in sorted(opts)
                  if k in chosen or len({_value((g["options"] or {}).get(k)) for g in same}) > 1]
        if f["users"]:
            parts.append(f"users={f['users']}")
            peers = [g for g in known if g["users"] == f["users"]]
            uo, chosen = f["user_options"] or {}, _chosen((m.get("users") or {}), f["users"], "users")
            parts += [f"{k}={_value(uo[k])}" for k in sorted(uo)
                      if k in chosen or len({_value((g["user_options"] or {}).get(k)) for g in peers}) > 1]
        inputs = m.get("inputs") or {}
        if varies("workloads", known):
            names = [_stem(w.get("path") or "jobs") for w in inputs.get("workloads") or []]
            parts.append("trace=" + "+".join(names or ["none"]))
        if varies("platform", known):
            plat = inputs.get("platform") or {}
            parts.append("platform=" + (_stem(plat["path"]) if plat.get("path") else f"{plat.get('nb_machines')}"))
        if varies("events", known):
            parts.append("events=" + "+".join(_stem(e.get("path") or "mem") for e in inputs.get("events") or [])
                         or "events=none")
        labels.append(" ".join(parts))
    return labels


def spec_labels(specs: Sequence[dict[str, Any]]) -> list[str]:
    """Labels of campaign runs from their spec columns: the scheduler, then what varies among the runs
    (its options, the user model and its options, the trace, the platform); never the seed."""
    def varies(col: str, among: Sequence[dict[str, Any]]) -> bool:
        return len({_value(sp.get(col)) for sp in among}) > 1

    labels = []
    for sp in specs:
        same = [o for o in specs if o.get("scheduler") == sp.get("scheduler")]
        parts = [str(sp.get("scheduler"))]
        parts += [f"{c.split('.', 1)[1]}={_value(sp[c])}" for c in sp
                  if c.startswith("options.") and sp[c] is not None and varies(c, same)]
        if sp.get("users") not in (None, "none"):      # the campaign table writes "none"
            parts.append(f"users={sp['users']}")
            peers = [o for o in specs if o.get("users") == sp.get("users")]
            parts += [f"{c.split('.', 1)[1]}={_value(sp[c])}" for c in sp
                      if c.startswith("user_options.") and sp[c] is not None and varies(c, peers)]
        parts += [f"{c}={sp.get(c)}" for c in ("trace", "platform") if varies(c, specs)]
        labels.append(" ".join(parts))
    return labels


def _seed(m: dict[str, Any] | None) -> int | None:
    seed = (m or {}).get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def load_runs(sources: Sequence[Source], labels: Sequence[str] | None = None, *, tau: float = 10.0,
              nb_resources: int | None = None, platform: str | Path | None = None,
              warn: Any = None) -> list[Run]:
    """Read every run: its ``_jobs.csv`` (checked), its manifest, its metrics (N as ``batfeed metrics``
    resolves it; ``warn(message)`` when N is inferred), its configuration and its label (``labels``
    override).  Campaign runs are grouped and named by their spec columns, other runs by their
    manifests (all but the seed), runs without either by their labels."""
    if labels and len(labels) != len(sources):
        raise InputError(f"{len(labels)} --label for {len(sources)} runs: give one per run, in order")
    manifests = [read_manifest(src.manifest) if src.manifest else None for src in sources]
    auto = auto_labels(manifests, run_names([src.jobs_csv for src in sources]))
    in_campaign = [k for k, src in enumerate(sources) if src.spec is not None]
    for k, label in zip(in_campaign, spec_labels([sources[k].spec or {} for k in in_campaign]), strict=True):
        auto[k] = label
    runs = []
    for i, (src, manifest) in enumerate(zip(sources, manifests, strict=True)):
        frame = read_jobs_csv(src.jobs_csv)
        n, origin, where = resolve_machines(src.jobs_csv, nb_resources, platform)
        metrics = compute_metrics(frame, tau=tau, nb_resources=n)
        metrics["source"] = str(src.jobs_csv)
        metrics["nb_resources_source"], metrics["nb_resources_from"] = origin, where
        if origin == "inferred" and metrics["nb_resources"] is not None and warn is not None:
            warn(f"platform size unknown for {src.jobs_csv} (no --platform or --nb-resources, no _schedule.csv next "
                 f"to it): N = {metrics['nb_resources']}, the highest allocated machine id + 1; the utilisation may "
                 "be overestimated")
        label = labels[i] if labels else auto[i]
        if src.spec is not None:
            key = json.dumps({"campaign": src.spec}, sort_keys=True, default=str)
            seed = src.seed
        elif manifest:
            key, seed = json.dumps(_config_fields(manifest), sort_keys=True, default=str), _seed(manifest)
        else:
            key, seed = json.dumps({"label": label}), None
        runs.append(Run(label, src.jobs_csv, frame, metrics, manifest or None,
                        src.manifest if manifest else None, key, seed))
    return runs


def configurations(runs: Sequence[Run]) -> list[Config]:
    """Runs grouped by configuration, in first-seen order; a configuration with several seeds gets
    its runs labelled ``LABEL seed=S``."""
    groups: dict[str, list[Run]] = {}
    for r in runs:
        groups.setdefault(r.key, []).append(r)
    configs = [Config(members[0].label, members) for members in groups.values()]
    seen: dict[str, int] = {}
    for c in configs:                        # two configurations with one label: number them
        seen[c.label] = seen.get(c.label, 0) + 1
        if seen[c.label] > 1:
            c.label = f"{c.label} #{seen[c.label]}"
    for c in configs:
        if len(c.runs) > 1:
            for k, r in enumerate(c.runs):
                r.label = f"{c.label} seed={r.seed}" if r.seed is not None else f"{c.label} run {k + 1}"
        else:
            c.runs[0].label = c.label
    return configs


def finite(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and math.isfinite(x) else None

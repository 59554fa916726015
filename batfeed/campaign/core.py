"""``run_campaign``: check, expand, prepare the inputs, dispatch the runs, write the table."""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from batfeed.campaign.execute import RunTask, longest_first, run_dask, run_local, utc_now
from batfeed.campaign.expand import Run, expand
from batfeed.campaign.inputs import Converted, convert_trace, platform_path
from batfeed.campaign.model import Campaign, CampaignError
from batfeed.campaign.spec import load_spec
from batfeed.campaign.store import (
    clean_partial,
    forget,
    locked,
    manifest_problem,
    records,
    save_spec,
    write_manifest,
)
from batfeed.campaign.table import build_table, write_table
from batfeed.errors import BatfeedError

EXECUTORS = ("local", "dask")


class CampaignInterrupted(KeyboardInterrupt):
    """The campaign was interrupted (SIGINT); the table of the finished runs was written first."""

    def __init__(self, table: pd.DataFrame, root: Path, done: int, total: int):
        super().__init__(f"campaign interrupted: {done} of {total} runs done; table written to {root}")
        self.table, self.root, self.done, self.total = table, root, done, total


def output_dir(camp: Campaign, out_dir: str | Path | None) -> Path:
    """``out_dir``, else the spec's ``output``, else ``runs/NAME``."""
    return Path(out_dir) if out_dir is not None else camp.output or Path("runs") / camp.name


def run_campaign(spec: str | Path | Mapping[str, Any] | Campaign, out_dir: str | Path | None = None, *,
                 workers: int | None = None, executor: str = "local", scheduler_address: str | None = None,
                 retry_failed: bool = False, dry_run: bool = False, progress: bool | None = None,
                 log: Callable[[str], None] | None = None, warn: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Run a campaign and return its table (one row per run, in expansion order).

    ``spec``: a TOML/YAML campaign file, a mapping of the same content (relative paths from the
    current directory) or a checked :class:`Campaign`.  ``out_dir``: the campaign directory (default:
    the spec's ``output``, else ``runs/NAME``); runs already complete there are reused, so calling
    again after an interruption resumes.  ``workers``: parallel runs (default: the CPU count).
    ``executor``: "local" (a process pool) or "dask" (``scheduler_address`` ``tcp://HOST:8786``, or a
    LocalCluster of ``workers`` processes when None).  ``retry_failed``: run again the runs that failed
    before.  ``dry_run``: plan only (the table lists what is done and pending).  ``progress``: a bar
    over runs (None: when stderr is a terminal).  ``log``: where the one-line progress notes go.
    ``warn``: where the notes on damaged state go (a run redone, an input made again; default: stderr,
    ``batfeed campaign: warning: ...``): nothing damaged in the directory is used silently.

    A failed run is a row with status "failed" and its one-line ``error``; it does not stop the
    others.  A bad spec raises :class:`CampaignError` before anything runs.  KeyboardInterrupt stops
    the dispatch, interrupts the runs in flight, writes the table and raises :class:`CampaignInterrupted`.
    The table is also written to ``DIR/results.csv`` and ``DIR/results.parquet``.
    """
    say = log or (lambda _line: None)
    warn = warn or (lambda line: print(f"batfeed campaign: warning: {line}", file=sys.stderr, flush=True))
    camp = spec if isinstance(spec, Campaign) else load_spec(spec)
    if executor not in EXECUTORS:
        raise BatfeedError(f"unknown executor '{executor}' (local or dask)")
    if scheduler_address is not None and executor != "dask":
        raise BatfeedError("--scheduler-address needs --executor dask")
    workers = os.cpu_count() or 1 if workers is None else workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise BatfeedError(f"--workers must be an integer >= 1 (got {workers})")
    runs = expand(camp)
    if not runs:
        raise CampaignError(f"{camp.source}: exclude removes every run")
    from batfeed.outpaths import writable_dir

    if dry_run:                         # nothing written, not even the directory
        root = output_dir(camp, out_dir).resolve()
        return _run(camp, runs, root, workers, executor, scheduler_address, retry_failed, True, progress, say, warn)
    root = writable_dir(output_dir(camp, out_dir), "-o/--output").resolve()
    with locked(root):
        return _run(camp, runs, root, workers, executor, scheduler_address, retry_failed, dry_run, progress, say,
                    warn)


def _run(camp: Campaign, runs: list[Run], root: Path, workers: int, executor: str, address: str | None,
         retry_failed: bool, dry_run: bool, progress: bool | None, say: Callable[[str], None],
         warn: Callable[[str], None]) -> pd.DataFrame:
    t0 = time.perf_counter()
    unique: dict[str, Run] = {}
    for run in runs:
        unique.setdefault(run.key, run)
    recs = records(root, list(unique), warn, repair=not dry_run)
    if retry_failed:
        recs = {k: r for k, r in recs.items() if r["status"] != "failed"}
    before = set(recs)
    todo = [run for key, run in unique.items() if key not in recs]
    reused = sum(run.key in before for run in runs)
    if not todo:
        where = ""
    elif executor == "local":
        where = f" on {min(workers, len(todo))} local worker process(es)"
    else:
        where = f" on the Dask cluster at {address}" if address else \
            f" on a Dask LocalCluster of {workers} worker process(es)"
    say(f"campaign {camp.name}: {len(runs)} runs ({len(unique)} simulations); {reused} runs reused "
        f"({len(before)} simulations done before); {len(todo)} to run{where} -> {root}")
    if dry_run:
        return build_table(camp, runs, root, recs, {})
    cleaned = clean_partial(root)
    if cleaned:
        say(f"removed {cleaned} partial run(s) or input(s) left by an interrupted invocation")
    for run in todo:                    # failed runs to retry
        forget(root, run.key)
    damaged = manifest_problem(root)
    if damaged:
        warn(f"{damaged}: rewritten (the record of earlier invocations is lost)")
    spec_name = save_spec(root, camp)
    tasks = prepare(camp, todo, root, warn)
    invocation: dict[str, Any] = {"id": f"{os.getpid()}-{time.time_ns()}", "started": utc_now(), "finished": None,
                                  "argv": sys.argv, "executor": executor, "workers": workers,
                                  "scheduler_address": address, "to_run": len(tasks), "reused_runs": reused,
                                  "status": "running"}
    write_manifest(root, camp, spec_name, invocation, {"runs": len(runs), "simulations": len(unique)})
    lost: dict[str, str] = {}
    interrupted = False
    from tqdm import tqdm

    bar = tqdm(total=len(tasks), unit="run", desc=f"campaign {camp.name}", file=sys.stderr,
               disable=None if progress is None else not progress, leave=False)

    def done(task: RunTask, record: dict[str, Any] | None, error: str | None) -> None:
        if record is not None:
            recs[task.key] = record
            for line in record.get("notes") or []:        # a damaged cached input the run made again
                with tqdm.external_write_mode(file=sys.stderr):
                    warn(line)
        else:
            lost[task.key] = error or "lost"
        if record is None or record["status"] == "failed":
            bar.write(f"run {task.key} ({describe(unique[task.key])}) failed: {lost.get(task.key) or record['error']}",
                      file=sys.stderr)
        bar.update(1)

    try:
        if tasks and executor == "local":
            run_local(longest_first(tasks), min(workers, len(tasks)), done)
        elif tasks:
            run_dask(longest_first(tasks), workers, address, done)
    except KeyboardInterrupt:
        interrupted = True
    except BaseException as err:        # e.g. no Dask scheduler at the address: say so in the manifest
        invocation.update(finished=utc_now(), status="error", error=str(err).splitlines()[0] if str(err) else
                          type(err).__name__)
        write_manifest(root, camp, spec_name, invocation, {"runs": len(runs), "simulations": len(unique)})
        raise
    finally:
        bar.close()
    recs.update(records(root, [k for k in unique if k not in recs], warn))   # a run may end as it is interrupted
    table = build_table(camp, runs, root, recs, lost)
    csv, parquet = write_table(table, root)
    status = table["status"].value_counts().to_dict()
    invocation.update(finished=utc_now(), wall_s=round(time.perf_counter() - t0, 3), ran=len(tasks),
                      status="interrupted" if interrupted else "failed" if status.get("failed") else "complete",
                      outcome=status)
    write_manifest(root, camp, spec_name, invocation, {"runs": len(runs), "simulations": len(unique)})
    say(f"wrote {csv} and {parquet.name} ({len(runs)} runs: " + ", ".join(f"{n} {s}" for s, n in status.items())
        + f") in {time.perf_counter() - t0:.1f} s")
    if camp.lean:
        say(lean_summary([recs[t.key] for t in tasks if t.key in recs]))
    if interrupted:
        raise CampaignInterrupted(table, root, int((table["status"] != "pending").sum()), len(table))
    return table


def lean_summary(records: list[dict[str, Any]]) -> str:
    """One line: how many of this invocation's runs ran lean, and why the others needed the engine."""
    why = Counter(r.get("lean_reason") for r in records if r.get("simulation") == "engine")
    lean = sum(r.get("simulation") == "lean" for r in records)
    reasons = "; ".join(f"{n}: {reason}" for reason, n in why.most_common() if reason)
    tail = f"; on the engine: {reasons}" if reasons else ""
    return f"lean: {lean} of {len(records)} runs without the engine{tail}"


def describe(run: Run) -> str:
    """``kth200 trace maui options.config=x.cfg users=a0``: a run's spec values, for messages."""
    row = run.row
    parts = [str(row["trace"]), str(row["platform"]), str(row["scheduler"])]
    parts += [f"{k}={v}" for k, v in row.items() if k.startswith(("options.", "user_options."))]
    parts += [f"users={row['users']}"] if row["users"] != "none" else []
    parts += [f"seed={row['seed']}"] if run.seeded else []
    return " ".join(parts)


def prepare(camp: Campaign, todo: list[Run], root: Path, note: Callable[[str], None] | None = None) -> list[RunTask]:
    """Convert the traces the runs need (each once), make their platforms, and describe each run;
    ``note`` says which damaged inputs were made again."""
    note = note or (lambda _line: None)
    inputs = root / "inputs"
    convs: dict[str, Converted] = {}
    tasks = []
    for run in todo:
        ck = run.recipe["trace"]["conversion"]
        if ck not in convs:
            i = camp.traces.index(run.trace)
            try:
                convs[ck] = Converted(None, None, None, 0) if run.trace.format == "generate" else \
                    convert_trace(run.trace, ck, inputs, note)
            except (BatfeedError, ValueError) as err:
                raise BatfeedError(f"{camp.source}: traces[{i}] ({run.trace.name}): {err}") from None
        j = camp.platforms.index(run.platform)
        platform = platform_path(run.platform, convs[ck], inputs,
                                 f"{camp.source}: platforms[{j}] ({run.platform.name}) with trace {run.trace.name}",
                                 note)
        seed = run.seed if run.seeded else None
        weeks = run.trace.resample_weeks
        if run.trace.resampled:     # resampled (then shaken): gzip, a resample of a large log is large
            if run.trace.resample_method == "permute":  # as long as the log: no weeks in the name
                how = "permute"
            else:
                how = f"w{weeks}" + ("" if run.trace.resample_method == "weekly"
                                     else f"-users-f{run.trace.resample_load:g}")
            if run.trace.resample_rb_npw:
                how += f"-rb{run.trace.resample_rb_npw:g}"
            shaken: Path | None = inputs / "derived" / f"{ck}-{how}-{run.trace.shake:g}s-seed{seed}.json.gz"
        else:
            shaken = inputs / "shaken" / f"{ck}-{run.trace.shake:g}s-seed{seed}.json" \
                if run.trace.shake > 0 else None
        tasks.append(RunTask(
            key=run.key, root=str(root), workload=str(convs[ck].workload or ""), platform=str(platform),
            scheduler=run.scheduler.target, options=dict(run.options), users=run.users,
            user_options=dict(run.user_options), events=[str(e) for e in run.platform.events], shake=run.trace.shake,
            resample_weeks=weeks, resample_method=run.trace.resample_method,
            resample_load=run.trace.resample_load, resample_rb_npw=run.trace.resample_rb_npw, seed=seed,
            shaken=None if shaken is None else str(shaken),
            tau=camp.tau, window=camp.window,
            call=f"batfeed campaign {camp.source} (run {run.key})", validate=camp.validate, lean=camp.lean))
    return tasks

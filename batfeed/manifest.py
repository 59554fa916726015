"""Run manifests: ``PREFIX_manifest.json`` next to a simulation's outputs says how they were made.

Written once, after the run, by :func:`batfeed.runner.run_simulation` and
:func:`batfeed.api.simulate_jobs` whenever they export files.  A manifest records the call, the
scheduler and user model with every option (defaults filled in from the option specs), the seed,
the inputs with their SHA-256, the versions, the git commit of a batfeed checkout, the start time,
wall time, peak RSS and the job counts; the fields are listed in ``docs/report.md``.  Building or
writing it never fails a run: a problem is a warning on stderr and no manifest.
"""

from __future__ import annotations

import datetime
import hashlib
import inspect
import json
import os
import platform as pyplatform
import shlex
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from batfeed import kernel
from batfeed.run_options import spec_of, user_model_specs

SCHEMA = 1
SUFFIX = "_manifest.json"
_CHUNK = 1 << 20

__all__ = ["SCHEMA", "SUFFIX", "Prefetch", "build_manifest", "cli_call", "file_entry", "git_info", "host",
           "manifest_for", "python_call", "read_manifest", "utc_now", "versions", "write_manifest"]


def utc_now() -> str:
    """The current time, UTC, ISO 8601 (``2025-01-31T12:00:00.123+00:00``)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def file_entry(path: str | Path) -> dict[str, Any]:
    """``{"path": as given, "sha256", "bytes"}`` of an input file (``sha256`` None if unreadable)."""
    try:
        return {"path": str(path), "sha256": sha256_file(path), "bytes": os.path.getsize(path)}
    except OSError:
        return {"path": str(path), "sha256": None, "bytes": None}


def versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    from batfeed import __version__

    out: dict[str, str | None] = {"batfeed": __version__}
    for name in ("pybatsim", "numpy", "pandas"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    out["python"] = sys.version.split()[0]
    return out


def git_info(root: str | Path | None = None) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the batfeed checkout this code runs from; None when it is not a
    checkout or ``git`` is absent.  ``dirty``: tracked files differ from the commit (untracked files
    do not count); None if ``git status`` failed."""
    root = Path(root) if root is not None else Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10)
        if commit.returncode != 0:
            return None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return {"commit": commit.stdout.strip(), "dirty": dirty}


def host() -> dict[str, str]:
    """This machine's name and ``platform.platform()`` (its ``uname -p`` is a subprocess)."""
    return {"name": pyplatform.node(), "platform": pyplatform.platform()}


class Prefetch:
    """What a manifest records that does not depend on the run, gathered in a background thread while the run
    goes on: :func:`git_info` and :func:`host` (``git`` and ``uname -p`` are subprocesses) and the
    :func:`file_entry` of the input ``files`` (hashlib hashes without holding the GIL).  The thread uses
    modules already imported: the main thread is importing the engine meanwhile."""

    def __init__(self, files: Iterable[str | Path] = ()):
        self._files = [str(f) for f in files]
        self._done: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._work, name="batfeed-manifest", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            self._done["git"] = git_info()
            self._done["host"] = host()
            self._done["files"] = {f: file_entry(f) for f in self._files}
        except BaseException as err:    # noqa: BLE001 - raised again when the manifest is built (a warning)
            self._done["error"] = err

    def get(self, key: str) -> Any:
        """``git`` (:func:`git_info`) or ``host`` (:func:`host`), once the thread is done."""
        self._thread.join()
        if "error" in self._done:
            raise self._done["error"]
        return self._done[key]

    def file_entry(self, path: str | Path) -> dict[str, Any]:
        """:func:`file_entry` of ``path``, hashed in the background if it was one of the files."""
        got = self.get("files").get(str(path))
        return dict(got) if got is not None else file_entry(path)


def peak_rss_bytes() -> int | None:
    """This process's peak resident set size since it started (``getrusage``), in bytes."""
    try:
        import resource
    except ImportError:          # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


# --------------------------------------------------------------------------- call descriptions


def cli_call(argv: Sequence[str], prog: str = "batfeed") -> str:
    """The command line, shell-quoted: ``batfeed simulate p.xml w.json --options '{"policy": "SQF"}'``."""
    return shlex.join([prog, *argv])


def command_line(args: Any) -> str | None:
    """:func:`cli_call` of a parsed command line (its ``argv``, set by ``batfeed.cli.main``), else None."""
    argv = getattr(args, "argv", None)
    return cli_call(argv) if argv is not None else None


def _short(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "columns"):
        return f"<DataFrame {value.shape[0]} rows: {', '.join(map(str, value.columns))}>"
    if isinstance(value, Path):
        return repr(str(value))
    if isinstance(value, list | tuple) and all(isinstance(v, str | Path) for v in value):
        return "[" + ", ".join(repr(str(v)) for v in value) + "]"
    text = repr(value)
    size = len(value) if hasattr(value, "__len__") else "?"
    return text if len(text) <= 200 else f"<{type(value).__name__} of {size}>"


def python_call(fn: Callable[..., Any], given: Mapping[str, Any], skip: Iterable[str] = ()) -> str:
    """``batfeed.runner.run_simulation('p.xml', ['w.json'], scheduler='easy')``: the arguments of a
    call that differ from the defaults (``given``: the function's ``locals()`` on entry)."""
    params = inspect.signature(fn).parameters
    parts = []
    for name, p in params.items():
        if name in skip or name not in given:
            continue
        value = given[name]
        if p.default is not inspect.Parameter.empty:
            try:
                if value == p.default:
                    continue
            except Exception:       # arrays and frames do not compare to None
                pass
            parts.append(f"{name}={_short(value)}")
        else:
            parts.append(_short(value))
    return f"{fn.__module__}.{fn.__qualname__}({', '.join(parts)})"


# --------------------------------------------------------------------------- building and writing


def job_counts(counts: Mapping[str, int]) -> dict[str, Any]:
    """submitted = completed + rejected + killed (killed: killed, walltime reached or failed)."""
    killed = (counts.get("completed_killed", 0) + counts.get("completed_walltime_reached", 0)
              + counts.get("completed_failed", 0))
    return {"submitted": counts.get("submitted", 0), "completed": counts.get("completed_successfully", 0),
            "rejected": counts.get("rejected", 0), "killed": killed,
            "by_state": {k: v for k, v in counts.items() if k != "submitted"}}


PEAK_RSS_SCOPE = ("this process's peak since it started (getrusage ru_maxrss): the maximum over every simulation it "
                  "ran; a scheduler run in a subprocess (--transport zmq) is not included")


def run_record(*, call: str, scheduler: dict[str, Any], users: dict[str, Any] | None, seed: int | None,
               inputs: dict[str, Any], engine: dict[str, Any], counts: Mapping[str, int], outputs: dict[str, Any],
               started: str, wall_time_s: float, user_stats: Any = None, engine_wall_time_s: float | None = None,
               extra: dict[str, Any] | None = None, prefetch: Prefetch | None = None) -> dict[str, Any]:
    """The manifest of a run, whatever simulated it (:func:`build_manifest`: the engine; :mod:`batfeed.lean`):
    ``engine`` names that; ``prefetch``: the git and host facts, gathered during the run."""
    return {
        "schema": SCHEMA,
        "call": call,
        "scheduler": scheduler,
        "users": users,
        "seed": seed,
        "inputs": inputs,
        "engine": engine,
        "kernel": kernel.describe(),        # compiled kernel or pure Python (batfeed/kernel.py)
        "jobs": job_counts(counts),
        **({"user_stats": user_stats} if user_stats else {}),
        "outputs": outputs,
        "versions": versions(),
        "git": git_info() if prefetch is None else prefetch.get("git"),
        "host": {**(host() if prefetch is None else prefetch.get("host")), "cwd": os.getcwd()},
        "started_utc": started,
        "wall_time_s": round(wall_time_s, 6),
        **({} if engine_wall_time_s is None else {"engine_wall_time_s": round(engine_wall_time_s, 6)}),
        "peak_rss_bytes": peak_rss_bytes(),
        "peak_rss_scope": PEAK_RSS_SCOPE,
        **(extra or {}),
    }


def build_manifest(*, call: str, scheduler: dict[str, Any], users: dict[str, Any] | None, seed: int | None,
                   inputs: dict[str, Any], result: Any, started: str, wall_time_s: float,
                   transport: str, switches: dict[str, Any], prefix: str | Path,
                   extra: dict[str, Any] | None = None, prefetch: Prefetch | None = None) -> dict[str, Any]:
    """The manifest of a finished engine run (``result``: a :class:`~batfeed.engine.SimulationResult`)."""
    prefix = Path(prefix)
    outputs = {}
    for key, suffix in (("jobs_csv", "_jobs.csv"), ("schedule_csv", "_schedule.csv"),
                        ("machine_states_csv", "_machine_states.csv")):
        path = prefix.with_name(prefix.name + suffix)
        entry = file_entry(path)
        entry["path"] = path.name          # next to the manifest
        outputs[key] = entry
    engine = {"name": "batfeed embedded Batsim 4.2.1", "transport": transport, "driver": result.driver,
              "batsim_switches": switches, "messages": result.messages, "simulated_time_s": result.simulated_time}
    return run_record(call=call, scheduler=scheduler, users=users, seed=seed, inputs=inputs, engine=engine,
                      counts=result.counts, outputs=outputs, started=started, wall_time_s=wall_time_s,
                      user_stats=result.user_stats, engine_wall_time_s=result.wall_time, extra=extra,
                      prefetch=prefetch)


def manifest_for(prefix: str | Path) -> Path:
    """``PREFIX_manifest.json``."""
    return Path(f"{prefix}{SUFFIX}")


def write_manifest(prefix: str | Path, build: Callable[[], dict[str, Any]]) -> Path | None:
    """Build and write ``PREFIX_manifest.json`` atomically (a temporary file renamed); on any error,
    a warning on stderr and None: a manifest never fails a run."""
    path = manifest_for(prefix)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        text = json.dumps(build(), indent=2, default=str, allow_nan=False) + "\n"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        return path
    except Exception as err:        # noqa: BLE001 - never fail the run
        print(f"batfeed: warning: no run manifest written ({path}): {type(err).__name__}: {err}", file=sys.stderr)
        for stale in (tmp, path):        # an older run's manifest must not describe these outputs
            try:
                stale.unlink(missing_ok=True)
            except OSError:
                pass
        return None


def read_manifest(path: str | Path) -> dict[str, Any] | None:
    """A manifest as a dict, or None when it is missing or unreadable."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --------------------------------------------------------------------------- seeds and inputs


def input_entries(platform: str | Path, workloads: Sequence[str | Path], events: Sequence[str | Path],
                  scheduler: dict[str, Any], users: dict[str, Any] | None,
                  prefetch: Prefetch | None = None) -> dict[str, Any]:
    """Every input file with its SHA-256: platform, workloads (with a user model: the replayed trace),
    events files and files named by path options (e.g. Maui's ``config``); ``prefetch``: the files it hashed
    during the run."""
    entry = file_entry if prefetch is None else prefetch.file_entry
    out: dict[str, Any] = {"platform": entry(platform), "workloads": [entry(w) for w in workloads],
                           "events": [entry(e) for e in events]}
    files = {}
    _, specs = spec_of(scheduler.get("name"))
    for name, value in scheduler.get("options", {}).items():
        if specs and name in specs and specs[name].kind == "path" and isinstance(value, str):
            files[f"scheduler.{name}"] = file_entry(value)
    if users is not None:
        for name, value in users.get("options", {}).items():
            spec = (user_model_specs(users.get("name")) or {}).get(name)
            if spec is not None and spec.kind == "path" and isinstance(value, str):
                files[f"users.{name}"] = file_entry(value)
    if files:
        out["option_files"] = files
    return out


def memory_entry(data: bytes, **info: Any) -> dict[str, Any]:
    """An in-memory input (``simulate_jobs``' jobs): its SHA-256 and description."""
    return {"path": None, "in_memory": True, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), **info}

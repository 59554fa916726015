"""The campaign directory::

    DIR/spec.toml (or .yaml, .json)   a copy of the campaign file as run last
    DIR/campaign.json                 campaign manifest: spec hash, versions, every invocation
    DIR/inputs/KEY/                   converted traces; inputs/platforms/, inputs/shaken/, inputs/derived/
    DIR/runs/KEY/                     one complete run: run_jobs.csv, ..., run_manifest.json, log.txt,
                                      result.json (written last, before the directory is renamed in)
    DIR/results.csv, results.parquet  the table

One invocation at a time holds ``DIR/.lock`` (``fcntl.flock``); leftovers of an interrupted one
(``.tmp-*`` names) are removed when the next starts.  Nothing damaged is trusted: a run directory
whose ``result.json`` is not its run's record is removed and the run redone (:func:`records`), a
damaged input made again (:mod:`batfeed.campaign.inputs`), an unreadable ``campaign.json``
rewritten, each with a note naming the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from batfeed.campaign.execute import record_problem
from batfeed.campaign.jsonfile import read_json
from batfeed.campaign.model import Campaign
from batfeed.errors import BatfeedError

MANIFEST = "campaign.json"


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold the campaign directory's lock; a second invocation on it is a one-line error."""
    try:
        import fcntl
    except ImportError:                 # pragma: no cover - not POSIX: no lock
        yield
        return
    with open(root / ".lock", "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            who = fh.read().strip()
            raise BatfeedError(f"another batfeed campaign is running in {root}{f' ({who})' if who else ''}; "
                               "wait for it or stop it") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}\n")
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def clean_partial(root: Path) -> int:
    """Remove what interrupted invocations left (``.tmp-*`` runs and inputs); returns how many."""
    n = 0
    for folder in (root / "runs", root / "inputs", root / "inputs" / "platforms", root / "inputs" / "shaken",
                   root / "inputs" / "derived"):
        if not folder.is_dir():
            continue
        for entry in folder.glob(".tmp-*"):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            n += 1
    return n


def records(root: Path, keys: list[str], note: Callable[[str], None] | None = None,
            repair: bool = True) -> dict[str, dict[str, Any]]:
    """The result records of the complete runs among ``keys``.  A run directory that is not sound
    (:func:`~batfeed.campaign.execute.record_problem`: e.g. a ``result.json`` copied from another run)
    is never used: it is removed (with ``repair``; else left as is, a dry run) and ``note`` says so."""
    out = {}
    for key in keys:
        rec, problem = record_problem(root / "runs" / key)
        if rec is not None:
            out[key] = rec
        elif problem is not None:
            if repair:
                forget(root, key)
            if note is not None:
                note(f"{problem}: run {'redone' if repair else 'to redo'}")
    return out


def forget(root: Path, key: str) -> None:
    """Remove a run's directory (``--retry-failed``), renaming it away first so it vanishes at once."""
    final = root / "runs" / key
    if final.is_dir():
        gone = final.with_name(f".tmp-{key}-retry-{os.getpid()}-{secrets.token_hex(3)}")
        os.rename(final, gone)
        shutil.rmtree(gone, ignore_errors=True)


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def save_spec(root: Path, camp: Campaign) -> str:
    """Copy the campaign file into ``root`` (``spec.toml``, ``spec.yaml`` or ``spec.json``); returns its name."""
    name = f"spec{camp.suffix}"
    write_text(root / name, camp.text)
    return name


def read_manifest(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def manifest_problem(root: Path) -> str | None:
    """Why ``campaign.json`` cannot be read (naming it; it is then rewritten without the earlier
    invocations), else None (also when there is none yet)."""
    path = root / MANIFEST
    try:
        data, unread = read_json(path)
    except FileNotFoundError:
        return None
    return unread or (None if isinstance(data, dict) else f"{path}: not a campaign manifest (a JSON object)")


def write_manifest(root: Path, camp: Campaign, spec_name: str, invocation: dict[str, Any],
                   counts: dict[str, Any]) -> None:
    """Update ``campaign.json``: the current spec, versions, counts, and this invocation appended
    to (or updated in) the history."""
    try:
        from batfeed.manifest import versions
    except ImportError:                 # pragma: no cover
        def versions() -> dict[str, Any]:
            from batfeed import __version__

            return {"batfeed": __version__}
    data = read_manifest(root)
    history = [i for i in data.get("invocations", []) if i.get("id") != invocation["id"]]
    data.update({
        "name": camp.name,
        "spec": spec_name,
        "spec_source": camp.source,
        "spec_sha256": camp.sha256,
        "versions": versions(),
        "python": sys.executable,
        **counts,
        "invocations": [*history, invocation],
    })
    data.setdefault("created", invocation["started"])
    write_text(root / MANIFEST, json.dumps(data, indent=2, default=str) + "\n")

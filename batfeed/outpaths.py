"""Output paths checked before the work: a command that writes fails at once, with one line, when
its output directory cannot be created or written (never after a long simulation or conversion).

Each check creates the directory (as the command would) and creates then deletes an unnamed probe
file in it; errors are :class:`~batfeed.errors.BatfeedError` ``cannot write to PATH (FLAG): REASON``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from batfeed.errors import BatfeedError

__all__ = ["writable_dir", "writable_file", "writable_prefix"]


def _fail(path: str | Path, flag: str, reason: str) -> BatfeedError:
    return BatfeedError(f"cannot write to {path} ({flag}): {reason}")


def _reason(err: OSError, path: Path) -> str:
    text = err.strerror or str(err)
    where = err.filename if err.filename is not None else None
    return f"{text} ({where})" if where is not None and Path(where) != path else text


def writable_dir(path: str | Path, flag: str, shown: str | Path | None = None) -> Path:
    """Create directory ``path`` if needed and check that a file can be created in it; returns it.

    ``shown``: what the error names (default ``path``)."""
    path = Path(path)
    shown = path if shown is None else shown
    try:
        for parent in (path, *path.parents):  # a file on the way: say which one
            if parent.is_file():
                raise _fail(shown, flag, "it is a file, not a directory" if parent == Path(shown)
                            else f"{parent} is a file, not a directory")
            if parent.is_dir():
                break
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _fail(shown, flag, _reason(err, path)) from None
    try:
        with tempfile.TemporaryFile(dir=path, prefix=".batfeed-probe-"):
            pass
    except OSError as err:
        raise _fail(shown, flag, _reason(err, path)) from None
    return path


def writable_file(path: str | Path, flag: str) -> Path:
    """Check that file ``path`` can be written: its directory (created if needed) and the file itself
    if it exists (not a directory, writable)."""
    path = Path(path)
    try:
        if path.is_dir():
            raise _fail(path, flag, "it is a directory, not a file")
        writable_dir(path.parent, flag, shown=path)
        if path.exists() and not os.access(path, os.W_OK):
            raise _fail(path, flag, "Permission denied (the file exists and is read-only)")
    except OSError as err:
        raise _fail(path, flag, _reason(err, path)) from None
    return path


def writable_prefix(prefix: str | Path, suffixes: Iterable[str], flag: str) -> None:
    """Check the files ``PREFIX + suffix`` (e.g. ``_jobs.csv``) can be written (their directory
    created if needed)."""
    writable_dir(Path(f"{prefix}_").parent, flag, shown=prefix)
    for suffix in suffixes:
        writable_file(f"{prefix}{suffix}", flag)

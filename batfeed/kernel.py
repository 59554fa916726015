"""The compiled kernel: the hot modules compiled by mypyc or Cython, the same ``.py`` files kept as the reference.

The modules of :data:`MODULES` (the engine's event loop and state, the scheduling core) are plain
Python.  ``python -m batfeed.kernel_build`` (run by ``scripts/bootstrap.sh`` and the Docker image)
compiles them, unchanged, into ``batfeed/_kernel/``: :data:`MYPYC_MODULES` with mypyc (one group,
sharing the library ``batfeed/_kernel/mypyc__mypyc*.so``), :data:`CYTHON_MODULES` with Cython.  It
records the SHA-256 of every source it compiled and of the batfeed modules they import (mypyc relies on
their annotations).  At run time a finder placed first on ``sys.meta_path`` loads the compiled
module instead of the source when

- ``BATFEED_PURE`` is unset or ``0`` and :func:`select` did not ask for the pure path, and
- every compiled module is present and was built from the sources as they are now (one edited
  ``.py``, of a compiled module or of a batfeed module one imports, and the whole kernel is set aside,
  with one warning line, until the next build).

Otherwise every module is imported from its ``.py``: the pure-Python path, which the tests run too
(``tests/test_kernel.py``; CI runs the conformance and equivalence tests with ``BATFEED_PURE=1``).
Compilation does not change what the code computes: Cython does not use annotations as C types
(``annotation_typing=False``); mypyc does, so the compiled modules annotate as ``float`` only values
that are floats on the pure path too (mypyc would turn an int into a float), and ``tests/test_kernel.py``
requires byte-identical outputs on both paths.  docs/kernel.md explains the choice (measured against
other techniques) and how to work with it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

#: Compiled by mypyc (docs/kernel.md, "mypyc"): the engine's classes become native classes (attribute
#: reads are struct reads), which cuts the whole EASY command by about a fifth; so do the scheduling
#: core's data structures, conservative backfilling's step function and its compression among them
#: (``steps``, ``step_profile``, ``compression``: native integer and float arithmetic in their loops).
#: One group: they call each other natively.  The scheduler classes themselves (``easy``, ``backfill``,
#: ``base``, ``fcfs``, ``conservative``) stay interpreted pybatsim classes (measured: under 1 %, and
#: mypyc's non-native classes reject interpreted subclasses); their decision passes are functions of
#: ``passes`` (FCFS, EASY) and methods of ``reservations.Plan`` (conservative), compiled.  So are Maui's
#: node mechanics (``maui_nodes``, ``maui_pick``, ``maui_backfill``, ``maui_order``: ``Plan`` and ``Order``
#: native, the scheduler's own state read as Python attributes), the what-if replays of ``tuned_easy``
#: (``replay``) and the reading of workload files (``workload_file``).
MYPYC_MODULES: tuple[str, ...] = (
    "batfeed.engine.actors",
    "batfeed.engine.clock",
    "batfeed.engine.decisions",
    "batfeed.engine.direct",
    "batfeed.engine.executor",
    "batfeed.engine.intervals",
    "batfeed.engine.kinds",
    "batfeed.engine.longdouble",
    "batfeed.engine.machines",
    "batfeed.engine.messages",
    "batfeed.engine.outputs",
    "batfeed.engine.protocol",
    "batfeed.engine.ptask",
    "batfeed.engine.simulator",
    "batfeed.engine.state",
    "batfeed.engine.workload",
    "batfeed.engine.workload_file",
    "batfeed.schedulers.compression",
    "batfeed.schedulers.jobqueue",
    "batfeed.schedulers.maui_backfill",
    "batfeed.schedulers.maui_nodes",
    "batfeed.schedulers.maui_order",
    "batfeed.schedulers.maui_pick",
    "batfeed.schedulers.passes",
    "batfeed.schedulers.policies",
    "batfeed.schedulers.profile",
    "batfeed.schedulers.replay",
    "batfeed.schedulers.reservations",
    "batfeed.schedulers.resources",
    "batfeed.schedulers.step_profile",
    "batfeed.schedulers.steps",
)
#: Compiled by Cython: none at present.  Cython compiles the same sources untyped
#: (``annotation_typing=False``), which CPython 3.11's specialised attribute access often beats; the step
#: function of conservative backfilling and its compression were Cython modules until mypyc's typed
#: compilation of the same sources proved faster (docs/kernel.md).  The build keeps this path.
CYTHON_MODULES: tuple[str, ...] = ()
MODULES: tuple[str, ...] = MYPYC_MODULES + CYTHON_MODULES
MYPYC_GROUP = "batfeed._kernel.mypyc"   # its shared library: batfeed._kernel.mypyc__mypyc (mypyc's naming)

DIR = Path(__file__).resolve().parent / "_kernel"
ROOT = DIR.parent.parent              # the stamp's source paths are relative to it (repository or site-packages)
STAMP = DIR / "build.json"
ENV = "BATFEED_PURE"

_choice: bool | None = None          # select(): True = pure, False = compiled, None = environment
_state: dict[str, Any] | None = None  # decided once, when the first kernel module is imported


def _digest(path: str | Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _pxd_digest(source: str | Path) -> str | None:
    """SHA-256 of the augmenting ``.pxd`` next to ``source`` (its C types), None when there is none."""
    pxd = Path(source).with_suffix(".pxd")
    return _digest(pxd) if pxd.is_file() else None


def _read_stamp() -> dict[str, Any] | None:
    import json

    try:
        return json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return None


def _decide() -> dict[str, Any]:
    """Which path this process uses, and why (computed once)."""
    pure = _choice if _choice is not None else os.environ.get(ENV, "") not in ("", "0")
    if pure:
        why = f"{ENV}=1" if _choice is None else "batfeed.kernel.select(pure=True)"
        return {"path": "pure", "why": why, "modules": {}}
    stamp = _read_stamp()
    if stamp is None:
        return {"path": "pure", "why": "no compiled kernel (python -m batfeed.kernel build)", "modules": {}}
    if stamp.get("python") != sys.implementation.cache_tag or set(stamp.get("modules", {})) != set(MODULES):
        return {"path": "pure", "why": "compiled kernel built for another Python or module list: rebuild it",
                "modules": {}, "warn": True}
    files: dict[str, str] = {}
    for name, rec in stamp["modules"].items():
        so, src = DIR / rec["so"], ROOT / rec["source"]
        try:                   # the .py, or the .pxd giving it C types (added, edited or removed)
            changed = None
            if not so.is_file() or _digest(src) != rec["sha256"]:
                changed = rec["source"]
            elif _pxd_digest(src) != rec.get("pxd_sha256"):
                changed = Path(rec["source"]).with_suffix(".pxd").as_posix()
        except OSError:
            changed = rec["source"]
        if changed:
            return _stale(changed)
        files[name] = str(so)
    for rel, sha in stamp.get("deps", {}).items():     # the batfeed modules mypyc read, not compiled
        try:
            same = _digest(ROOT / rel) == sha
        except OSError:
            same = False
        if not same:
            return _stale(rel)
    lib = stamp.get("mypyc_lib")
    if lib is not None and not (DIR / lib).is_file():
        return _stale(lib)
    return {"path": "compiled", "why": _tools(stamp), "modules": files}


def _stale(changed: str) -> dict[str, Any]:
    return {"path": "pure", "warn": True, "modules": {},
            "why": f"compiled kernel is stale ({changed} changed since it was built; "
                   "scripts/bootstrap.sh rebuilds it)"}


def _tools(stamp: dict[str, Any]) -> str:
    """``mypyc 2.4.1, Cython 3.3.1``: the compilers that built the kernel."""
    return ", ".join(f"{tool} {stamp[key]}" for tool, key in (("mypyc", "mypyc"), ("Cython", "cython"))
                     if stamp.get(key))


def state() -> dict[str, Any]:
    """``{"path": "compiled" | "pure", "why": ..., "modules": {name: .so}}`` for this process."""
    global _state
    if _state is None:
        _state = _decide()
        if _state.pop("warn", False):
            print(f"batfeed: warning: pure Python: {_state['why']}", file=sys.stderr)
    return _state


def describe() -> str:
    """One line for ``batfeed --version``."""
    s = state()
    if s["path"] == "compiled":
        return f"compiled kernel ({len(s['modules'])} modules, {s['why']})"
    return f"pure Python ({s['why']})"


def select(pure: bool) -> None:
    """Choose the path for this process (the API form of ``BATFEED_PURE``); before any kernel import."""
    global _choice, _state
    loaded = [m for m in MODULES if m in sys.modules]
    if loaded and (_state is None or (_state["path"] == "pure") != pure):
        raise RuntimeError(f"batfeed.kernel.select() after {loaded[0]} was imported: call it first, "
                           f"or set {ENV} in the environment")
    _choice, _state = pure, None


class _Finder:
    """A ``sys.meta_path`` finder: the compiled module of a kernel module when :func:`state` says so
    (only ``find_spec``; the imports it needs are made when a kernel module is first imported)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in _NAMES:
            return None
        so = state()["modules"].get(fullname)
        if so is None:
            return None
        import importlib.machinery
        import importlib.util

        loader = importlib.machinery.ExtensionFileLoader(fullname, so)
        return importlib.util.spec_from_file_location(fullname, so, loader=loader)


_NAMES = frozenset(MODULES)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (``batfeed/__init__.py`` calls it; idempotent)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())

"""Scheduler names -> pybatsim ``BatsimScheduler`` instances.

A name is one of batfeed's schedulers (``fcfs`` …), ``module:Class``, a file path
(``path/to/mySched.py`` -> class ``MySched``, pybatsim's convention) or the name of a scheduler
shipped with pybatsim (``schedFcfs``, ``fillerSched`` …).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
from typing import Any

from batfeed.crash import dispatcher, load_error
from batfeed.errors import BatfeedError

BUILTIN = {
    "fcfs": "batfeed.schedulers.fcfs:Fcfs",
    "easy": "batfeed.schedulers.easy:Easy",
    "conservative": "batfeed.schedulers.conservative:Conservative",
    "maui": "batfeed.schedulers.maui:Maui",
    "tuned_easy": "batfeed.schedulers.tuned_easy:TunedEasy",
    "los": "batfeed.schedulers.los:Los",
    "creasy": "batfeed.schedulers.creasy:Creasy",
}


@dispatcher
def make_scheduler(name: str, options: dict[str, Any] | None = None) -> Any:
    """Import and construct scheduler ``name``.  An exception in its code (a syntax error, a missing
    import, a failing ``__init__``) is a one-line :class:`~batfeed.crash.SchedulerError`."""
    options = dict(options or {})
    target = BUILTIN.get(name.lower(), name)
    if ":" in target and "/" not in target:
        module_name, _, cls_name = target.partition(":")
        try:
            cls = getattr(importlib.import_module(module_name), cls_name)
            return cls(options)
        except BatfeedError:
            raise
        except Exception as err:
            raise load_error(err, name) from err
    from batsim.tools.launcher import instanciate_scheduler

    if "." not in target and "/" not in target:
        _use_pybatsim_schedulers()
    said = io.StringIO()                # pybatsim prints its lookup failures on stdout, then exits
    path = list(sys.path)               # and leaves its sys.path entries behind when loading fails
    try:
        with contextlib.redirect_stdout(said):
            return instanciate_scheduler(target, options)
    except SystemExit:
        why = said.getvalue().strip().removeprefix("No such scheduler").strip(" .()")
        raise BatfeedError(f"no scheduler named '{name}'{f' ({why})' if why else ''}: batfeed's are "
                           f"{', '.join(sorted(BUILTIN))}; or give a file path, module:Class, or a pybatsim "
                           "scheduler name") from None
    except BatfeedError:
        raise
    except Exception as err:
        sys.path[:] = path
        raise load_error(err, name) from err
    finally:
        if said.getvalue() and not said.getvalue().startswith("No such scheduler") \
                and "contains no scheduler" not in said.getvalue():
            sys.stdout.write(said.getvalue())   # anything else the scheduler printed is passed on


def _use_pybatsim_schedulers() -> None:
    """Make ``schedulers`` pybatsim's own package, the one its scheduler names (``schedFcfs``…) live in.

    From a batfeed checkout (a notebook or ``python -c`` started at the repository root), the
    current directory comes first on ``sys.path`` and its ``schedulers/`` folder (batfeed's, installed
    as ``batfeed.schedulers``) would shadow pybatsim's package of the same name."""
    import importlib.metadata
    import importlib.util
    from pathlib import Path

    try:
        root = Path(str(importlib.metadata.distribution("pybatsim").locate_file("schedulers")))
    except importlib.metadata.PackageNotFoundError:
        return
    current = sys.modules.get("schedulers")
    if current is not None and root.resolve() in [Path(p).resolve() for p in getattr(current, "__path__", [])]:
        return
    init = root / "__init__.py"
    if not init.exists():
        return
    for name in [m for m in sys.modules if m == "schedulers" or m.startswith("schedulers.")]:
        del sys.modules[name]      # the shadowing package and its submodules
    spec = importlib.util.spec_from_file_location("schedulers", init, submodule_search_locations=[str(root)])
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["schedulers"] = package
    spec.loader.exec_module(package)

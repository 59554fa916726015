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

from batfeed.crash import load_error
from batfeed.errors import BatfeedError

BUILTIN = {
    "fcfs": "batfeed.schedulers.fcfs:Fcfs",
    "easy": "batfeed.schedulers.easy:Easy",
    "conservative": "batfeed.schedulers.conservative:Conservative",
    "maui": "batfeed.schedulers.maui:Maui",
}


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

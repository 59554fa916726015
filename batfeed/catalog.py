"""``batfeed schedulers``: every built-in scheduler and user model with its options, from the code.

The listing is generated from the option specs the schedulers validate with
(:mod:`batfeed.schedulers.options`), so it cannot drift from what ``--options`` accepts.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from batfeed.schedulers.options import describe


def summary(obj: Any) -> str:
    """First sentence of a class's docstring (or its module's)."""
    doc = obj.__doc__ or sys.modules[obj.__module__].__doc__ or ""
    text = " ".join(doc.strip().split("\n\n")[0].split())
    end = text.find(". ")
    return text[: end + 1] if end >= 0 else text


def _builtin(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def listing() -> str:
    from batfeed.registry import BUILTIN
    from batfeed.users import MODELS
    from batfeed.users.base import LAYER_SPECS

    lines = ["Schedulers (simulate --scheduler NAME --options JSON; schedule NAME --options JSON):", ""]
    for name, target in BUILTIN.items():
        cls = _builtin(target)
        sched = sys.modules[cls.__module__]
        lines += describe(name, summary(sched) if sched.__doc__ else summary(cls), cls.OPTIONS)
        notes = getattr(cls, "catalog_notes", None)      # e.g. maui: what it does with each maui.cfg keyword
        if notes is not None:
            lines += notes()
        lines.append("")
    lines += ["Any other scheduler: a .py file (class named after it), module:Class or a pybatsim scheduler",
              "name (schedFcfs, easyBackfill, ...); batfeed does not check their options.", ""]
    lines += ["User models (simulate --users NAME --user-options JSON; the layer's and the model's options",
              "go in the same object):", ""]
    names: dict[type, list[str]] = {}
    for name, cls in MODELS.items():
        names.setdefault(cls, []).append(name)
    for cls, aliases in names.items():
        fixed = "".join(f" (fixes {k} = {v:g})" for k, v in cls.FIXED.items())
        lines += describe(" / ".join(aliases), summary(cls).rstrip(".") + fixed, cls.OPTIONS)
        lines.append("")
    lines += describe("every model (the user-model layer, batfeed.users:UserModelScheduler)",
                      "simulate sets scheduler, scheduler_options, users and trace from --scheduler, --options, "
                      "--users and the workload", LAYER_SPECS)
    return "\n".join(lines)

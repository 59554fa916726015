"""An exception raised by a scheduler's own code -> one line naming what failed, when and where.

Shape (documented in docs/cli.md, "Errors")::

    scheduler 'NAME' (class CLS) raised EXC in CALLBACK at t=T (job ID): MESSAGE [FILE:LINE, via FILE:LINE]
    scheduler 'NAME' (class CLS) raised EXC in __init__: MESSAGE [FILE:LINE]
    scheduler 'NAME' raised EXC while loading: MESSAGE [FILE:LINE]

``FILE:LINE`` is the innermost frame in the scheduler's code (not in pybatsim's ``batsim`` package,
batfeed's engine and CLI, the standard library or another installed library; pybatsim's example
``schedulers`` and batfeed's own schedulers and user models count as scheduler code); ``via`` names
the innermost frame when it lies elsewhere.  An ``assert`` without a message is shown by its source
line.  Nothing here runs unless an exception is being reported.
"""

from __future__ import annotations

import inspect
import linecache
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable
from functools import cache
from types import CodeType, FrameType, TracebackType
from typing import Any, TypeVar

from batfeed.errors import BatfeedError

F = TypeVar("F", bound=Callable[..., Any])

_MAX = 300          # characters of an exception's message kept on the line


class SchedulerError(BatfeedError):
    """A scheduler's own code failed; ``detail`` is extra text for ``--debug`` (a scheduler process's stderr)."""

    def __init__(self, message: str, detail: str | None = None):
        super().__init__(message)
        self.detail = detail


# ---------------------------------------------------------------------------------- --debug, main()
_debug = False


def set_debug(on: bool) -> None:
    """``batfeed --debug``: tracebacks on (in this process and the scheduler processes it starts)."""
    global _debug
    _debug = on


def debug_enabled() -> bool:
    """``--debug`` given, or ``BATFEED_DEBUG`` set to anything but ``""``/``0``."""
    return _debug or os.environ.get("BATFEED_DEBUG", "") not in ("", "0")


def take_debug_flag(argv: list[str]) -> bool:
    """Remove every ``--debug`` before a ``--`` from ``argv`` (so it works before or after the command)."""
    end = argv.index("--") if "--" in argv else len(argv)
    found = "--debug" in argv[:end]
    argv[:end] = [a for a in argv[:end] if a != "--debug"]
    return found


def print_debug(err: BaseException) -> None:
    """With debugging on: ``err``'s traceback (its cause's included) and any ``detail`` it carries."""
    if debug_enabled():
        traceback.print_exception(err)
        detail = getattr(err, "detail", None)
        if detail:
            print(f"--- the scheduler process's stderr ---\n{detail}\n---", file=sys.stderr)


def internal_error(err: BaseException) -> str:
    """The one line for an exception no batfeed check anticipated."""
    return f"internal error: {type(err).__name__}: {_message(err, [])} (a bug in batfeed? --debug or " \
           "BATFEED_DEBUG=1 prints the traceback)"


# ---------------------------------------------------------------------------------- exception -> line
def callback_error(err: BaseException, name: str, scheduler: Any = None, t: float | None = None,
                   context: str = "") -> SchedulerError | None:
    """``err`` raised under one of the scheduler's callbacks -> :class:`SchedulerError`; ``None``
    when its traceback never entered the scheduler (then it is not the scheduler's fault)."""
    frames = _frames(err.__traceback__)
    callback = _callback_frame(frames)
    if callback is None:
        return None
    cb = callback[0].f_code.co_name
    where = f"in {cb}" + (f" at t={t:f}" if t is not None and cb != "__init__" else "")
    job = _job_of(callback[0])
    if job:
        where += f" ({job})"
    return SchedulerError(_line(err, frames, name, _class_name(scheduler), context, where))


def load_error(err: BaseException, name: str) -> SchedulerError:
    """``err`` raised while importing or constructing scheduler ``name`` -> :class:`SchedulerError`."""
    frames = _frames(err.__traceback__)
    if isinstance(err, SyntaxError) and err.filename:
        loc = _short(err.filename) + (f":{err.lineno}" if err.lineno else "")
        return SchedulerError(f"scheduler '{name}' raised {type(err).__name__} while loading: {err.msg} [{loc}]")
    user = _user_frame(frames)
    if user is None:        # nothing of the scheduler's ran: a missing file or module, a wrong signature
        text = _message(err, frames) if isinstance(err, (ImportError, OSError, AttributeError)) else \
            f"{type(err).__name__}: {_message(err, frames)}"
        return SchedulerError(f"cannot load scheduler '{name}': {text}")
    callback = _callback_frame(frames)
    if callback is not None and callback[0].f_code.co_name == "__init__":
        cls = _self_class(callback[0])
        head = f"scheduler '{name}'" + (f" (class {cls})" if cls else "")
        return SchedulerError(f"{head} raised {type(err).__name__} in __init__: {_message(err, frames)} "
                              f"[{_locations(frames, user)}]")
    return SchedulerError(f"scheduler '{name}' raised {type(err).__name__} while loading: {_message(err, frames)} "
                          f"[{_locations(frames, user)}]")


def message_error(err: BaseException, t: float | None) -> BatfeedError | None:
    """``err`` raised by pybatsim itself on a message (not under a callback) -> a one-line error."""
    frames = _frames(err.__traceback__)
    if not frames or not os.path.realpath(frames[-1][0].f_code.co_filename).startswith(_dirs()[1][0]):
        return None
    at = f" at t={t:f}" if t is not None else ""
    return BatfeedError(f"pybatsim failed on the message{at} from Batsim: {type(err).__name__}: "
                        f"{_message(err, frames)} [{_locations(frames, None)}] (is the other side Batsim 4.x?)")


def scheduler_time(scheduler: Any) -> float | None:
    """The time of the message pybatsim's ``Batsim`` is handling (a scheduler process), if any."""
    t = getattr(getattr(scheduler, "bs", None), "_current_time", None)
    return float(t) if isinstance(t, (int, float)) else None


# ---------------------------------------------------------------------------------- frames
_Frame = tuple[FrameType, int]


def _frames(tb: TracebackType | None) -> list[_Frame]:
    out = []
    while tb is not None:
        out.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return out


_DISPATCHERS: set[CodeType] = set()   # the callers registered by the layers above (:func:`dispatcher`)


def dispatcher(fn: F) -> F:
    """Mark ``fn`` (e.g. :func:`batfeed.registry.make_scheduler`) as a function that calls a scheduler's
    constructor or callbacks, so that a crash report names the frame it called."""
    _DISPATCHERS.add(fn.__code__)
    return fn


def _dispatchers() -> frozenset[CodeType]:
    """The functions that call a scheduler's callbacks (or its constructor)."""
    return _builtin_dispatchers() | _DISPATCHERS


@cache
def _builtin_dispatchers() -> frozenset[CodeType]:
    from batsim.batsim import Batsim
    from batsim.tools.launcher import instanciate_scheduler

    return frozenset({Batsim._read_bat_msg.__code__, Batsim.__init__.__code__, instanciate_scheduler.__code__})


#: The direct driver's dispatcher, ``DirectDriver.exchange``, known by its file and name rather than its
#: code object: compiled by mypyc (the kernel), it has no ``__code__``, and its traceback entry is a frame
#: with a code object of its own, named after the function and the source path it was compiled from.
_DIRECT_FILE = "batfeed/engine/direct.py"
_DIRECT_NAME = "exchange"


def _is_dispatcher(code: CodeType, codes: frozenset[CodeType]) -> bool:
    return code in codes or (code.co_name == _DIRECT_NAME
                             and code.co_filename.replace(os.sep, "/").endswith(_DIRECT_FILE))


def _callback_frame(frames: list[_Frame]) -> _Frame | None:
    """The frame just inside the innermost dispatcher: the callback (or constructor) called; or,
    further in, the innermost callback a scheduler called on another (the user-model layer's)."""
    codes = _dispatchers()
    for i in range(len(frames) - 1, -1, -1):
        if _is_dispatcher(frames[i][0].f_code, codes):
            if i == len(frames) - 1:
                return None             # the dispatcher itself failed, not the scheduler
            found = frames[i + 1]
            for f in frames[i + 2:]:
                name = f[0].f_code.co_name
                if name[:2] == "on" and name[2:3].isupper() and _is_scheduler(f[0].f_locals.get("self")):
                    found = f
            return found
    return None


def _is_scheduler(obj: Any) -> bool:
    from batsim.batsim import BatsimScheduler
    return isinstance(obj, BatsimScheduler)


@cache
def _dirs() -> tuple[tuple[str, ...], tuple[str, ...], str, tuple[str, ...]]:
    """(scheduler-code folders, library folders, batfeed's own folder, folders paths are shown from);
    real paths ending with a separator."""
    import importlib.util

    import batsim

    def real(p: str) -> str:
        return os.path.join(os.path.realpath(p), "")

    batsim_dir = os.path.dirname(batsim.__file__)
    user = [os.path.join(os.path.dirname(batsim_dir), "schedulers")]      # pybatsim's examples
    for pkg in ("batfeed.schedulers", "batfeed.users"):
        spec = importlib.util.find_spec(pkg)
        user += list(spec.submodule_search_locations or []) if spec else []
    paths = sysconfig.get_paths()
    bases = sorted({real(paths[k]) for k in ("purelib", "platlib", "stdlib", "platstdlib")}, key=len, reverse=True)
    here = os.path.dirname(__file__)
    lib = (real(batsim_dir), real(os.path.join(here, "engine")), *bases)
    return tuple(real(p) for p in user), lib, real(here), (*bases, real(os.path.dirname(here)))


def _file(code: CodeType) -> str:
    """The source file of a frame's code.  A module of the compiled kernel names its source in tracebacks
    by the path mypyc compiled it from, relative to the build's root (``batfeed/engine/direct.py``)."""
    name = code.co_filename
    if os.path.isabs(name) or name.startswith("<"):
        return name
    return _kernel_sources().get(name.replace(os.sep, "/"), name)


@cache
def _kernel_sources() -> dict[str, str]:
    """``batfeed/engine/direct.py`` (as mypyc names a compiled module's source) -> the source file."""
    from batfeed import kernel

    stamp = kernel._read_stamp() or {}
    return {name.replace(".", "/") + ".py": str(kernel.ROOT / rec["source"])
            for name, rec in stamp.get("modules", {}).items()}


def _is_user(filename: str) -> bool:
    if filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    user, lib, own, _ = _dirs()
    if path.startswith(user):
        return True
    return not path.startswith(lib) and os.path.dirname(path) != own.rstrip(os.sep)   # batfeed's CLI, runner…


def _user_frame(frames: list[_Frame]) -> _Frame | None:
    for f in reversed(frames):
        if _is_user(_file(f[0].f_code)):
            return f
    return None


# ---------------------------------------------------------------------------------- text
def _short(filename: str) -> str:
    """Relative to the working directory when inside it, else to site-packages or the standard
    library, else absolute."""
    path = os.path.realpath(filename)
    cwd = os.path.join(os.path.realpath(os.getcwd()), "")
    for base in ((cwd,) if cwd != os.sep else ()) + _dirs()[3]:
        if path.startswith(base):
            return path[len(base):]
    return path


def _locations(frames: list[_Frame], user: _Frame | None) -> str:
    inner = frames[-1]
    first = user or inner
    text = f"{_short(_file(first[0].f_code))}:{first[1]}"
    if user is not None and inner is not user:
        text += f", via {_short(_file(inner[0].f_code))}:{inner[1]}"
    return text


def _message(err: BaseException, frames: list[_Frame]) -> str:
    text = " ".join(str(err).split())
    if not text and isinstance(err, AssertionError) and frames:
        f, line = frames[-1]
        text = " ".join(linecache.getline(_file(f.f_code), line).split()) or "assertion failed"
    if not text:
        text = "(no message)"
    if len(text) > _MAX:
        text = text[:_MAX - 1] + "…"
    if isinstance(err, AssertionError) and frames and \
            frames[-1][0].f_code.co_filename.endswith(os.path.join("batsim", "sched", "alloc.py")) \
            and "start time" in text:
        text += " (pybatsim's batsim.sched API cannot allocate at t=0: give the jobs subtimes >= 1)"
    return text


def _line(err: BaseException, frames: list[_Frame], name: str, cls: str | None, context: str, where: str) -> str:
    details = ", ".join(x for x in (f"class {cls}" if cls else "", context) if x)
    head = f"scheduler '{name}'" + (f" ({details})" if details else "")
    return f"{head} raised {type(err).__name__} {where}: {_message(err, frames)} " \
           f"[{_locations(frames, _user_frame(frames))}]"


def _class_name(scheduler: Any) -> str | None:
    if scheduler is None:
        return None
    scheduler = getattr(scheduler, "inner", scheduler)          # the user-model layer wraps one
    inner = getattr(scheduler, "_scheduler", None)               # pybatsim's batsim.sched adapter
    return type(inner if inner is not None else scheduler).__name__


def _self_class(frame: FrameType) -> str | None:
    obj = frame.f_locals.get("self")
    return None if obj is None else type(obj).__name__


def _is_job(value: Any) -> bool:
    return isinstance(getattr(value, "id", None), str) and hasattr(value, "requested_resources")


def _job_of(frame: FrameType) -> str:
    """The job (or jobs) a callback was given, from its arguments."""
    code = frame.f_code
    local = frame.f_locals
    values: list[Any] = [local.get(arg) for arg in code.co_varnames[1:code.co_argcount]]
    if code.co_flags & inspect.CO_VARARGS:
        values += list(local.get(code.co_varnames[code.co_argcount + code.co_kwonlyargcount], ()))
    for value in values:
        if _is_job(value):
            return f"job {value.id}"
        if isinstance(value, (list, tuple)) and value and all(_is_job(v) for v in value):
            ids = [v.id for v in value[:3]]
            return "jobs " + ", ".join(ids) + (f" and {len(value) - 3} more" if len(value) > 3 else "")
    return ""

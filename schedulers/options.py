"""Declarative options of batfeed's schedulers and user models.

Each scheduler (and the user-model layer, and each user model) lists its options as :class:`Option`
specs (name, kind, default, allowed values, help).  The same specs validate the ``-o`` JSON /
``--options`` (:func:`validate`: unknown names with a "did you mean" hint, wrong types and values, one
line each) and produce ``batfeed schedulers`` (:func:`describe`), so the listing cannot drift from the
code.  Messages::

    unknown option 'polcy' for Easy (did you mean 'policy'?; known: backfill_policy, maintenance, ...)
    option 'theta' for Easy must be a number of seconds >= 0 or null, got "abc"
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from batfeed.errors import BatfeedError

KINDS = ("number", "choice", "policy", "policies", "duration", "bool", "path", "string", "object", "maintenance")


class OptionError(BatfeedError, ValueError):
    """Bad scheduler option (one line, names the option)."""


@dataclass(frozen=True)
class Option:
    """One option: ``kind`` is one of :data:`KINDS`; ``minimum`` (``above``: exclusive) and ``maximum``
    bound numbers, ``integer`` requires whole ones (given as ints); ``nullable`` accepts JSON null;
    ``unit`` qualifies numbers ("seconds"); ``forbid``: characters a string may not contain; ``expect``
    overrides the generated description of the accepted values.  ``policies``: a non-empty list of
    distinct queue policies; ``duration``: a number of seconds > 0 or one of the names in ``choices``
    (the scheduler maps them to seconds)."""

    name: str
    kind: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    above: bool = False
    nullable: bool = False
    unit: str = ""
    expect: str = ""
    forbid: str = ""
    maximum: float | None = None
    integer: bool = False

    def expected(self) -> str:
        """What the option accepts, for messages and the listing ("a number of seconds >= 0 or null")."""
        if self.expect:
            text = self.expect
        elif self.kind == "number":
            text = f"{'an integer' if self.integer else 'a number'}{' of ' + self.unit if self.unit else ''}"
            if self.minimum is not None:
                text += f" {'>' if self.above else '>='} {self.minimum:g}"
            if self.maximum is not None:
                text += f"{' and' if self.minimum is not None else ''} <= {self.maximum:g}"
        elif self.kind == "choice":
            text = "one of " + ", ".join(json.dumps(c) for c in self.choices)
        elif self.kind == "duration":
            text = ", ".join(json.dumps(c) for c in self.choices) + " or a number of seconds > 0"
        elif self.kind in ("policy", "policies"):
            from batfeed.schedulers.policies import POLICIES

            text = (f"a queue policy ({', '.join(POLICIES)})" if self.kind == "policy" else
                    f"a non-empty list of distinct queue policies ({', '.join(POLICIES)})")
        else:
            text = {"bool": "true or false", "path": "a file path", "string": "a non-empty string" + (
                        " without " + ", ".join(json.dumps(c) for c in self.forbid) if self.forbid else ""),
                    "object": "a JSON object",
                    "maintenance": "a list of windows [{\"start\": s, \"end\": e, \"machines\": \"0-3\"}] "
                                   "or an events file path"}[self.kind]
        return text + ((", or null" if " or " in text else " or null") if self.nullable else "")

    def check(self, value: Any, owner: str, error: type[BatfeedError] = OptionError) -> Any:
        """``value`` normalised (numbers as float, policies upper-case); raises ``error`` if it is not accepted."""
        if value is None and self.nullable:
            return None
        ok, out, hint = self._accept(value)
        if not ok:
            raise error(f"option '{self.name}' for {owner} must be {self.expected()}, got {show(value)}"
                        + (f" (did you mean {json.dumps(hint)}?)" if hint else ""))
        return out

    def _accept(self, v: Any) -> tuple[bool, Any, str | None]:
        k = self.kind
        if k == "number":
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                return False, v, None
            if self.minimum is not None and (v <= self.minimum if self.above else v < self.minimum):
                return False, v, None
            if self.maximum is not None and v > self.maximum:
                return False, v, None
            if self.integer:
                return (True, int(v), None) if float(v).is_integer() else (False, v, None)
            return True, float(v), None
        if k == "duration":
            if isinstance(v, int | float) and not isinstance(v, bool):
                return (True, float(v), None) if math.isfinite(v) and v > 0 else (False, v, None)
            if isinstance(v, str) and v in self.choices:
                return True, v, None
            close = _close_matches(v, self.choices, 1) if isinstance(v, str) else []
            return False, v, close[0] if close else None
        if k == "policies":
            from batfeed.schedulers.policies import POLICIES

            if not isinstance(v, list | tuple) or not v or not all(isinstance(x, str) for x in v):
                return False, v, None
            for x in v:
                if x.upper() not in POLICIES:
                    close = _close_matches(x.upper(), list(POLICIES), 1)
                    return False, v, close[0] if close else None
            names = [x.upper() for x in v]
            return (True, names, None) if len(set(names)) == len(names) else (False, v, None)
        if k in ("choice", "policy"):
            if k == "policy":
                from batfeed.schedulers.policies import POLICIES

                names = list(POLICIES)
                if isinstance(v, str) and v.upper() in POLICIES:
                    return True, v, None
            else:
                names = list(self.choices)
                if isinstance(v, str) and v in names:
                    return True, v, None
            close = _close_matches(str(v).upper() if k == "policy" else str(v), names, 1) \
                if isinstance(v, str) else []
            return False, v, close[0] if close else None
        if k == "bool":
            return isinstance(v, bool), v, None
        if k in ("path", "string"):
            return isinstance(v, str) and v != "" and not any(c in v for c in self.forbid), v, None
        if k == "object":
            return isinstance(v, dict), v, None
        if k == "maintenance":
            return isinstance(v, list | str), v, None
        raise ValueError(f"option {self.name}: unknown kind {k!r}")   # pragma: no cover - spec bug


def _close_matches(word: str, candidates: Iterable[str], n: int) -> list[str]:
    """``difflib.get_close_matches`` (for "did you mean"), imported only when a name is wrong."""
    import difflib

    return difflib.get_close_matches(word, candidates, n)


def show(value: Any) -> str:
    """A value as the user wrote it (JSON), e.g. ``"abc"``, ``-1``, ``null``."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def unknown_message(name: str, owner: str, known: Iterable[str], also: Iterable[str] = (),
                    also_owner: str = "") -> str:
    """``unknown option 'polcy' for Easy (did you mean 'policy'?; known: ...)``; ``also``: the names
    ``also_owner`` accepts in the same place (the user-model layer's next to a model's)."""
    known, also = sorted(known), sorted(also)
    close = _close_matches(str(name), [*known, *also], 1)
    hint = f"did you mean '{close[0]}'?; " if close else ""
    more = f"; {also_owner}'s: {', '.join(also)}" if also else ""
    return f"unknown option '{name}' for {owner} ({hint}known: {', '.join(known) or 'none'}{more})"


def validate(specs: Mapping[str, Option], options: Mapping[str, Any] | None, owner: str,
             error: type[BatfeedError] = OptionError, also: Iterable[str] = (),
             also_owner: str = "") -> dict[str, Any]:
    """Defaults overridden by ``options``, each checked; the first unknown name (sorted) is an error."""
    options = dict(options or {})
    unknown = sorted((k for k in options if k not in specs), key=str)
    if unknown:
        raise error(unknown_message(unknown[0], owner, specs, also, also_owner))
    out = {name: spec.default for name, spec in specs.items()}
    for name, value in options.items():
        out[name] = specs[name].check(value, owner, error)
    return out


def specs(*groups: Iterable[Option]) -> dict[str, Option]:
    """A name -> spec mapping from option lists (later ones override earlier ones of the same name)."""
    return {o.name: o for group in groups for o in group}


def describe(title: str, summary: str, options: Mapping[str, Option], indent: str = "  ") -> list[str]:
    """Lines of ``batfeed schedulers`` for one scheduler or model (wrapped at 110 columns)."""
    lines = textwrap.wrap(f"{title}: {summary}" if summary else title, 110, subsequent_indent=indent * 2)
    if not options:
        return [*lines, f"{indent}(no options)"]
    width = max(len(n) for n in options)
    pad = indent + " " * (width + 2)
    for name, o in sorted(options.items()):
        first = f"{indent}{name:<{width}}  default {show(o.default)}; {o.expected()}"
        lines += textwrap.wrap(first, 110, subsequent_indent=pad + "  ", break_on_hyphens=False)
        lines += textwrap.wrap(o.help, 110, initial_indent=pad, subsequent_indent=pad, break_on_hyphens=False)
    return lines

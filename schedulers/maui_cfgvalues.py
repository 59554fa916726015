"""Values of maui.cfg lines (:mod:`maui_config`): durations, numbers, limits, booleans, fairshare targets,
QOS names and lists, host lists and the keywords' choices.  :func:`value` raises ValueError with the
reason, which the parser turns into a one-line ``file:line: KEYWORD: reason`` error."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any


@dataclass
class Target:
    """A fairshare target in percent; ``mode`` "" (target), "+" (floor), "-" (ceiling), "^" (cap on the
    decayed usage in processor-seconds) or "%" (cap in percent) (MFS.c ``MFSTargetFromString``)."""

    value: float
    mode: str = ""

    def delta(self, usage_pct: float) -> float:
        """Maui's fairshare factor of one credential: target − usage, clipped for floors/ceilings."""
        d = self.value - usage_pct
        if self.mode == "+":
            return max(d, 0.0)
        if self.mode == "-":
            return min(d, 0.0)
        if self.mode in ("^", "%"):        # MPriority.c MJobGetStartPriority: mfstCapAbs/mfstCapRel give 0
            return 0.0
        return d


CHOICES = {
    "fspolicy": {"NONE": "NONE", "DEDICATEDPS": "DEDICATEDPS", "DEDICATEDPES": "DEDICATEDPS",
                 "UTILIZEDPS": "DEDICATEDPS"},
    "respolicy": {"CURRENTHIGHEST": "CURRENTHIGHEST", "NEVER": "NEVER"},
    "bfpolicy": {"FIRSTFIT": "FIRSTFIT", "BESTFIT": "BESTFIT", "NONE": "NONE"},
    "bfmetric": {"PROCS": "PROCS", "NODES": "PROCS", "PROCSECONDS": "PROCSECONDS", "SECONDS": "SECONDS"},
    "nalloc": {"FIRSTAVAILABLE": "FIRSTAVAILABLE", "LASTAVAILABLE": "LASTAVAILABLE", "MINRESOURCE": "MINRESOURCE",
               "CPULOAD": "CPULOAD"},
}

TRUE = {"TRUE", "YES", "ON", "1"}
FALSE = {"FALSE", "NO", "OFF", "0"}
def parse_duration(text: str) -> float:
    """``[[[DD:]HH:]MM:]SS`` -> seconds (each part a non-negative number); ValueError otherwise."""
    parts = text.strip().split(":")
    if not 1 <= len(parts) <= 4 or any(not re.fullmatch(r"\d+(\.\d*)?", p) for p in parts):
        raise ValueError(f"not a duration ([[[DD:]HH:]MM:]SS): {text!r}")
    mult = (86400.0, 3600.0, 60.0, 1.0)[4 - len(parts):]
    return sum(float(p) * m for p, m in zip(parts, mult, strict=True))


def value(kind: str, text: str) -> Any:
    if kind == "float":
        v = float(text)
        if not math.isfinite(v):
            raise ValueError(f"not a finite number: {text!r}")
        return v
    if kind in ("int", "posint"):
        if not re.fullmatch(r"[+]?\d+", text):
            raise ValueError(f"not a non-negative integer: {text!r}")
        v = int(text)
        if kind == "posint" and v < 1:
            raise ValueError(f"must be >= 1: {text!r}")
        return v
    if kind == "limit":     # SOFT[,HARD] (MCred.c __MCredParseLimit: one value sets both)
        m = re.fullmatch(r"[+]?(\d+)(?:,[+]?(\d+))?", text)
        if not m:
            raise ValueError(f"not a limit (N or SOFT,HARD): {text!r}")
        soft, hard = int(m.group(1)), int(m.group(2) or m.group(1))
        if hard < soft:
            raise ValueError(f"hard limit {hard} below soft limit {soft}")
        return soft, hard
    if kind == "bool":
        up = text.upper()
        if up in TRUE:
            return True
        if up in FALSE:
            return False
        raise ValueError(f"not a boolean (TRUE/FALSE): {text!r}")
    if kind == "duration":
        return parse_duration(text)
    if kind == "defertime":         # MTime.c MUTimeFromString: raw seconds (<= 0: defer disabled), INFINITY
        t = text.strip()
        if t.upper() == "INFINITY":
            return math.inf
        if re.fullmatch(r"-\d+", t):
            return float(t)
        return parse_duration(t)
    if kind == "overrun":           # -1: no limit (MLimit.c MLimitEnforceAll skips JobWCX < 0)
        return math.inf if text.strip() == "-1" else parse_duration(text)
    if kind == "decay":
        v = float(text)
        if not 0 < v <= 1:
            raise ValueError(f"must be in (0, 1]: {text!r}")
        return v
    if kind == "target":     # MFS.c MFSTargetFromString; 25^ / 25% are caps (maui_fairshare.fs_capped)
        m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([+\-^%]?)", text)
        if not m:
            raise ValueError(f"not a fairshare target (e.g. 25, 25+, 25-, 25^, 25%): {text!r}")
        return Target(float(m.group(1)), m.group(2))
    if kind == "qos":        # MCred.c MCredProcessConfig mcaQDef; QDEF=q& / q^ set the QOS list's type
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", text):
            raise ValueError(f"not a QOS name (QDEF=q& and QDEF=q^ are not supported): {text!r}")
        return text
    if kind == "qlist":      # MCred.c mcaQList: names separated by , or :; & (AND) and ^ (ONLY) lists unsupported
        if "&" in text or "^" in text:
            raise ValueError(f"QOS lists of type AND (&) or ONLY (^) are not supported: {text!r}")
        items = [t for t in re.split(r"[,:]", text) if t]
        if not items:
            raise ValueError("empty QOS list")
        return items
    if kind == "hostlist":
        items = [t for t in re.split(r"[,\s]+", text) if t]
        if not items:
            raise ValueError("empty host list")
        return items
    table = CHOICES[kind]
    up = text.upper()
    if up not in table:
        raise ValueError(f"unsupported value {text!r} (supported: {', '.join(table)})")
    return table[up]

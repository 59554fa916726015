"""The maui.cfg subset understood by :class:`batfeed.schedulers.maui.Maui` (models.md §F [MAUI]).

Syntax (Maui Administrator's Guide §3.4 and Appendix F): one ``PARAMETER VALUE`` pair per line,
parameter names case-insensitive, ``#`` starts a comment, array parameters written
``NAME[INDEX] ATTR=VALUE ATTR=VALUE ...``.  Durations are ``[[[DD:]HH:]MM:]SS`` (``168:00:00`` =
168 h) or plain seconds.  Booleans: TRUE/FALSE (also YES/NO, ON/OFF, 1/0).

Supported keywords (defaults are Maui 3.2's):

==========================  ============  ==================================================
keyword                     default       meaning
==========================  ============  ==================================================
CREDWEIGHT                  1             credential component weight
FSWEIGHT                    1             fairshare component weight
SERVICEWEIGHT (SERVWEIGHT)  1             service component weight
USERWEIGHT GROUPWEIGHT      0             credential sub-weights (× USERCFG/GROUPCFG/
ACCOUNTWEIGHT CLASSWEIGHT                 ACCOUNTCFG/CLASSCFG ``PRIORITY``)
FSUSERWEIGHT FSGROUPWEIGHT  0             fairshare sub-weights (aliases UFSWEIGHT,
FSACCOUNTWEIGHT FSCLASSWEIGHT             GFSWEIGHT, AFSWEIGHT, CFSWEIGHT)
QUEUETIMEWEIGHT             1             × minutes since submission
XFACTORWEIGHT               0             × expansion factor (wait + p̃) / max(p̃, XFMINWCLIMIT)
XFMINWCLIMIT                00:02:00      (node mechanics; the counts model divides by p̃)
ENABLENEGJOBPRIORITY        FALSE         with both FALSE, priorities below 1 are raised to 1
REJECTNEGPRIOJOBS           FALSE         TRUE: a job whose priority is negative is not started
                                          while it is (MPolicy.c MQueueSelectAllJobs)
FSPOLICY                    NONE          DEDICATEDPS (DEDICATEDPES, UTILIZEDPS: same here);
                                          NONE: no usage tracked, fairshare component 0
FSINTERVAL                  12:00:00      length of a fairshare window
FSDEPTH                     8             number of windows
FSDECAY                     1.0           weight of window i is FSDECAY**i
RESERVATIONPOLICY           CURRENTHIGHEST  CURRENTHIGHEST, NEVER (no reservation)
RESERVATIONDEPTH            1             priority reservations per iteration
BACKFILLPOLICY              FIRSTFIT      FIRSTFIT, BESTFIT, NONE
BACKFILLDEPTH               0             idle jobs examined by backfill (0 = all)
BACKFILLMETRIC              PROCS         BESTFIT's criterion: PROCS (NODES), PROCSECONDS, SECONDS
RMPOLLINTERVAL              (none)        scheduling interval Δ (the ``interval`` option wins)
JOBMAXOVERRUN               (none)        checked against the workload: Batsim's walltime must be
                                          the request + it (``batfeed convert --overrun``); -1 none
NODEALLOCATIONPOLICY        LASTAVAILABLE FIRSTAVAILABLE, LASTAVAILABLE, MINRESOURCE, CPULOAD (which
                                          nodes a job gets: maui_nodes.py ``Plan.pick_now``)
DEFERTIME DEFERCOUNT        01:00:00 24   a job wider than the up machines is deferred so long, rejected
                                          at defer DEFERCOUNT+1 (maui_defer.py); DEFERSTARTCOUNT: no effect
==========================  ============  ==================================================

Credentials: ``USERCFG[u]``, ``GROUPCFG[g]``, ``ACCOUNTCFG[a]``, ``CLASSCFG[c]`` with ``PRIORITY=``
and ``FSTARGET=`` (``25``, ``25+`` floor, ``25-`` ceiling); index ``DEFAULT`` applies to every
credential not listed.  ``CLASSCFG`` limits (counted in Batsim machines, i.e. nodes for a
whole-node platform such as Salomon, processors for an SWF trace converted per processor):
``MAXJOB``, ``MAXNODE`` (``MAXPROC``) total running in the class, ``MAXJOBPERUSER``,
``MAXNODEPERUSER`` (``MAXPROCPERUSER``), ``MAXNODEPERJOB`` (``MAXPROCPERJOB``), ``MAX.WCLIMIT`` (a
duration; ``MAXWCLIMIT`` is no Maui attribute: ignored, as Maui does) and ``HOSTLIST`` (batfeed
extension; Maui 3 ignores it, its nodes' classes say it: Batsim machine ids and ranges ``0-575,1006``,
or host names, separated by commas or spaces).
``USERCFG``/``GROUPCFG``/``ACCOUNTCFG`` limits: ``MAXJOB`` and ``MAXNODE`` (``MAXPROC``) running at
once under that credential, all classes together (``USERCFG[DEFAULT] MAXPROC=60``: every user at
most 60 machines); ``MAXJOB=4,6``: soft limit 4 (the priority pass), hard limit 6 (the backfill).

Unknown keywords and unknown attributes are collected in :attr:`MauiConfig.warnings` (the
scheduler logs them in one warning), the approximate ones in effect (maui_keywords.py, ``batfeed
schedulers``) in :attr:`MauiConfig.approximate` (one more warning); a malformed line raises
:class:`MauiConfigError` ``file:line: message``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from batfeed.schedulers.maui_keywords import approximations

from batfeed.errors import InputError


class MauiConfigError(InputError):
    """Malformed maui.cfg line (``file:line: message``)."""


@dataclass
class Target:
    """A fairshare target in percent; ``mode`` "" (target), "+" (floor) or "-" (ceiling)."""

    value: float
    mode: str = ""

    def delta(self, usage_pct: float) -> float:
        """Maui's fairshare factor of one credential: target − usage, clipped for floors/ceilings."""
        d = self.value - usage_pct
        if self.mode == "+":
            return max(d, 0.0)
        if self.mode == "-":
            return min(d, 0.0)
        return d


@dataclass
class Cred:
    """Attributes of one USERCFG/GROUPCFG/ACCOUNTCFG/CLASSCFG entry."""

    priority: float | None = None
    fstarget: Target | None = None
    # CLASSCFG only
    maxjob: int | None = None
    maxnode: int | None = None
    maxjobperuser: int | None = None
    maxnodeperuser: int | None = None
    maxnodeperjob: int | None = None
    maxwclimit: float | None = None
    hostlist: list[str] | None = None
    # USERCFG/GROUPCFG/ACCOUNTCFG ``MAXJOB=soft,hard``: the hard limits (None: the soft one)
    maxjob_hard: int | None = None
    maxnode_hard: int | None = None


SCALARS: dict[str, tuple[str, str]] = {     # keyword -> (attribute, kind)
    "CREDWEIGHT": ("credweight", "float"),
    "FSWEIGHT": ("fsweight", "float"),
    "SERVICEWEIGHT": ("serviceweight", "float"),
    "SERVWEIGHT": ("serviceweight", "float"),
    "USERWEIGHT": ("userweight", "float"),
    "GROUPWEIGHT": ("groupweight", "float"),
    "ACCOUNTWEIGHT": ("accountweight", "float"),
    "CLASSWEIGHT": ("classweight", "float"),
    "FSUSERWEIGHT": ("fsuserweight", "float"),
    "UFSWEIGHT": ("fsuserweight", "float"),
    "FSGROUPWEIGHT": ("fsgroupweight", "float"),
    "GFSWEIGHT": ("fsgroupweight", "float"),
    "FSACCOUNTWEIGHT": ("fsaccountweight", "float"),
    "AFSWEIGHT": ("fsaccountweight", "float"),
    "FSCLASSWEIGHT": ("fsclassweight", "float"),
    "CFSWEIGHT": ("fsclassweight", "float"),
    "QUEUETIMEWEIGHT": ("queuetimeweight", "float"),
    "XFACTORWEIGHT": ("xfactorweight", "float"),
    "ENABLENEGJOBPRIORITY": ("enablenegjobpriority", "bool"),
    "REJECTNEGPRIOJOBS": ("rejectnegpriojobs", "bool"),
    "FSPOLICY": ("fspolicy", "fspolicy"),
    "FSINTERVAL": ("fsinterval", "duration"),
    "FSDEPTH": ("fsdepth", "posint"),
    "FSDECAY": ("fsdecay", "decay"),
    "RESERVATIONPOLICY": ("reservationpolicy", "respolicy"),
    "RESERVATIONDEPTH": ("reservationdepth", "int"),
    "BACKFILLPOLICY": ("backfillpolicy", "bfpolicy"),
    "BACKFILLDEPTH": ("backfilldepth", "int"),
    "BACKFILLMETRIC": ("backfillmetric", "bfmetric"),
    "RMPOLLINTERVAL": ("rmpollinterval", "duration"),
    "JOBMAXOVERRUN": ("jobmaxoverrun", "overrun"),
    "XFMINWCLIMIT": ("xfminwclimit", "duration"),
    "NODEALLOCATIONPOLICY": ("nodeallocationpolicy", "nalloc"),
    # defer holds (maui_defer.py)
    "DEFERTIME": ("defertime", "defertime"),
    "DEFERCOUNT": ("defercount", "int"),
    "DEFERSTARTCOUNT": ("deferstartcount", "int"),
}

CHOICES = {
    "fspolicy": {"NONE": "NONE", "DEDICATEDPS": "DEDICATEDPS", "DEDICATEDPES": "DEDICATEDPS",
                 "UTILIZEDPS": "DEDICATEDPS"},
    "respolicy": {"CURRENTHIGHEST": "CURRENTHIGHEST", "NEVER": "NEVER"},
    "bfpolicy": {"FIRSTFIT": "FIRSTFIT", "BESTFIT": "BESTFIT", "NONE": "NONE"},
    "bfmetric": {"PROCS": "PROCS", "NODES": "PROCS", "PROCSECONDS": "PROCSECONDS", "SECONDS": "SECONDS"},
    "nalloc": {"FIRSTAVAILABLE": "FIRSTAVAILABLE", "LASTAVAILABLE": "LASTAVAILABLE", "MINRESOURCE": "MINRESOURCE",
               "CPULOAD": "CPULOAD"},
}

CREDS = {"USERCFG": "users", "GROUPCFG": "groups", "ACCOUNTCFG": "accounts", "CLASSCFG": "classes"}

CRED_ATTRS: dict[str, tuple[str, str]] = {
    "PRIORITY": ("priority", "float"),
    "FSTARGET": ("fstarget", "target"),
}
LIMIT_ATTRS: dict[str, tuple[str, str]] = {       # USERCFG/GROUPCFG/ACCOUNTCFG: that credential's total
    "MAXJOB": ("maxjob", "limit"),
    "MAXNODE": ("maxnode", "limit"),
    "MAXPROC": ("maxnode", "limit"),
}
CLASS_ATTRS: dict[str, tuple[str, str]] = {
    "MAXJOB": ("maxjob", "int"),
    "MAXNODE": ("maxnode", "int"),
    "MAXPROC": ("maxnode", "int"),
    "MAXJOBPERUSER": ("maxjobperuser", "int"),
    "MAXNODEPERUSER": ("maxnodeperuser", "int"),
    "MAXPROCPERUSER": ("maxnodeperuser", "int"),
    "MAXNODEPERJOB": ("maxnodeperjob", "int"),
    "MAXPROCPERJOB": ("maxnodeperjob", "int"),
    "MAX.WCLIMIT": ("maxwclimit", "duration"),
    "HOSTLIST": ("hostlist", "hostlist"),
}

NOT_MAUI = {"MAXWCLIMIT": "MAX.WCLIMIT"}    # no Maui 3 attribute (MCred.c MCredProcessConfig: exact names)

TRUE = {"TRUE", "YES", "ON", "1"}
FALSE = {"FALSE", "NO", "OFF", "0"}
_ARRAY = re.compile(r"^([A-Za-z][A-Za-z0-9_.]*)\[([^\]]*)\]$")


@dataclass
class MauiConfig:
    """Parsed maui.cfg subset (Maui 3.2 defaults for everything not given)."""

    credweight: float = 1.0
    fsweight: float = 1.0
    serviceweight: float = 1.0
    userweight: float = 0.0
    groupweight: float = 0.0
    accountweight: float = 0.0
    classweight: float = 0.0
    fsuserweight: float = 0.0
    fsgroupweight: float = 0.0
    fsaccountweight: float = 0.0
    fsclassweight: float = 0.0
    queuetimeweight: float = 1.0
    xfactorweight: float = 0.0
    enablenegjobpriority: bool = False
    rejectnegpriojobs: bool = False    # moab.h DEFAULT_MREJECTNEGPRIOJOBS
    fspolicy: str = "NONE"
    fsinterval: float = 12 * 3600.0
    fsdepth: int = 8
    fsdecay: float = 1.0
    reservationpolicy: str = "CURRENTHIGHEST"
    reservationdepth: int = 1
    backfillpolicy: str = "FIRSTFIT"
    backfilldepth: int = 0
    backfillmetric: str = "PROCS"
    rmpollinterval: float | None = None
    jobmaxoverrun: float | None = None
    nodeallocationpolicy: str = "LASTAVAILABLE"
    xfminwclimit: float = 120.0      # msched.h DEFAULT_XFMINWCLIMIT
    # defer holds (maui_defer.py; msched.h DEFAULT_DEFERTIME, DEFAULT_DEFERCOUNT, DEFAULT_DEFERSTARTCOUNT)
    defertime: float = 3600.0        # <= 0: defer disabled (MJob.c MJobSetHold)
    defercount: int = 24             # 0: never a batch hold
    deferstartcount: int = 1         # no effect: Batsim starts every job it is asked to
    users: dict[str, Cred] = field(default_factory=dict)
    groups: dict[str, Cred] = field(default_factory=dict)
    accounts: dict[str, Cred] = field(default_factory=dict)
    classes: dict[str, Cred] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    approximate: list[str] = field(default_factory=list)   # maui_keywords.STATUS entries in effect, approximate
    source: str | None = None

    def cred(self, kind: str, name: str) -> Cred | None:
        """Attributes of credential ``name`` of ``kind`` ("users", "groups", "accounts", "classes"):
        its own entry's, each missing one taken from the ``DEFAULT`` entry; None if neither exists."""
        table: dict[str, Cred] = getattr(self, kind)
        own, default = table.get(name), table.get("DEFAULT")
        if own is None or default is None or own is default:
            return own if own is not None else default
        merged = Cred()
        for f in fields(Cred):
            v = getattr(own, f.name)
            setattr(merged, f.name, v if v is not None else getattr(default, f.name))
        return merged

    @property
    def depth(self) -> int:
        return 0 if self.reservationpolicy == "NEVER" else self.reservationdepth

    def bf_value(self, q: int, p: float) -> float:
        """BESTFIT's BACKFILLMETRIC of a job of q machines and walltime p (MBF.c MBFBestFit)."""
        metric = self.backfillmetric
        return q if metric == "PROCS" else p if metric == "SECONDS" else q * p


def parse_duration(text: str) -> float:
    """``[[[DD:]HH:]MM:]SS`` -> seconds (each part a non-negative number); ValueError otherwise."""
    parts = text.strip().split(":")
    if not 1 <= len(parts) <= 4 or any(not re.fullmatch(r"\d+(\.\d*)?", p) for p in parts):
        raise ValueError(f"not a duration ([[[DD:]HH:]MM:]SS): {text!r}")
    mult = (86400.0, 3600.0, 60.0, 1.0)[4 - len(parts):]
    return sum(float(p) * m for p, m in zip(parts, mult, strict=True))


def _value(kind: str, text: str) -> Any:
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
    if kind == "target":
        m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([+\-^]?)", text)
        if not m:
            raise ValueError(f"not a fairshare target (e.g. 25, 25+, 25-): {text!r}")
        return Target(float(m.group(1)), "" if m.group(2) == "^" else m.group(2))
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


def parse_config(text: str, source: str = "<maui.cfg>") -> MauiConfig:
    """Parse maui.cfg text; unknown keywords/attributes go to ``warnings``, bad lines raise."""
    cfg = MauiConfig(source=source)
    unknown: list[str] = []
    used: set[str] = set()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 1)
        head, rest = parts[0], (parts[1].strip() if len(parts) > 1 else "")
        m = _ARRAY.match(head)
        name = (m.group(1) if m else head).upper()
        index = m.group(2).strip() if m else None
        if name in CREDS:
            if not index:
                raise MauiConfigError(f"{name} needs an index, e.g. {name}[DEFAULT]", source, lineno)
            table: dict[str, Cred] = getattr(cfg, CREDS[name])
            entry = table.setdefault(index, Cred())
            for tok in rest.split():
                key, eq, val = tok.partition("=")
                if not eq or not val:
                    raise MauiConfigError(f"{name}[{index}]: expected ATTR=VALUE, got {tok!r}", source, lineno)
                akey = key.upper()
                spec = CRED_ATTRS.get(akey) or (CLASS_ATTRS if name == "CLASSCFG" else LIMIT_ATTRS).get(akey)
                if spec is None:
                    hint = f"; Maui ignores it too, its attribute is {NOT_MAUI[akey]}" if akey in NOT_MAUI else ""
                    unknown.append(f"{name}[{index}] {key} (line {lineno}{hint})")
                    continue
                try:
                    v = _value(spec[1], val)
                    if spec[1] == "limit":
                        v, hard = v
                        setattr(entry, spec[0] + "_hard", hard)
                    setattr(entry, spec[0], v)
                except ValueError as err:
                    raise MauiConfigError(f"{name}[{index}] {key}: {err}", source, lineno) from None
                used.add(f"{name} {akey}")
            continue
        spec = SCALARS.get(name)
        if spec is None or (index is not None and not (name == "RESERVATIONDEPTH"
                                                        and index.upper() in ("0", "DEFAULT"))):
            unknown.append(f"{head} (line {lineno})")
            continue
        values = rest.split()
        if len(values) != 1:
            raise MauiConfigError(f"{name} expects one value, got {len(values)}", source, lineno)
        try:
            setattr(cfg, spec[0], _value(spec[1], values[0]))
        except ValueError as err:
            raise MauiConfigError(f"{name}: {err}", source, lineno) from None
        used.update((name, f"{name} {values[0].upper()}"))
    if unknown:
        cfg.warnings.append(f"{source}: ignored (not supported by batfeed's Maui): " + ", ".join(unknown))
    cfg.approximate = approximations(used)
    return cfg


def load_config(path: str | Path | None) -> MauiConfig:
    """Parse the file at ``path`` (None: Maui's defaults)."""
    if path is None:
        return MauiConfig()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise MauiConfigError(f"cannot read Maui configuration: {err.strerror}", str(path)) from None
    except UnicodeDecodeError:
        raise MauiConfigError("not a text file", str(path)) from None
    return parse_config(text, str(path))

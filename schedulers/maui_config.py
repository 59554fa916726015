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
QOSWEIGHT                   0             credential sub-weight × the job's QOS's QOSCFG ``PRIORITY``
FSCAP                       0             cap of the fairshare component (0: none)
FSUSERCAP FSGROUPCAP        0             caps of each credential's fairshare factor
FSACCOUNTCAP FSCLASSCAP
==========================  ============  ==================================================

Credentials: ``USERCFG[u]``, ``GROUPCFG[g]``, ``ACCOUNTCFG[a]``, ``CLASSCFG[c]`` with ``PRIORITY=``,
``FSTARGET=`` (``25``, ``25+`` floor, ``25-`` ceiling, ``90000^`` and ``25%`` caps: maui_fairshare.py),
``QDEF=`` (default QOS) and ``QLIST=`` (QOS access list, ``a,b``; the ``&``/``^`` list types are
errors); index ``DEFAULT`` applies to every credential not listed.  ``QOSCFG[q]``: ``PRIORITY=`` (no
DEFAULT fallback) and the limits ``MAXJOB``, ``MAXPROC``, ``MAXPS`` (QOSCFG[DEFAULT]'s for a QOS
without its own); a job's QOS is the one it requests (Batsim field ``qos``) if its credentials' lists
allow it, else their default (maui_creds.py).  ``CLASSCFG`` limits (counted in Batsim machines, i.e. nodes for a
whole-node platform such as Salomon, processors for an SWF trace converted per processor):
``MAXJOB``, ``MAXNODE`` (``MAXPROC``) total running in the class, ``MAXJOBPERUSER``,
``MAXNODEPERUSER`` (``MAXPROCPERUSER``), ``MAXNODEPERJOB`` (``MAXPROCPERJOB``), ``MAX.WCLIMIT`` (a
duration; ``MAXWCLIMIT`` is no Maui attribute: ignored, as Maui does) and ``HOSTLIST`` (batfeed
extension; Maui 3 ignores it, its nodes' classes say it: Batsim machine ids and ranges ``0-575,1006``,
or host names, separated by commas or spaces).
``USERCFG``/``GROUPCFG``/``ACCOUNTCFG`` limits: ``MAXJOB`` and ``MAXNODE`` (``MAXPROC``) running at
once under that credential, all classes together (``USERCFG[DEFAULT] MAXPROC=60``: every user at
most 60 machines); ``MAXJOB=4,6``: soft limit 4 (the priority pass), hard limit 6 (the backfill).
``MAXPS`` (these and ``CLASSCFG``): processor-seconds of the running jobs' remaining walltime plus
the job's processors × walltime (maui_limits.py).

Unknown keywords and unknown attributes are collected in :attr:`MauiConfig.warnings` (the
scheduler logs them in one warning), the approximate ones in effect (maui_keywords.py, ``batfeed
schedulers``) in :attr:`MauiConfig.approximate` (one more warning); a malformed line raises
:class:`MauiConfigError` ``file:line: message``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path

from batfeed.schedulers.maui_cfgvalues import Target, parse_duration, value  # noqa: F401 (re-exported)
from batfeed.schedulers.maui_keywords import approximations

from batfeed.errors import InputError


class MauiConfigError(InputError):
    """Malformed maui.cfg line (``file:line: message``)."""


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
    # MAXPS=soft[,hard]: processor-seconds of the running jobs' remaining walltime (maui_limits.py)
    maxps: int | None = None
    maxps_hard: int | None = None
    # USERCFG/GROUPCFG/ACCOUNTCFG/CLASSCFG QDEF= and QLIST= (QOS access, maui_creds.py)
    qdef: str | None = None
    qlist: list[str] | None = None


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
    # issue 29 (QOS, fairshare caps): MConst.c MParam, MFS.c MFSProcessOConfig
    "QOSWEIGHT": ("qosweight", "float"),
    "FSCAP": ("fscap", "int"),
    "FSUSERCAP": ("fsusercap", "int"),
    "FSGROUPCAP": ("fsgroupcap", "int"),
    "FSACCOUNTCAP": ("fsaccountcap", "int"),
    "FSCLASSCAP": ("fsclasscap", "int"),
}

CREDS = {"USERCFG": "users", "GROUPCFG": "groups", "ACCOUNTCFG": "accounts", "CLASSCFG": "classes",
         "QOSCFG": "qos"}

CRED_ATTRS: dict[str, tuple[str, str]] = {
    "PRIORITY": ("priority", "float"),
    "FSTARGET": ("fstarget", "target"),
    "QDEF": ("qdef", "qos"),
    "QLIST": ("qlist", "qlist"),
}
LIMIT_ATTRS: dict[str, tuple[str, str]] = {       # USERCFG/GROUPCFG/ACCOUNTCFG: that credential's total
    "MAXJOB": ("maxjob", "limit"),
    "MAXNODE": ("maxnode", "limit"),
    "MAXPROC": ("maxnode", "limit"),
    "MAXPS": ("maxps", "limit"),
}
# QOSCFG: MCred.c MCredProcessConfig's generic attributes (the QOS's own limits, MJob.c MJobCheckLimits)
QOS_ATTRS: dict[str, tuple[str, str]] = {"PRIORITY": ("priority", "float"), **LIMIT_ATTRS}
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
    "MAXPS": ("maxps", "limit"),
}

NOT_MAUI = {"MAXWCLIMIT": "MAX.WCLIMIT"}    # no Maui 3 attribute (MCred.c MCredProcessConfig: exact names)

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
    fspes: bool = False              # FSPOLICY DEDICATEDPES (charged as DEDICATEDPS; the caps' request differs)
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
    qosweight: float = 0.0
    fscap: int = 0                   # caps of the fairshare component and sub-components (0: none)
    fsusercap: int = 0
    fsgroupcap: int = 0
    fsaccountcap: int = 0
    fsclasscap: int = 0
    users: dict[str, Cred] = field(default_factory=dict)
    groups: dict[str, Cred] = field(default_factory=dict)
    accounts: dict[str, Cred] = field(default_factory=dict)
    classes: dict[str, Cred] = field(default_factory=dict)
    qos: dict[str, Cred] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    approximate: list[str] = field(default_factory=list)   # maui_keywords.STATUS entries in effect, approximate
    source: str | None = None

    def cred(self, kind: str, name: str) -> Cred | None:
        """Attributes of credential ``name`` of ``kind`` ("users", "groups", "accounts", "classes", "qos"):
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
                if name == "QOSCFG":
                    spec = QOS_ATTRS.get(akey)
                else:
                    spec = CRED_ATTRS.get(akey) or (CLASS_ATTRS if name == "CLASSCFG" else LIMIT_ATTRS).get(akey)
                if spec is None:
                    hint = f"; Maui ignores it too, its attribute is {NOT_MAUI[akey]}" if akey in NOT_MAUI else ""
                    unknown.append(f"{name}[{index}] {key} (line {lineno}{hint})")
                    continue
                try:
                    v = value(spec[1], val)
                    if spec[1] == "limit":
                        v, hard = v
                        setattr(entry, spec[0] + "_hard", hard)
                    setattr(entry, spec[0], v)
                except ValueError as err:
                    raise MauiConfigError(f"{name}[{index}] {key}: {err}", source, lineno) from None
                used.add(f"{name} {akey}")
                if akey == "FSTARGET" and v.mode in ("^", "%"):
                    used.add("FSTARGET CAP")
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
            setattr(cfg, spec[0], value(spec[1], values[0]))
        except ValueError as err:
            raise MauiConfigError(f"{name}: {err}", source, lineno) from None
        used.update((name, f"{name} {values[0].upper()}"))
    if unknown:
        cfg.warnings.append(f"{source}: ignored (not supported by batfeed's Maui): " + ", ".join(unknown))
    cfg.fspes = "FSPOLICY DEDICATEDPES" in used
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

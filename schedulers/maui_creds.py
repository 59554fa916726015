"""A job's Maui credentials (user, group, account, class, QOS) and what the priority and the limits need of them.

:func:`job_info` builds the :class:`JobInfo` of a submitted job from its Batsim fields (``user``, ``group``,
``account`` or ``project`` or else its group, ``queue``, ``qos``) and the maui.cfg entries.  The QOS
follows Maui's simulator (MTrace.c ``MTraceLoadWorkload``): the QOS the job requests (the trace's QOS field,
batfeed's ``qos``) if its credentials may use it, else their default QOS (:func:`job_qos`, MQOS.c
``MQOSGetAccess``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from batfeed.schedulers.maui_config import Cred, MauiConfig, Target
from batfeed.schedulers.resources import Intervals, subtract
from batsim.batsim import Job

if TYPE_CHECKING:
    from batfeed.schedulers.maui_core import MauiCore

KINDS = (("users", "user"), ("groups", "group"), ("accounts", "account"), ("classes", "class"))
DEFAULT_QOS = "DEFAULT"      # MQOS[0] (MCred.c MCredSetDefaults), in every access list (MPar.c: MDEF_SYSQDEF)
NO_REQUEST = ("", "-1", "0", "[NONE]", DEFAULT_QOS)   # MTrace.c: no QOS requested


class JobInfo:
    """What the priority and the limits need about a waiting or running job."""

    __slots__ = ("user", "group", "account", "cls", "qos", "cred", "fs_terms", "keys", "limits", "cred_limits",
                 "nodes", "others")

    def __init__(self, user: str, group: str, account: str, cls: str, cred: float,
                 fs_terms: list[tuple[tuple[str, str], float, Target]], limits: Cred | None,
                 nodes: Intervals | None, others: Intervals,
                 cred_limits: tuple[tuple[tuple[str, str], Cred], ...] = (), qos: str = DEFAULT_QOS):
        self.user, self.group, self.account, self.cls, self.qos = user, group, account, cls, qos
        self.cred = cred                  # CREDWEIGHT · Σ sub-weight · credential priority (QOS included)
        self.fs_terms = fs_terms          # (fairshare key, FS sub-weight, target) with a target
        self.keys = (("user", user), ("group", group), ("account", account), ("class", cls))
        self.limits = limits              # the class's CLASSCFG entry (or DEFAULT's), if any
        self.cred_limits = cred_limits    # ((kind, name), entry) of USER/GROUP/ACCOUNT/CLASS/QOSCFG with limits
        self.nodes = nodes                # HOSTLIST machines, None = all
        self.others = others              # machines outside HOSTLIST


def request(job: Job) -> float | None:
    """The walltime Maui counts (its WCLimit): the request kept by ``batfeed convert --overrun``
    (Batsim's walltime is request + overrun), else Batsim's walltime."""
    rw = (job.json_dict or {}).get("requested_walltime")
    return float(rw) if rw is not None else job.requested_time


def has_limit(c: Cred) -> bool:
    """The entry sets a MAXJOB, MAXPROC/MAXNODE or MAXPS total (MJob.c ``MJobCheckLimits``)."""
    return c.maxjob is not None or c.maxnode is not None or c.maxps is not None


def _own_qal(c: Cred | None) -> set[str]:
    """A credential's own QOS access list: its QLIST plus its QDEF (MCred.c ``MCredProcessConfig``)."""
    if c is None:
        return set()
    return set(c.qlist or ()) | ({c.qdef} if c.qdef else set())


def job_qos(cfg: MauiConfig, requested: str, names: dict[str, str]) -> str:
    """The QOS Maui's simulator gives a job requesting ``requested`` with credentials ``names`` (kind -> name)
    (MTrace.c ``MTraceLoadWorkload`` -> MQOS.c ``MQOSGetAccess``).

    The access list is DEFAULT plus, for the user, group, account and class in turn, the credential's own
    QLIST/QDEF or, if it has none, the DEFAULT entry's (a user with a QDEF but no QLIST, when
    USERCFG[DEFAULT] has a QDEF, keeps DEFAULT's list too: MCred.c ``MCredAdjustConfig`` gives each new
    user DEFAULT's list before its own line is read - batfeed assumes USERCFG[DEFAULT] comes first).
    The default QOS is the first QDEF in the list user, DEFAULT user, group, DEFAULT group, account,
    DEFAULT account, class, DEFAULT class that is in the access list, else DEFAULT.  A requested QOS
    outside the access list (or none) gives the default."""
    qal = {DEFAULT_QOS}
    for kind, _ in KINDS:
        table: dict[str, Cred] = getattr(cfg, kind)
        own, default = table.get(names[kind]), table.get("DEFAULT")
        mine = _own_qal(own)
        if kind == "users" and own is not None and not own.qlist and default is not None and default.qdef:
            mine |= _own_qal(default)   # MCred.c MCredAdjustConfig: a new user starts with DEFAULT's list
        qal |= mine or _own_qal(default)
    qdef = next((c.qdef for kind, _ in KINDS for c in (getattr(cfg, kind).get(names[kind]),
                                                        getattr(cfg, kind).get("DEFAULT"))
                 if c is not None and c.qdef and c.qdef != DEFAULT_QOS and c.qdef in qal), DEFAULT_QOS)
    return requested if requested not in NO_REQUEST and requested in qal else qdef


def job_info(s: MauiCore, job: Job) -> JobInfo:
    """The :class:`JobInfo` of ``job`` under scheduler ``s``'s configuration (MPriority.c
    ``MJobGetStartPriority``'s credential terms, MJob.c ``MJobCheckLimits``'s credentials); one object
    per set of credentials (``s.infos``: it depends on nothing else, and nothing changes it)."""
    d = job.json_dict or {}
    key = []
    for names, default in _FIELDS:      # the first of the fields that is set, as a string, else the default
        for n in names:
            v = d.get(n)
            if v is not None and v != "":
                key.append(str(v))
                break
        else:
            key.append(default)
    k = tuple(key)
    info = s.infos.get(k)
    if info is None:
        info = s.infos[k] = _job_info(s, *key)
    return info


# user, group, account (else project, else group), class (queue_name, queue or partition), requested QOS
_FIELDS = ((("user",), "DEFAULT"), (("group",), "DEFAULT"), (("account", "project", "group"), "DEFAULT"),
           (("queue_name", "queue", "partition"), "DEFAULT"), (("qos",), ""))


def _job_info(s: MauiCore, user: str, group: str, account: str, cls: str, requested: str) -> JobInfo:
    cfg: MauiConfig = s.cfg
    names = {"users": user, "groups": group, "accounts": account, "classes": cls}
    cred = 0.0
    fs_terms = []
    cred_limits = []
    for kind, short in KINDS:
        entry = s._cred(kind, names[kind])
        if entry is None:
            continue
        if has_limit(entry):    # class totals too (MJobCheckLimits)
            cred_limits.append(((short, names[kind]), entry))
        w = getattr(cfg, f"{short}weight")
        if w and entry.priority:
            cred += w * entry.priority
        fw = getattr(cfg, f"fs{short}weight")
        if fw and entry.fstarget is not None:
            fs_terms.append(((short, names[kind]), fw, entry.fstarget))
    qos = job_qos(cfg, requested, names)
    own = cfg.qos.get(qos)
    if cfg.qosweight and own is not None and own.priority:      # the QOS's own PRIORITY, no DEFAULT fallback
        cred += cfg.qosweight * own.priority
    q_entry = s._cred("qos", qos)
    if q_entry is not None and has_limit(q_entry):    # limits: the QOS's own, else QOSCFG[DEFAULT]'s
        cred_limits.append((("qos", qos), q_entry))
    limits = s._cred("classes", cls)
    nodes = s.nodesets.get(cls)
    if nodes is None:
        nodes = s.nodesets.get("DEFAULT")
    others = subtract([(0, s.nb_machines - 1)], nodes) if nodes is not None else []
    return JobInfo(user, group, account, cls, cfg.credweight * cred, fs_terms, limits, nodes, others,
                   tuple(cred_limits), qos)


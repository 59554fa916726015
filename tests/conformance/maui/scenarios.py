"""The Maui conformance scenarios, kept as source: a seeded job list per scenario plus its maui.cfg lines.

A scenario is a machine of ``nodes`` single-processor nodes, Maui's RMPOLLINTERVAL ``poll`` and the
maui.cfg lines of the policy under test (on top of the simulator's own lines, :mod:`.traces`).  Its
jobs come from :func:`jobs` (``random.Random(seed)``, so the same list every time): submissions with
exponential inter-arrival times from ``T0`` (a multiple of one day, so that Maui's and batfeed's
fairshare windows start together), sizes from ``sizes``, run times uniform in [60, 3600] s, walltime
requests rounded up to the minute between the run time and 3 times it (no job overruns its request),
users ``u1``…``u<users>`` and groups ``g1``/``g2`` by user; QOS requests (``qos``) cycle by job index
without drawing from the generator.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

T0 = 11575 * 86400          # 1000080000: first submission, a multiple of 86400 s


@dataclass(frozen=True)
class Job:
    """One job: Maui's ``RQ->TaskCount`` = ``tasks`` single-processor nodes."""

    name: str
    tasks: int
    user: str
    group: str
    wclimit: int
    submit: int
    runtime: int
    cls: str = "batch"      # Maui class (batfeed's ``queue``; only scenarios with ``classes`` set it)
    account: str = ""       # Maui account (scenarios with ``accounts``: p<user % 3>)
    qos: str = ""           # requested QOS (scenarios with ``qos``: qos[i % len(qos)] for job i)


@dataclass(frozen=True)
class Scenario:
    """A recorded scenario: its machine, poll, maui.cfg lines and job generator parameters."""

    name: str
    nodes: int
    poll: int
    cfg: tuple[str, ...] = ()
    njobs: int = 120
    seed: int = 1
    mean_iat: float = 90.0
    sizes: tuple[int, ...] = (1, 1, 1, 2, 2, 3, 4, 4, 6, 8)
    users: int = 4
    classes: tuple[str, ...] = ()      # if set, user u<i> submits to classes[i % len(classes)]
    accounts: bool = False             # user u<i> charges account p<i % 3>
    # --- node states and classes (issue 29: defers, downtimes, Salomon) ---
    down: tuple[int, ...] = ()         # nodes (0-based) DEFINED in the resource trace: Down throughout
    drained: tuple[int, ...] = ()      # nodes DRAINED in the resource trace: Drained throughout
    node_classes: tuple[tuple[int, int, tuple[str, ...]], ...] = ()   # (first, last node, its classes)
    class_max: tuple[tuple[str, int], ...] = ()   # (class, widest job): sizes drawn above it are cut to it
    node_request: bool = False         # jobs request their task count in nodes too (else 0: MAXNODE counts 0)
    # (from, to, nodes): nodes Down during [from, to) s after T0 (multiples of the poll); the recorder sets
    # them with Maui's mnodectl at the iterations before (record.py drive); to = 0: down for good
    outages: tuple[tuple[int, int, tuple[int, ...]], ...] = ()
    qos: tuple[str, ...] = ()          # if set, job i requests QOS qos[i % len(qos)] ("": none)
    note: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    def cfg_text(self) -> str:
        """The policy lines, as batfeed's ``config`` option reads them."""
        return "".join(line + "\n" for line in self.cfg)


def jobs(sc: Scenario) -> list[Job]:
    """The scenario's jobs, in submission order (ties keep generation order)."""
    rng = random.Random(sc.seed)
    t = T0
    out = []
    for i in range(sc.njobs):
        if i:
            t += max(1, int(rng.expovariate(1.0 / sc.mean_iat)))
        q = min(rng.choice(sc.sizes), sc.nodes)
        rt = rng.randint(60, 3600)
        wc = -(-int(rt * rng.uniform(1.0, 3.0)) // 60) * 60
        u = rng.randint(1, sc.users)
        cls = sc.classes[u % len(sc.classes)] if sc.classes else "batch"
        q = min(q, dict(sc.class_max).get(cls, q))
        out.append(Job(f"j{i + 1:04d}", q, f"u{u}", f"g{1 + u % 2}", wc, t, rt, cls,
                       f"p{u % 3}" if sc.accounts else "", sc.qos[i % len(sc.qos)] if sc.qos else ""))
    return out


FS = ("FSPOLICY DEDICATEDPS", "FSWEIGHT 1", "FSUSERWEIGHT 100", "FSINTERVAL 86400", "FSDEPTH 7",
      "FSDECAY 0.80", "USERCFG[DEFAULT] FSTARGET=5")

FS_ROLL = ("FSPOLICY DEDICATEDPS", "FSWEIGHT 1", "FSUSERWEIGHT 100", "FSGROUPWEIGHT 50", "FSINTERVAL 3600",
           "FSDEPTH 4", "FSDECAY 0.5", "USERCFG[DEFAULT] FSTARGET=25", "GROUPCFG[g1] FSTARGET=30",
           "GROUPCFG[g2] FSTARGET=70")

BIG = (1, 1, 1, 2, 2, 3, 4, 4, 6, 8, 12, 15, 16)    # sizes with jobs wider than the up nodes

# the IT4I Salomon configuration (schedulers/examples/salomon-maui.cfg) as both read it, verbatim; Maui
# ignores CLASSCFG HOSTLIST (MClass.c MClassProcessConfig), so its nodes' classes say the same (SALOMON_NODES)
SALOMON_CFG = tuple((Path(__file__).resolve().parents[3] / "schedulers" / "examples" / "salomon-maui.cfg")
                    .read_text().splitlines())
SALOMON_CLASSES = ("qexp", "qprod", "qlong", "qmpp", "qfree", "qmic")
SALOMON_NODES = ((0, 575, ("SERVICE", "qexp", "qfree", "qlong", "qmpp", "qprod")),
                 (576, 1005, ("SERVICE", "qexp", "qfree", "qmic", "qmpp", "qprod")),
                 (1006, 1007, ("SERVICE", "qexp", "qmic")))
# qexp: MAXNODEPERUSER 8, qlong MAXNODE 256, qfree MAXNODE 752: a wider job would wait in Maui for ever
SALOMON_MAX = (("qexp", 8), ("qlong", 256), ("qfree", 752))
SALOMON_SIZES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384)

SCENARIOS: dict[str, Scenario] = {sc.name: sc for sc in (
    # (a) Maui's default configuration (NODEALLOCATIONPOLICY LASTAVAILABLE, FIRSTFIT, depth 1)
    Scenario("default_16n_5s", 16, 5, seed=1),
    Scenario("default_24n_60s", 24, 60, njobs=200, seed=2, mean_iat=100.0, sizes=(1, 1, 2, 2, 4, 4, 8, 12, 16)),
    Scenario("default_12n_5s_busy", 12, 5, njobs=150, seed=3, mean_iat=60.0),
    # (b) backfill and reservations
    Scenario("bestfit_depth3_16n_5s", 16, 5, ("BACKFILLPOLICY BESTFIT", "RESERVATIONDEPTH 3"), seed=4),
    Scenario("backfilldepth2_16n_5s", 16, 5, ("BACKFILLDEPTH 2",), seed=5),
    Scenario("bestfit_bfdepth1_16n_5s", 16, 5, ("BACKFILLPOLICY BESTFIT", "BACKFILLDEPTH 1"), seed=14),
    Scenario("resdepth3_24n_60s", 24, 60, ("RESERVATIONDEPTH 3",), njobs=200, seed=6, mean_iat=100.0,
             sizes=(1, 1, 2, 2, 4, 4, 8, 12, 16)),
    # (c) node allocation policies
    Scenario("firstavailable_16n_5s", 16, 5, ("NODEALLOCATIONPOLICY FIRSTAVAILABLE",), seed=1),
    Scenario("lastavailable_16n_5s", 16, 5, ("NODEALLOCATIONPOLICY LASTAVAILABLE",), seed=7),
    Scenario("minresource_16n_5s", 16, 5, ("NODEALLOCATIONPOLICY MINRESOURCE",), seed=8),
    Scenario("cpuload_16n_5s", 16, 5, ("NODEALLOCATIONPOLICY CPULOAD",), seed=9),
    Scenario("nobackfill_16n_5s", 16, 5, ("BACKFILLPOLICY NONE",), seed=19),
    Scenario("resnever_16n_5s", 16, 5, ("RESERVATIONPOLICY NEVER",), seed=20),
    Scenario("bestfit_procseconds_16n_5s", 16, 5, ("BACKFILLPOLICY BESTFIT", "BACKFILLMETRIC PROCSECONDS"),
             seed=21),
    Scenario("bestfit_seconds_16n_5s", 16, 5, ("BACKFILLPOLICY BESTFIT", "BACKFILLMETRIC SECONDS"), seed=22),
    # priorities
    Scenario("xfactor_16n_5s", 16, 5, ("XFACTORWEIGHT 10",), seed=23),
    Scenario("userprio_16n_5s", 16, 5, ("USERWEIGHT 1", "USERCFG[u1] PRIORITY=100", "USERCFG[u3] PRIORITY=30"),
             seed=24),
    Scenario("groupprio_16n_60s", 16, 60, ("CREDWEIGHT 2", "GROUPWEIGHT 3", "GROUPCFG[g1] PRIORITY=20"), seed=25),
    Scenario("negprio_16n_5s", 16, 5, ("ENABLENEGJOBPRIORITY TRUE", "USERWEIGHT 1", "USERCFG[u2] PRIORITY=-100"),
             seed=26),
    Scenario("rejectneg_16n_5s", 16, 5, ("REJECTNEGPRIOJOBS TRUE", "ENABLENEGJOBPRIORITY TRUE", "USERWEIGHT 1",
                                         "USERCFG[u2] PRIORITY=-30"), seed=30),
    # (d) per-credential limits
    Scenario("maxjob4_16n_5s", 16, 5, ("USERCFG[DEFAULT] MAXJOB=4",), seed=10, mean_iat=60.0),
    Scenario("maxproc8_16n_5s", 16, 5, ("USERCFG[DEFAULT] MAXPROC=8",), seed=11, mean_iat=60.0),
    Scenario("softhard_maxjob_16n_5s", 16, 5, ("USERCFG[DEFAULT] MAXJOB=2,4",), seed=31, mean_iat=60.0),
    Scenario("softhard_maxproc_16n_5s", 16, 5, ("USERCFG[DEFAULT] MAXPROC=6,10",), seed=32, mean_iat=60.0),
    Scenario("classprio_16n_5s", 16, 5, ("CLASSWEIGHT 1", "CLASSCFG[qa] PRIORITY=60"), seed=33,
             classes=("qa", "qb")),
    Scenario("classmaxjob_16n_5s", 16, 5, ("CLASSCFG[qa] MAXJOB=3",), seed=34, mean_iat=60.0, classes=("qa", "qb")),
    Scenario("accountmaxjob_16n_5s", 16, 5, ("ACCOUNTCFG[DEFAULT] MAXJOB=3",), seed=35, mean_iat=60.0,
             accounts=True),
    Scenario("classmaxproc_16n_5s", 16, 5, ("CLASSCFG[qb] MAXPROC=9",), seed=37, mean_iat=60.0, classes=("qa", "qb")),
    Scenario("groupmaxjob_16n_5s", 16, 5, ("GROUPCFG[DEFAULT] MAXJOB=5",), seed=27, mean_iat=60.0),
    Scenario("groupmaxproc_16n_5s", 16, 5, ("GROUPCFG[g1] MAXPROC=9", "USERCFG[u2] MAXJOB=2"), seed=28,
             mean_iat=60.0),
    # (e) fairshare (the configuration)
    Scenario("fairshare_16n_60s", 16, 60, FS, njobs=400, seed=12, mean_iat=360.0),
    Scenario("fairshare_week_16n_60s", 16, 60, FS, njobs=700, seed=13, mean_iat=800.0, users=6,
             sizes=(1, 1, 2, 2, 4, 4, 8, 12, 16)),
    # hourly windows, strong decay, user and group targets, a poll that does not divide FSINTERVAL
    Scenario("fairshare_roll_16n_7s", 16, 7, FS_ROLL, njobs=300, seed=15, mean_iat=100.0),
    Scenario("fairshare_roll_16n_60s", 16, 60, FS_ROLL, njobs=300, seed=16, mean_iat=100.0),
    Scenario("fairshare_dedicatedpes_16n_60s", 16, 60, ("FSPOLICY DEDICATEDPES",) + FS_ROLL[1:], njobs=300,
             seed=17, mean_iat=100.0),
    Scenario("fairshare_floor_16n_60s", 16, 60, FS_ROLL[:7] + ("USERCFG[DEFAULT] FSTARGET=25+",
                                                                 "GROUPCFG[g1] FSTARGET=30-"),
             njobs=300, seed=29, mean_iat=100.0),
    Scenario("fairshare_account_16n_60s", 16, 60, FS_ROLL[:7] + ("FSACCOUNTWEIGHT 40", "ACCOUNTWEIGHT 1",
                                                                   "ACCOUNTCFG[DEFAULT] FSTARGET=33",
                                                                   "ACCOUNTCFG[p1] PRIORITY=30"),
             njobs=300, seed=36, mean_iat=100.0, accounts=True),
    Scenario("fairshare_class_16n_60s", 16, 60, FS_ROLL[:7] + ("FSCLASSWEIGHT 30", "CLASSCFG[qa] FSTARGET=40",
                                                                 "CLASSCFG[qb] FSTARGET=60"),
             njobs=300, seed=38, mean_iat=100.0, classes=("qa", "qb")),
    Scenario("fairshare_utilizedps_16n_60s", 16, 60, ("FSPOLICY UTILIZEDPS",) + FS_ROLL[1:], njobs=300,
             seed=18, mean_iat=100.0),
    # --- defers, node states, Salomon (issue 29) ---
    # nodes down for the whole run (the simulator's only downtime); jobs wider than the 14 up nodes deferred
    Scenario("down_16n_5s", 16, 5, (), seed=40, down=(2, 9), sizes=BIG),
    Scenario("drained_firstavailable_16n_5s", 16, 5, ("NODEALLOCATIONPOLICY FIRSTAVAILABLE",), seed=41,
             drained=(0, 5, 6), sizes=BIG),
    # DEFERTIME = RMPOLLINTERVAL: the simulator then really defers (else it removes the job), DEFERCOUNT holds
    Scenario("defer_poll_16n_5s", 16, 5, ("DEFERTIME 00:00:05", "DEFERCOUNT 3"), seed=42, down=(15,), sizes=BIG),
    Scenario("defer_poll_limits_16n_5s", 16, 5, ("DEFERTIME 5", "DEFERCOUNT 2", "USERCFG[DEFAULT] MAXJOB=3"),
             seed=43, mean_iat=60.0, down=(0, 1), sizes=BIG),
    # class per-job limits: MRM.c MRMJobPostLoad batch-holds (the simulator removes) a job over them
    Scenario("classjoblimits_16n_5s", 16, 5, ("CLASSCFG[qa] MAXPROCPERJOB=4", "CLASSCFG[qb] MAX.WCLIMIT=01:00:00"),
             seed=44, classes=("qa", "qb")),
    # nodes going down and coming back mid-run (Maui: mnodectl while paused; batfeed: Batsim events)
    Scenario("outage_16n_5s", 16, 5, (), seed=47, outages=((600, 2400, (3, 4, 5)), (3000, 6000, (10,))),
             sizes=(1, 1, 2, 2, 3, 4, 4, 6, 8, 12)),
    # half the nodes down for an hour: wider jobs deferred (DEFERTIME = RMPOLLINTERVAL, so the simulator
    # defers rather than removes), restored with their queue time restarted, run once the nodes are back ...
    Scenario("outage_defer_16n_5s", 16, 5, ("DEFERTIME 00:00:05", "DEFERCOUNT 1000"), seed=48,
             outages=((1200, 4800, tuple(range(8, 16))),), sizes=BIG),
    # ... or batch-held (never run) after DEFERCOUNT defers
    Scenario("outage_defercount_16n_5s", 16, 5, ("DEFERTIME 5", "DEFERCOUNT 30", "XFACTORWEIGHT 10"), seed=49,
             outages=((1200, 4800, tuple(range(0, 8))), (6000, 6600, (0, 1, 2, 3, 4, 5))), sizes=BIG),
    Scenario("salomon_1008n_5s", 1008, 5, SALOMON_CFG, njobs=250, seed=45, mean_iat=150.0, users=12,
             sizes=SALOMON_SIZES, classes=SALOMON_CLASSES, accounts=True, node_classes=SALOMON_NODES,
             class_max=SALOMON_MAX, node_request=True),
    Scenario("salomon_busy_1008n_5s", 1008, 5, SALOMON_CFG, njobs=400, seed=46, mean_iat=90.0, users=12,
             sizes=SALOMON_SIZES, classes=SALOMON_CLASSES, accounts=True, node_classes=SALOMON_NODES,
             class_max=SALOMON_MAX, node_request=True),
    # --- issue 29: QOS, MAXPS, fairshare caps (one block) ---
    # QOS priority: u2 may use lo only (its own QLIST, not DEFAULT's), the others hi; a request outside the
    # list, or none, gets the default QOS (QDEF, else DEFAULT, whose QOSCFG[DEFAULT] PRIORITY counts)
    Scenario("qos_prio_16n_5s", 16, 5, ("QOSWEIGHT 1", "QOSCFG[hi] PRIORITY=200", "QOSCFG[DEFAULT] PRIORITY=50",
                                        "USERCFG[DEFAULT] QLIST=hi", "USERCFG[u2] QLIST=lo QDEF=lo"),
             seed=40, mean_iat=60.0, qos=("", "hi", "", "lo")),
    # QOS limits: hi's own MAXJOB, QOSCFG[DEFAULT] MAXPROC for every QOS without its own
    Scenario("qos_limits_16n_5s", 16, 5, ("QOSWEIGHT 1", "QOSCFG[hi] PRIORITY=100 MAXJOB=2",
                                          "QOSCFG[DEFAULT] MAXPROC=10", "USERCFG[DEFAULT] QLIST=hi"),
             seed=41, mean_iat=60.0, qos=("", "hi")),
    Scenario("xfminwclimit_16n_5s", 16, 5, ("XFACTORWEIGHT 10", "XFMINWCLIMIT 00:30:00"), seed=42),
    Scenario("maxps_user_16n_5s", 16, 5, ("USERCFG[DEFAULT] MAXPS=100000",), seed=43, mean_iat=60.0),
    Scenario("softhard_maxps_16n_5s", 16, 5, ("USERCFG[DEFAULT] MAXPS=60000,120000",), seed=44, mean_iat=60.0),
    Scenario("maxps_group_class_16n_5s", 16, 5, ("GROUPCFG[g1] MAXPS=100000", "CLASSCFG[qb] MAXPS=90000"),
             seed=45, mean_iat=60.0, classes=("qa", "qb")),
    Scenario("fscap_16n_60s", 16, 60, FS_ROLL + ("FSCAP 800",), njobs=300, seed=46, mean_iat=100.0),
    Scenario("fssubcap_16n_60s", 16, 60, FS_ROLL + ("FSUSERCAP 5", "FSGROUPCAP 10"), njobs=300, seed=47,
             mean_iat=100.0),
    # QOS access through group, account and class lists and defaults (MQOS.c MQOSGetAccess)
    Scenario("qos_access_16n_5s", 16, 5, ("QOSWEIGHT 1", "QOSCFG[hi] PRIORITY=200", "QOSCFG[lo] PRIORITY=50",
                                          "GROUPCFG[g1] QLIST=hi QDEF=hi", "CLASSCFG[qb] QDEF=lo",
                                          "ACCOUNTCFG[p2] QLIST=lo"),
             seed=49, mean_iat=60.0, classes=("qa", "qb"), accounts=True, qos=("", "hi", "lo")),
    # account and QOS MAXPS; QOSCFG[DEFAULT]'s MAXPS also shuts the backfill window (MBF.c MBFGetWindow)
    Scenario("maxps_account_qos_16n_5s", 16, 5, ("ACCOUNTCFG[DEFAULT] MAXPS=120000", "QOSCFG[hi] MAXPS=90000",
                                                 "QOSCFG[DEFAULT] MAXPS=100000", "USERCFG[DEFAULT] QLIST=hi"),
             seed=50, mean_iat=60.0, accounts=True, qos=("", "hi")),
    # per-credential fairshare caps (MFS.c MFSCheckCap): g2's decayed usage in processor-seconds, u1's share
    Scenario("fstargetcap_16n_60s", 16, 60, FS_ROLL[:9] + ("GROUPCFG[g2] FSTARGET=100000^", "USERCFG[u1] FSTARGET=30%"),
             njobs=300, seed=52, mean_iat=100.0),
)}

"""What batfeed's Maui does with each maui.cfg keyword it reads: exact, approximate (how), ignored or error.

*exact*: every job of the Maui conformance scenarios named starts at the reference Maui 3 simulator's
poll on its nodes (tests/test_maui_conformance.py; node mechanics, ``interval`` = RMPOLLINTERVAL with
``poll``: Maui iterates at every poll).  *approximate*: what differs, or that the rule follows Maui's
source but no recorded scenario checks it yet.  *ignored*: any other keyword or attribute, named in one
warning when the file is read.  *error*: a value batfeed refuses (a ``file:line`` error).  ``batfeed
schedulers`` prints :data:`STATUS` (:func:`listing`); reading a config logs the approximate ones it uses
(:func:`approximations`).
"""

from __future__ import annotations

import textwrap

# keyword (or "KEYWORD value", or "XCFG ATTR") -> (status, how)
STATUS: dict[str, tuple[str, str]] = {
    "RMPOLLINTERVAL": ("exact", "the polling grid, with the option poll (without it batfeed iterates only after "
                       "an event; event-driven without interval)"),
    "QUEUETIMEWEIGHT": ("exact", "default_*, every scenario"),
    "SERVICEWEIGHT": ("exact", "default_* (weight 1)"),
    "RESERVATIONPOLICY CURRENTHIGHEST": ("exact", "every scenario"),
    "RESERVATIONPOLICY NEVER": ("exact", "no priority reservation (resnever_16n_5s)"),
    "RESERVATIONDEPTH": ("exact", "resdepth3_24n_60s, bestfit_depth3_16n_5s"),
    "BACKFILLPOLICY FIRSTFIT": ("exact", "every default scenario"),
    "BACKFILLPOLICY BESTFIT": ("exact", "bestfit_depth3_16n_5s, bestfit_bfdepth1_16n_5s"),
    "BACKFILLPOLICY NONE": ("exact", "no backfill and, as MJobPReserve, no priority reservation "
                            "(nobackfill_16n_5s)"),
    "BACKFILLDEPTH": ("exact", "backfilldepth2_16n_5s, bestfit_bfdepth1_16n_5s"),
    "BACKFILLMETRIC PROCS": ("exact", "BESTFIT's default (bestfit_* scenarios)"),
    "BACKFILLMETRIC PROCSECONDS/SECONDS": ("exact", "bestfit_procseconds_16n_5s, bestfit_seconds_16n_5s"),
    "NODEALLOCATIONPOLICY": ("exact", "LASTAVAILABLE (default), FIRSTAVAILABLE, MINRESOURCE, CPULOAD on "
                             "identical single-processor nodes (*available_*, minresource_*, cpuload_*)"),
    "JOBMAXOVERRUN": ("exact", "through the workload (batfeed convert --overrun; KTH-SP2 in test_real_maui)"),
    "FSPOLICY DEDICATEDPS": ("exact", "fairshare_* (usage accrued poll by poll in interval mode; charged "
                             "continuously when event-driven)"),
    "FSPOLICY DEDICATEDPES": ("exact", "as DEDICATEDPS: processor-equivalents of single-processor jobs "
                              "without memory requests (fairshare_dedicatedpes_16n_60s)"),
    "FSPOLICY UTILIZEDPS": ("approximate", "charged as DEDICATEDPS: batfeed has no utilisation (Maui's "
                            "simulator gives the same, fairshare_utilizedps_16n_60s)"),
    "FSINTERVAL": ("exact", "fairshare_roll_*"),
    "FSDEPTH": ("exact", "fairshare_roll_*"),
    "FSDECAY": ("exact", "fairshare_roll_*"),
    "FSWEIGHT": ("exact", "fairshare_*"),
    "FSUSERWEIGHT": ("exact", "fairshare_*"),
    "FSGROUPWEIGHT": ("exact", "fairshare_roll_*, HPC2N in test_real_maui"),
    "FSACCOUNTWEIGHT": ("exact", "fairshare_account_16n_60s; jobs with an account (batfeed gives one without "
                        "it its project, else its group; Maui: none)"),
    "FSCLASSWEIGHT": ("exact", "fairshare_class_16n_60s"),
    "USERCFG FSTARGET": ("exact", "targets (fairshare_*), floors 25+ (fairshare_floor_16n_60s)"),
    "GROUPCFG FSTARGET": ("exact", "targets (fairshare_roll_*, HPC2N in test_real_maui), ceilings 30- "
                                   "(fairshare_floor_16n_60s)"),
    "ACCOUNTCFG FSTARGET": ("exact", "fairshare_account_16n_60s"),
    "CLASSCFG FSTARGET": ("exact", "fairshare_class_16n_60s"),
    "CREDWEIGHT": ("exact", "userprio_16n_5s, groupprio_16n_60s"),
    "USERWEIGHT": ("exact", "× USERCFG PRIORITY (userprio_16n_5s)"),
    "GROUPWEIGHT": ("exact", "× GROUPCFG PRIORITY (groupprio_16n_60s)"),
    "ACCOUNTWEIGHT": ("exact", "× ACCOUNTCFG PRIORITY (fairshare_account_16n_60s)"),
    "CLASSWEIGHT": ("exact", "× CLASSCFG PRIORITY (classprio_16n_5s; class = the job's queue)"),
    "XFACTORWEIGHT": ("exact", "(wait + walltime) / max(walltime, XFMINWCLIMIT) (xfactor_16n_5s)"),
    "XFMINWCLIMIT": ("exact", "max(walltime, XFMINWCLIMIT) for every job: Maui applies it to a job with a QOS "
                     "(MPriority.c MJobGetStartPriority) and its simulator gives every job one (xfminwclimit_16n_5s)"),
    "ENABLENEGJOBPRIORITY": ("exact", "negprio_16n_5s"),
    "REJECTNEGPRIOJOBS": ("exact", "a job of negative priority waits (rejectneg_16n_5s); one whose priority can "
                          "never rise is rejected when nothing else is left (Maui keeps it idle)"),
    "USERCFG MAXJOB": ("exact", "maxjob4_16n_5s, KTH-SP2 and HPC2N in test_real_maui; SOFT,HARD: "
                                "softhard_maxjob_16n_5s"),
    "USERCFG MAXPROC": ("exact", "maxproc8_16n_5s, softhard_maxproc_16n_5s, HPC2N in test_real_maui; a job above "
                        "the hard limit is "
                        "rejected at submission (Maui keeps it idle)"),
    "GROUPCFG MAXJOB, MAXPROC": ("exact", "groupmaxjob_16n_5s, groupmaxproc_16n_5s (MAXPROC: HPC2N in "
                                          "test_real_maui)"),
    "ACCOUNTCFG MAXJOB, MAXPROC": ("exact", "accountmaxjob_16n_5s (MAXJOB)"),
    "USERCFG/GROUPCFG/ACCOUNTCFG/QOSCFG MAXNODE": ("approximate", "counted in machines like MAXPROC; Maui counts "
                                                   "the job's node request"),
    "CLASSCFG MAXJOB": ("exact", "the USERCFG rules for the class's running jobs (classmaxjob_16n_5s)"),
    "CLASSCFG MAXNODE, MAXPROC": ("approximate", "the USERCFG rules, in machines: classmaxproc_16n_5s starts "
                                  "every job at Maui's poll, one of them on other nodes (not explained yet); MAXNODE "
                                  "exact for whole-node jobs (salomon_*: Maui counts the job's node request)"),
    "CLASSCFG MAXNODEPERUSER": ("exact", "whole-node jobs (salomon_*); Maui counts the job's node request, 0 for "
                                "a job asking processors only, batfeed its machines"),
    "CLASSCFG MAXJOBPERUSER, MAXPROCPERUSER": ("approximate", "a job over the limit waits; not yet compared "
                                               "with Maui"),
    "CLASSCFG MAXPROCPERJOB, MAX.WCLIMIT": ("exact", "a job over them is rejected at submission (Maui: a batch "
                                            "hold at submission, MRM.c MRMJobPostLoad; classjoblimits_16n_5s, "
                                            "salomon_*)"),
    "CLASSCFG MAXNODEPERJOB": ("approximate", "as MAXPROCPERJOB, in machines (Maui: the job's node request)"),
    "CLASSCFG HOSTLIST": ("approximate", "batfeed extension: the class's machines; Maui 3 ignores it (MClass.c "
                          "MClassProcessConfig), its nodes' classes say the same (exact as such: salomon_*)"),
    "USERCFG/GROUPCFG/CLASSCFG PRIORITY": ("exact", "userprio_16n_5s, groupprio_16n_60s, classprio_16n_5s"),
    "ACCOUNTCFG PRIORITY": ("exact", "fairshare_account_16n_60s"),
    # --- defers, node states, Salomon (issue 29) ---
    "DEFERTIME, DEFERCOUNT": ("exact", "a job wider than the up machines is deferred DEFERTIME, restored at the "
                              "first poll after it with its queue time restarted, rejected at its DEFERCOUNT+1-th "
                              "defer (down_16n_5s, drained_*, defer_poll_*, outage_defer*_16n_5s)"),
    "DEFERSTARTCOUNT": ("approximate", "read, no effect: a Batsim start never fails (MJob.c MJobStart)"),
    "CLASSCFG MAXWCLIMIT": ("ignored", "no Maui 3 attribute (Maui ignores it: recorded); MAX.WCLIMIT is"),
    # --- issue 29: QOS, MAXPS, fairshare caps ---
    "QOSWEIGHT": ("exact", "× the job's QOS's QOSCFG PRIORITY (qos_prio_16n_5s, qos_limits_16n_5s)"),
    "QOSCFG PRIORITY": ("exact", "the QOS's own, no DEFAULT fallback; the job's QOS is the one it requests (Batsim "
                        "field qos, Maui's trace QOS field) if its credentials may use it, else their default "
                        "(qos_prio_16n_5s)"),
    "USERCFG QLIST, QDEF": ("exact", "MQOS.c MQOSGetAccess (qos_prio_16n_5s); lists of type & or ^ are errors"),
    "GROUPCFG/ACCOUNTCFG/CLASSCFG QLIST, QDEF": ("exact", "MQOS.c MQOSGetAccess (qos_access_16n_5s); a job without "
                                                 "an account has its group as account in batfeed (Maui: none)"),
    "QOSCFG MAXJOB, MAXPROC": ("exact", "the QOS's own limit, else QOSCFG[DEFAULT]'s; a default QOS at its soft "
                               "limit leaves no backfill window (MBF.c MBFGetWindow) (qos_limits_16n_5s; MAXPROC: "
                               "HPC2N in test_real_maui)"),
    "USERCFG MAXPS": ("exact", "processors × walltime against the running jobs' processors × remaining walltime "
                      "(MPolicy.c MPolicyAdjustUsage) (maxps_user_16n_5s; SOFT,HARD: softhard_maxps_16n_5s); a job "
                      "above the hard limit is rejected at submission (Maui keeps it idle)"),
    "GROUPCFG MAXPS, CLASSCFG MAXPS": ("exact", "maxps_group_class_16n_5s"),
    "ACCOUNTCFG MAXPS, QOSCFG MAXPS": ("exact", "maxps_account_qos_16n_5s (QOSCFG[DEFAULT]'s also in the backfill "
                                                "window's check)"),
    "FSCAP": ("exact", "cap of the fairshare component before FSWEIGHT (MPriority.c MJobGetStartPriority; "
              "fscap_16n_60s)"),
    "FSUSERCAP, FSGROUPCAP": ("exact", "caps of each credential's target − usage % (fssubcap_16n_60s)"),
    "FSACCOUNTCAP, FSCLASSCAP": ("approximate", "the FSUSERCAP rule; not yet compared with Maui"),
    "USERCFG/GROUPCFG FSCAP": ("ignored", "not a credential attribute in Maui 3.5 (MConst.c MCredAttr has none, "
                               "MCred.c MCredProcessConfig skips it; its per-credential cap is FSTARGET=N^ or N%): "
                               "ignored with the warning, as Maui does"),
    "FSTARGET caps (N^, N%)": ("approximate", "Maui 3.5's per-credential fairshare caps (MFS.c MFSCheckCap from "
                               "MPolicy.c MQueueCheckSingleJob): a job whose credential's own decayed usage + "
                               "processors × walltime exceeds N processor-seconds (^) or N % of the total (%) is "
                               "not selected and keeps its last reservation; the credential's factor is 0. "
                               "fstargetcap_16n_60s starts every job at Maui's poll, one on other nodes (a "
                               "reservation Maui leaves on a node of a job ending at the poll, not modelled)"),
}


def listing() -> list[str]:
    """The table for ``batfeed schedulers``."""
    out = ["", "    maui.cfg keywords (exact: matches Maui job by job in tests/test_maui_conformance.py; any other",
           "    keyword or attribute: ignored with a warning):"]
    for key, (status, how) in STATUS.items():
        out += textwrap.wrap(f"{key}: {status} ({how})", 112, initial_indent="      ", subsequent_indent="        ")
    return out


def approximations(used: set[str]) -> list[str]:
    """The approximate :data:`STATUS` entries a config relies on: ``used`` holds the parser's ``KEYWORD``,
    ``KEYWORD VALUE`` and ``XCFG ATTR`` strings (upper case)."""
    def any_of(*names: str) -> bool:
        return any(n in used for n in names)

    rules = [
        ("FSPOLICY UTILIZEDPS", any_of("FSPOLICY UTILIZEDPS")),
        ("USERCFG/GROUPCFG/ACCOUNTCFG/QOSCFG MAXNODE", any_of("USERCFG MAXNODE", "GROUPCFG MAXNODE",
                                                              "ACCOUNTCFG MAXNODE", "QOSCFG MAXNODE")),
        ("CLASSCFG MAXNODE, MAXPROC", any_of("CLASSCFG MAXNODE", "CLASSCFG MAXPROC")),
        ("CLASSCFG MAXJOBPERUSER, MAXPROCPERUSER", any_of("CLASSCFG MAXJOBPERUSER", "CLASSCFG MAXPROCPERUSER")),
        ("CLASSCFG MAXNODEPERJOB", any_of("CLASSCFG MAXNODEPERJOB")),
        ("CLASSCFG HOSTLIST", any_of("CLASSCFG HOSTLIST")),
        ("DEFERSTARTCOUNT", any_of("DEFERSTARTCOUNT")),
        ("FSACCOUNTCAP, FSCLASSCAP", any_of("FSACCOUNTCAP", "FSCLASSCAP")),
        ("FSTARGET caps (N^, N%)", any_of("FSTARGET CAP")),
    ]
    return [key for key, hit in rules if hit]

"""The maui.cfg subset (schedulers/maui_config.py): syntax, defaults, warnings, errors."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from batfeed.schedulers.maui import Maui
from batfeed.schedulers.maui_config import (
    MauiConfig,
    MauiConfigError,
    Target,
    load_config,
    parse_config,
    parse_duration,
)

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "maui"
SALOMON = REPO / "schedulers" / "examples" / "salomon-maui.cfg"


def test_maui_defaults():
    c = MauiConfig()
    assert (c.credweight, c.fsweight, c.serviceweight, c.queuetimeweight) == (1, 1, 1, 1)
    assert (c.classweight, c.fsaccountweight, c.xfactorweight) == (0, 0, 0)
    assert (c.backfillpolicy, c.backfilldepth, c.reservationdepth, c.reservationpolicy) == (
        "FIRSTFIT", 0, 1, "CURRENTHIGHEST")
    assert (c.fspolicy, c.fsinterval, c.fsdepth, c.fsdecay) == ("NONE", 43200, 8, 1.0)
    assert (c.enablenegjobpriority, c.rejectnegpriojobs, c.rmpollinterval) == (False, False, None)
    assert load_config(None) == MauiConfig()


@pytest.mark.parametrize("text, seconds", [("5", 5), ("00:00:05", 5), ("1:00", 60), ("168:00:00", 168 * 3600),
                                           ("1:02:03:04", 86400 + 2 * 3600 + 3 * 60 + 4), ("0.5", 0.5)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


def test_syntax_case_comments_arrays_aliases():
    c = parse_config("queuetimeweight 3   # minutes\n\n  XFactorWeight\t2\nAFSWEIGHT 4\nSERVWEIGHT 5\n"
                     "RESERVATIONDEPTH[0] 2\nclasscfg[qexp] priority=150 MAX.WCLIMIT=1:00:00 MAXPROC=32\n"
                     "USERCFG[DEFAULT] FSTARGET=25+\nBACKFILLMETRIC nodes\nFSPOLICY DEDICATEDPES\n")
    assert (c.queuetimeweight, c.xfactorweight, c.fsaccountweight, c.serviceweight) == (3, 2, 4, 5)
    assert c.reservationdepth == 2 and c.backfillmetric == "PROCS" and c.fspolicy == "DEDICATEDPS"
    q = c.classes["qexp"]
    assert (q.priority, q.maxwclimit, q.maxnode) == (150, 3600, 32)
    assert c.users["DEFAULT"].fstarget == Target(25, "+")
    assert c.warnings == []


def test_default_entry_fills_missing_attributes():
    c = parse_config("ACCOUNTCFG[DEFAULT] FSTARGET=100 PRIORITY=3\nACCOUNTCFG[p1] PRIORITY=7\n")
    p1, other = c.cred("accounts", "p1"), c.cred("accounts", "p2")
    assert (p1.priority, p1.fstarget) == (7, Target(100))
    assert (other.priority, other.fstarget) == (3, Target(100))
    assert c.cred("users", "u") is None


def test_credential_limits():
    c = parse_config("USERCFG[DEFAULT] MAXPROC=60\nUSERCFG[u7] MAXJOB=4\nGROUPCFG[g] MAXNODE=8\n")
    u7, other = c.cred("users", "u7"), c.cred("users", "u1")
    assert (u7.maxjob, u7.maxnode) == (4, 60) and (other.maxjob, other.maxnode) == (None, 60)
    assert c.cred("groups", "g").maxnode == 8
    # class-only attributes stay unknown on the other credentials
    assert parse_config("USERCFG[u] MAX.WCLIMIT=1:00:00\n").warnings[0].endswith(": USERCFG[u] MAX.WCLIMIT (line 1)")


def test_maxwclimit_is_no_maui_attribute():
    # Maui 3 matches CLASSCFG attribute names exactly (MCred.c MCredProcessConfig): MAXWCLIMIT is ignored there
    # (recorded: a job over it runs), so batfeed ignores it too, naming the attribute Maui reads
    c = parse_config("CLASSCFG[q] PRIORITY=2\nCLASSCFG[q] MAXWCLIMIT=1:00:00\n", "m.cfg")
    assert c.classes["q"].maxwclimit is None
    assert c.warnings == ["m.cfg: ignored (not supported by batfeed's Maui): CLASSCFG[q] MAXWCLIMIT (line 2; "
                          "Maui ignores it too, its attribute is MAX.WCLIMIT)"]
    assert parse_config("CLASSCFG[q] MAX.WCLIMIT=1:00:00\n").classes["q"].maxwclimit == 3600


def test_defer_keywords():
    c = parse_config("DEFERTIME 00:05:00\nDEFERCOUNT 3\nDEFERSTARTCOUNT 2\n")
    assert (c.defertime, c.defercount, c.deferstartcount) == (300, 3, 2)
    d = parse_config("")
    assert (d.defertime, d.defercount, d.deferstartcount) == (3600, 24, 1)     # msched.h defaults
    assert parse_config("DEFERTIME 0\n").defertime == 0 and parse_config("DEFERTIME -1\n").defertime == -1
    assert parse_config("DEFERTIME INFINITY\n").defertime == float("inf")
    with pytest.raises(MauiConfigError, match=r"m.cfg:2: DEFERCOUNT: not a non-negative integer: '-2'"):
        parse_config("DEFERTIME 60\nDEFERCOUNT -2\n", "m.cfg")
    with pytest.raises(MauiConfigError, match=r"m.cfg:1: DEFERTIME: not a duration"):
        parse_config("DEFERTIME soon\n", "m.cfg")


def test_qos_maxps_and_fairshare_caps():
    c = parse_config("QOSWEIGHT 2\nQOSCFG[hi] PRIORITY=100 MAXJOB=2\nQOSCFG[DEFAULT] MAXPROC=10 MAXPS=5000,9000\n"
                     "USERCFG[DEFAULT] QLIST=hi:lo MAXPS=100\nUSERCFG[u2] QDEF=lo\nCLASSCFG[q] MAXPS=7\n"
                     "FSCAP 800\nFSUSERCAP 5\n")
    hi = c.cred("qos", "hi")
    assert c.qosweight == 2
    assert (hi.priority, hi.maxjob, hi.maxnode, hi.maxps, hi.maxps_hard) == (100, 2, 10, 5000, 9000)
    assert c.users["DEFAULT"].qlist == ["hi", "lo"] and c.users["u2"].qdef == "lo"
    assert (c.users["DEFAULT"].maxps, c.classes["q"].maxps, c.fscap, c.fsusercap) == (100, 7, 800, 5)
    caps = parse_config("USERCFG[u] FSTARGET=9000^\nGROUPCFG[g] FSTARGET=20%\n")
    assert caps.users["u"].fstarget == Target(9000, "^") and caps.groups["g"].fstarget.delta(3) == 0
    # QOSCFG takes PRIORITY and the limits only (its FSTARGET, QTWEIGHT... are ignored with the warning)
    assert parse_config("QOSCFG[hi] FSTARGET=3\n").warnings[0].endswith(": QOSCFG[hi] FSTARGET (line 1)")


def test_job_qos_follows_mqosgetaccess():
    from batfeed.schedulers.maui_creds import job_qos
    c = parse_config("USERCFG[DEFAULT] QLIST=hi\nUSERCFG[u2] QLIST=lo QDEF=lo\nGROUPCFG[g9] QDEF=mid\n")
    names = {"users": "u1", "groups": "g1", "accounts": "a", "classes": "batch"}
    assert job_qos(c, "hi", names) == "hi"                      # DEFAULT user's list
    assert job_qos(c, "lo", names) == "DEFAULT"                 # not in the list: the default QOS
    assert job_qos(c, "", {**names, "users": "u2"}) == "lo"     # own QDEF
    assert job_qos(c, "hi", {**names, "users": "u2"}) == "lo"   # own list replaces DEFAULT's
    assert job_qos(c, "", {**names, "groups": "g9"}) == "mid"   # the group's QDEF is in its own list
    # MCred.c MCredAdjustConfig: with a DEFAULT QDEF, a user with its own QDEF keeps DEFAULT's list
    c = parse_config("USERCFG[DEFAULT] QLIST=hi QDEF=hi\nUSERCFG[u3] QDEF=lo\nUSERCFG[u4] QLIST=lo\n")
    assert job_qos(c, "hi", {**names, "users": "u3"}) == "hi" and job_qos(c, "", {**names, "users": "u3"}) == "lo"
    assert job_qos(c, "hi", {**names, "users": "u4"}) == "DEFAULT"   # its QLIST replaces DEFAULT's (hi)


def test_unknown_keywords_are_listed_in_one_warning(tmp_path, caplog):
    path = tmp_path / "m.cfg"
    path.write_text("SERVERHOST head\nQOSCFG[hi] QTWEIGHT=10\nCLASSCFG[q] PLIST=hi PRIORITY=2\nFSWEIGHT 2\n")
    with caplog.at_level(logging.WARNING, logger="batfeed.schedulers"):
        s = Maui({"config": str(path)})
    assert s.cfg.fsweight == 2 and s.cfg.classes["q"].priority == 2
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [f"{path}: ignored (not supported by batfeed's Maui): SERVERHOST (line 1), "
                        "QOSCFG[hi] QTWEIGHT (line 2), CLASSCFG[q] PLIST (line 3)"]


def test_approximate_keywords_in_effect_are_named(tmp_path, caplog):
    # maui_keywords.STATUS: only what is approximate *and* in effect (CLASSCFG MAXNODE, FSACCOUNTCAP); exact
    # ones (ACCOUNTWEIGHT, USERCFG MAXJOB, FS*, BESTFIT's metric) are not
    text = ("ACCOUNTWEIGHT 2\nACCOUNTCFG[p] PRIORITY=3 MAXPS=9\nCLASSCFG[q] PRIORITY=5 MAXNODE=2\nFSACCOUNTCAP 60\n"
            "BACKFILLPOLICY BESTFIT\nBACKFILLMETRIC PROCSECONDS\nUSERCFG[DEFAULT] MAXJOB=4 FSTARGET=10\n"
            "FSPOLICY DEDICATEDPS\nFSUSERWEIGHT 1\n")
    c = parse_config(text)
    assert c.approximate == ["CLASSCFG MAXNODE, MAXPROC", "FSACCOUNTCAP, FSCLASSCAP"]
    assert parse_config("FSPOLICY UTILIZEDPS\n").approximate == ["FSPOLICY UTILIZEDPS"]
    assert parse_config("").approximate == [] and c.warnings == []
    path = tmp_path / "a.cfg"       # one warning names them
    path.write_text(text)
    with caplog.at_level(logging.WARNING, logger="batfeed.schedulers"):
        Maui({"config": str(path)})
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: approximated (batfeed schedulers says how): " + "; ".join(c.approximate)]


def test_every_keyword_status_is_in_the_docs():
    # docs/maui.md's keyword table is STATUS (batfeed schedulers prints it): same keys, same statuses
    from batfeed.schedulers.maui_keywords import STATUS
    docs = (Path(__file__).resolve().parent.parent / "docs" / "maui.md").read_text()
    for key, (status, _) in STATUS.items():
        assert f"| {key} | {status} |" in docs, key


@pytest.mark.parametrize("text, message", [
    ("FSDECAY 1.5", "m.cfg:1: FSDECAY: must be in (0, 1]"),
    ("\nRESERVATIONDEPTH -1", "m.cfg:2: RESERVATIONDEPTH: not a non-negative integer: '-1'"),
    ("BACKFILLPOLICY GREEDY",
     "m.cfg:1: BACKFILLPOLICY: unsupported value 'GREEDY' (supported: FIRSTFIT, BESTFIT, NONE)"),
    ("FSINTERVAL 1h", "m.cfg:1: FSINTERVAL: not a duration"),
    ("QUEUETIMEWEIGHT", "m.cfg:1: QUEUETIMEWEIGHT expects one value, got 0"),
    ("QUEUETIMEWEIGHT 1 2", "m.cfg:1: QUEUETIMEWEIGHT expects one value, got 2"),
    ("CLASSCFG[q] PRIORITY", "m.cfg:1: CLASSCFG[q]: expected ATTR=VALUE, got 'PRIORITY'"),
    ("CLASSCFG PRIORITY=3", "m.cfg:1: CLASSCFG needs an index"),
    ("CLASSCFG[q] MAXNODE=many", "m.cfg:1: CLASSCFG[q] MAXNODE: not a non-negative integer"),
    ("USERCFG[DEFAULT] MAXPROC=60,x", "m.cfg:1: USERCFG[DEFAULT] MAXPROC: not a limit (N or SOFT,HARD)"),
    ("ACCOUNTCFG[a] FSTARGET=x", "m.cfg:1: ACCOUNTCFG[a] FSTARGET: not a fairshare target"),
    ("ENABLENEGJOBPRIORITY maybe", "m.cfg:1: ENABLENEGJOBPRIORITY: not a boolean"),
    ("FSDEPTH 0", "m.cfg:1: FSDEPTH: must be >= 1"),
    ("USERCFG[u] FSTARGET=20^+", "m.cfg:1: USERCFG[u] FSTARGET: not a fairshare target"),
    ("USERCFG[u] QLIST=a&b", "m.cfg:1: USERCFG[u] QLIST: QOS lists of type AND (&) or ONLY (^) are not supported"),
    ("USERCFG[u] QDEF=hi^", "m.cfg:1: USERCFG[u] QDEF: not a QOS name"),
    ("QOSCFG[hi] MAXPS=1h", "m.cfg:1: QOSCFG[hi] MAXPS: not a limit (N or SOFT,HARD)"),
    ("FSCAP -5", "m.cfg:1: FSCAP: not a non-negative integer"),
])
def test_malformed_lines_are_errors_with_file_and_line(text, message):
    with pytest.raises(MauiConfigError) as info:
        parse_config(text, "m.cfg")
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_fixture_and_missing_file_errors(tmp_path):
    with pytest.raises(MauiConfigError, match=r"bad\.cfg:3: FSDECAY: must be in \(0, 1\]"):
        Maui({"config": str(DATA / "bad.cfg")})
    with pytest.raises(MauiConfigError, match="cannot read Maui configuration"):
        Maui({"config": str(tmp_path / "none.cfg")})


def test_cli_reports_a_bad_config_on_one_line(tmp_path, capsys):
    from batfeed.cli import main
    wl = tmp_path / "w.json"
    wl.write_text('{"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d", "walltime": 20}],'
                  ' "profiles": {"d": {"type": "delay", "delay": 10}}}')
    code = main(["simulate", str(REPO / "platforms" / "small_4.xml"), str(wl), "--scheduler", "maui",
                 "--options", f'{{"config": "{DATA / "bad.cfg"}"}}', "--export", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "bad.cfg:3: FSDECAY: must be in (0, 1]" in err[0]


def test_the_salomon_example():
    c = load_config(SALOMON)
    assert c.warnings == []
    assert (c.credweight, c.classweight, c.fsweight, c.fsaccountweight, c.serviceweight, c.queuetimeweight) == (
        864000, 1, 8640000, 1, 1, 1)
    assert (c.fspolicy, c.fsinterval, c.fsdepth, c.fsdecay) == ("DEDICATEDPS", 168 * 3600, 1, 0.5)
    assert c.accounts["DEFAULT"].fstarget == Target(100)
    assert (c.enablenegjobpriority, c.rejectnegpriojobs) == (True, False)
    assert (c.backfillpolicy, c.backfilldepth, c.reservationdepth) == ("FIRSTFIT", 3, 1)
    table = {name: (e.priority, e.maxwclimit, e.maxnode, e.maxnodeperuser) for name, e in c.classes.items()}
    assert table == {"qexp": (150, 3600, 32, 8), "qprod": (0, 48 * 3600, None, None),
                     "qlong": (0, 144 * 3600, 256, None), "qmpp": (0, 4 * 3600, None, None),
                     "qfree": (-1024, 12 * 3600, 752, None), "qmic": (0, 24 * 3600, None, None),
                     "SERVICE": (512, None, None, None)}
    assert c.classes["qlong"].hostlist == ["0-575"]


def test_the_hpc2n_example():
    c = load_config(SALOMON.with_name("hpc2n-seth-maui.cfg"))
    assert c.warnings == [] and c.cred("users", "17").maxjob == 60 and c.cred("users", "17").maxnode is None
    assert (c.queuetimeweight, c.backfillpolicy, c.reservationdepth) == (1, "FIRSTFIT", 1)   # Maui's defaults


def test_soft_and_hard_limits():
    # MCred.c __MCredParseLimit: MAXJOB=SOFT[,HARD], one value sets both
    c = parse_config("USERCFG[DEFAULT] MAXJOB=4,6 MAXPROC=8\n")
    u = c.users["DEFAULT"]
    assert (u.maxjob, u.maxjob_hard, u.maxnode, u.maxnode_hard) == (4, 6, 8, 8)
    with pytest.raises(MauiConfigError, match="hard limit 4 below soft limit 6"):
        parse_config("USERCFG[u] MAXJOB=6,4\n")


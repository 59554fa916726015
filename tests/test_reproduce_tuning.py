"""``batfeed reproduce tuning``'s arithmetic: Impr pooled over resamples and its 10-90 % band (models.md §A),
the cells and verdicts, and the two configurations' campaigns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from batfeed.reproduce import tuning_tables


@pytest.fixture(scope="module")
def mod():
    return tuning_tables


def rows(trace: str, column: str, waits: dict[int, tuple[float, int]]) -> list[dict]:
    """Campaign rows: seed -> (mean wait, executed jobs) of EASY(policy) or tuned_easy 'strategy period'."""
    out = []
    for seed, (mean, n) in waits.items():
        row = {"trace": trace, "seed": seed, "status": "ok", "wait.mean": mean, "nb_executed": n}
        if " " in column:
            strategy, period = column.split()
            row.update({"scheduler": "tuned_easy", "options.strategy": strategy, "options.period": period,
                        "options.policy": None})
        else:
            row.update({"scheduler": "easy", "options.policy": column})
        out.append(row)
    return out


def test_impr_is_pooled_over_resamples_with_its_band(mod):
    # W(FCFS) = 100, 300, 600 over three resamples; W(SQF) = 50, 300, 300; W(full day) only on seeds 1, 2
    table = pd.DataFrame(rows("T", "FCFS", {1: (10.0, 10), 2: (30.0, 10), 3: (60.0, 10)})
                         + rows("T", "SQF", {1: (5.0, 10), 2: (15.0, 20), 3: (30.0, 10)})
                         + rows("T", "full day", {1: (20.0, 10), 2: (15.0, 10)})
                         + [{"trace": "T", "seed": 4, "status": "failed", "scheduler": "easy",
                             "options.policy": "FCFS", "wait.mean": None, "nb_executed": None}])
    w = mod.totals(table)
    assert w[("T", "FCFS")] == {1: 100.0, 2: 300.0, 3: 600.0} and w[("T", "SQF")][2] == 300.0
    pooled, lo, hi, n = mod.impr(w, "T", "SQF")
    assert n == 3 and pooled == pytest.approx(100 * (650 - 1000) / 1000)          # -35 %, not the mean of -50, 0, -50
    per = [-50.0, 0.0, -50.0]
    assert (lo, hi) == (pytest.approx(np.percentile(per, 10)), pytest.approx(np.percentile(per, 90)))
    pooled, _, _, n = mod.impr(w, "T", "full day")                                   # paired with FCFS seeds 1, 2
    assert n == 2 and pooled == pytest.approx(100 * (350 - 400) / 400)
    assert mod.impr(w, "T", "LAF") is None
    assert mod.cell(mod.impr(w, "T", "SQF"), -5).text() == "-5 | -35 [-50, -10] | sign agrees"
    assert mod.cell(mod.impr(w, "T", "SQF"), -40).text() == "-40 | -35 [-50, -10] | within band"
    assert mod.cell(mod.impr(w, "T", "SQF"), +20, "a reason").text() == "+20 | -35 [-50, -10] | differs: a reason"
    assert mod.cell(mod.impr(w, "T", "SQF"), +20).verdict == "DIFFERS"
    assert mod.cell(None, -16).text() == "-16 | - | not run"


def test_order_checks_state_each_claim(mod):
    got = {"full week": (-20.0, 0, 0, 3), "noisy week": (-19.0, 0, 0, 3), "bandit week": (-10.0, 0, 0, 3),
           "random week": (-5.0, 0, 0, 3)}
    line = mod.order_checks("T", (-22.0, 0, 0, 3), got)
    assert "week: Full -20.0 (+2.0 pts from best fixed), Noisy -19.0 (≈ Full), Bandit -10.0 (between Random and " \
           "Full), Random -5.0 (better than FCFS)" in line
    assert "day: incomplete" in line


def test_pairs_compare_the_paper_labels_as_printed_and_exchanged(mod):
    # KTH-SP2 paper: SRF -8, LRF -13.  Ours: SRF -13 %, LRF -8 % (exchanged): distances 10 as printed, 0 exchanged
    table = pd.DataFrame(rows("KTH-SP2", "FCFS", {1: (10.0, 10)}) + rows("KTH-SP2", "SRF", {1: (8.7, 10)})
                         + rows("KTH-SP2", "LRF", {1: (9.2, 10)}))
    text = mod.pairs(mod.totals(table), ["KTH-SP2"])
    line = [x for x in text.splitlines() if x.startswith("| KTH-SP2")][0]
    assert line == "| KTH-SP2 | - | - | - | 10 / 0 | - |"


def test_report_counts_sign_disagreements_and_the_ranking(mod):
    """One trace of the 44 cells: LAF's sign disagrees (no documented reason on KTH), SRF's has one."""
    waits = {"FCFS": 100.0, "LAF": 80.0, "SRF": 120.0, "SQF": 84.0, "full week": 88.0, "noisy week": 89.0,
             "bandit week": 95.0, "random week": 97.0}
    table = pd.DataFrame([r for col, w in waits.items() for r in rows("KTH-SP2", col, {1: (w, 1), 2: (w, 1)})])
    text = mod.report(table, ["KTH-SP2"], "test")
    assert "| KTH-SP2 (R = 2) |" in text
    assert "+15 · -20 [-20, -20] · DIFFERS" in text                                  # LAF: paper +15, ours -20
    assert "-8 · +20 [+20, +20] · differs: Table 3's EXP and RF columns fit the exchanged labels" in text
    assert "Sign disagreements on the 11 cells of KTH-SP2, SDSC-BLUE, UniLu-Gaia, CEA-Curie run: 2" in text
    assert "Table 4's ranking holds on 1 of 1 (trace, period): KTH-SP2 week" in text


def test_the_two_configurations_make_the_campaigns_they_name():
    from batfeed.campaign import load_spec
    from batfeed.reproduce import REPO
    from batfeed.reproduce.tuning import CONFIGS, campaign
    from batfeed.reproduce.tuning_tables import STRATEGIES

    paper = campaign(CONFIGS["paper-text"], [("KTH-SP2", "KTH-SP2")], [1, 2], STRATEGIES, "t")
    assert paper["traces"][0]["resample_weeks"] == 104 and "resample" not in paper["traces"][0]
    assert paper["schedulers"][0]["options"] == {"theta": 144000.0, "ties": "oldest", "policy": mod_policies()}
    authors = campaign(CONFIGS["authors-workflow"], [("KTH-SP2", "KTH-SP2")], [1], [], "t")
    assert authors["traces"][0]["resample"] == "permute" and len(authors["schedulers"]) == 1
    assert authors["schedulers"][0]["options"]["backfill_policy"] == "LQF"
    assert authors["schedulers"][0]["options"]["ties"] == "obps"
    assert "backfill_theta" not in authors["schedulers"][0]["options"]     # the fixed policies: Θ in B too
    tuned = campaign(CONFIGS["authors-workflow"], [("KTH-SP2", "KTH-SP2")], [1], [("full", "week")], "t")
    assert tuned["schedulers"][1]["options"]["backfill_theta"] is False     # ocst's bandit: B without Θ
    assert authors["schedulers"][0]["options"]["theta"] == 200000.0
    pairs = [("random", "week"), ("bandit", "week")]
    both = campaign(CONFIGS["authors-workflow"], [("KTH-SP2", "KTH-SP2")], [1], pairs, "t")
    by = {tuple(s["options"]["strategy"]): s["options"] for s in both["schedulers"][1:]}
    assert by[("bandit",)]["epsilon"] == 0.5 and "epsilon" not in by[("random",)]   # obps: --hyperparameter=0.5
    ptext = campaign(CONFIGS["paper-text"], [("KTH-SP2", "KTH-SP2")], [1], [("bandit", "week")], "t")
    assert "epsilon" not in ptext["schedulers"][1]["options"]                    # tuned_easy's default, the paper's 0.1
    camp = load_spec(paper, base=REPO)
    assert len(camp.traces) == 1


def test_a_subset_of_strategies_runs_only_those_pairs():
    """``--strategies full-week bandit-day``: the grids strategy x period lose the pairs not asked for, and
    the runs kept are the very runs of the whole grid (same recipes: a campaign folder reuses them)."""
    from dataclasses import replace

    from batfeed.campaign import load_spec
    from batfeed.campaign.expand import expand
    from batfeed.reproduce import REPO
    from batfeed.reproduce.tuning import CONFIGS, TUNED_SETS, campaign
    from batfeed.reproduce.tuning_tables import STRATEGIES

    def tuned(spec):
        runs = expand(load_spec(spec, base=REPO))
        return {(r.row["options.strategy"], r.row["options.period"]): r.key for r in runs
                if r.row["scheduler"] == "tuned_easy"}

    cfg, kth = CONFIGS["authors-workflow"], [("KTH-SP2", "KTH-SP2")]
    every = tuned(campaign(cfg, kth, [1], STRATEGIES, "t"))
    some = tuned(campaign(cfg, kth, [1], [("full", "week"), ("bandit", "day")], "t"))
    assert len(every) == 8 and set(some) == {("full", "week"), ("bandit", "day")}
    assert all(every[k] == some[k] for k in some)
    obps = replace(cfg, tuned_policies=TUNED_SETS["obps"])     # obps's policyfam_full: 9 candidates
    runs = expand(load_spec(campaign(obps, kth, [1], [("random", "week")], "t"), base=REPO))
    tuned_runs = [r for r in runs if r.row["scheduler"] == "tuned_easy"]
    assert [r.options["policies"] for r in tuned_runs] == [list(TUNED_SETS["obps"])]
    assert not {"LPF", "LQF", "LAF"} & set(TUNED_SETS["obps"]) and len(TUNED_SETS["obps"]) == 9


def mod_policies():
    from batfeed.reproduce.tuning_tables import POLICIES

    return POLICIES


def test_authors_workflow_end_to_end_on_one_permuted_kth(tmp_path):
    """The command as a user runs it: one permute resample of KTH-SP2, the 12 fixed policies under the
    authors' configuration; every run records ties obps, B = LQF and Θ = 200,000 s; a second
    invocation reuses every run."""
    import json

    from cli_helpers import run_cli

    args = ["reproduce", "tuning", "--config", "authors-workflow", "--traces", "KTH-SP2", "--resamples", "1",
            "--fixed-only", "--workers", "2", "--out", str(tmp_path / "o")]
    r = run_cli(args, tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    text = (tmp_path / "o" / "authors-workflow" / "tables.md").read_text(encoding="utf-8")
    assert "ties obps" in text and "backfill order LQF" in text and "Θ = 200000 s" in text
    assert "| KTH-SP2 (R = 1) |" in text and "not run" not in text.split("Table 4")[0]
    manifests = sorted((tmp_path / "o" / "authors-workflow" / "runs").glob("*/*_manifest.json"))
    assert len(manifests) == 12
    opts = json.loads(manifests[0].read_text())["scheduler"]["options"]
    assert (opts["ties"], opts["backfill_policy"], opts["theta"]) == ("obps", "LQF", 200000.0)
    again = run_cli(args, tmp_path, timeout=600)
    assert again.returncode == 0 and "12 runs reused" in again.stdout, again.stdout[-2000:]
    assert "0 to run" in again.stdout


def test_lqf_on_kth_has_its_measured_reason_and_no_other_trace_does(mod):
    """Issue 28: LQF's sign on KTH-SP2 follows the backfill order B (docs/reproductions.md, measured at
    R = 60); the reason is printed only where the sign disagrees, and only on KTH-SP2."""
    waits = {"FCFS": 100.0, "LQF": 95.0}
    for trace, verdict in (("KTH-SP2", "differs: the backfill order B decides the sign"),
                           ("SDSC-SP2", "DIFFERS")):
        table = pd.DataFrame([r for col, w in waits.items() for r in rows(trace, col, {1: (w, 1), 2: (w, 1)})])
        line = [x for x in mod.report(table, [trace], "t").splitlines() if x.startswith(f"| {trace} (R = 2)")][0]
        assert f"-5 [-5, -5] · {verdict}" in line.split(" | ")[5]
    table = pd.DataFrame([r for col, w in {"FCFS": 100.0, "LQF": 108.0}.items()
                          for r in rows("KTH-SP2", col, {1: (w, 1)})])
    assert "+3 · +8 · sign agrees" in mod.report(table, ["KTH-SP2"], "t")


@pytest.mark.parametrize("argv, message", [
    (["--epsilon", "1.5"], "--epsilon must be in [0, 1], got 1.5"),
    (["--fixed-only", "--strategies", "full-week"], "--fixed-only and --strategies exclude each other"),
])
def test_bad_tuning_options_are_refused_with_one_line(argv, message):
    from batfeed.errors import BatfeedError
    from batfeed.reproduce.tuning import main

    with pytest.raises(BatfeedError, match=message.replace("[", r"\[").replace("]", r"\]")):
        main(["--traces", "KTH-SP2", *argv])

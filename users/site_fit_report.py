"""``batfeed fit-users``'s printout of a fitted site-user model (:mod:`batfeed.users.site_fit`): counts per
trace, the think table beside the thesis's, the p_cont fit, activity, run-time classes and batch widths."""

from __future__ import annotations

from typing import Any

from batfeed.users.site_fit import R_LABELS, SD_LABELS, TraceStats, think_table

__all__ = ["format_fit"]


def _cell(v: float | None) -> str:
    return f"{'-':>6}" if v is None else f"{v:>6.3g}"


def format_fit(model: dict[str, Any], traces: list[TraceStats], bins: list[tuple[float, float, int]]) -> str:
    """Human-readable summary: counts, think table beside the thesis', p_cont fit, activity, runtime classes."""
    out = []
    for t in traces:
        batches = len(t.widths)
        out.append(f"{t.trace}: {t.jobs} jobs, {t.users} users, {t.skipped} skipped, machine {t.machine_procs} "
                   f"procs; {batches} batches, {t.sessions} sessions ({t.jobs / max(1, t.sessions):.2f} "
                   f"jobs/session), {len(t.thinks)} after-batch thinks")
        out += [f"  note: {n}" for n in t.notes]
    tab = model["think_table_min"]
    _, cnt = think_table([v for t in traces for v in t.think_resp], [v for t in traces for v in t.think_sd],
                         [v for t in traces for v in t.thinks])
    out.append("\nmedian think time (min) by response R (min) x slowdown SD: ours | thesis [SHM] | n")
    head = "".join(f"{c.split()[0]:>6}" for c in SD_LABELS)
    out.append(f"{'':<10}{head} |{head} |{head}")
    for i, row in enumerate(R_LABELS):
        out.append(f"{row:<10}" + "".join(_cell(v) for v in tab["values"][i]) + " |"
                   + "".join(_cell(v) for v in tab["thesis"][i]) + " |" + "".join(f"{n:>6}" for n in cnt[i]))
    pc = model["p_cont"]
    out.append(f"\np_cont(R) = a/(b*R + 1), R in minutes: ours a = {pc['a']:.3f}, b = {pc['b']:.4f} | thesis "
               f"a = {pc['thesis']['a']}, b = {pc['thesis']['b']}")
    out.append("  bins (mean R min: continued share, n): " + ", ".join(f"{x:.3g}: {y:.2f} ({n})" for x, y, n in bins))
    act, rc = model["activity"], model["runtime_classes"]
    out.append(f"\nactivity: {act['day_share']:.1%} of jobs in {act['day_window'][0]}-{act['day_window'][1]} "
               f"(thesis 70%), {act['weekday_share']:.1%} on Mon-Fri (thesis 80%)")
    out.append(f"runtime classes: <= 1 min {rc['le_1min']:.1%}, 1-10 min {rc['1_10min']:.1%}, > 10 min "
               f"{rc['gt_10min']:.1%} (thesis: roughly equal)")
    bw = dict(zip(model["batch_width"]["values"], model["batch_width"]["probs"], strict=True))
    out.append(f"batch width 1: {bw.get(1, 0):.1%}, 2: {bw.get(2, 0):.1%} (thesis: 1 dominant, 2 about 10%); "
               f"negative job-level think times: {model['negative_think_share']:.1%}")
    return "\n".join(out)

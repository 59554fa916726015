"""The figures of ``batfeed reproduce resampling``: bootstrap.png and load_sweep.png."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

BOOT = [("throughput_per_hour", "throughput (jobs/h)"), ("utilisation", "utilisation"),
        ("wait.mean", "mean wait (s)"), ("bounded_slowdown.mean", "mean bounded slowdown")]


def plots(df: pd.DataFrame, boot: pd.DataFrame, figures: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figures.mkdir(parents=True, exist_ok=True)
    ok = df[df["status"] == "ok"]
    res = ok[(ok["trace"] == "KTH-SP2 f1") & (ok["users"] == "rigid")]
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.6))
    for ax, (col, label) in zip(axes, BOOT, strict=True):
        ax.hist(res[col].astype(float), bins=20, color="#7a9cc6", edgecolor="white")
        ax.axvline(boot.at[label, "original"], color="#c0392b", lw=2, label="original log")
        ax.set_xlabel(label)
        ax.set_ylabel("resamples")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))     # counts
    axes[0].legend(loc="upper right", fontsize=8)
    fig.suptitle(f"KTH-SP2 under EASY: {len(res)} user-based resamples (f = 1, 48 weeks) vs the original log")
    fig.tight_layout()
    paths = [figures / "bootstrap.png"]
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)

    sw = ok[ok["trace"].str.contains(" f") & (ok["seed"] <= 10)].copy()
    sw["log"] = sw["trace"].str.split(" f").str[0]
    sw["f"] = sw["trace"].str.split(" f").str[1].astype(float)
    logs = [name for name in ("KTH-SP2", "SDSC-BLUE") if (sw["log"] == name).any()]
    fig, axes = plt.subplots(len(logs), 2, figsize=(11, 3.8 * len(logs)), squeeze=False)
    styles = {"rigid": ("#2c7fb8", "o", "rigid (resampled times)"), "a60": ("#d95f0e", "s", "feedback (a60 sessions)")}
    for r, name in enumerate(logs):
        panels = (("wait.mean", "mean wait (h)", 3600), ("utilisation", "utilisation", 1))
        for c, (col, label, scale) in enumerate(panels):
            ax = axes[r][c]
            for users, (color, marker, text) in styles.items():
                d = sw[(sw["log"] == name) & (sw["users"] == users)]
                if d.empty:
                    continue
                sat = d["saturation.saturated"].astype(bool)
                jitter = 0.012 if users == "a60" else -0.012
                ax.scatter(d.loc[~sat, "f"] + jitter, d.loc[~sat, col] / scale, color=color, marker=marker, s=14,
                           alpha=0.6)
                ax.scatter(d.loc[sat, "f"] + jitter, d.loc[sat, col] / scale, facecolors="none", edgecolors=color,
                           marker=marker, s=30)
                mean = d.groupby("f")[col].mean() / scale
                ax.plot(mean.index, mean.to_numpy(), color=color, label=text)
            ax.set_xlabel("load factor f")
            ax.set_ylabel(label)
            ax.set_title(name)
            ax.grid(alpha=0.3)
        axes[r][0].legend(fontsize=8, title="hollow: saturated run", title_fontsize=8)
    n = sw.groupby(["log", "f", "users"]).size()
    per = f"{n.min()}" if n.min() == n.max() else f"{n.min()}–{n.max()}"
    fig.suptitle(f"EASY on user-based resamples: {per} per load, rigid replay vs replay with feedback")
    fig.tight_layout()
    paths.append(figures / "load_sweep.png")
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    return paths

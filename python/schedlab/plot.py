"""Plot helpers on matplotlib for sweep DataFrames (`schedlab.sweep`, `schedlab.load`)
and run results: metric against a swept parameter per kernel with spread
bands, per-level wakeup shares, run-delay distributions. Each returns the Axes."""

from __future__ import annotations

import json


def _ax(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
    return ax


def metric_vs(df, param, by="kernel", ax=None, band="minmax"):
    """Mean metric against the swept `param`, one line per `by` value, with a
    band over the seeds: min..max (band="minmax") or mean +- one stddev ("std")."""
    ax = _ax(ax)
    ok = df[df["metric"].notna()]
    for name, g in ok.groupby(by, sort=False):
        s = g.groupby(param)["metric"]
        mean = s.mean()
        if band == "std":
            sd = s.std().fillna(0.0)
            lo, hi = mean - sd, mean + sd
        else:
            lo, hi = s.min(), s.max()
        ax.plot(mean.index, mean.values, marker="o", label=str(name))
        ax.fill_between(mean.index, lo.values, hi.values, alpha=0.2)
    first = ok.iloc[0] if len(ok) else None
    ax.set_xlabel(param)
    if first is not None:
        ax.set_ylabel(f"{first['metric_name']} ({first['unit']})")
    ax.legend(title=by)
    return ax


def wakeup_shares(df_or_result, by="kernel", ax=None):
    """Per sched-domain level: the share of try_to_wake_up() calls that woke the
    task on a CPU first sharing that level with the waker (schedstat
    ttwu_wake_remote), mean over runs, grouped bars per `by` value."""
    ax = _ax(ax)
    from ._result import Result

    if isinstance(df_or_result, Result):
        lv = df_or_result.levels
        ax.bar(lv["level"], lv["wake_remote_share"])
        ax.set_ylabel("share of wakeups")
        return ax
    import pandas as pd

    rows = []
    for _, r in df_or_result[df_or_result["levels"].notna()].iterrows():
        for lv in json.loads(r["levels"]):
            rows.append({by: r[by], "level": lv["level"], "share": lv["wake_remote_share"]})
    t = pd.DataFrame(rows).groupby([by, "level"], sort=False)["share"].mean().unstack(0)
    t.plot.bar(ax=ax)
    ax.set_ylabel("share of wakeups (wake_remote)")
    return ax


def run_delay(df, by="kernel", ax=None):
    """Run-delay percentiles (p50, p90, p99, max; runnable to running) per `by`
    value, box plots over the runs, microseconds on a log scale."""
    ax = _ax(ax)
    cols = ["run_delay_p50_ns", "run_delay_p90_ns", "run_delay_p99_ns", "run_delay_max_ns"]
    groups = list(df.groupby(by, sort=False))
    width = 0.8 / max(len(groups), 1)
    for i, (name, g) in enumerate(groups):
        data = [g[c].dropna().values / 1e3 for c in cols]
        pos = [j + i * width for j in range(len(cols))]
        b = ax.boxplot(data, positions=pos, widths=width * 0.9, patch_artist=True)
        for patch in b["boxes"]:
            patch.set_alpha(0.5)
        ax.plot([], [], label=str(name))
    ax.set_xticks([j + width * (len(groups) - 1) / 2 for j in range(len(cols))])
    ax.set_xticklabels(["p50", "p90", "p99", "max"])
    ax.set_yscale("log")
    ax.set_ylabel("run delay (us)")
    ax.legend(title=by)
    return ax

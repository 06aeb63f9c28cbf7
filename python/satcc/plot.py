"""Figures: a run's goodput/cwnd/queue panels, and a sweep's metric against
a varied key with the mean and a confidence band over seeds. matplotlib is
imported on first use (``pip install satcc[plot]``)."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
import pandas as pd

# Two-sided 95 % Student t quantiles for 1..30 degrees of freedom: the band
# over a handful of seeds must be wider than the normal 1.96 says.
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def _t95(dof: int) -> float:
    if dof < 1:
        return float("nan")
    return _T95[dof - 1] if dof <= len(_T95) else 1.96


def summarize(df: pd.DataFrame, x: str, y: str, hue: Optional[str] = None) -> pd.DataFrame:
    """Mean of ``y`` over the rows (seeds) of each ``x`` (and ``hue``), with
    the 95 % confidence interval of the mean (Student t): columns x, [hue,]
    mean, lo, hi, n. ``x`` keeps the order of first appearance."""
    by = [hue, x] if hue else [x]
    g = df.groupby(by, sort=False, observed=True)[y]
    out = g.agg(["mean", "std", "count"]).reset_index()
    half = [
        _t95(int(n) - 1) * s / math.sqrt(n) if n > 1 else 0.0
        for s, n in zip(out["std"].fillna(0.0), out["count"])
    ]
    out["lo"] = out["mean"] - np.asarray(half)
    out["hi"] = out["mean"] + np.asarray(half)
    return out.rename(columns={"count": "n"}).drop(columns=["std"])


def sweep(
    df: pd.DataFrame,
    x: str,
    y: str,
    hue: Optional[str] = None,
    ax: Any = None,
    band: bool = True,
    **kwargs: Any,
):
    """Plots ``y`` against ``x`` from a sweep's DataFrame: one line per value
    of ``hue``, the mean over seeds with a shaded 95 % confidence band.
    Numeric ``x`` is placed on a numeric axis, anything else by position.
    Returns the matplotlib Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    s = summarize(df, x, y, hue)
    numeric = pd.api.types.is_numeric_dtype(df[x])
    groups = s.groupby(hue, sort=False, observed=True) if hue else [(None, s)]
    labels = list(dict.fromkeys(s[x]))
    for name, g in groups:
        xs = g[x].to_numpy(dtype=float) if numeric else np.array([labels.index(v) for v in g[x]])
        line, = ax.plot(xs, g["mean"], marker="o", label=None if name is None else f"{hue}={name}", **kwargs)
        if band:
            ax.fill_between(xs, g["lo"], g["hi"], alpha=0.2, color=line.get_color())
    if not numeric:
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels([str(v) for v in labels])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if hue:
        ax.legend()
    return ax


def result(r: Any, max_lines: int = 6, figsize=(8, 8)):
    """A run's goodput (Mb/s) and congestion window per flow and queue
    length per link over time, in three stacked panels (the panels of
    ``goodput.svg``); past ``max_lines`` flows, the mean per protocol.
    Returns the Figure."""
    import matplotlib.pyplot as plt

    flows = r.series("flows")
    links = r.series("links")
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=figsize)
    per_flow = flows["flow"].nunique() <= max_lines
    key = "flow" if per_flow else "protocol"
    for panel, col, scale, label in (
        (axes[0], "goodput_bps", 1e-6, "goodput (Mb/s)"),
        (axes[1], "cwnd", 1.0, "cwnd (segments)"),
    ):
        data = flows[["time_s", key, col, "name"]].copy()
        data[col] = data[col].astype("float64") * scale
        for k, g in data.groupby(key, sort=False, observed=True):
            g = g.groupby("time_s", sort=True)[col].mean() if not per_flow else g.set_index("time_s")[col]
            name = f"{data.loc[data[key] == k, 'name'].iloc[0]} #{k}" if per_flow else str(k)
            if g.notna().any():
                panel.plot(g.index.astype("float64"), g.to_numpy(dtype=float, na_value=np.nan), label=name)
        panel.set_ylabel(label)
    for name, g in links.groupby("name", sort=False, observed=True):
        axes[2].plot(g["time_s"].astype("float64"), g["queue_pkts"].astype("float64"), label=str(name))
    axes[2].set_ylabel("queue (packets)")
    axes[2].set_xlabel("time (s)")
    for a in axes:
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize="small", loc="upper right")
    fig.suptitle(str(r.summary.get("scenario", "")))
    fig.tight_layout()
    return fig

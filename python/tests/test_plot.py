"""satcc.plot: the numbers behind the bands, and that the figures draw."""

import math

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

import satcc


def test_summarize_mean_and_t_interval():
    df = pd.DataFrame({"x": [1, 1, 1, 2, 2], "y": [1.0, 2.0, 6.0, 5.0, 5.0], "h": ["a"] * 5})
    s = satcc.plot.summarize(df, "x", "y", hue="h")
    one = s[s["x"] == 1].iloc[0]
    sd = pd.Series([1.0, 2.0, 6.0]).std()
    assert one["mean"] == pytest.approx(3.0)
    assert one["hi"] - one["mean"] == pytest.approx(4.303 * sd / math.sqrt(3))
    two = s[s["x"] == 2].iloc[0]
    assert two["lo"] == two["hi"] == 5.0 and two["n"] == 2


def test_sweep_and_result_figures(quickstart):
    base = satcc.Scenario.load(quickstart).set("duration", "5s")
    df = satcc.sweep(base, vary={"flows.0.count": [1, 2], "topology.uplink.rate": ["5Mbps", "10Mbps"]},
                     seeds=2, store=None)
    ax = satcc.plot.sweep(df, x="flows.0.count", y="goodput_bps[newreno]", hue="topology.uplink.rate")
    assert len(ax.lines) == 2 and len(ax.collections) == 2
    assert list(ax.lines[0].get_xdata()) == [1.0, 2.0]
    ax = satcc.plot.sweep(df, x="topology.uplink.rate", y="jain")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["5Mbps", "10Mbps"]
    fig = satcc.run(base).plot()
    assert len(fig.axes) == 3
    assert len(fig.axes[0].lines) == 4 and len(fig.axes[2].lines) >= 2

"""satcc.run and satcc.Scenario, checked against the command line."""

import csv
import io
import json
import subprocess

import numpy as np
import pandas as pd
import pytest

import satcc


def short(path, seconds="10s"):
    return satcc.Scenario.load(path).set("duration", seconds)


def test_flows_table(quickstart):
    r = satcc.run(short(quickstart))
    flows = r.flows
    assert isinstance(flows, pd.DataFrame)
    assert list(flows["protocol"]) == ["newreno", "newreno", "sack", "sack"]
    assert (flows["goodput_bps"] > 0).all()
    assert flows["share"].sum() == pytest.approx(1.0)
    assert set(r.links["name"]) >= {"uplink", "downlink"}
    assert r.summary["duration_s"] == pytest.approx(10.0)


def test_summary_and_series_equal_the_cli(quickstart, cli, tmp_path):
    # The same scenario and seed through the CLI: summary.json byte for byte
    # (the Python text is what summary.json holds, less the final newline),
    # and the time series equal flows.csv / links.csv as the CSV rounds them.
    out = tmp_path / "out"
    subprocess.run(
        [cli, "run", str(quickstart), "--set", "duration=10s", "--seed", "3", "--out", str(out), "-q"],
        check=True, stdout=subprocess.DEVNULL,
    )
    r = satcc.run(short(quickstart), seed=3)
    on_disk = (out / "summary.json").read_text()
    assert json.loads(on_disk) == r.summary
    assert on_disk == r.summary_json + "\n"

    rows = list(csv.DictReader(io.StringIO((out / "flows.csv").read_text())))
    s = r.series("flows")
    assert len(rows) == len(s) == 4 * 10
    for row, (_, py) in zip(rows, s.iterrows()):
        assert float(row["time_s"]) == pytest.approx(py["time_s"], abs=5e-4)
        assert int(row["flow"]) == py["flow"]
        assert row["name"] == py["name"] and row["protocol"] == py["protocol"]
        assert float(row["goodput_bps"]) == pytest.approx(round(py["goodput_bps"]), abs=0.5)
        assert float(row["cwnd"]) == pytest.approx(py["cwnd"], abs=0.006)
        assert row["rate_bps"] == "" and pd.isna(py["rate_bps"])
    links = list(csv.DictReader(io.StringIO((out / "links.csv").read_text())))
    ls = r.series("links")
    assert len(links) == len(ls)
    assert [float(x["queue_pkts"]) for x in links] == list(ls["queue_pkts"].astype("float64"))


def test_series_columns_are_arrow(quickstart):
    s = satcc.run(short(quickstart, "5s")).series("flows")
    assert str(s["goodput_bps"].dtype) == "double[pyarrow]"
    assert s["protocol"].dtype == "category"
    # Goodput over the samples adds up to what was delivered (to within the
    # part of the run before the first sample boundary).
    r = satcc.run(short(quickstart, "5s"))
    s = r.series("flows")
    for fid, g in s.groupby("flow"):
        delivered = r.summary["flows"][fid]["delivered_bytes"] * 8
        assert g["goodput_bps"].astype("float64").sum() * 1.0 == pytest.approx(delivered, rel=0.02)


def test_seed_changes_the_run_and_default_is_the_files(quickstart):
    sc = short(quickstart).set("topology.uplink.error.per", 1e-2)
    a, b = satcc.run(sc, seed=1, series=False), satcc.run(sc, seed=2, series=False)
    assert a.summary["seed"] == 1 and b.summary["seed"] == 2
    assert a.summary["flows"] != b.summary["flows"]
    assert satcc.run(sc, series=False).summary == a.summary  # the file's seed is 1
    with pytest.raises(ValueError):
        a.series("flows")


def test_set_keys_are_the_clis(quickstart, cli):
    sc = short(quickstart).set("flows.0.count", 3).set("topology.uplink.rate", "4Mbps")
    assert sc.to_dict()["flows"][0]["count"] == 3
    got = satcc.run(sc, seed=2, series=False).summary
    out = subprocess.run(
        [cli, "run", str(quickstart), "--set", "duration=10s", "--set", "flows.0.count=3",
         "--set", "topology.uplink.rate=4Mbps", "--seed", "2", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    cli_summary = json.loads(out)
    cli_summary.pop("wall_s")
    assert got == cli_summary
    assert len(got["flows"]) == 5


def test_toml_and_dict_round_trip(quickstart):
    sc = short(quickstart)
    again = satcc.Scenario.from_toml(sc.to_toml())
    assert again == sc and again.key(4) == sc.key(4)
    d = satcc.Scenario.from_dict(sc.to_dict())
    assert d == sc
    assert sc.set("flows.0.count", 4) != sc
    assert sc.key(1) != sc.key(2)
    import pickle

    assert pickle.loads(pickle.dumps(sc)) == sc


@pytest.mark.parametrize(
    "key,value,field",
    [
        ("flows.0.count", -3, "flows[0].count"),
        ("flows.1.protocl", "sack", "flows[1].protocl"),
        ("topology.uplink.error.per", 2.0, "topology.uplink.error.per"),
        ("flows.7.count", 1, "flows.7"),
        ("duration", "ten seconds", "duration"),
    ],
)
def test_bad_values_raise_scenario_error(quickstart, key, value, field):
    sc = satcc.Scenario.load(quickstart)
    with pytest.raises(satcc.ScenarioError) as e:
        sc.set(key, value)
    assert e.value.field == field
    assert field in str(e.value)
    assert e.value.value is not None
    assert isinstance(e.value, ValueError)


def test_bad_files_raise_scenario_error(tmp_path, quickstart):
    with pytest.raises(satcc.ScenarioError, match="cannot read"):
        satcc.Scenario.load(tmp_path / "missing.toml")
    with pytest.raises(satcc.ScenarioError, match="not valid TOML"):
        satcc.Scenario.from_toml("duration = ")
    with pytest.raises(satcc.ScenarioError) as e:
        satcc.Scenario.from_dict({"duration": "1s"})
    assert "topology" in str(e.value)
    # What only building the network finds: an unknown link to record.
    sc = satcc.Scenario.load(quickstart).set("record.links", ["nowhere"])
    with pytest.raises(satcc.ScenarioError) as e:
        satcc.run(sc)
    assert "record.links" in e.value.field
    with pytest.raises(TypeError):
        satcc.Scenario.load(quickstart).set("duration", None)
    with pytest.raises(TypeError):
        satcc.Scenario.load(quickstart).set("duration", object())


def test_runs_release_the_gil(root):
    # While a run goes on in another thread, this thread keeps running
    # Python: it could not if the run held the GIL (Rust code never hands
    # it over by itself). Counted, not timed, so a busy machine cannot
    # fail it; then threads give the same results as a loop.
    import threading
    from concurrent.futures import ThreadPoolExecutor

    sc = satcc.Scenario.load(root / "scenarios" / "bench.toml").set("duration", "60s")
    started = threading.Event()
    ticks_during = 0

    def work():
        started.set()
        satcc.run(sc, series=False)

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    while t.is_alive():
        ticks_during += 1
    t.join()
    assert ticks_during > 1000

    q = satcc.Scenario.load(root / "scenarios" / "quickstart.toml").set("duration", "10s")
    with ThreadPoolExecutor(2) as ex:
        par = list(ex.map(lambda s: satcc.run(q, seed=s, series=False).summary, [1, 2, 3]))
    assert par == [satcc.run(q, seed=s, series=False).summary for s in [1, 2, 3]]
    assert np.isfinite(par[0]["jain"])

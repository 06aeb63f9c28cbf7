"""satcc.sweep over executors, the results store and its resumption, and
the store shared with `satcc sweep --store`."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ProcessPoolExecutor

import pandas as pd
import pytest

import satcc

VARY = {"flows.0.count": [1, 2], "topology.uplink.error.per": [1e-3, 1e-2]}


@pytest.fixture()
def base(quickstart):
    return satcc.Scenario.load(quickstart).set("duration", "8s")


def test_tidy_frame(base):
    df = satcc.sweep(base, vary=VARY, seeds=2, store=None)
    assert len(df) == 4 * 2
    assert list(df.columns[:3]) == ["flows.0.count", "topology.uplink.error.per", "seed"]
    assert list(df["seed"]) == [1, 2] * 4
    assert list(df["flows.0.count"]) == [1] * 4 + [2] * 4
    assert {"goodput_bps", "jain", "goodput_bps[sack]", "utilization[uplink]"} <= set(df.columns)
    assert df.attrs == {"computed": 8, "from_store": 0}
    # A row is the run it says: the same as satcc.run with those values.
    row = df.iloc[5]
    one = satcc.run(
        base.set("flows.0.count", int(row["flows.0.count"])).set(
            "topology.uplink.error.per", row["topology.uplink.error.per"]),
        seed=int(row["seed"]), series=False,
    ).summary
    assert row["jain"] == one["jain"]
    assert row["goodput_bps[newreno]"] == one["classes"][0]["goodput_bps"]
    # More flows of newreno: their class has more flows.
    assert (df.loc[df["flows.0.count"] == 2, "flows[newreno]"] == 2).all()
    whole = satcc.sweep(base, vary=VARY, seeds=2, store=None, with_summary=True)
    assert whole["summary"].iloc[5] == one
    pd.testing.assert_frame_equal(whole.drop(columns="summary"), df)


def test_joint_keys_and_bad_vary(base):
    df = satcc.sweep(base, vary={"flows.0.count+flows.1.count": [1, (2, 3)]}, seeds=1, store=None)
    assert list(df["flows.0.count"]) == [1, 2] and list(df["flows.1.count"]) == [1, 3]
    assert list(df["flows[sack]"]) == [1, 3]
    with pytest.raises(satcc.ScenarioError) as e:
        satcc.sweep(base, vary={"flows.0.count": [1, -1]}, seeds=1, store=None)
    assert e.value.field == "flows[0].count"
    with pytest.raises(ValueError, match="seed"):
        satcc.sweep(base, vary={"seed": [1, 2]}, store=None)


def test_store_resumes_with_only_the_missing_runs(base, tmp_path):
    store = tmp_path / "store"
    first = satcc.sweep(base, vary=VARY, seeds=2, store=store)
    assert first.attrs["computed"] == 8
    files = sorted(p for p in os.listdir(store) if p.endswith(".json"))
    assert len(files) == 8 and not [p for p in os.listdir(store) if p.startswith(".")]
    again = satcc.sweep(base, vary=VARY, seeds=2, store=store)
    assert again.attrs == {"computed": 0, "from_store": 8}
    pd.testing.assert_frame_equal(first, again, check_like=False)
    for f in files[:3]:
        os.remove(store / f)
    third = satcc.sweep(base, vary=VARY, seeds=2, store=store)
    assert third.attrs == {"computed": 3, "from_store": 5}
    pd.testing.assert_frame_equal(first, third)
    # A different scenario content is a different run.
    other = satcc.sweep(base.set("flows.1.count", 1), vary=VARY, seeds=2, store=store)
    assert other.attrs["computed"] == 8
    loaded = satcc.load(store)
    assert len(loaded) == 16
    assert set(loaded["key"]) == set(first["key"]) | set(other["key"])
    assert (loaded["satcc_version"] == satcc.__version__).all()


def test_killed_sweep_resumes(root, tmp_path):
    # A sweep in another process, one run at a time (runs of 0.1-0.5 s,
    # the store polled every 20 ms), killed once half its runs are stored;
    # run again, it computes only what is missing.
    store = tmp_path / "store"
    script = tmp_path / "sweep.py"
    script.write_text(textwrap.dedent(f"""
        import satcc
        sc = satcc.Scenario.load({str(root / 'scenarios' / 'bench.toml')!r})
        df = satcc.sweep(sc, vary={{"flows.0.count": [16, 32, 48, 64]}}, seeds=2, store={str(store)!r}, jobs=1)
        print(df.attrs["computed"])
    """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        if os.path.isdir(store) and len([f for f in os.listdir(store) if f.endswith(".json") and not f.startswith(".")]) >= 4:
            break
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.wait()
    done = [f for f in os.listdir(store) if f.endswith(".json") and not f.startswith(".")]
    assert 4 <= len(done) < 8, "the sweep finished before it could be killed: make the runs longer"
    # Every file there is a whole record.
    for f in done:
        json.loads((store / f).read_text())
    out = subprocess.run([sys.executable, str(script)], check=True, capture_output=True, text=True)
    assert int(out.stdout.strip()) == 8 - len(done)


def test_process_pool_and_dask_give_the_same_frame(base):
    ref = satcc.sweep(base, vary=VARY, seeds=2, store=None)
    with ProcessPoolExecutor(2) as ex:
        pooled = satcc.sweep(base, vary=VARY, seeds=2, executor=ex, store=None)
    pd.testing.assert_frame_equal(ref, pooled)

    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dasked = satcc.sweep(base, vary=VARY, seeds=2, executor=client.get_executor(), store=None)
    pd.testing.assert_frame_equal(ref, dasked)


class PollingExecutor:
    """An executor that is not a concurrent.futures one (as submitit's):
    submit() returns jobs with done() and result()."""

    class Job:
        def __init__(self, fn, args):
            self.value = fn(*args)

        def done(self):
            return True

        def result(self):
            return self.value

    def submit(self, fn, *args):
        return self.Job(fn, args)


def test_duck_typed_executor(base):
    ref = satcc.sweep(base, vary=VARY, seeds=1, store=None)
    pd.testing.assert_frame_equal(ref, satcc.sweep(base, vary=VARY, seeds=1, executor=PollingExecutor(), store=None))


def test_cli_store_is_the_same_store(quickstart, cli, tmp_path):
    # The CLI fills a store; Python finds every run there, and the reverse.
    a = tmp_path / "a"
    subprocess.run(
        [cli, "sweep", str(quickstart), "--set", "duration=8s", "--vary", "flows.0.count=1,2",
         "--vary", "topology.uplink.error.per=1e-3,1e-2", "--seeds", "2", "--store", str(a)],
        check=True, capture_output=True,
    )
    base = satcc.Scenario.load(quickstart).set("duration", "8s")
    df = satcc.sweep(base, vary=VARY, seeds=2, store=a)
    assert df.attrs == {"computed": 0, "from_store": 8}
    loaded = satcc.load(a)
    assert len(loaded) == 8
    assert sorted(loaded["flows.0.count"]) == [1] * 4 + [2] * 4
    fresh = satcc.sweep(base, vary=VARY, seeds=2, store=None)
    pd.testing.assert_frame_equal(df, fresh)

    b = tmp_path / "b"
    satcc.sweep(base, vary=VARY, seeds=2, store=b)
    r = subprocess.run(
        [cli, "sweep", str(quickstart), "--set", "duration=8s", "--vary", "flows.0.count=1,2",
         "--vary", "topology.uplink.error.per=1e-3,1e-2", "--seeds", "2", "--store", str(b)],
        check=True, capture_output=True, text=True,
    )
    assert "0 run(s) computed, 8 taken from the store" in r.stderr


def test_joint_keys_valid_only_together(base):
    """RED thresholds that move past each other: set one by one, the
    scenario is invalid half way (set refuses it, naming the field); as
    one "a+b" key of a sweep, or with set_many, they are applied together
    and checked once, as `satcc sweep --vary a+b=x:y` does."""
    red = base.set("topology.uplink.queue", {"kind": "red", "limit": 300, "min_th": 5, "max_th": 15})
    with pytest.raises(satcc.ScenarioError, match="max_th"):
        red.set("topology.uplink.queue.min_th", 40)
    key = "topology.uplink.queue.min_th+topology.uplink.queue.max_th"
    df = satcc.sweep(red, vary={key: [(40, 120), (5, 15)]}, seeds=1, store=None, with_summary=True)
    assert list(df["topology.uplink.queue.min_th"]) == [40, 5]
    both = red.set_many([("topology.uplink.queue.min_th", 40), ("topology.uplink.queue.max_th", 120)])
    assert both.to_dict()["topology"]["uplink"]["queue"]["max_th"] == 120
    assert df["summary"].iloc[0] == satcc.run(both, seed=1, series=False).summary
    # The same changes as two-element lists (what json.load gives back) and
    # as a dict; anything else that is not a pair is refused by name.
    as_lists = red.set_many([["topology.uplink.queue.min_th", 40], ["topology.uplink.queue.max_th", 120]])
    as_dict = red.set_many({"topology.uplink.queue.min_th": 40, "topology.uplink.queue.max_th": 120})
    assert as_lists.to_dict() == both.to_dict() == as_dict.to_dict()
    with pytest.raises(TypeError, match="item 1 is 'ab'"):
        red.set_many([("topology.uplink.queue.min_th", 40), "ab"])

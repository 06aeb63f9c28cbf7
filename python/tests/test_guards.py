"""The CLI's guards, in Python too (issue 33): a run or a sweep that
cannot fit is refused before it starts, with the field to change, instead
of aborting the interpreter or growing without bound."""

import subprocess
import sys
import textwrap

import pytest

import satcc


def test_run_refuses_a_series_that_cannot_fit(quickstart):
    sc = satcc.Scenario.load(quickstart).set("record.interval", "100ns")
    with pytest.raises(satcc.ScenarioError) as e:
        satcc.run(sc, max_memory="1GB")
    assert e.value.field == "record.interval"
    assert "over the limit of" in str(e.value) and "max_memory" in str(e.value)
    # Without the series the same scenario is small and runs.
    r = satcc.run(sc.set("duration", "1s"), series=False, max_memory="1GB")
    assert r.summary["duration_s"] > 0


def test_run_with_the_default_limit_does_not_abort_the_interpreter(quickstart):
    # In a child: before the guard this aborted the process (memory
    # allocation of 25.6 GB failed) or, here, ran past a 120 s timeout
    # allocating, taking the interpreter with it.
    code = textwrap.dedent(f"""
        import satcc
        sc = satcc.Scenario.load({str(quickstart)!r}).set("record.interval", "100ns")
        try:
            satcc.run(sc)
        except satcc.ScenarioError as e:
            print("refused", e.field)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "refused record.interval" in p.stdout


def test_sweep_refuses_too_many_runs_at_once(quickstart, tmp_path):
    with pytest.raises(ValueError, match=r"seeds: 10000000: 2 point\(s\) x 10000000 seeds"):
        satcc.sweep(quickstart, vary={"flows.0.count": [1, 2]}, seeds=10**7, store=None)
    with pytest.raises(ValueError, match="over the limit of 1000000"):
        satcc.sweep(quickstart, vary={"flows.0.count": [1, 2]}, seeds=range(600_000), store=None)
    with pytest.raises(ValueError, match="seeds: 0"):
        satcc.sweep(quickstart, vary={"flows.0.count": [1, 2]}, seeds=0, store=None)


def test_sweep_refuses_runs_that_cannot_fit_together(quickstart):
    sc = satcc.Scenario.load(quickstart).set("duration", "2s")
    # Each run alone is small; the memory guard counts the runs at once.
    with pytest.raises(satcc.ScenarioError, match=r"4 runs at once"):
        satcc.sweep(sc, vary={"flows.0.count": [1, 2]}, seeds=2, store=None,
                    jobs=4, max_memory="100KB")
    df = satcc.sweep(sc, vary={"flows.0.count": [1, 2]}, seeds=2, store=None, jobs=2)
    assert len(df) == 4

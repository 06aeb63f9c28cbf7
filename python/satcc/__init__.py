"""satcc: congestion control on satellite links, from Python.

    >>> import satcc
    >>> r = satcc.run("scenarios/quickstart.toml")
    >>> r.flows                    # per-flow results (pandas)
    >>> r.series("flows")          # goodput, cwnd, RTT over time
    >>> df = satcc.sweep("scenarios/quickstart.toml",
    ...                  vary={"flows.0.count": [1, 4]}, seeds=3)
    >>> satcc.plot.sweep(df, x="flows.0.count", y="goodput_bps[newreno]")

See docs/python.md.
"""

from . import plot
from ._errors import ScenarioError
from ._result import Result, run
from ._satcc import STORE_FORMAT, VERSION
from ._scenario import Scenario
from ._sweep import load, metrics, sweep

__version__ = VERSION

__all__ = [
    "Result",
    "STORE_FORMAT",
    "Scenario",
    "ScenarioError",
    "load",
    "metrics",
    "plot",
    "run",
    "sweep",
    "__version__",
]

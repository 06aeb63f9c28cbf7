"""`satcc.run` and its `Result`."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Union

import numpy as np
import pandas as pd
import pyarrow as pa

from . import _satcc
from ._scenario import PathLike, Scenario, as_scenario


def _arrow(buf: bytes, dtype: Any) -> pd.arrays.ArrowExtensionArray:
    """A column handed over from Rust as one buffer: viewed by numpy,
    wrapped by Arrow (no copy for the values; NaN, the simulator's "does not
    apply", becomes null so that ``isna()`` sees it)."""
    arr = np.frombuffer(buf, dtype=dtype)
    return pd.arrays.ArrowExtensionArray(pa.array(arr, from_pandas=True))


def _table(cols: Dict[str, Any], index: str, labels: Dict[str, str]) -> pd.DataFrame:
    """A long-form table (one row per sample and flow/link) from columns."""
    codes = np.frombuffer(cols[index], dtype=np.uint32).astype(np.int32)
    out: Dict[str, Any] = {"time_s": _arrow(cols["time_s"], np.float64)}
    out[index] = pd.array(codes, dtype="int32")
    for col, names in labels.items():
        # The label of each row: a categorical whose codes come from the
        # row's flow/link index through a per-flow lookup table (flows of
        # one `count = N` line share a label).
        values = list(cols[names])
        cats = list(dict.fromkeys(values))
        lut = np.array([cats.index(v) for v in values], dtype=np.int32)
        out[col] = pd.Categorical.from_codes(lut[codes], categories=cats)
    skip = {"time_s", index, *labels.values()}
    for name, buf in cols.items():
        if name not in skip:
            out[name] = _arrow(buf, np.float64)
    return pd.DataFrame(out)


class Result:
    """What a run produced.

    Attributes:
        summary: the summary, the same JSON object as ``summary.json``.
        summary_json: its text, byte for byte ``summary.json`` less the
            final newline.
        wall_s: the wall-clock seconds the run took.
    """

    def __init__(self, summary_json: str, wall_s: float, series: Optional[dict]) -> None:
        self.summary: Dict[str, Any] = json.loads(summary_json)
        self.summary_json = summary_json
        self.wall_s = wall_s
        self._series = series

    @property
    def flows(self) -> pd.DataFrame:
        """Per-flow results, one row per flow (nested fields as ``a.b``)."""
        return pd.json_normalize(self.summary["flows"])

    @property
    def links(self) -> pd.DataFrame:
        """Per-link results, one row per monitored link."""
        return pd.DataFrame(self.summary["links"])

    @property
    def classes(self) -> pd.DataFrame:
        """Per-protocol totals (goodput, share, Jain's index)."""
        return pd.DataFrame(self.summary["classes"])

    def series(self, kind: str = "flows") -> pd.DataFrame:
        """Time series sampled every ``record.interval``, long form, rows by
        time then flow (link), the columns of flows.csv / links.csv:

        - ``"flows"``: time_s, flow, name, protocol, goodput_bps, cwnd,
          rtt_s, rate_bps, x_recv_bps, p, feedback (null where a column
          does not apply to the protocol);
        - ``"links"``: time_s, link, name, queue_pkts, utilization, drops
          and drops by reason.

        Numeric columns are Arrow-backed (``float64[pyarrow]``), handed
        over from the simulator one buffer per column.
        """
        if self._series is None:
            raise ValueError("this result has no time series (run with series=True)")
        if kind == "flows":
            return _table(self._series["flows"], "flow", {"name": "names", "protocol": "protocols"})
        if kind == "links":
            return _table(self._series["links"], "link", {"name": "names"})
        raise ValueError(f"series kind {kind!r}: expected 'flows' or 'links'")

    def plot(self, **kwargs: Any):
        """Goodput, congestion window and queue length over time, stacked
        (matplotlib); returns the Figure. See :func:`satcc.plot.result`."""
        from .plot import result

        return result(self, **kwargs)

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<satcc.Result {s.get('scenario')!r} seed={s.get('seed')} "
            f"{len(s.get('flows', []))} flows, {s.get('duration_s')} s simulated>"
        )


def run(
    scenario: Union[Scenario, PathLike],
    seed: Optional[int] = None,
    *,
    series: bool = True,
    max_memory: Optional[Union[int, str]] = None,
) -> Result:
    """Runs a scenario (a :class:`Scenario` or a path) to its end.

    ``seed`` overrides the scenario's own seed. The simulation runs without
    the GIL, so runs on several threads go on in parallel. With ``series``
    (the default) the result has its time series and :meth:`Result.plot`.
    Raises :class:`satcc.ScenarioError` for a scenario that cannot run,
    among them one whose estimated memory exceeds ``max_memory`` (bytes,
    or a size such as ``"4GB"``; default 80 % of the available memory, as
    ``satcc run --max-memory``), naming the field that grows it most.
    """
    sc = as_scenario(scenario)
    summary, wall, cols = _satcc.run(sc._tree, seed, series, max_memory)
    return Result(summary, wall, cols)

"""`satcc.sweep` and `satcc.load`: parameter sweeps over any executor, and
the results store they share with ``satcc sweep --store DIR``."""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import json
import os
import sys
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from . import _satcc
from ._scenario import PathLike, Scenario, as_scenario


# Most runs a sweep makes (points times seeds), as ``satcc sweep``.
MAX_RUNS = 1_000_000


def _run_point(toml_text: str, name: str, seed: int, max_memory: Any = None) -> str:
    """One run, in whatever worker the executor chose: the scenario goes
    as TOML text (picklable), the summary comes back as JSON text."""
    tree = _satcc.Tree.from_toml(toml_text, name)
    summary, _wall, _ = _satcc.run(tree, seed, False, max_memory)
    return summary


def metrics(summary: Mapping[str, Any]) -> Dict[str, Any]:
    """The summary's metrics as flat columns: run-wide numbers (``jain``,
    ``goodput_bps`` summed over flows, ``F``/``E``/``FC``, packet totals),
    per protocol ``goodput_bps[sack]``, ``share[sack]``, ``jain[sack]``,
    ``flows[sack]``, and per link ``utilization[link]``, ``loss[link]``,
    ``mean_queue_pkts[link]``, ``drops[link]``."""
    m: Dict[str, Any] = {
        "duration_s": summary.get("duration_s"),
        "events": summary.get("events"),
        "goodput_bps": sum(f["goodput_bps"] for f in summary.get("flows", [])),
        "jain": summary.get("jain"),
    }
    if "normalized_tcp_throughput" in summary:
        m["normalized_tcp_throughput"] = summary["normalized_tcp_throughput"]
    fr = summary.get("friendliness")
    if fr:
        for k in ("f", "e", "fc"):
            if fr.get(k) is not None:
                m[k.upper()] = fr[k]
    for c in summary.get("classes", []):
        p = c["protocol"]
        for k in ("goodput_bps", "share", "jain", "flows"):
            m[f"{k}[{p}]"] = c[k]
    for link in summary.get("links", []):
        n = link["name"]
        for k in ("utilization", "loss", "mean_queue_pkts", "drops"):
            m[f"{k}[{n}]"] = link[k]
    for k, v in summary.get("packets", {}).items():
        if isinstance(v, (int, float)):
            m[f"packets.{k}"] = v
    return m


Values = Sequence[Any]


def _grid(vary: Mapping[Union[str, Tuple[str, ...]], Values]) -> Tuple[List[str], List[List[Tuple[str, Any]]]]:
    """The points of the grid, in the command line's order (the first key
    varies slowest). A key ``"a+b"`` (or a tuple of keys) varies several
    fields together: each value is one value for all, or a tuple with one
    per key."""
    columns: List[str] = []
    axes: List[List[List[Tuple[str, Any]]]] = []
    for key, values in vary.items():
        keys = list(key) if isinstance(key, tuple) else [k.strip() for k in key.split("+")]
        for k in keys:
            if k == "seed":
                raise ValueError("vary: seed cannot be varied; seeds=N runs seeds 1..N at every point")
            if k in columns:
                raise ValueError(f"vary: {k} is varied twice")
            columns.append(k)
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise ValueError(f"vary: {key!r}: expected a list of values")
        axis = []
        for v in values:
            if len(keys) > 1 and isinstance(v, tuple):
                if len(v) != len(keys):
                    raise ValueError(f"vary: {key!r}={v!r}: {len(v)} values for {len(keys)} keys")
                axis.append(list(zip(keys, v)))
            else:
                axis.append([(k, v) for k in keys])
        if not axis:
            raise ValueError(f"vary: {key!r}: no values")
        axes.append(axis)
    points = [sum(p, []) for p in itertools.product(*axes)]
    return columns, points


def _wait(futures: Dict[Any, int]):
    """Yields (future, index) as they finish: through concurrent.futures for
    its own futures (threads, processes, Dask's client.get_executor()),
    else by polling ``done()`` (submitit's jobs, other duck-typed ones)."""
    if all(isinstance(f, cf.Future) for f in futures):
        for f in cf.as_completed(futures):
            yield f, futures[f]
        return
    pending = dict(futures)
    while pending:
        finished = [f for f in pending if f.done()]
        for f in finished:
            yield f, pending.pop(f)
        if not finished:
            time.sleep(0.5)


def sweep(
    scenario: Union[Scenario, PathLike],
    vary: Mapping[Union[str, Tuple[str, ...]], Values],
    seeds: Union[int, Iterable[int]] = 10,
    executor: Optional[Any] = None,
    store: Optional[PathLike] = "results/",
    *,
    jobs: Optional[int] = None,
    progress: bool = False,
    with_summary: bool = False,
    max_memory: Optional[Union[int, str]] = None,
) -> pd.DataFrame:
    """Runs ``scenario`` at every point of the grid ``vary`` with every seed
    and returns a tidy DataFrame: one row per point and seed, the varied
    keys as columns (with the values as given), ``seed``, the summary
    metrics (:func:`metrics`) and the run's store ``key``.

    Args:
        scenario: a :class:`Scenario` or a path to a scenario file.
        vary: dotted key -> values, e.g. ``{"flows.0.count": [1, 8]}``;
            several keys make a grid. ``"a+b"`` (or ``("a", "b")``) varies
            two fields together.
        seeds: N for seeds 1..N (as ``satcc sweep --seeds N``), or the seeds.
        executor: any ``concurrent.futures.Executor`` (a process pool,
            ``dask.distributed.Client.get_executor()``, ...) or an object
            with ``submit(fn, *args)`` returning jobs with ``done()`` and
            ``result()`` (submitit). Default: threads on all local cores
            (the simulator releases the GIL).
        store: a results directory (the format of ``satcc sweep --store``):
            runs found there are not run again, new runs are written as they
            finish, so an interrupted sweep resumes. None: keep nothing.
        jobs: threads of the default executor (default: all cores).
        progress: print a line per finished run on stderr.
        with_summary: add a ``summary`` column holding each run's whole
            summary (a dict, as :attr:`Result.summary`), for what the
            metric columns do not carry (per-flow numbers).
        max_memory: refuse a sweep whose runs at once (``jobs`` of them
            with the default executor) are estimated to need more memory
            than this (bytes, or a size such as ``"4GB"``; default 80 % of
            the available memory), as ``satcc sweep --max-memory``.

    At most 1 000 000 runs (points times seeds), as ``satcc sweep``: more
    raise ``ValueError`` before anything runs. Without ``with_summary``,
    each run is reduced to its metric row as it finishes, so memory holds
    a row per run, not the summaries.

    ``df.attrs["computed"]`` and ``df.attrs["from_store"]`` count the runs
    simulated and the runs taken from the store.
    """
    base = as_scenario(scenario)
    columns, points = _grid(vary)
    # Before any list of runs is made: seeds=10**7 used to start silently
    # and grow to GBs (issue 33).
    if isinstance(seeds, bool) or (isinstance(seeds, int) and seeds < 1):
        raise ValueError(f"seeds: {seeds!r}: need at least one seed (seeds=N runs seeds 1..N)")
    if isinstance(seeds, int) and len(points) * seeds > MAX_RUNS:
        raise ValueError(
            f"seeds: {seeds}: {len(points)} point(s) x {seeds} seeds = "
            f"{len(points) * seeds} runs, over the limit of {MAX_RUNS}")
    seed_list = list(range(1, seeds + 1)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seed_list:
        raise ValueError("seeds: need at least one seed")
    if len(points) * len(seed_list) > MAX_RUNS:
        raise ValueError(
            f"seeds: {len(seed_list)} seeds x {len(points)} point(s) = "
            f"{len(points) * len(seed_list)} runs, over the limit of {MAX_RUNS}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs: {jobs!r}: need at least one worker")
    store_dir = os.fspath(store) if store is not None else None
    workers = jobs or os.cpu_count() or 1

    # Every scenario is built and checked before the first run, so a bad
    # value fails at once, not after hours of runs.
    runs: List[Tuple[List[Tuple[str, Any]], Scenario, int]] = []
    for p in points:
        # A point's keys are set together and checked once: "a+b" keys may
        # be valid only together (RED's thresholds moving past each other).
        sc = base.set_many(p)
        # Runs at once must fit in memory together; another executor's
        # workers are its own business (one run each, checked per run).
        _satcc.check_fits(sc._tree, False, workers if executor is None else 1, max_memory)
        for seed in seed_list:
            runs.append((p, sc, seed))

    # Each run's row, made as soon as its summary is known: the summaries
    # themselves are not kept (unless with_summary).
    rows: List[Optional[Dict[str, Any]]] = [None] * len(runs)
    keys = [sc.key(seed) for _, sc, seed in runs]

    def row_of(i: int, text: str) -> Dict[str, Any]:
        p, _sc, seed = runs[i]
        summary = json.loads(text)
        row: Dict[str, Any] = {k: v for k, v in p}
        row["seed"] = seed
        row.update(metrics(summary))
        row["key"] = keys[i]
        if with_summary:
            row["summary"] = summary
        return row

    if store_dir is not None:
        for i, key in enumerate(keys):
            text = _satcc.store_get(store_dir, key)
            if text is not None:
                rows[i] = row_of(i, text)
    todo = [i for i, r in enumerate(rows) if r is None]

    own = None
    if todo and executor is None:
        own = cf.ThreadPoolExecutor(max_workers=workers)
    ex = executor if executor is not None else own
    try:
        futures = {}
        for i in todo:
            _, sc, seed = runs[i]
            futures[ex.submit(_run_point, sc.to_toml(), sc.name, seed, max_memory)] = i
        done = 0
        try:
            for f, i in _wait(futures):
                p, sc, seed = runs[i]
                text = f.result()
                if store_dir is not None:
                    _satcc.store_put(store_dir, sc._tree, seed, p, text)
                rows[i] = row_of(i, text)
                del text
                done += 1
                if progress:
                    label = " ".join(f"{k}={v}" for k, v in p)
                    print(f"[{done}/{len(todo)}] {label} seed {seed}", file=sys.stderr)
        except BaseException:
            # A failed run (or Ctrl-C): what finished is stored; the rest
            # is not started.
            for f in futures:
                cancel = getattr(f, "cancel", None)
                if cancel is not None:
                    cancel()
            raise
    finally:
        if own is not None:
            own.shutdown(wait=True, cancel_futures=True)

    df = pd.DataFrame(rows)
    df.attrs["computed"] = len(todo)
    df.attrs["from_store"] = len(runs) - len(todo)
    return df


def load(store: PathLike) -> pd.DataFrame:
    """Every run in a results store (written by :func:`sweep` or by
    ``satcc sweep --store DIR``) as a DataFrame: the varied keys the run
    was recorded with, ``seed``, the metrics of :func:`metrics`, ``key``,
    ``scenario`` (its name) and ``satcc_version``; sorted by varied keys
    and seed."""
    d = os.fspath(store)
    rows = []
    params: List[str] = []
    for name in sorted(os.listdir(d)):
        if not name.endswith(".json") or name.startswith("."):
            continue
        with open(os.path.join(d, name), encoding="utf-8") as fh:
            try:
                rec = json.load(fh)
            except json.JSONDecodeError:
                continue
        if not isinstance(rec, dict) or "summary" not in rec:
            continue
        row: Dict[str, Any] = dict(rec.get("params", {}))
        for k in row:
            if k not in params:
                params.append(k)
        row["seed"] = rec.get("seed")
        row.update(metrics(rec["summary"]))
        row["key"] = rec.get("key")
        row["scenario"] = rec["summary"].get("scenario")
        row["satcc_version"] = rec.get("satcc_version")
        rows.append(row)
    df = pd.DataFrame(rows)
    if rows:
        by = [c for c in params if c in df.columns] + ["seed"]
        try:
            df = df.sort_values(by, kind="stable").reset_index(drop=True)
        except TypeError:
            pass  # mixed types in a column: leave the file order
    return df

"""The gates on a measured quantity against a registered level, on the rows a claim rests on:
``cpu_bound`` (a CPU busy share, its median), ``at_least`` and ``at_most`` (every row)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from .facts import GateResult, RunFacts


def cpu_bound(_facts: RunFacts, tables: Mapping[str, pd.DataFrame], params) -> GateResult:
    name = "cpu_bound"
    table, column, level = params["table"], params["column"], float(params["min_pct"])
    frame = tables.get(table)
    if frame is None or column not in frame:
        return GateResult(name, False, f"no measured busy share ({table}.{column}) in the run")
    if params.get("rows"):  # "column=value": the rows the claim rests on
        key, _, value = str(params["rows"]).partition("=")
        if key not in frame:
            return GateResult(name, False, f"no column {key} in {table} to select {params['rows']}")
        frame = frame[frame[key].astype(str) == value]
    shares = pd.to_numeric(frame[column], errors="coerce").dropna()
    shares = shares[shares.map(math.isfinite)]
    if shares.empty:
        return GateResult(name, False, f"no measured busy share ({table}.{column}) in the run")
    median = float(shares.median())
    return GateResult(name, median >= level,
                      f"busy {shares.min():.1f}-{shares.max():.1f} %, median {median:.1f} % "
                      f"against at least {level:g} % registered ({len(shares)} points)")


def select_rows(frame: pd.DataFrame, params) -> pd.DataFrame | str:
    """The rows ``params['rows']`` ("column=value[,column=value]") selects, or why not; a value may
    name alternatives, ``protocol=tipc|tcp-cubic`` (the rows of either: S3's collapse rests on both
    protocols' rows at its point, not on SCTP's)."""
    for clause in filter(None, str(params.get("rows") or "").split(",")):
        key, _, value = clause.partition("=")
        if key not in frame:
            return f"no column {key} to select {params['rows']}"
        column, values = frame[key], value.split("|")
        if pd.api.types.is_numeric_dtype(column):  # 1024 selects 1024.0 of a column with gaps
            try:
                frame = frame[column.isin([float(v) for v in values])]
                continue
            except ValueError:
                pass
        frame = frame[column.astype(str).isin(values)]
    return frame


def _figure(value: float) -> str:
    """Three significant digits, a large figure in whole units (3713 Mbit/s, not 3.71e+03)."""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def bounded(name: str, below: bool):
    """The gate ``name``: a measured quantity at least (``below`` False: ``min``) or at most
    (``below`` True: ``max``) a registered level on every row the claim rests on. ``per``
    (optional) names a column the quantity is divided by, row by row (e.g. throttled CFS
    periods per period)."""
    key = "max" if below else "min"

    def check(_facts: RunFacts, tables: Mapping[str, pd.DataFrame], params) -> GateResult:
        table, column, level = params["table"], params["column"], float(params[key])
        per = params.get("per")
        what = str(params.get("what") or (f"{table}.{column}" + (f" / {per}" if per else "")))
        frame = tables.get(table)
        if frame is None or column not in frame or (per and per not in frame):
            return GateResult(name, False, f"{what} was not measured in this run "
                              f"({table}.{column}{' / ' + str(per) if per else ''})")
        frame = select_rows(frame, params)
        if isinstance(frame, str):
            return GateResult(name, False, frame)
        values = pd.to_numeric(frame[column], errors="coerce")
        if per:
            values = values / pd.to_numeric(frame[per], errors="coerce")
        values = values.dropna()
        values = values[values.map(math.isfinite)]
        if values.empty:
            return GateResult(name, False, f"{what} was not measured on the rows the claim rests on")
        outside = values > level if below else values < level
        worst = int(values.idxmax() if below else values.idxmin())
        count = int(outside.sum())
        figures = (f"{what} {_figure(values.min())}..{_figure(values.max())} against at "
                   f"{'most' if below else 'least'} {level:g} registered ({len(values)} points, "
                   f"{count} {'above' if below else 'below'})")
        if count:
            row = frame.loc[worst]
            named = ", ".join(f"{k} {row[k]}" for k in (
                "repetition", "window_kib", "mtu", "direction", "path", "transport", "streams",
                "sender_cpus") if k in row and pd.notna(row[k]))
            figures += f"; {'highest' if below else 'lowest'}: {named}" if named else ""
        return GateResult(name, count == 0, figures)
    return check


"""The ``reachable`` gate: the most the lab lets a gain be (its ceiling, measured) must reach
the claim's region, else the lab, not the system under test, decides the verdict."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ..intervals import Estimate, mean_estimate
from .facts import GateResult, RunFacts


def ceiling(frame: pd.DataFrame | None, column: str, top: str, over: str, lo: int, hi: int,
            by: str = "method") -> Estimate | str:
    """The most a path slower than ``top`` can gain over ``over`` (in %): ``top`` over ``over``
    in ``column``, paired per repetition and size (rows of one kind averaged), a geometric mean
    over the sizes ``lo``..``hi`` per repetition, then its 95 % interval over repetitions (the
    gate ``reachable`` and S0's gain claims' notes, "at most +X % here"); else why not, in words."""
    if frame is None or not {column, by, "size", "repetition"} <= set(frame):
        return f"{column} by {by}, size and repetition was not measured in this run"
    rows = frame[(frame["size"] >= lo) & (frame["size"] <= hi) & frame[by].isin([top, over])]
    wide = rows.pivot_table(index=["repetition", "size"], columns=by, values=column, aggfunc="mean")
    if not {top, over} <= set(wide.columns):
        return f"{top} and {over} were not both measured at {lo}-{hi} B"
    ratio = (wide[top] / wide[over]).dropna()
    ratio = ratio[ratio > 0]
    per_rep = ratio.groupby(level="repetition").apply(lambda r: math.exp(float(r.map(math.log).mean())))
    est = mean_estimate(per_rep, log=True)
    if est is None:
        return f"no {top}/{over} pair measured at {lo}-{hi} B"
    return est.as_gain_pct()


def reachable(_facts: RunFacts, tables: Mapping[str, pd.DataFrame], params,
              region: tuple[float, float]) -> GateResult:
    """A gain of one path over ``over`` (in %) can be no larger than ``ceiling`` over ``over``
    when no path beats ``ceiling`` (S0: no relayed path is faster than the direct one): that
    ceiling, measured per repetition over the claim's sizes (a geometric mean, then its 95 %
    interval over repetitions; :func:`ceiling`), must reach the claim's region, else the lab --
    not the system under test -- decides the verdict (S0's links at 100 Mbit/s with relays 110x
    faster: direct over two proxies +3-5 % against a region from +8.6 %)."""
    name = "reachable"
    table, column, by = params["table"], params["column"], str(params.get("by") or "method")
    top, over = str(params["ceiling"]), str(params["over"])
    lo, hi = int(params["min_size"]), int(params["max_size"])
    est = ceiling(tables.get(table), column, top, over, lo, hi, by)
    if isinstance(est, str):
        return GateResult(name, False, est.replace(f"{column} by", f"{table}.{column} by", 1))
    high = est.high if est.high is not None else est.value
    low_bound, high_bound = region
    figures = (f"{top} over {over}, {column} at {lo}-{hi} B: {est.value:+.1f} % "
               f"[{est.low if est.low is not None else est.value:+.1f}, {high:+.1f}] over "
               f"{est.n} repetitions, the most a path slower than {top} can gain over {over}; "
               f"the region {low_bound:+.4g}..{high_bound:+.4g} %")
    return GateResult(name, high >= low_bound, figures)

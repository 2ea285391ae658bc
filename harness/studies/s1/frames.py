"""S1's tidy views of a run's rows: one CPU level's rows, a value per repetition and
(method, size), ratios of two methods within a repetition and their geometric means.

Shared by the claims (:mod:`harness.studies.s1.analysis`) and the SMP claim
(:mod:`harness.studies.s1.smp`), which both read a run through them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...verdicts.intervals import T_BELOW, t975

#: the level every claim but the SMP one rests on: one online CPU per machine, the paper's
#: uniprocessor kernel (001:44; issue 34 item 1, registered 2026-11-29). Until then the
#: claims read the 2-CPU level's rows.
UP = 1


def at_cpus(frame: pd.DataFrame, cpus: int) -> pd.DataFrame:
    """The rows measured with ``cpus`` online CPUs per machine. Rows of runs from before the
    CPU factor (2026-11-27) carry no level: their VMs had 2 vCPUs (placement.vm_cpus on this
    2-core host), so they are the 2-CPU level's and no run of them has a 1-CPU level."""
    if "cpus" not in frame:
        return frame if cpus == 2 else frame.iloc[0:0]
    return frame[frame["cpus"] == cpus]


def per_repetition(frame: pd.DataFrame, value: str) -> pd.DataFrame:
    """``value`` per repetition (rows) and (method, size) (columns)."""
    sub = frame[frame[value].notna()] if value in frame else frame.iloc[0:0]
    if sub.empty:
        return pd.DataFrame()
    return sub.pivot_table(index="repetition", columns=["method", "size"], values=value)


def ratio_of(wide: pd.DataFrame, top: str, bottom: str, sizes) -> pd.DataFrame:
    """top/bottom per repetition (rows) and size (columns), for sizes both have."""
    if wide.empty or top not in wide.columns.get_level_values(0) \
            or bottom not in wide.columns.get_level_values(0):
        return pd.DataFrame()
    common = [s for s in sizes if s in wide[top].columns and s in wide[bottom].columns]
    return wide[top][common] / wide[bottom][common]


def geomean_rows(ratio: pd.DataFrame) -> pd.Series:
    """The geometric mean across sizes, per repetition."""
    return np.exp(np.log(ratio.where(ratio > 0)).mean(axis=1, skipna=True))


def mean_ci(values: pd.Series) -> tuple[float, float]:
    """Mean and the half-width of its 95 % t interval (0 with one repetition)."""
    v = values.dropna()
    if len(v) < 2:
        return (float(v.mean()) if len(v) else math.nan), 0.0
    t = t975(len(v) - 1) if len(v) < T_BELOW else 1.96
    return float(v.mean()), float(t * v.std(ddof=1) / math.sqrt(len(v)))

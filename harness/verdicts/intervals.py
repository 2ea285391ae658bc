"""How sure a measured quantity is: a point estimate with a 95 % interval and its sample count.

Every claim a study judges rests on *units*: independent repetitions of a
measurement (S0, S4: a repetition measures every compared method back to back),
or the rounds of a fan-in point (S3). The interval comes from the spread of
those units, never from the tolerance of the claim.

Which interval:

- fewer than :data:`BOOTSTRAP_FROM` units: Student's t interval of the mean.
  A percentile bootstrap of 2-9 values under-covers badly (with 2 values it
  can only ever return the two values themselves), whereas t widens honestly
  with the few degrees of freedom (t = 12.7 for two repetitions);
- from :data:`BOOTSTRAP_FROM` units on: a percentile bootstrap of the mean
  (:data:`RESAMPLES` resamples, fixed seed, so a run's report is reproducible
  from its data), which needs no normality.

Ratios are averaged on a log scale (a geometric mean), so that 2x and 0.5x
are equally far from 1x and the interval of a ratio stays positive.
Quantities built from several independently measured groups (TIPC's rounds
against TCP's rounds) use :func:`bootstrap_groups`, which resamples each group
on its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

CONFIDENCE = 0.95
BOOTSTRAP_FROM = 10
RESAMPLES = 2000
SEED = 20261125
#: Student's t quantile 0.975 for 1..8 degrees of freedom (the t branch never sees more)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306}


@dataclass(frozen=True)
class Estimate:
    """A quantity we measured: value, 95 % interval (None with one unit), units behind it."""

    value: float
    low: float | None
    high: float | None
    n: int
    unit: str = ""
    units: str = "repetitions"  # what one sample is
    method: str = ""  # how the interval was made, said in the report
    #: the scale the interval was made on: "linear"; "log" (a ratio, a geometric mean); or
    #: "log-gain" (a ratio shown as a percentage gain (r - 1) x 100, made on the ratio's log).
    #: "Samples to decide" measures distances on this scale (harness.verdicts.claims).
    scale: str = "linear"

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def map(self, fn: Callable[[float], float], unit: str | None = None) -> Estimate:
        """The same estimate through a monotonic increasing function (ratio -> percent)."""
        return replace(self, value=fn(self.value),
                       low=None if self.low is None else fn(self.low),
                       high=None if self.high is None else fn(self.high),
                       unit=self.unit if unit is None else unit,
                       scale="linear")  # the scale of fn's output is not known: say linear

    def as_gain_pct(self) -> Estimate:
        """A ratio's estimate as a percentage gain, (r - 1) x 100, still on the ratio's log scale."""
        if self.scale != "log":
            raise ValueError(f"as_gain_pct needs a ratio averaged on a log scale, not {self.scale}")
        return replace(self.map(lambda r: (r - 1) * 100, "%"), scale="log-gain")

    def on_scale(self, x: float) -> float:
        """``x`` (a value in this estimate's unit) on the scale its interval was made on."""
        if self.scale == "log":
            return math.log(x) if x > 0 else -math.inf
        if self.scale == "log-gain":
            return math.log1p(x / 100) if x > -100 else -math.inf
        return x

    def text(self) -> str:
        value = _fmt(self.value, self.unit)
        if not self.has_interval:
            return f"{value} (n={self.n} {self.units}, no interval)"
        return (f"{value} [{_fmt(self.low, self.unit, bare=True)}, "
                f"{_fmt(self.high, self.unit, bare=True)}] (n={self.n})")


def _fmt(x: float, unit: str, bare: bool = False) -> str:
    if unit == "%":
        body = f"{x:+.1f}"
    elif abs(x) >= 100:
        body = f"{x:.0f}"
    elif abs(x) >= 10:
        body = f"{x:.1f}"
    else:
        body = f"{x:.2f}"
    if bare:
        return body
    return f"{body}{unit}" if unit in ("x", "%") else f"{body} {unit}".rstrip()


def _clean(values: Sequence[float]) -> np.ndarray:
    a = np.asarray(list(values), dtype=float)
    return a[np.isfinite(a)]


def mean_estimate(values: Sequence[float], unit: str = "", units: str = "repetitions",
                  log: bool = False) -> Estimate | None:
    """The mean of per-unit values with its interval (t below :data:`BOOTSTRAP_FROM` units).

    ``log=True`` averages logarithms (for ratios: the geometric mean). Returns
    None when there is no finite value at all.
    """
    a = _clean(values)
    if log:
        a = a[a > 0]
        if a.size == 0:
            return None
        a = np.log(a)
    if a.size == 0:
        return None
    back = np.exp if log else (lambda x: x)
    scale = "geometric mean" if log else "mean"
    on = "log" if log else "linear"
    value = float(back(a.mean()))
    n = int(a.size)
    if n < 2:
        return Estimate(value, None, None, n, unit, units, f"{scale} of 1 {units[:-1]}", on)
    if np.ptp(a) == 0:
        return Estimate(value, value, value, n, unit, units,
                        f"{scale} of {n} {units}, all equal", on)
    if n < BOOTSTRAP_FROM:
        half = float(T975[n - 1] * a.std(ddof=1) / math.sqrt(n))
        lo, hi = a.mean() - half, a.mean() + half
        method = f"{scale}, {CONFIDENCE:.0%} Student t interval over {n} {units}"
    else:
        rng = np.random.default_rng(SEED)
        means = a[rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=1)
        lo, hi = np.quantile(means, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
        method = (f"{scale}, {CONFIDENCE:.0%} percentile bootstrap over {n} {units} "
                  f"({RESAMPLES} resamples)")
    return Estimate(value, float(back(lo)), float(back(hi)), n, unit, units, method, on)


def bootstrap_groups(groups: Mapping[str, Sequence[float]],
                     statistic: Callable[[Mapping[str, np.ndarray]], float],
                     unit: str = "", units: str = "rounds") -> Estimate | None:
    """A statistic of several independently measured groups, each resampled on its own.

    ``n`` is the smallest group's size. With fewer than two values in some group
    the estimate has no interval.
    """
    data = {k: _clean(v) for k, v in groups.items()}
    if not data or any(v.size == 0 for v in data.values()):
        return None
    value = float(statistic(data))
    if not math.isfinite(value):
        return None
    n = min(v.size for v in data.values())
    if n < 2:
        return Estimate(value, None, None, n, unit, units, f"one of the groups has 1 {units[:-1]}")
    rng = np.random.default_rng(SEED)
    draws = np.empty(RESAMPLES)
    for i in range(RESAMPLES):
        draws[i] = statistic({k: v[rng.integers(0, v.size, v.size)] for k, v in data.items()})
    draws = draws[np.isfinite(draws)]
    lo, hi = np.quantile(draws, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    method = (f"{CONFIDENCE:.0%} percentile bootstrap, each of {len(data)} groups resampled "
              f"on its own (>= {n} {units} each, {RESAMPLES} resamples)")
    return Estimate(value, float(lo), float(hi), n, unit, units, method)

"""How sure a measured quantity is: a point estimate with a 95 % interval and its sample count.

Every claim a study judges rests on *units*: independent repetitions of a
measurement (S0, S4: a repetition measures every compared method back to back),
or the rounds of a fan-in point (S3). The interval comes from the spread of
those units, never from the tolerance of the claim.

Which interval (:func:`mean_estimate`):

- fewer than :data:`T_BELOW` units: Student's t interval of the mean, its quantile
  computed exactly for the units' degrees of freedom (:func:`t_quantile`). A
  percentile bootstrap of few values under-covers (with 2 values it can only ever
  return the two values themselves; at 10 it is about 18 % narrower than t at 9
  degrees of freedom), whereas t widens honestly with few degrees of freedom
  (t = 12.7 for two repetitions, 2.26 for ten);
- from :data:`T_BELOW` units on: a percentile bootstrap of the mean
  (:data:`RESAMPLES` resamples, fixed seed, so a run's report is reproducible
  from its data), which needs no normality.

One run cannot show how much a second run of the same registration would differ
(its own lab build, VM boot and the machine's state on the day): its interval
holds the variation between its repetitions only. With units from several runs
the run is the top-level unit (:func:`run_estimate`): the run means are the
samples, so a Student t interval over the run means below :data:`T_BELOW` runs,
and from there a bootstrap that resamples runs and then the units within each.
``harness claims pool`` pools each run's own estimate instead
(:mod:`harness.verdicts.run_pooling`): each run judged with its own record.

Ratios are averaged on a log scale (a geometric mean), so that 2x and 0.5x
are equally far from 1x and the interval of a ratio stays positive.
Quantities built from several independently measured groups (TIPC's rounds
against TCP's rounds) use :func:`bootstrap_groups`, which resamples each group
on its own.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

CONFIDENCE = 0.95
T_BELOW = 30  # Student t below this many samples, a bootstrap from here on
RESAMPLES = 2000
SEED = 20261125
POOLED_METHOD = "run means"  # in the method of every estimate whose units are pooled runs


@functools.lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """Student's t quantile: the ``x`` with P(T <= x) = ``p`` at ``df`` degrees of freedom.

    Exact to about 1e-12: the t distribution's CDF from the regularized incomplete beta
    function (:func:`_incomplete_beta`), inverted by bisection (it is monotonic).
    """
    if not 0 < p < 1:
        raise ValueError(f"a quantile needs 0 < p < 1, not {p}")
    if df < 1:
        raise ValueError(f"Student's t needs at least 1 degree of freedom, not {df}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    if p == 0.5:
        return 0.0
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return (lo + hi) / 2


def t975(df: int) -> float:
    """The factor between a mean's standard error and its 95 % interval's half-width."""
    return t_quantile((1 + CONFIDENCE) / 2, df)


def t_half_width(sd: float, n: int) -> float:
    """The half-width of the Student t interval of a mean of ``n`` samples of standard deviation
    ``sd``: one formula for one run's repetitions (:func:`mean_estimate`), run means
    (:func:`run_estimate`, :func:`harness.verdicts.run_pooling.pooled_estimate`) and all the
    repetitions of several runs (:func:`harness.verdicts.run_pooling.all_units_estimate`)."""
    return float(t975(n - 1) * sd / math.sqrt(n))


def _t_cdf(x: float, df: int) -> float:
    """P(T <= x) for x >= 0: 1 - I_{df / (df + x^2)}(df / 2, 1 / 2) / 2."""
    return 1 - 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + x * x))


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (modified Lentz), on the side of x where it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


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

    def text(self, bounds: Sequence[float] = ()) -> str:
        """The estimate and its interval, each figure to its usual digits; ``bounds`` (a region's),
        where an end of the interval -- what decides the verdict -- and a bound read alike at those
        digits or at a region's (:data:`BOUND_DIGITS` significant), that end to as many more as
        tell it apart (the S0 referee of 2026-11-29: an upper end of 0.45438 against a bound of
        0.45455 read "0.45" beside "0.4545"). The point estimate keeps its usual digits."""
        value = _fmt(self.value, self.unit)
        if not self.has_interval:
            return f"{value} (n={self.n} {self.units}, no interval)"
        return (f"{value} [{_fmt(self.low, self.unit, bare=True, near=bounds)}, "
                f"{_fmt(self.high, self.unit, bare=True, near=bounds)}] (n={self.n})")


#: the significant digits a region's bound is printed to (harness.verdicts.claims.Region.text)
BOUND_DIGITS = 4


def distinct(x: float, bound: float, digits: int = BOUND_DIGITS) -> int:
    """The fewest significant digits, at least ``digits``, at which ``x`` and ``bound`` print apart
    (12 at most: beyond, they are the same figure)."""
    for n in range(digits, 13):
        if f"{x:.{n}g}" != f"{bound:.{n}g}":
            return n
    return 12


def _alike(x: float, bound: float, body: str, unit: str) -> bool:
    """``x`` (printed ``body``) and ``bound`` read alike: at ``x``'s usual digits, or at a region's."""
    if not math.isfinite(bound) or x == bound:
        return False
    return (_fmt(bound, unit, bare=True) == body
            or f"{x:.{BOUND_DIGITS}g}" == f"{bound:.{BOUND_DIGITS}g}")


def _fmt(x: float, unit: str, bare: bool = False, near: Sequence[float] = ()) -> str:
    if unit == "%":
        body = f"{x:+.1f}"
    elif abs(x) >= 100:
        body = f"{x:.0f}"
    elif abs(x) >= 10:
        body = f"{x:.1f}"
    else:
        body = f"{x:.2f}"
    close = [b for b in near if _alike(x, b, body, unit)]
    if close:  # as many significant digits as tell it from every bound it reads alike
        n = max(distinct(x, b) for b in close)
        body = f"{x:+.{n}g}" if unit == "%" else f"{x:.{n}g}"
    if bare:
        return body
    return f"{body}{unit}" if unit in ("x", "%") else f"{body} {unit}".rstrip()


def _clean(values: Sequence[float]) -> np.ndarray:
    a = np.asarray(list(values), dtype=float)
    return a[np.isfinite(a)]


def mean_estimate(values: Sequence[float], unit: str = "", units: str = "repetitions",
                  log: bool = False) -> Estimate | None:
    """The mean of per-unit values with its interval (Student t below :data:`T_BELOW` units).

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
    return _interval(a, unit, units, log)


def _interval(a: np.ndarray, unit: str, units: str, log: bool) -> Estimate:
    """The interval of the mean of ``a`` (already on its scale: logs for a ratio)."""
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
    if n < T_BELOW:
        half = t_half_width(a.std(ddof=1), n)
        lo, hi = a.mean() - half, a.mean() + half
        method = f"{scale}, {CONFIDENCE:.0%} Student t interval over {n} {units}"
    else:
        rng = np.random.default_rng(SEED)
        means = a[rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=1)
        lo, hi = np.quantile(means, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
        method = (f"{scale}, {CONFIDENCE:.0%} percentile bootstrap over {n} {units} "
                  f"({RESAMPLES} resamples)")
    return Estimate(value, float(back(lo)), float(back(hi)), n, unit, units, method, on)


#: said in an estimate's method when its interval is held within the quantity's range
WITHIN = "held within the quantity's range"
_WITHIN_RANGE = re.compile(re.escape(WITHIN) + r" \[([^,\]]+), ([^\]]+)\]")


def within(estimate: Estimate | None, low: float, high: float) -> Estimate | None:
    """``estimate`` with its interval intersected with [``low``, ``high``], the range the quantity
    cannot leave (a share of points: [0, 1]), said in its method.

    Why this and not another interval: the quantity lies in its range by definition, so the
    event "the interval covers the true value" is the same before and after the intersection:
    the coverage is the underlying interval's (95 %) exactly, and no end reads a value the
    quantity cannot take (S3's "TIPC best in most", a mean of per-repetition shares, read
    [-0.24, 0.82] in a run of 2 repetitions). Wilson's score interval would count a run's k
    points as independent Bernoulli trials, which the points of one mapper fleet are not (the
    repetition is the unit); an interval on the logit scale estimates the mean of logits, not
    the mean share, and needs a continuity correction at 0 or k of k points."""
    if estimate is None:
        return None
    method = f"{estimate.method}; {WITHIN} [{low:g}, {high:g}]"
    if not estimate.has_interval:
        return replace(estimate, method=method)
    return replace(estimate, low=min(max(estimate.low, low), high),
                   high=max(min(estimate.high, high), low), method=method)


def range_of(method: str) -> tuple[float, float] | None:
    """The range an estimate's interval was held within (:func:`within`), read from its method;
    None when it was not."""
    found = _WITHIN_RANGE.search(method or "")
    return (float(found.group(1)), float(found.group(2))) if found else None


def run_estimate(values: Sequence[float], runs: Sequence[Hashable], unit: str = "",
                 units: str = "repetitions", log: bool = False) -> Estimate | None:
    """The mean of units labelled by the run each was measured in, the run the top-level unit.

    ``runs[i]`` names the run of ``values[i]``. With one run: :func:`mean_estimate`'s
    interval over its units, its method saying that it is one run. With several: the
    mean of the run means (each run weighs the same), ``n`` the runs and ``units``
    "runs"; below :data:`T_BELOW` runs a Student t interval over the run means, from
    there a bootstrap that resamples runs, then the units within each resampled run.
    """
    a = np.asarray(list(values), dtype=float)
    labels = list(runs)
    if len(labels) != a.size:
        raise ValueError(f"{a.size} values but {len(labels)} run labels: one run per value")
    keep = np.isfinite(a) & (a > 0) if log else np.isfinite(a)
    a = np.log(a[keep]) if log else a[keep]
    labels = [r for r, k in zip(labels, keep) if k]
    if a.size == 0:
        return None
    order = list(dict.fromkeys(labels))
    groups = [a[[i for i, r in enumerate(labels) if r == run]] for run in order]
    if len(groups) == 1:
        one = _interval(groups[0], unit, units, log)
        return replace(one, method=f"one run: {one.method}; the variation between runs "
                                   "is not in this interval")
    back = np.exp if log else (lambda x: x)
    scale = "geometric mean" if log else "mean"
    on = "log" if log else "linear"
    run_means = np.array([g.mean() for g in groups])
    k = len(groups)
    sizes = sorted({g.size for g in groups})
    per_run = (f"{sizes[0]} {units}" if len(sizes) == 1
               else f"{sizes[0]}-{sizes[-1]} {units}")
    head = f"{scale} of {k} {POOLED_METHOD} (each over {per_run})"
    value = float(back(run_means.mean()))
    if np.ptp(run_means) == 0:
        return Estimate(value, value, value, k, unit, "runs", f"{head}, all equal", on)
    if k < T_BELOW:
        half = t_half_width(run_means.std(ddof=1), k)
        lo, hi = run_means.mean() - half, run_means.mean() + half
        method = f"{head}, {CONFIDENCE:.0%} Student t interval over {k} runs"
    else:
        rng = np.random.default_rng(SEED)
        means = np.empty(RESAMPLES)
        for i in range(RESAMPLES):
            picked = rng.integers(0, k, k)
            means[i] = np.mean([groups[j][rng.integers(0, groups[j].size, groups[j].size)].mean()
                                for j in picked])
        lo, hi = np.quantile(means, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
        method = (f"{head}, {CONFIDENCE:.0%} percentile bootstrap resampling the {k} runs, "
                  f"then the {units} within each ({RESAMPLES} resamples)")
    return Estimate(value, float(back(lo)), float(back(hi)), k, unit, "runs", method, on)


def bootstrap_groups(groups: Mapping[str, Sequence[float]],
                     statistic: Callable[[Mapping[str, np.ndarray]], float],
                     unit: str = "", units: str = "rounds") -> Estimate | None:
    """A statistic of several independently measured groups, each resampled on its own.

    ``n`` is the smallest group's size. With fewer than two values in some group
    the estimate has no interval. A percentile bootstrap at every size: with few values per
    group it under-covers as :func:`mean_estimate`'s did below :data:`T_BELOW` (no study
    uses it now).
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

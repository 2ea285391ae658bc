"""Design power: how many repetitions a claim's region needs, from the spread a run showed.

A region no feasible experiment can reach can only ever say "not reproduced" or
"inconclusive" (a 2-point-wide region around "+5 %" against a per-repetition spread of 30 %
needs thousands of repetitions). Before regions are fixed for new references, this module
reads each claim's spread from an archived run (a committed reference) and asks:

- for a region bounded on both sides: how many repetitions would make the 95 % interval
  narrow enough to fit inside the region at all, if the truth sat at its centre (fewer can
  never give "reproduced");
- for a one-sided region (a direction): how many would put the interval clear of the bound,
  if the truth sat where this run's estimate does (the paper gives no effect size).

The spread is backed out of the archived interval on the scale it was made on (a ratio's
log for geometric means, ``log(1 + g/100)`` for gains in %): half-width x sqrt(n) / the
critical value the interval used (Student's t or the normal quantile a bootstrap
approaches). It is the spread *within* one run; the variation between runs adds to it, and
a pooled reference (runs as blocks) is what measures that, so the figures here are a lower
bound on what a verdict needs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .intervals import POOLED_METHOD, t975
from .registration import Registration, read_archived

#: more repetitions than this (in all, over a reference's runs) is not a feasible profile on
#: the machines this project targets: about three runs of 30 repetitions
FEASIBLE_REPETITIONS = 100
#: more runs than this is not a feasible pooled reference: ten runs of at most two hours each
#: are about a day of one machine (a pooled reference's rows are planned in runs, its unit)
FEASIBLE_RUNS = 10
NORMAL975 = 1.959964
_LIMIT = 1_000_000


@dataclass(frozen=True)
class ClaimPower:
    claim_id: str
    source: str
    region: str
    n: int
    scale: str  # "linear" or "log"
    spread: float | None  # SD of one repetition on the scale
    needed: int | None  # units that would decide it; None: no spread, or no bound
    why: str
    units: str = "repetitions"  # "runs" for a pooled run's rows: the run is its unit

    @property
    def feasible(self) -> bool | None:
        limit = FEASIBLE_RUNS if self.units == "runs" else FEASIBLE_REPETITIONS
        return None if self.needed is None else self.needed <= limit


def _critical(n: int, method: str) -> float:
    return t975(n - 1) if "Student" in method or "t interval" in method else NORMAL975


def _to_scale(x: float, scale: str, gain: bool) -> float:
    if scale == "linear" or not math.isfinite(x):
        return x
    ratio = 1 + x / 100 if gain else x
    return math.log(ratio) if ratio > 0 else -math.inf


def _smallest_n(spread: float, half_width: float, method: str) -> int | None:
    """The fewest repetitions whose 95 % half-width is at most ``half_width``."""
    if half_width <= 0:
        return None
    n = 2
    while n <= _LIMIT:
        if _critical(n, method) * spread / math.sqrt(n) <= half_width:
            return n
        n = n + 1 if n < 64 else int(n * 1.05) + 1
    return None


def claim_power(row: pd.Series, registered: dict) -> ClaimPower:
    """One claim of an archived claims table (``row``) with its registration (``registered``)."""
    base = dict(claim_id=row.claim_id, source=row.source, region=str(row.region),
                n=int(row.n), scale="linear")
    if not registered:
        return ClaimPower(**base, spread=None, needed=None,
                          why="not in the run's registration (registration.json)")
    region = registered.get("region") or {}
    low = -math.inf if region.get("low") is None else float(region["low"])
    high = math.inf if region.get("high") is None else float(region["high"])
    method = str(row.get("interval") or "")
    if POOLED_METHOD in method:  # pooled: the spread is the run means', the plan is in runs
        base["units"] = "runs"
    scale = "log" if method.startswith("geometric mean") else "linear"
    gain = scale == "log" and str(row.get("unit") or "") == "%"
    base["scale"] = scale
    lo_v, hi_v, value = (float(row[k]) if pd.notna(row[k]) else math.nan
                         for k in ("low", "high", "value"))
    if int(row.n) < 2 or not (math.isfinite(lo_v) and math.isfinite(hi_v)):
        return ClaimPower(**base, spread=None, needed=None,
                          why="no interval in this run: no spread to plan from")
    lo, hi = _to_scale(lo_v, scale, gain), _to_scale(hi_v, scale, gain)
    spread = (hi - lo) / 2 * math.sqrt(int(row.n)) / _critical(int(row.n), method)
    blo, bhi = _to_scale(low, scale, gain), _to_scale(high, scale, gain)
    if math.isfinite(blo) and math.isfinite(bhi):
        needed = _smallest_n(spread, (bhi - blo) / 2, method)
        why = ("the interval fits inside the region at all (the truth at its centre)"
               if needed else "the region is narrower than any feasible interval")
        return ClaimPower(**base, spread=spread, needed=needed, why=why)
    bound = blo if math.isfinite(blo) else bhi
    if not math.isfinite(bound):
        return ClaimPower(**base, spread=spread, needed=None, why="the region has no bound")
    distance = abs(_to_scale(value, scale, gain) - bound)
    needed = _smallest_n(spread, distance, method)
    why = ("the interval clears the bound, the truth where this run's estimate is"
           if needed else "the estimate sits on the bound: no number of repetitions decides it")
    return ClaimPower(**base, spread=spread, needed=needed, why=why)


def run_power(run: Path, regions: Registration | None = None,
              beside: Mapping[str, dict] | None = None) -> list[ClaimPower]:
    """Each claim of an archived run (its claims.csv and registration.json), planned.

    With ``regions`` (a registration, e.g. today's) each claim's region is read from it instead
    of the run's own: the spread the run showed, planned for regions registered since -- the
    check to make before new regions are committed (issue 33 item 2).

    ``beside``: claims registered outside the study's registration, by id (each as
    :meth:`~harness.verdicts.claims.Claim.registration` gives it), for the rows a run's table
    takes from elsewhere -- S0 shows the relay benchmark's targets, registered in the benchmark
    it archived (:func:`harness.relay.targets.registered_in_run`); the study's own come first.
    """
    claims = pd.read_csv(run / "claims.csv")
    if regions is None:
        registered = {c["id"]: c for c in (read_archived(run).body or {}).get("claims", [])}
    else:
        registered = {c.id: c.registration() for c in regions.claims}
    registered = {**(beside or {}), **registered}
    out = []
    for _, row in claims.iterrows():
        planned = registered.get(row.claim_id, {})
        if regions is not None and planned:
            row = row.copy()
            row["region"] = planned["region"]["text"]
        out.append(claim_power(row, planned))
    return out

"""A claim's pooled verdict from each member run's own estimate: the run is the unit.

Each member of a pool is analysed alone first, with its own record: the facts it measured
about its lab (S0's wire probe and path capacities, S4's calibrated CPU limit, S2's scale
factor, the VMs it booted) decide which of its points count, which gates it passes and what
its estimate is. One run's estimate is one sample of the pool. Re-running the analysis over
the members' tables joined into one would read a single run's record for all of them: the
first S0 pool so made (2026-11-29, two runs) judged run 2's latencies with run 1's wire
probe, and put two proxies at 4.29x of direct where the runs alone read 2.26x and 1.95x.

The pooled estimate is the mean of the run estimates on the scale each was made on (a
geometric mean's log, a gain's log(1 + g/100)), with a Student t interval over the runs
below :data:`~harness.verdicts.intervals.T_BELOW` runs and a percentile bootstrap of the
runs from there. A claim pools only where every run judged it: invalid in one run is invalid
(an apparatus failure, or a point impossible in that run's own lab, is not averaged away; the
pooled estimate is withheld and the reason says so), not testable in one run is not testable
(the regime must hold in every run; saying less beats saying wrong), the pooled estimate beside
it as measured anyway -- also where a run made the claim not testable per point, for points
outside the paper's regime that its lab makes possible (:func:`harness.verdicts.claims.judge`'s
``outside``). A claim whose runs were judged
against a region other than the registered one (set by the run's design, S3's "most points"
on its number of points) is not pooled.

Beside the pooled estimate, :func:`all_units_estimate` gives the figure one run's estimator
gives over every run's repetitions taken together (the S0 referee of 2026-11-29: the distance
claim's 0.982 [0.944, 1.022] over 3 run means, 2 degrees of freedom, against 0.982 [0.903,
1.068] over all 12 repetitions). It is a sensitivity reading shown beside the verdict, never its
basis: the registered rule is the interval over the run means.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from .claims import INVALID, NOT_TESTABLE, WITHDRAWN, Claim, Region, Verdict, judge
from .gates.registry import STATED_ONLY, stated_only
from .intervals import (
    CONFIDENCE,
    POOLED_METHOD,
    RESAMPLES,
    SEED,
    T_BELOW,
    Estimate,
    range_of,
    t975,
    t_half_width,
    within,
)
from .invalid_points import by_kind, split_points

#: what the all-units figure is to a reader of a pooled report
SENSITIVITY = "a sensitivity reading, not the verdict's basis: the verdict rests on the interval over the run means"


def run_scale(row: pd.Series) -> str:
    """The scale a run's estimate was made on, read from its interval's method and unit."""
    method = str(row.get("interval") or "")
    if method.startswith("geometric mean"):
        return "log-gain" if str(row.get("unit") or "") == "%" else "log"
    return "linear"


def _to(x: float, scale: str) -> float:
    if scale == "log":
        return math.log(x) if x > 0 else -math.inf
    if scale == "log-gain":
        return math.log1p(x / 100) if x > -100 else -math.inf
    return x


def _back(x: float, scale: str) -> float:
    if scale == "log":
        return math.exp(x)
    if scale == "log-gain":
        return math.expm1(x) * 100
    return x


def _per_run(rows: list[pd.Series]) -> str:
    sizes = sorted({int(r["n"]) for r in rows})
    units = str(rows[0].get("units") or "repetitions")
    return f"{sizes[0]} {units}" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]} {units}"


def pooled_estimate(values: list[float], scale: str, unit: str, per_run: str) -> Estimate:
    """The mean of ``values`` (one per run, in ``unit``) on ``scale``, its interval over runs."""
    k = len(values)
    on = np.array([_to(v, scale) for v in values])
    mean = float(on.mean())
    name = "geometric mean" if scale != "linear" else "mean"
    head = (f"{name} of {k} {POOLED_METHOD} (each run's own estimate over its {per_run}, "
            "made with that run's own record)")
    est_scale = {"log": "log", "log-gain": "log-gain"}.get(scale, "linear")
    value = _back(mean, scale)
    if np.ptp(on) == 0:
        return Estimate(value, value, value, k, unit, "runs", f"{head}, all equal", est_scale)
    if k < T_BELOW:
        half = t_half_width(float(on.std(ddof=1)), k)
        lo, hi = mean - half, mean + half
        method = f"{head}, {CONFIDENCE:.0%} Student t interval over {k} runs"
    else:
        rng = np.random.default_rng(SEED)
        means = on[rng.integers(0, k, (RESAMPLES, k))].mean(axis=1)
        lo, hi = np.quantile(means, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
        method = f"{head}, {CONFIDENCE:.0%} percentile bootstrap of the {k} runs ({RESAMPLES} resamples)"
    return Estimate(value, _back(float(lo), scale), _back(float(hi), scale), k, unit, "runs",
                    method, est_scale)


def _labelled(rows: list[pd.Series], run_ids: list[str], column: str) -> str:
    texts = [str(r.get(column) or "") if pd.notna(r.get(column)) else "" for r in rows]
    if len(set(texts)) == 1:
        return texts[0]
    return "; ".join(f"run {rid}: {t}" for rid, t in zip(run_ids, texts) if t)


#: how gates.registry.apply words a failed regime gate in a claim's reason
FAILED_GATES = "the lab is not in the paper's regime"


def invalid_reason(invalid: list[tuple[str, pd.Series]], runs: int) -> str:
    """Why a pooled claim is invalid: its ``invalid`` runs' (run id, row) points counted by kind
    with one whole example each (:func:`harness.verdicts.invalid_points.by_kind`), so nothing is
    cut however many points the runs found; a run whose row lists no point, by its own reason
    in full. Each run's every point stays in the claim's ``invalid`` column and its own report."""
    listed = [(rid, point) for rid, row in invalid for point in _points(row)]
    parts = []
    if listed:
        kinds = by_kind(listed)
        parts.append(f"{len(listed)} invalid point{'s' if len(listed) != 1 else ''} (physically "
                     f"impossible, or failed) of {len(kinds)} kind{'s' if len(kinds) != 1 else ''}, "
                     "each with its count and one example (every point: the invalid column): "
                     + "; ".join(k.text() for k in kinds))
    parts += [f"run {rid}: {row['reason']}" for rid, row in invalid if not _points(row)]
    gated = [rid for rid, row in invalid if _points(row) and FAILED_GATES in str(row["reason"])]
    if gated:
        where = (f"all {runs} runs" if len(gated) == runs > 1
                 else f"run{'s' if len(gated) > 1 else ''} {', '.join(gated)}")
        parts.append(f"and in {where} {FAILED_GATES} (the failed gates' figures: the gates column)")
    return f"invalid in {len(invalid)} of {runs} runs: " + "; ".join(parts)


def _points(row: pd.Series) -> list[str]:
    cell = row.get("invalid")
    return split_points(str(cell)) if isinstance(cell, str) else []


def _also_untestable(rows: list[pd.Series], run_ids: list[str]) -> str:
    """Beside a pooled invalid verdict, the runs that found the claim not testable instead (a run
    whose points its own lab makes possible, outside the paper's regime), each briefly; "" when
    none did."""
    others = [(rid, r) for rid, r in zip(run_ids, rows) if r["outcome"] == NOT_TESTABLE]
    if not others:
        return ""
    return (f"; not testable in {len(others)} of {len(rows)} runs: "
            + "; ".join(f"run {rid}: {_brief(str(r['reason']))}" for rid, r in others))


def said_once(reasons: list[tuple[str, str]]) -> str:
    """The runs' reasons (run id, reason) after ': ', each part every run gives word for word said
    once ("in every run: ..."), then each run's other parts ("run ID: ..."). The fourth S3
    review: the pooled reason repeated each run's gate texts in full, three times a claim. Parts
    are the reason's '; '-separated clauses outside parentheses, in the first run's order."""
    split = [(rid, clauses(reason)) for rid, reason in reasons]
    common = [c for c in split[0][1] if all(c in parts for _, parts in split[1:])] if len(split) > 1 else []
    if not common:
        return ": " + "; ".join(f"run {rid}: {reason}" for rid, reason in reasons)
    own = [(rid, [c for c in parts if c not in common]) for rid, parts in split]
    return ("; in every run: " + "; ".join(common)
            + "".join(f"; run {rid}: " + "; ".join(rest) for rid, rest in own if rest))


def clauses(reason: str) -> list[str]:
    """``reason`` split at each '; ' outside parentheses and brackets."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(reason):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch == ";" and depth == 0 and reason[i + 1:i + 2] == " ":
            out.append(reason[start:i])
            start = i + 2
    out.append(reason[start:])
    return [c for c in out if c]


#: how much of a not-testable run's reason a pooled invalid row repeats (its own report has all)
BRIEF = 360


def _brief(reason: str) -> str:
    """A run's reason cut at a word within :data:`BRIEF` characters."""
    if len(reason) <= BRIEF:
        return reason
    return reason[:BRIEF].rsplit(" ", 1)[0] + " ... (the run's own report has the rest)"


def pooled_verdict(claim: Claim, rows: list[pd.Series], run_ids: list[str],
                   regions: list[Region | None] | None = None) -> tuple[Verdict, dict]:
    """``claim`` judged on its member rows (one per run, in ``run_ids`` order); the verdict
    and the columns it carries from the runs (note, gates, invalid points).

    ``regions``: each run's region its design set for the claim (``Study.design_regions``;
    None where it set none). A region the registration's rule makes from the run's design (S3's
    "most": at least k // 2 + 1 of the run's k points) is pooled where every run's design made
    the same one, exactly; runs whose designs made different regions are not pooled."""
    carried = {c: _labelled(rows, run_ids, c) for c in ("note", "gates", "invalid")}
    withdrawn = [r for r in rows if r["outcome"] == WITHDRAWN]
    if withdrawn:  # a claim a registered change withdrew: nothing pooled, nothing judged
        return Verdict(claim, None, WITHDRAWN, str(withdrawn[0]["reason"])), carried
    # the region shown is the one judged: a design-set region also where nothing is judged
    region, differ = _design_region(claim, rows, regions)
    shown = replace(claim, region=region)
    invalid = [(rid, r) for rid, r in zip(run_ids, rows) if r["outcome"] == INVALID]
    if invalid:  # impossible in a run's own lab: the pooled estimate is withheld, by rule
        return Verdict(shown, None, INVALID, invalid_reason(invalid, len(rows))
                       + _also_untestable(rows, run_ids)), carried
    values = [float(r["value"]) for r in rows]
    measured = all(math.isfinite(v) for v in values) and all(int(r["n"]) > 0 for r in rows)
    # a gated claim keeps its estimate beside its outcome, deciding nothing (gates.registry.apply)
    estimate = (pooled_estimate(values, run_scale(rows[0]), claim.unit, _per_run(rows))
                if measured else None)
    bounds = range_of(str(rows[0].get("interval") or ""))
    if bounds:  # a quantity with a range (a share): the pooled interval held within it too
        estimate = within(estimate, *bounds)
    untestable = [(rid, r) for rid, r in zip(run_ids, rows)
                  if r["outcome"] == NOT_TESTABLE or not math.isfinite(float(r["value"]))]
    if untestable:
        reasons = [str(r["reason"]) for _, r in untestable]
        if len(untestable) == len(rows) and len(set(reasons)) == 1:
            said = reasons[0]
        elif len(untestable) == len(rows):  # the same kind of reason, each with its run's figures
            said = f"not testable in any of the {len(rows)} runs" + said_once(
                [(rid, str(r["reason"])) for rid, r in untestable])
        else:
            said = "; ".join(f"run {rid}: {r['reason']}" for rid, r in untestable)
        where = "" if len(untestable) == len(rows) else (
            f"not testable in {len(untestable)} of {len(rows)} runs (a pooled verdict needs the "
            "claim in its regime in every run): ")
        return Verdict(shown, estimate, NOT_TESTABLE, where + said + _pooled_stated_only(
            shown, estimate, rows)), carried
    if differ:
        return Verdict(claim, estimate, NOT_TESTABLE, differ), carried
    if region is not claim.region:
        carried["note"] = "; ".join(t for t in (
            f"judged against the region every run's design set alike by the registered rule "
            f"({region.why})", carried["note"]) if t)
    return stated_first(judge(shown, estimate, carried["note"]), rows, run_ids), carried


def _pooled_stated_only(claim: Claim, estimate: Estimate | None, rows: list[pd.Series]) -> str:
    """Where every run found the claim not testable only for causes its paper does not state of its
    testbed (gates registered with ``unstated`` words: each run's reason says what it reads under
    the paper's stated testbed only), what the pooled estimate reads there; "" otherwise."""
    causes = dict.fromkeys(g.unstated for g in claim.gates if g.unstated)
    if not causes or estimate is None or not all(
            STATED_ONLY in " ".join(str(r.get("reason") or "").split()) for r in rows):
        return ""
    reading = judge(claim, estimate)
    return "; pooled, " + stated_only(causes, reading.outcome, estimate.text(
        (claim.region.low, claim.region.high)), claim.region.text(claim.unit))


def stated_first(verdict: Verdict, rows: list[pd.Series], run_ids: list[str]) -> Verdict:
    """``verdict`` with its claim's stated conditions (gates registered with ``unmet`` words,
    :data:`harness.verdicts.gates.registry.UNMET`) that its runs found unmet said before its reason,
    naming the runs (each run's figures: the gates column), as each run's own verdict says them."""
    said = []
    for words in dict.fromkeys(g.condition for g in verdict.claim.gates if g.condition):
        unmet = [rid for rid, r in zip(run_ids, rows) if words in " ".join(str(r.get("reason") or "").split())]
        if unmet:
            where = f"all {len(rows)} runs" if len(unmet) == len(rows) else "runs " + ", ".join(unmet)
            said.append(f"{words} (in {where}; the figures: the gates column)")
    return replace(verdict, reason="; ".join([*said, verdict.reason])) if said else verdict


def _design_region(claim: Claim, rows: list[pd.Series],
                   regions: list[Region | None] | None) -> tuple[Region, str]:
    """The region the pool judges and shows ``claim`` against: the registration's, or the one
    every run's design set alike by the registered rule; with why not, when the runs judged it
    against regions their designs set differently (then the registration's is shown)."""
    texts = {str(r["region"]) for r in rows}
    if texts == {claim.region.text(claim.unit)}:
        return claim.region, ""
    made = {(r.low, r.high) for r in regions or [] if r is not None}
    if len(made) != 1 or len(regions) != len(rows) or None in regions:
        return claim.region, ("the runs judged it against " + ", ".join(sorted(texts))
                              + f", the registration against {claim.region.text(claim.unit)}: "
                              "regions the runs' designs set differently are not pooled")
    return regions[0], ""


def _moments(row: pd.Series, scale: str) -> tuple[float, float, int] | str:
    """A run's mean, standard deviation and count of its units on ``scale``, recovered from its
    row: exact for one run's mean with a Student t interval (the interval's half-width is
    t975(n - 1) x sd / sqrt(n)); else why not."""
    method, n = str(row.get("interval") or ""), int(row["n"])
    if POOLED_METHOD in method or str(row.get("units") or "") == "runs":
        return "its estimate is not over units of its own"
    value = float(row["value"])
    if not math.isfinite(value):
        return "no estimate"
    mean = _to(value, scale)
    if n == 1 or method.endswith("all equal"):
        return mean, 0.0, n
    if "Student t interval over" not in method:
        return f"its interval is {method or 'not named'}: its spread is not in its table"
    low, high = _to(float(row["low"]), scale), _to(float(row["high"]), scale)
    bounds = range_of(method)
    if bounds:  # held within a range (intervals.within): an end not cut keeps the half-width
        uncut = [half for end, half in ((low, mean - low), (high, high - mean))
                 if end not in bounds]
        if not uncut:
            return f"its interval was cut at both ends of its range {list(bounds)}"
        return mean, max(uncut) * math.sqrt(n) / t975(n - 1), n
    if not math.isclose(high - mean, mean - low, rel_tol=1e-6, abs_tol=1e-12):
        return "its interval is not symmetric about its estimate on its scale"
    return mean, (high - low) / 2 * math.sqrt(n) / t975(n - 1), n


def all_units_estimate(rows: list[pd.Series], run_ids: list[str], unit: str) -> tuple[Estimate | None, str]:
    """One run's estimator (:func:`harness.verdicts.intervals.mean_estimate`) applied to every
    run's units together, from each run's row (its mean, spread and count: the sample's mean and
    standard deviation follow exactly from them); or None and why not. Below
    :data:`~harness.verdicts.intervals.T_BELOW` units it is the estimate the raw units would
    give; from there one run would take a bootstrap, which needs the raw units, and the figure
    is its Student t counterpart, as its method says."""
    scale = run_scale(rows[0])
    groups = []
    for rid, row in zip(run_ids, rows):
        got = _moments(row, scale)
        if isinstance(got, str):
            return None, f"run {rid}: {got}"
        groups.append(got)
    total = sum(n for _, _, n in groups)
    mean = sum(m * n for m, _, n in groups) / total
    units = str(rows[0].get("units") or "repetitions")
    name = "geometric mean" if scale != "linear" else "mean"
    head = f"{name} of all {total} {units} of the {len(rows)} runs together"
    value = _back(mean, scale)
    on = {"log": "log", "log-gain": "log-gain"}.get(scale, "linear")
    if total < 2:
        return Estimate(value, None, None, total, unit, units, head, on), ""
    variance = (sum((n - 1) * sd * sd for _, sd, n in groups)
                + sum(n * (m - mean) ** 2 for m, _, n in groups)) / (total - 1)
    if variance <= 0:
        return Estimate(value, value, value, total, unit, units, f"{head}, all equal", on), ""
    half = t_half_width(math.sqrt(variance), total)
    method = f"{head}, {CONFIDENCE:.0%} Student t interval over {total} {units}"
    if total >= T_BELOW:
        method += (f" (one run of {total} {units} would take a percentile bootstrap, which needs the raw "
                   f"{units}: this is its Student t counterpart)")
    estimate = Estimate(value, _back(mean - half, scale), _back(mean + half, scale), total, unit,
                        units, method, on)
    bounds = range_of(str(rows[0].get("interval") or ""))
    return (within(estimate, *bounds) if bounds else estimate), ""

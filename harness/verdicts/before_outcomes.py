"""Each claim judged again as it was registered before any change made after outcomes were read.

A referee weighs a verdict by when its rule was fixed (the fifth S0 review of 2026-11-29: "every
paper verdict rests on rules changed after outcomes were read ... for each claim, show its verdict
under the last registration made before any outcomes, next to the current one"). A registration's
``[[changes]]`` say when each change was made (``after_outcomes``) and, where a change replaced a
claim's region or gates, what they were before it (``replaced``, :class:`~harness.verdicts.
registration.Replaced`). :func:`as_before` rebuilds each claim from those records: its region as
the earliest change made after outcomes that replaced its region recorded it, its gates likewise,
so the claim as it stood before the first such change of each. :func:`rejudged` judges a run's
claims table again against those claims from each row's own estimate (recomputed from the run's
archived data by the study's analysis, never copied from a report); the study then applies the
earlier gates to the run's facts (``Study.claims_as_registered``), and a pool pools the runs as
it pools today's (:func:`harness.verdicts.run_pooling.pooled_verdict`).

What it does not undo, said beside every such verdict (:attr:`Before.limits`): a change made after
outcomes that records nothing it replaced, or records in words (``also``) what else it replaced
that no record can restore (a quantity, the sizes counted, a validity rule, the analysis's code),
stands as today in that part, named with those words; a change that left no record of a region or
gates it replaced cannot be undone; the earlier verdict is the claim's region and gates as
registered before, over today's estimates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from . import disclosure
from .claims import INVALID, NOT_TESTABLE, WITHDRAWN, Claim, judge
from .intervals import Estimate
from .registration import DesignChange, Registration

#: the pooled table's columns for it (harness.verdicts.pool writes them, pool_report shows them)
COLUMN, HOW = "before outcomes", "before outcomes: how"
#: the column's value for a claim whose earlier verdict cannot be recomputed, and for one no
#: change made after outcomes touched (a referee of S4 asked why the column was empty)
NOT_RECORDED, AS_TODAY = "not recorded", "as today"


@dataclass(frozen=True)
class Before:
    """A claim as it stood before the changes made after outcomes that replaced its region or gates."""

    claim: Claim  # today's claim with the earlier region and gates
    region_from: DesignChange | None  # the change whose record gave the earlier region (None: today's)
    gates_from: DesignChange | None  # likewise for the gates
    #: changes made after outcomes naming it that record nothing of it, or record in words (also)
    #: what else they replaced that no record restores: that part of them stands as today
    unrecorded: tuple[DesignChange, ...]

    def how(self, registration: Registration) -> str:
        """Which registration the earlier verdict is under, and what it leaves as today, in words."""
        parts = []
        if self.region_from is not None:
            parts.append(f"its region as registered before change {disclosure.label(registration, self.region_from)}"
                         f" ({self.claim.region.text(self.claim.unit)})")
        if self.gates_from is not None:
            gates = ", ".join(g.name for g in self.claim.gates) or "none"
            parts.append(f"its gates as registered before change "
                         f"{disclosure.label(registration, self.gates_from)} ({gates})")
        return ("judged from the runs' archived data under " + " and ".join(parts)
                + " (the first changes made after outcomes were read that replaced them, each "
                "recording what it replaced); " + self.limits(registration))

    def limits(self, registration: Registration) -> str:
        if not self.unrecorded:
            return "every other part of the claim (its quantity, the analysis) as today"
        silent = [c for c in self.unrecorded if c.replaced.get(self.claim.id) is None]
        said = [c for c in self.unrecorded if c.replaced.get(self.claim.id) is not None]
        parts = []
        if said:
            parts.append("what these changes made after outcomes replaced that no record restores, in "
                         "their words: " + "; ".join(f"#{registration.changes.index(c) + 1}: "
                                                     f"{c.replaced[self.claim.id].also}" for c in said))
        if silent:
            parts.append("whatever changes " + ", ".join(f"#{registration.changes.index(c) + 1}"
                                                         for c in silent)
                         + " (made after outcomes, naming it, recording nothing of it) changed beyond "
                         "its region and gates -- quantities, sizes counted, validity rules, the "
                         "analysis's code")
        return "as today: " + "; and ".join(parts) + "; and every other part of the claim"


def as_before(registration: Registration, claim_id: str) -> Before | None:
    """``claim_id`` with the region and gates it had before the first change made after outcomes
    that replaced each (as that change recorded); None when no such change recorded either, and for a
    claim a change withdrew (never judged, so not as registered before either)."""
    claim = registration.claim(claim_id)
    if registration.withdrawn(claim_id) is not None:
        return None
    region = gates = None
    region_from = gates_from = None
    late = disclosure.after_outcomes(registration, claim_id)
    for change in late:  # in the registration's order: the earliest record is the earlier state
        record = change.replaced.get(claim_id)
        if record is None:
            continue
        if region is None and record.region is not None:
            region, region_from = record.region, change
        if gates is None and record.gates is not None:
            gates, gates_from = record.gates, change
    if region_from is None and gates_from is None:
        return None
    earlier = replace(claim, region=region if region is not None else claim.region,
                      gates=gates if gates is not None else claim.gates)
    unrecorded = tuple(c for c in late if claim_id not in c.replaced or c.replaced[claim_id].also)
    return Before(earlier, region_from, gates_from, unrecorded)


def earlier_claims(registration: Registration) -> dict[str, Before]:
    """Every claim of ``registration`` whose changes made after outcomes recorded what they replaced."""
    out = {}
    for claim in registration.claims:
        before = as_before(registration, claim.id)
        if before is not None:
            out[claim.id] = before
    return out


def estimate_of(row: pd.Series) -> Estimate | None:
    """A claims table row's estimate, as its analysis made it (value, interval, units, method)."""
    value = float(row["value"]) if pd.notna(row.get("value")) else math.nan
    if not math.isfinite(value):
        return None
    method = str(row.get("interval") or "")
    unit = str(row.get("unit") or "")
    scale = ("log-gain" if unit == "%" else "log") if method.startswith("geometric mean") else "linear"

    def end(key: str) -> float | None:
        x = row.get(key)
        return float(x) if x is not None and pd.notna(x) and math.isfinite(float(x)) else None

    return Estimate(value, end("low"), end("high"), int(row["n"]), unit,
                    str(row.get("units") or "repetitions"), method, scale)


def rejudged(frame: pd.DataFrame, claims: dict[str, Claim]) -> pd.DataFrame:
    """``frame`` (a run's claims table before its gates are applied) with each claim of ``claims``
    judged again against that claim's region from the row's own estimate; a row its analysis made
    invalid or not testable keeps that outcome (its region shown as the earlier one)."""
    frame = frame.copy()
    for i, cid in frame["claim_id"].items():
        claim = claims.get(cid)
        if claim is None:
            continue
        frame.at[i, "region"] = claim.region.text(claim.unit)
        frame.at[i, "region_why"] = claim.region.why
        if frame.at[i, "outcome"] in (INVALID, NOT_TESTABLE):
            continue
        row = frame.loc[i]
        verdict = judge(claim, estimate_of(row), str(row.get("note") or ""))
        for key, value in verdict.row().items():
            if key in ("outcome", "reason", "ours", "more_needed"):
                frame.at[i, key] = value
    return frame


def brief(outcome: str, ours: str, region: str) -> str:
    """The earlier verdict in one cell: outcome, estimate, the region it was judged against."""
    return f"{outcome}: {ours} against {region}" if ours and ours != "-" else f"{outcome} (region {region})"


def without_record(registration: Registration, claim_id: str) -> tuple[str, str]:
    """The ``before outcomes`` cell and its ``how`` for a claim :func:`as_before` cannot rebuild:
    :data:`NOT_RECORDED` when changes made after outcomes touched it (naming it, or the whole
    design) and recorded nothing of what they replaced; :data:`AS_TODAY` when none did;
    :data:`~harness.verdicts.claims.WITHDRAWN` when a change withdrew it (never judged)."""
    withdrawn_by = registration.withdrawn(claim_id)
    if withdrawn_by is not None:
        return WITHDRAWN, (f"withdrawn by change {disclosure.label(registration, withdrawn_by)}: never "
                           "judged, so not as registered before outcomes either")
    named = disclosure.after_outcomes(registration, claim_id)
    design = disclosure.whole_design_after_outcomes(registration)
    if not named and not design:
        return AS_TODAY, ("no change made after outcomes were read names this claim or the whole "
                          "design: it is judged as registered before any outcome")
    parts = []
    if named:
        parts.append("changes " + ", ".join(disclosure.label(registration, c) for c in named)
                     + " name this claim")
    if design:
        parts.append("changes " + ", ".join(disclosure.label(registration, c) for c in design)
                     + " changed the whole design")
    said = [c for c in named if c.replaced.get(claim_id) is not None and c.replaced[claim_id].also]
    words = ("; what they replaced, in their words: " + "; ".join(
        f"#{registration.changes.index(c) + 1}: {c.replaced[claim_id].also}" for c in said)) if said else ""
    return NOT_RECORDED, (" and ".join(parts) + "; made after outcomes were read, they record no "
                          "region or gates they replaced, so its verdict as registered before them "
                          "cannot be recomputed (each change is printed whole above)" + words)

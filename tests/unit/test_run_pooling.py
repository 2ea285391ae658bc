"""A claim pooled from each run's own estimate (harness.verdicts.run_pooling): the run is the
unit, each run judged with its own record."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from harness.verdicts.claims import (
    INVALID,
    NOT_TESTABLE,
    PAPER,
    REPRODUCED,
    Claim,
    Region,
    judge,
    region_from_bounds,
    table,
)
from harness.verdicts.intervals import mean_estimate, t975
from harness.verdicts.run_pooling import pooled_verdict

CLAIM = Claim("c.ratio", "about 2x", "2x", Region(1.8, 2.2, "the margin"), "x", PAPER)


def own_row(values, claim=CLAIM, log=True) -> pd.Series:
    """One run's own row, as its own analysis makes it."""
    return table([judge(claim, mean_estimate(values, claim.unit, log=log))]).iloc[0]


def test_the_pooled_estimate_is_the_mean_of_the_runs_own_on_their_scale():
    runs = [[1.9, 2.0, 2.1], [2.0, 2.1, 2.2], [1.95, 2.05, 2.0]]
    rows = [own_row(v) for v in runs]
    verdict, _ = pooled_verdict(CLAIM, rows, ["a", "b", "c"])
    logs = [math.log(r["value"]) for r in rows]
    mean = sum(logs) / 3
    sd = (sum((x - mean) ** 2 for x in logs) / 2) ** 0.5
    est = verdict.estimate
    assert est.value == pytest.approx(math.exp(mean))
    assert est.high == pytest.approx(math.exp(mean + t975(2) * sd / math.sqrt(3)))
    assert est.n == 3 and est.units == "runs" and "Student t interval over 3 runs" in est.method
    assert min(r["value"] for r in rows) < est.value < max(r["value"] for r in rows)
    assert verdict.outcome == REPRODUCED


def test_a_claim_not_testable_in_one_run_is_not_testable_pooled():
    rows = [own_row([1.9, 2.0, 2.1]), own_row([2.0, 2.1, 2.2]),
            table([judge(CLAIM, None)]).iloc[0]]  # no measurement in run c
    verdict, _ = pooled_verdict(CLAIM, rows, ["a", "b", "c"])
    assert verdict.outcome == NOT_TESTABLE
    assert verdict.reason.startswith("not testable in 1 of 3 runs") and "run c:" in verdict.reason


def test_a_claim_invalid_in_one_run_is_invalid_pooled():
    bad = own_row([1.9, 2.0, 2.1]).copy()
    bad["outcome"], bad["reason"] = INVALID, "rests on invalid points: 3000 Mbit/s on a 1000 wire"
    verdict, _ = pooled_verdict(CLAIM, [own_row([2.0, 2.1, 2.2]), bad], ["a", "b"])
    assert verdict.outcome == INVALID and "run b: rests on invalid points" in verdict.reason
    assert verdict.reason.startswith("invalid in 1 of 2 runs (the pooled estimate is withheld by "
                                     "rule; each run's own is listed): ")
    assert verdict.estimate is None  # withheld, and the reason says so (the fourth S0 review)


def test_a_pooled_invalid_row_names_the_runs_that_found_the_claim_not_testable_instead():
    """Invalid in run a (a point impossible in its own lab), not testable in run b (its points
    possible in its lab, outside the paper's regime): the pooled row is invalid and says both."""
    bad = own_row([1.9, 2.0, 2.1]).copy()
    bad["outcome"], bad["reason"] = INVALID, "rests on invalid points: 3000 Mbit/s on a 1000 wire"
    other = own_row([2.0, 2.1, 2.2]).copy()
    other["outcome"], other["reason"] = NOT_TESTABLE, "rests on 4 points outside the paper's regime"
    verdict, _ = pooled_verdict(CLAIM, [bad, other], ["a", "b"])
    assert verdict.outcome == INVALID and "run a: rests on invalid points" in verdict.reason
    assert "; not testable in 1 of 2 runs: run b: rests on 4 points outside" in verdict.reason


def test_a_claim_not_testable_per_point_in_every_run_shows_the_pooled_estimate_beside_it():
    """The fourth S0 review: a claim each run left not testable for points outside the paper's
    regime that its lab makes possible (judge's outside) is pooled as not testable here with the
    pooled figure, as the referee computed it, not hidden as an invalid one was."""
    from harness.verdicts.validity import Invalid

    point = Invalid("repetition 1, direct, 256 B", "ping-pong rate", 287.1, 98.61, "Mbit/s",
                    "a bulk transfer carried 95.74 Mbit/s; the wire probe shows this lab's wire not "
                    "serialising 256 B")
    rows = [table([judge(CLAIM, mean_estimate(v, "x", log=True), outside=[point])]).iloc[0]
            for v in ([2.9, 3.0, 3.1], [2.8, 2.9, 2.85], [2.6, 2.65, 2.62])]
    assert all(r["outcome"] == NOT_TESTABLE and "measured anyway: " in r["reason"] for r in rows)
    assert all(r["invalid"] == "" for r in rows)  # not an invalid point: none listed as one
    verdict, _ = pooled_verdict(CLAIM, rows, ["a", "b", "c"])
    assert verdict.outcome == NOT_TESTABLE and verdict.estimate is not None
    pooled = table([verdict]).iloc[0]
    assert pooled["ours"].startswith(f"{verdict.estimate.value:.2f}x [") and "(n=3)" in pooled["ours"]
    assert "possible in this lab (not invalid)" in verdict.reason


def test_a_pooled_invalid_row_repeats_each_runs_reason_briefly():
    """S0's first pooled reference of 2026-11-29T11:34Z said three runs' whole lists of
    impossible points and gate figures in one row (over 3000 characters each)."""
    long = "rests on invalid points: " + "; ".join(f"repetition {i}, direct, 1024 B: 190 Mbit/s > 98"
                                                 for i in range(60))
    rows = []
    for _ in range(3):
        row = own_row([1.9, 2.0, 2.1]).copy()
        row["outcome"], row["reason"] = INVALID, long
        rows.append(row)
    verdict, _ = pooled_verdict(CLAIM, rows, ["a", "b", "c"])
    assert verdict.reason.startswith("invalid in 3 of 3 runs (the pooled estimate is withheld by rule; "
                                     "each run's own is listed): run a: rests on invalid points")
    assert len(verdict.reason) < 3 * 460 and verdict.reason.count("the run's own report has the rest") == 3


def test_a_region_every_runs_design_set_alike_is_pooled_and_different_ones_are_not():
    """A region the registered rule makes from each run's design (S3's "most": at least
    k // 2 + 1 of the run's k points) is judged where every run's design made the same one:
    the S3 reference of 2026-11-29 was 'not testable' for want of it (its referee: 'wrong';
    six repetitions at 5-6 of 12 against at least 7 of 12)."""
    wider = Claim(CLAIM.id, CLAIM.text, CLAIM.paper, Region(1.2, 2.5, "at least 7 of 12"), "x", PAPER)
    rows = [own_row([1.55, 1.6, 1.65], wider), own_row([1.6, 1.62, 1.64], wider)]
    verdict, carried = pooled_verdict(CLAIM, rows, ["a", "b"], [wider.region, wider.region])
    assert verdict.outcome == REPRODUCED and verdict.claim.region == wider.region
    assert "every run's design set alike by the registered rule (at least 7 of 12)" in carried["note"]
    # without the runs' regions, or with regions their designs set differently: not pooled
    other = Region(1.4, 2.6, "at least 5 of 8")
    for regions in (None, [wider.region, other], [wider.region, None]):
        verdict, _ = pooled_verdict(CLAIM, rows, ["a", "b"], regions)
        assert verdict.outcome == NOT_TESTABLE and "not pooled" in verdict.reason
        assert verdict.estimate is not None  # shown beside, deciding nothing


def test_a_claims_table_keeps_each_claims_region_exactly_for_a_pool():
    region = Region(7 / 12, math.inf, "at least 7 of 12")
    claim = Claim("c.share", "most", "most", region, "", PAPER)
    frame = table([judge(claim, mean_estimate([0.5, 0.42], units="repetitions"))])
    bounds = frame.attrs["regions"]["c.share"]
    assert bounds == {"low": 7 / 12, "high": None, "why": "at least 7 of 12"}
    assert region_from_bounds(bounds) == region


def test_a_gain_is_pooled_on_the_log_of_one_plus_it():
    gain = Claim("c.gain", "+25 %", "+25%", Region(13.6, 37.5, "margin"), "%", PAPER)

    def row(ratios):
        return table([judge(gain, mean_estimate(ratios, log=True).as_gain_pct())]).iloc[0]

    rows = [row([1.2, 1.25, 1.3]), row([1.3, 1.35, 1.4])]
    verdict, _ = pooled_verdict(gain, rows, ["a", "b"])
    expected = (math.exp((math.log1p(rows[0]["value"] / 100) + math.log1p(rows[1]["value"] / 100)) / 2)
                - 1) * 100
    assert verdict.estimate.value == pytest.approx(expected)
    assert verdict.estimate.scale == "log-gain"

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
    table,
)
from harness.verdicts.intervals import mean_estimate, t975
from harness.verdicts.run_pooling import pooled_verdict
from harness.verdicts.validity import check_rate, check_rounds, check_share

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
    assert verdict.reason.startswith("invalid in 1 of 2 runs: ")
    assert verdict.estimate is None  # withheld: the pooled report says so (the fourth S0 review)


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


def _invalid_row(points) -> pd.Series:
    """One run's own row of a claim resting on ``points`` (harness.verdicts.validity.Invalid)."""
    return table([judge(CLAIM, mean_estimate([1.9, 2.0, 2.1], CLAIM.unit, log=True),
                        invalid=points)]).iloc[0]


def test_a_pooled_invalid_row_counts_the_runs_points_by_kind_with_a_whole_example_each():
    """S0's pooled reference of 2026-11-29T11:35Z cut each run's reason at 360 characters,
    mid-point ("... 180.8 Mbit/s ... (the run's own report has the rest)"), and a kind of point
    listed after the first three in a run never showed: here the CPU shares of run c."""
    fast = [[check_rate(f"repetition {r}, direct, {s} B", 190.0 + r, 100.0) for r in (1, 2, 3)
             for s in (256, 512, 1024, 2048)] for _ in range(3)]
    busy = [check_share("repetition 2, reducer", 130.0), check_share("repetition 3, reducer", 121.5)]
    rows = [_invalid_row(fast[0]), _invalid_row(fast[1][:5]), _invalid_row(fast[2] + busy)]
    verdict, carried = pooled_verdict(CLAIM, rows, ["a", "b", "c"])
    reason = verdict.reason
    assert verdict.outcome == INVALID and reason.startswith("invalid in 3 of 3 runs: 31 invalid points")
    assert ("goodput above its bound: 29 points in 3 runs (run a: 12, run b: 5, run c: 12), e.g. run a: "
            + fast[0][0].text()) in reason
    assert "CPU share above its bound: 2 points in 1 run (run c: 2), e.g. run c: " + busy[0].text() in reason
    assert "..." not in reason and "has the rest" not in reason
    assert reason.index("goodput above") < reason.index("CPU share above")  # the most points first
    # every point of every run stays in the invalid column
    assert all(p.text() in carried["invalid"] for p in fast[0] + fast[2] + busy)


def test_a_pooled_invalid_row_whose_run_lists_no_point_says_that_runs_reason_whole():
    listed = _invalid_row([check_rounds("tipc 1:48 x 64 KB, repetition 1", 0)])
    bare = own_row([2.0, 2.1, 2.2]).copy()
    bare["outcome"], bare["reason"] = INVALID, "rests on invalid points: " + "x" * 400
    gated = listed.copy()
    gated["reason"] += "; and the lab is not in the paper's regime: serialising_wire failed (1 of 3)"
    verdict, _ = pooled_verdict(CLAIM, [listed, bare, gated], ["a", "b", "c"])
    assert ("completed rounds below its bound: 2 points in 2 runs (run a: 1, run c: 1), e.g. run a: tipc 1:48 x "
            "64 KB") in verdict.reason
    assert "run b: rests on invalid points: " + "x" * 400 in verdict.reason
    assert verdict.reason.endswith("and in run c the lab is not in the paper's regime (the failed gates' "
                                   "figures: the gates column)")


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


def test_a_claim_not_testable_in_every_run_shows_the_region_its_runs_designs_set():
    """S3's pooled reference of 2026-11-29T14:22Z printed "s3.tipc_best_most" against the
    registration's placeholder (>= 0.5) because every run found it not testable, while each run
    and the registered rule said at least 7 of 12 (>= 0.5833); its referee: under the printed
    region the interval straddles, under the true one it lies below."""
    wider = Claim(CLAIM.id, CLAIM.text, CLAIM.paper, Region(1.2, 2.5, "at least 7 of 12"), "x", PAPER)
    rows = []
    for values in ([1.55, 1.6, 1.65], [1.6, 1.62, 1.64]):
        row = own_row(values, wider).copy()
        row["outcome"], row["reason"] = NOT_TESTABLE, "the lab is not in the paper's regime: a gate failed"
        rows.append(row)
    verdict, _ = pooled_verdict(CLAIM, rows, ["a", "b"], [wider.region, wider.region])
    assert verdict.outcome == NOT_TESTABLE and verdict.claim.region == wider.region
    assert table([verdict]).iloc[0]["region"] == wider.region.text("x")
    # designs that set different regions: the registration's is shown, and why not pooled is moot
    other = Region(1.4, 2.6, "at least 5 of 8")
    verdict, _ = pooled_verdict(CLAIM, rows, ["a", "b"], [wider.region, other])
    assert verdict.outcome == NOT_TESTABLE and verdict.claim.region == CLAIM.region


def test_archived_claims_tables_with_regions_in_their_metadata_still_load(tmp_path):
    """Until 2026-11-29 a claims table carried its regions in DataFrame.attrs, which parquet
    keeps in the file's metadata; the pool now takes them from Study.design_regions, and those
    archived files load as before."""
    from harness.studies.base import RunData

    frame = table([judge(CLAIM, mean_estimate([1.9, 2.0, 2.1], "x", log=True))])
    frame.attrs["regions"] = {CLAIM.id: {"low": 1.8, "high": 2.2, "why": "the margin"}}
    frame.to_parquet(tmp_path / "claims.parquet", index=False)
    (tmp_path / "run.json").write_text('{"run_id": "old"}')
    loaded = RunData.load(tmp_path).tables["claims"]
    pd.testing.assert_frame_equal(loaded, frame)
    assert "regions" not in table([judge(CLAIM, None)]).attrs  # nothing travels there any more


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


def test_a_pooled_verdict_says_first_the_stated_condition_its_runs_found_unmet():
    """A claim judged under a stated condition its runs could not meet (a gate with ``unmet`` words,
    harness.verdicts.gates.registry.apply) keeps saying so when pooled: the pooled reason opens with
    the words and the runs that failed it; a run that met it is not named."""
    from dataclasses import replace

    from harness.verdicts.gates.registry import Gate, apply

    words = "judged under the paper's stated testbed only: the relays could not be made to limit here"
    gate = Gate("at_most", {"table": "bench", "column": "iperf_mbit", "max": 100.0, "unmet": words})
    stated = replace(CLAIM, gates=(gate,))
    fast = {"bench": pd.DataFrame({"iperf_mbit": [5000.0]})}
    slow = {"bench": pd.DataFrame({"iperf_mbit": [60.0]})}
    rows = [apply(table([judge(stated, mean_estimate(v, "x", log=True))]), {}, bench,
                  {stated.id: stated.gates}).iloc[0]
            for v, bench in (([1.9, 2.0, 2.1], fast), ([2.0, 2.1, 2.2], fast), ([1.95, 2.05, 2.0], slow))]
    verdict, carried = pooled_verdict(stated, rows, ["a", "b", "c"])
    assert verdict.outcome == REPRODUCED
    assert verdict.reason.startswith(f"{words} (in runs a, b; the figures: the gates column); the interval")
    assert "at_most: FAILED" in carried["gates"]
    everywhere, _ = pooled_verdict(stated, rows[:2], ["a", "b"])
    assert f"{words} (in all 2 runs" in everywhere.reason
    plain, _ = pooled_verdict(CLAIM, rows, ["a", "b", "c"])
    assert not plain.reason.startswith(words)


def test_a_pooled_reason_says_once_what_every_run_says_and_then_each_runs_own_figures():
    """The fourth S3 review: 'per-run gate texts repeated in full for each claim'. A clause every
    run gives word for word is said once; a '; ' inside parentheses does not split a clause."""
    from harness.verdicts.run_pooling import clauses, said_once

    tcg = "the lab is not in the paper's regime: accelerated_virtualisation failed (TCG; emulated)"
    reasons = [("a", f"{tcg}; at_most failed (drops 0.30..0.32); measured anyway: 0.20x"),
               ("b", f"{tcg}; at_most failed (drops 0.28..0.31); measured anyway: 0.22x")]
    assert clauses(reasons[0][1]) == [tcg, "at_most failed (drops 0.30..0.32)", "measured anyway: 0.20x"]
    assert said_once(reasons) == (f"; in every run: {tcg}; run a: at_most failed (drops 0.30..0.32); "
                                  "measured anyway: 0.20x; run b: at_most failed (drops 0.28..0.31); "
                                  "measured anyway: 0.22x")
    apart = [("a", "gate x failed"), ("b", "gate y failed")]
    assert said_once(apart) == ": run a: gate x failed; run b: gate y failed"
    assert said_once([("a", tcg), ("b", tcg + "; measured anyway: 1")]) == (
        f"; in every run: {tcg}; run b: measured anyway: 1")

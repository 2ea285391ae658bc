"""Outcomes decided by intervals: inside, outside, straddling, untestable."""

import math

import pandas as pd
import pytest

from harness.verdicts.claims import (
    COLUMNS,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    PAPER,
    REPRODUCED,
    TARGET,
    Claim,
    Region,
    judge,
    not_testable,
    samples_to_decide,
    summary,
    table,
)
from harness.verdicts.intervals import Estimate, mean_estimate

ABOUT_2_1 = Claim("t.ratio", "two proxies / direct", "about 2.1x",
                  Region.about(2.1, 0.1, "'about 2.1x'"), "x")


def test_about_a_value_means_one_unit_of_its_last_digit_and_says_so():
    region = Region.about(2.1, 0.1, "'2.1배 정도'")
    assert (region.low, region.high) == pytest.approx((2.0, 2.2))
    assert "2.1배 정도" in region.why and "± 0.1" in region.why
    plain = Region.stated(934, 1, "'934Mbps'")
    assert (plain.low, plain.high) == (933.5, 934.5)


def test_an_interval_clearly_inside_is_reproduced():
    v = judge(ABOUT_2_1, Estimate(2.1, 2.05, 2.15, 12, "x"))
    assert v.outcome == REPRODUCED and v.more_needed is None


def test_an_interval_clearly_outside_is_not_reproduced():
    v = judge(ABOUT_2_1, Estimate(1.5, 1.4, 1.6, 12, "x"))
    assert v.outcome == NOT_REPRODUCED
    v = judge(ABOUT_2_1, Estimate(3.0, 2.8, 3.2, 12, "x"))
    assert v.outcome == NOT_REPRODUCED


def test_a_straddling_interval_is_inconclusive_with_a_sample_estimate():
    v = judge(ABOUT_2_1, Estimate(2.15, 2.05, 2.25, 4, "x"))
    assert v.outcome == INCONCLUSIVE
    # the upper half-width 0.10 must shrink to 0.05 (distance to 2.2): 4 x (0.10/0.05)^2
    assert v.more_needed == 16 and "16 repetitions" in v.reason


def test_a_point_estimate_inside_does_not_decide_by_itself():
    """The tolerance never decides: ours 2.1 exactly, but a wide interval."""
    v = judge(ABOUT_2_1, mean_estimate([1.5, 2.9], "x"))
    assert v.estimate.value == pytest.approx(2.2, abs=0.11) and v.outcome == INCONCLUSIVE


def test_one_sample_is_inconclusive_and_says_why():
    v = judge(ABOUT_2_1, mean_estimate([2.1], "x"))
    assert v.outcome == INCONCLUSIVE and "no interval" in v.reason


def test_no_measurement_is_not_testable_and_a_reason_is_kept():
    assert judge(ABOUT_2_1, None).outcome == NOT_TESTABLE
    v = not_testable(ABOUT_2_1, "TIPC bypasses the switch in one kernel")
    assert v.outcome == NOT_TESTABLE and "bypasses" in v.reason


def test_one_sided_regions():
    below = Claim("t.half", "at most half", "half or less", Region.below(0.5, "'절반 이하'"), "x")
    assert judge(below, Estimate(0.3, 0.25, 0.35, 5, "x")).outcome == REPRODUCED
    assert judge(below, Estimate(1.0, 0.98, 1.02, 5, "x")).outcome == NOT_REPRODUCED
    assert judge(below, Estimate(0.5, 0.45, 0.55, 5, "x")).outcome == INCONCLUSIVE
    assert Region.below(0.5, "").text("x") == "<= 0.5x"


def test_samples_to_decide_is_none_on_the_bound_or_without_interval():
    assert samples_to_decide(Estimate(2.2, 2.1, 2.3, 5), ABOUT_2_1.region) is None
    assert samples_to_decide(Estimate(2.2, None, None, 1), ABOUT_2_1.region) is None


def test_an_outside_estimate_whose_interval_crosses_both_bounds_needs_the_near_one_cleared():
    # ours 3.0, interval 1.5..4.5 crosses 2.0 and 2.2; deciding "not reproduced" needs the
    # lower half-width 1.5 to shrink to 0.8 (distance to 2.2): 5 x (1.5/0.8)^2 = 17.6 -> 18,
    # not the 5 x (1.5/1.0)^2 = 11.25 -> 12 that clearing the far bound 2.0 would take
    assert samples_to_decide(Estimate(3.0, 1.5, 4.5, 5), ABOUT_2_1.region) == 18


def test_samples_to_decide_a_t_interval_counts_its_falling_critical_value():
    t2 = "mean, 95 % Student t interval over 2 repetitions"
    # half-width 0.10 must halve; with 2 units t = 12.7, with 3 t = 4.3: one more repetition
    # shrinks it by 12.7/sqrt(2) / (4.3/sqrt(3)) = 3.6x, where 1/sqrt(n) alone would ask for 8
    assert samples_to_decide(Estimate(2.15, 2.05, 2.25, 2, method=t2), ABOUT_2_1.region) == 3
    # a 20x shrink: t(N-1) sd/sqrt(N) must reach 1/20 of 12.7 sd/sqrt(2) = 8.98 sd / 20; the
    # interval stays Student t up to 29 units: N = 22 (t(21) / sqrt(22) = 0.443), not the
    # normal's 20 (1.96 / sqrt(20) = 0.438 would be reached only if N = 20 gave a normal interval)
    far = Estimate(2.1975, 2.1475, 2.2475, 2, method=t2)  # half 0.05, distance 0.0025
    assert samples_to_decide(far, ABOUT_2_1.region) == 22


def test_table_has_the_archived_columns_and_summary_counts_paper_claims_only():
    target = Claim("t.hop", "hop <= 30 us", "-", Region.below(30, "ours"), "us", TARGET)
    frame = table([judge(ABOUT_2_1, Estimate(2.1, 2.05, 2.15, 12, "x")),
                   judge(ABOUT_2_1, Estimate(3.0, 2.9, 3.1, 12, "x")),
                   judge(ABOUT_2_1, Estimate(2.2, 2.0, 2.4, 3, "x")),
                   judge(target, Estimate(40, 35, 45, 3, "us"))])
    assert list(frame.columns) == COLUMNS
    assert list(frame.source) == [PAPER, PAPER, PAPER, TARGET]
    assert summary(frame) == "1 reproduced, 1 not reproduced, 1 inconclusive"
    row = frame.iloc[0]
    assert row.n == 12 and row.low == 2.05 and row.region == "2..2.2x"
    assert math.isnan(frame.iloc[3].value) is False
    # round trip through the CSV a run archives
    back = pd.read_csv(pd.io.common.StringIO(frame.to_csv(index=False)))
    assert summary(back) == summary(frame)


def test_an_interval_touching_the_bound_from_outside_is_inconclusive_with_a_count():
    most = Claim("t.most", "most points", "most", Region.above(0.5, "more than half"), "")
    v = judge(most, Estimate(0.38, 0.38, 0.5, 10))
    assert v.outcome == INCONCLUSIVE and v.more_needed is not None


def test_an_estimate_too_close_to_the_bound_says_so():
    at_least = Claim("t.ge", "srd >= socat", "-", Region.above(1.0, "ours"), "x", TARGET)
    v = judge(at_least, Estimate(0.99, 0.56, 1.75, 2, "x"))
    assert v.outcome == INCONCLUSIVE and "too close to the bound" in v.reason


def test_a_claim_resting_on_an_impossible_point_is_invalid_never_decided():
    from harness.verdicts.claims import INVALID
    from harness.verdicts.validity import check_rate

    bad = check_rate("ping-pong 16 KB, repetition 2", 190.0, 100.0)
    inside = Estimate(2.1, 2.05, 2.15, 12, "x")  # would be reproduced
    v = judge(ABOUT_2_1, inside, invalid=[bad, None])
    assert v.outcome == INVALID and "190 Mbit/s" in v.reason and v.estimate is inside
    assert table([v]).loc[0, "invalid"] == bad.text()
    assert judge(ABOUT_2_1, inside, invalid=[None]).outcome == REPRODUCED


def test_a_point_outside_the_papers_regime_but_possible_here_is_not_testable_with_the_estimate():
    """The fourth S0 review: a point the lab's own apparatus makes possible but the paper's wire
    could not is a regime failure, not an impossibility: not testable here, measured anyway, and
    listed as no invalid point; an impossible point beside it still makes the claim invalid."""
    from harness.verdicts.claims import INVALID
    from harness.verdicts.validity import check_capacity, check_rate

    faster = check_capacity("repetition 1, direct, 256 B", 287.1, 95.74, "direct")
    inside = Estimate(2.1, 2.05, 2.15, 12, "x")
    v = judge(ABOUT_2_1, inside, outside=[faster, None])
    assert v.outcome == NOT_TESTABLE and v.estimate is inside and v.invalid == ()
    assert "rests on 1 point outside the paper's regime, possible in this lab (not invalid)" in v.reason
    assert "287.1 Mbit/s" in v.reason and v.reason.endswith(f"measured anyway: {inside.text()}")
    assert table([v]).loc[0, "invalid"] == ""
    bad = check_rate("ping-pong 16 KB, repetition 2", 190.0, 100.0)
    assert judge(ABOUT_2_1, inside, invalid=[bad], outside=[faster]).outcome == INVALID
    assert judge(ABOUT_2_1, inside, outside=[None]).outcome == REPRODUCED


def test_an_interval_end_that_reads_like_a_bound_is_printed_to_tell_them_apart():
    """The fourth S0 review: 0.45438 against 0.45455 both read "0.45". The row's estimate gets the
    digits that tell each figure from the region's bounds, and an end that reads like a bound even
    at the region's four digits is named in the reason with both to five."""
    halved = Claim("t.halved", "halved", "0.5x", Region(0.45454545, 0.55, "the margin"), "x")
    v = judge(halved, Estimate(0.44768, 0.44108, 0.45438, 3, "x", "runs"))
    assert v.outcome == NOT_REPRODUCED
    assert table([v]).loc[0, "ours"] == "0.45x [0.44, 0.4544] (n=3)"  # beside "0.4545..0.55x"
    near = judge(halved, Estimate(0.45, 0.4460, 0.454521, 3, "x", "runs"))
    assert "(its upper end 0.45452 against the bound 0.45455)" in near.reason
    assert table([near]).loc[0, "ours"].endswith("0.45452] (n=3)")
    clear = judge(halved, Estimate(0.40, 0.38, 0.42, 3, "x", "runs"))
    assert "against the bound" not in clear.reason and table([clear]).loc[0, "ours"] == "0.40x [0.38, 0.42] (n=3)"


def test_targets_and_lab_checks_are_met_or_not_met_never_reproduced():
    from harness.verdicts.claims import LAB, MET, NOT_MET, summaries

    ours = Claim("t.hop", "relay hop", "-", Region.below(30, "our target"), "us", TARGET)
    lab = Claim("t.paths", "both paths", "-", Region(0.25, 0.75, "a lab check"), "", LAB)
    verdicts = [judge(ours, Estimate(20, 18, 22, 10, "us")),
                judge(lab, Estimate(0.1, 0.05, 0.15, 10)),
                judge(ABOUT_2_1, Estimate(2.1, 2.05, 2.15, 12, "x"))]
    assert [v.outcome for v in verdicts] == [MET, NOT_MET, REPRODUCED]
    assert summaries(table(verdicts)) == "1 reproduced; targets: 1 met; lab checks: 1 not met"
    with pytest.raises(ValueError, match="source"):
        Claim("t.x", "x", "-", Region(), "", "ours")


def test_samples_to_decide_a_ratio_measures_its_distances_on_logs():
    """A geometric mean's interval is symmetric on logs, not in x: 2.0 [1.6, 2.5] sits
    log(2.5/2) = log(2/1.6) either side. Against the bound 2.2 the interval's upper side
    (log 1.25) must shrink to log 1.1: a factor 2.34, not (2.5-2)/(2.2-2) = 2.5 in x."""
    claim = Claim("t.r", "ratio", "about 2", Region(0, 2.2, "r"), "x")
    linear = Estimate(2.0, 1.6, 2.5, 20, "x", method="mean")
    ratio = Estimate(2.0, 1.6, 2.5, 20, "x", method="geometric mean", scale="log")
    shrink_log = math.log(1.25) / math.log(1.1)
    assert samples_to_decide(ratio, claim.region) == math.ceil(20 * shrink_log ** 2)
    assert samples_to_decide(linear, claim.region) == math.ceil(20 * 2.5 ** 2)


def test_a_gain_in_percent_keeps_its_ratios_log_scale():
    est = mean_estimate([1.10, 1.20, 1.15, 1.12, 1.18, 1.09, 1.16, 1.11, 1.14, 1.19, 1.13],
                        "x", log=True)
    gain = est.as_gain_pct()
    assert gain.unit == "%" and gain.scale == "log-gain"
    assert gain.value == pytest.approx((est.value - 1) * 100)
    region = Region(-math.inf, 14.5, "at most 14.5 %")
    # the same decision as for the ratio against 1.145
    assert samples_to_decide(gain, region) == samples_to_decide(est, Region(-math.inf, 1.145, ""))
    with pytest.raises(ValueError, match="log scale"):
        Estimate(1.0, 0.9, 1.1, 3).as_gain_pct()


def test_the_notebooks_invalid_note_lists_each_point_once_and_says_so_when_there_is_none():
    from harness.verdicts.claims import INVALID
    from harness.verdicts.invalid_points import invalid_note
    from harness.verdicts.validity import check_rate, check_rounds

    fast = check_rate("ping-pong 16 KB, repetition 2", 190.0, 100.0)
    failed = check_rounds("tipc 1:48 x 64 KB, repetition 1", 0)
    inside = Estimate(2.1, 2.05, 2.15, 12, "x")
    frame = table([judge(ABOUT_2_1, inside, invalid=[fast, failed]),
                   judge(ABOUT_2_1, inside, invalid=[failed])])
    assert list(frame.outcome) == [INVALID, INVALID]
    note = invalid_note(frame)
    assert note.count(fast.text()) == 1 and note.count(failed.text()) == 1
    assert "physically impossible or failed" in note
    clean = invalid_note(table([judge(ABOUT_2_1, inside)]))
    assert clean.startswith("**Invalid points:** none") and "190" not in clean


def test_a_single_runs_table_says_it_is_one_run_and_a_pooled_one_says_runs():
    from harness.verdicts.claims import runs_note
    from harness.verdicts.intervals import run_estimate

    one = table([judge(ABOUT_2_1, mean_estimate([2.0, 2.1, 2.2], "x"))])
    assert runs_note(one).startswith("**One run.**") and "between this run's repetitions" in runs_note(one)
    assert "harness claims pool" in runs_note(one)
    relay = table([judge(ABOUT_2_1, mean_estimate([2.0, 2.1, 2.2], "x", units="runs"))])
    assert runs_note(relay).startswith("**One run.**")  # a benchmark's "runs" are not pooled runs
    pooled = table([judge(ABOUT_2_1, run_estimate([2.0, 2.1, 2.2, 2.3], ["a", "a", "b", "c"], "x"))])
    assert runs_note(pooled).startswith("**Pooled from runs.**") and "up to 3 runs" in runs_note(pooled)


def test_a_runs_claims_section_in_its_notebook_says_it_is_one_run(monkeypatch):
    import IPython.display

    from harness.verdicts.claims import display

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    display(table([judge(ABOUT_2_1, mean_estimate([2.0, 2.1, 2.2], "x"))]), "verdict")
    texts = [getattr(obj, "data", "") for obj in shown]
    assert any("**One run.**" in text and "harness claims pool" in text for text in texts)


def test_many_invalid_points_are_said_as_kinds_with_counts_and_a_first_point():
    """Beyond LISTED_POINTS a report lists one line per kind of invalid point (what it broke,
    figures aside), with its count and its first point: S0's pooled reference had 639 points
    over 650 lines, 3 kinds."""
    from harness.verdicts.invalid_points import LISTED_POINTS, invalid_note
    from harness.verdicts.validity import check_rate, check_rounds

    fast = [check_rate(f"ping-pong {k} KB, repetition {r}", 150.0 + k, 100.0)
            for k in (1, 2, 4, 8) for r in range(1, 7)]
    failed = [check_rounds(f"tipc 1:48 x {k} KB, repetition 1", 0) for k in (32, 64)]
    inside = Estimate(2.1, 2.05, 2.15, 12, "x")
    note = invalid_note(table([judge(ABOUT_2_1, inside, invalid=fast + failed)]))
    assert len(fast) + len(failed) > LISTED_POINTS
    assert f"{len(fast) + len(failed)} points of 2 kinds" in note
    lines = [x for x in note.splitlines() if x.startswith("* ")]
    assert len(lines) == 2 and lines[0].startswith(f"* {len(fast)} x ") and lines[1].startswith("* 2 x ")
    assert fast[0].text() in lines[0] and failed[0].text() in lines[1]


def test_a_reading_is_shown_with_its_interval_and_judged_against_nothing():
    """A figure measured outside the paper's regime (S0's relays limiting on an unshaped host):
    no region, outcome 'shown' whatever its value, counted apart from the paper's claims."""
    from harness.verdicts.claims import READING, SHOWN, summaries

    reading = Claim("t.unshaped", "two proxies / direct, unshaped", "-", Region(), "x", READING,
                    quantity="iperf3 ratio", regime="NOT the paper's regime")
    low = judge(reading, Estimate(0.49, 0.35, 0.68, 4, "x"), "iperf3 unshaped")
    high = judge(reading, Estimate(3.0, 2.0, 4.5, 4, "x"))
    assert (low.outcome, high.outcome) == (SHOWN, SHOWN)
    assert "judged against nothing" in low.reason and low.more_needed is None
    row = low.row()
    assert (row["region"], row["value"], row["low"], row["high"]) == ("-", 0.49, 0.35, 0.68)
    assert row["ours"] == "0.49x [0.35, 0.68] (n=4)" and row["source"] == READING
    one = judge(reading, Estimate(0.5, None, None, 1, "x"))
    assert one.outcome == SHOWN and "no interval" in one.reason
    assert judge(reading, None).outcome == NOT_TESTABLE  # nothing measured is not shown
    frame = table([low, judge(ABOUT_2_1, Estimate(2.1, 2.05, 2.15, 12, "x"))])
    assert summaries(frame) == "1 reproduced; readings: 1 shown"
    assert summary(frame) == "1 reproduced"  # the paper's claims alone
    with pytest.raises(ValueError, match="a reading is judged against nothing: it takes no region"):
        Claim("t.r", "r", "-", Region.below(1, "why"), "x", READING)

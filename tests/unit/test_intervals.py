"""Intervals on synthetic data whose answer is known, and the run as the top-level unit."""

import math

import numpy as np
import pytest

from harness.verdicts.intervals import (
    T_BELOW,
    Estimate,
    bootstrap_groups,
    distinct,
    mean_estimate,
    run_estimate,
    t975,
    t_quantile,
)


def test_two_repetitions_give_the_student_t_interval():
    est = mean_estimate([10.0, 12.0], "us")
    # mean 11, sd sqrt(2), t(0.975, 1) = 12.706: half-width 12.706 * sqrt(2) / sqrt(2)
    assert est.value == pytest.approx(11.0)
    assert (est.low, est.high) == pytest.approx((11 - 12.7062047, 11 + 12.7062047))
    assert est.n == 2 and "Student t" in est.method


#: Student's t quantiles to 10 digits (R's qt(), e.g. qt(0.975, 9) = 2.262157163)
KNOWN_T975 = {1: 12.706204736, 2: 4.302652730, 3: 3.182446305, 4: 2.776445105, 5: 2.570581836,
              6: 2.446911851, 7: 2.364624252, 8: 2.306004135, 9: 2.262157163, 10: 2.228138852,
              12: 2.178812830, 15: 2.131449546, 19: 2.093024054, 20: 2.085963447,
              24: 2.063898562, 28: 2.048407142, 29: 2.045229642}


@pytest.mark.parametrize("df", sorted(KNOWN_T975))
def test_t_quantiles_match_the_known_values(df):
    assert t975(df) == pytest.approx(KNOWN_T975[df], abs=2e-9)


def test_t_quantiles_at_other_levels_and_towards_the_normal():
    assert t_quantile(0.995, 5) == pytest.approx(4.032142984, abs=2e-9)
    assert t_quantile(0.9, 1) == pytest.approx(3.077683537, abs=2e-9)
    assert t_quantile(0.05, 12) == pytest.approx(-1.782287556, abs=2e-9)
    assert t975(100_000) == pytest.approx(1.959985, abs=1e-5)
    with pytest.raises(ValueError):
        t_quantile(0.975, 0)


def test_ten_repetitions_give_the_student_t_interval_not_a_bootstrap():
    values = [101.0, 98.5, 103.2, 99.1, 100.4, 97.8, 102.6, 100.9, 99.7, 101.8]
    est = mean_estimate(values, "Mbit/s")
    half = 2.262157163 * np.std(values, ddof=1) / math.sqrt(10)
    assert "Student t" in est.method and est.n == 10
    assert (est.low, est.high) == pytest.approx((np.mean(values) - half, np.mean(values) + half))


def test_student_t_up_to_29_samples_and_the_bootstrap_from_30():
    rng = np.random.default_rng(4)
    assert T_BELOW == 30
    assert "Student t" in mean_estimate(rng.normal(0, 1, 29)).method
    assert "bootstrap" in mean_estimate(rng.normal(0, 1, 30)).method


def test_one_sample_has_no_interval():
    est = mean_estimate([3.0])
    assert est.n == 1 and not est.has_interval and "no interval" in est.text()


def test_nothing_measured_is_none_and_non_finite_values_are_dropped():
    assert mean_estimate([]) is None
    assert mean_estimate([math.nan, math.inf]) is None
    assert mean_estimate([1.0, math.nan, 3.0]).n == 2


def test_ratios_average_on_a_log_scale():
    est = mean_estimate([2.0, 0.5], "x", log=True)
    assert est.value == pytest.approx(1.0)  # 2x and 0.5x are equally far from 1x
    assert est.low > 0 and est.low * est.high == pytest.approx(1.0)


def test_many_samples_use_the_bootstrap_and_cover_the_true_mean():
    rng = np.random.default_rng(1)
    values = rng.normal(100.0, 5.0, size=200)
    est = mean_estimate(values, "Mbit/s")
    assert "bootstrap" in est.method and est.n == 200
    # the standard error is 5 / sqrt(200) = 0.35: a 95 % interval about +-0.7 wide
    assert est.low < 100.0 < est.high
    assert 0.4 < (est.high - est.low) / 2 < 1.0


def test_the_interval_narrows_like_one_over_root_n():
    rng = np.random.default_rng(2)
    small = mean_estimate(rng.normal(0, 1, 50))
    large = mean_estimate(rng.normal(0, 1, 800))
    ratio = (small.high - small.low) / (large.high - large.low)
    assert 3.0 < ratio < 5.5  # sqrt(800 / 50) = 4


def test_identical_samples_give_a_zero_width_interval():
    est = mean_estimate([478.4, 478.4, 478.4])
    assert (est.low, est.high) == pytest.approx((478.4, 478.4))


def test_mapping_a_ratio_to_percent_keeps_the_interval_order():
    est = mean_estimate([1.1, 1.2, 1.15], log=True).map(lambda r: (r - 1) * 100, "%")
    assert est.unit == "%" and est.low < est.value < est.high
    assert est.value == pytest.approx(14.9, abs=0.2)


def test_groups_are_resampled_each_on_its_own():
    rng = np.random.default_rng(3)
    a = rng.normal(110.0, 10.0, 400)
    b = rng.normal(100.0, 10.0, 100)
    est = bootstrap_groups({"a": a, "b": b},
                           lambda d: 100 * (d["a"].mean() / d["b"].mean() - 1), "%")
    assert est.n == 100  # the smaller group
    assert est.low < 10.0 < est.high and est.high - est.low < 8


def test_groups_with_an_empty_one_are_none_and_a_single_value_has_no_interval():
    assert bootstrap_groups({"a": [1.0], "b": []}, lambda d: 0.0) is None
    est = bootstrap_groups({"a": [1.0, 2.0], "b": [3.0]}, lambda d: d["a"].mean())
    assert not est.has_interval


def test_estimate_text_says_value_interval_and_n():
    assert Estimate(1.91, 1.7, 2.1, 12, "x").text() == "1.91x [1.70, 2.10] (n=12)"


# -- the run as the top-level unit ------------------------------------------------------------

def _runs(rng, runs: int, per_run: int, between_sd: float, within_sd: float = 1.0, mean=100.0):
    """Units of ``runs`` runs: each run shifted by its own draw of the between-run spread."""
    values, labels = [], []
    for r in range(runs):
        shift = rng.normal(0.0, between_sd)
        values += list(mean + shift + rng.normal(0.0, within_sd, per_run))
        labels += [f"run{r}"] * per_run
    return np.array(values), labels


def test_pooled_runs_cover_a_known_between_run_spread_the_naive_interval_misses():
    # 4 runs of 10 repetitions; the runs differ by sd 2, the repetitions within one by sd 1:
    # the 40 units are not 40 independent samples of the mean, 4 runs are
    rng = np.random.default_rng(5)
    pooled_hits = naive_hits = wider = 0
    trials = 300
    for _ in range(trials):
        values, labels = _runs(rng, 4, 10, between_sd=2.0)
        pooled = run_estimate(values, labels, "Mbit/s")
        naive = mean_estimate(values, "Mbit/s")
        pooled_hits += pooled.low <= 100.0 <= pooled.high
        naive_hits += naive.low <= 100.0 <= naive.high
        wider += (pooled.high - pooled.low) > (naive.high - naive.low)
    assert pooled.n == 4 and pooled.units == "runs"
    assert "Student t interval over 4 runs" in pooled.method and "4 run means" in pooled.method
    assert 0.90 <= pooled_hits / trials <= 0.99  # a 95 % interval
    assert naive_hits / trials < 0.6  # 40 units read as independent: far too narrow
    assert wider == trials


def test_the_pooled_value_is_the_mean_of_the_run_means_on_the_estimates_scale():
    est = run_estimate([1.0, 3.0, 10.0], ["a", "a", "b"], log=False)
    assert est.value == pytest.approx((2.0 + 10.0) / 2)
    half = 12.706204736 * np.std([2.0, 10.0], ddof=1) / math.sqrt(2)
    assert (est.low, est.high) == pytest.approx((6.0 - half, 6.0 + half))
    ratio = run_estimate([2.0, 2.0, 0.5], ["a", "a", "b"], "x", log=True)
    assert ratio.value == pytest.approx(1.0) and ratio.scale == "log"
    assert ratio.low * ratio.high == pytest.approx(1.0)


def test_one_run_is_todays_interval_and_says_it_is_one_run():
    values = [101.0, 98.5, 103.2, 99.1, 100.4]
    one = run_estimate(values, ["r1"] * 5, "us")
    plain = mean_estimate(values, "us")
    assert (one.value, one.low, one.high, one.n, one.units) == (
        plain.value, plain.low, plain.high, plain.n, plain.units)
    assert one.method.startswith("one run: ") and "variation between runs" in one.method


def test_thirty_runs_and_more_resample_runs_then_units_within_them():
    rng = np.random.default_rng(6)
    values, labels = _runs(rng, 30, 4, between_sd=2.0)
    pooled = run_estimate(values, labels)
    naive = mean_estimate(values)
    assert "bootstrap resampling the 30 runs, then the repetitions within each" in pooled.method
    assert pooled.low < 100.0 < pooled.high
    # the standard error of a mean of 30 run means with sd sqrt(4 + 1/4): 0.38; naive: ~0.19
    assert 0.5 < (pooled.high - pooled.low) / 2 < 1.0
    assert pooled.high - pooled.low > 1.5 * (naive.high - naive.low)


def test_a_figure_that_reads_like_a_region_bound_is_printed_to_tell_them_apart():
    """The fourth S0 review: the pooled 'halved' interval [0.44108, 0.45438] against the region
    0.4545..0.55 printed "0.45x [0.44, 0.45]", hiding a 0.04 % miss; with the region's bounds the
    upper end and the estimate get as many digits as tell them from the bound."""
    est = Estimate(0.44768, 0.44108, 0.45438, 3, "x", "runs")
    assert est.text() == "0.45x [0.44, 0.45] (n=3)"  # no bounds: the usual digits
    assert est.text((0.45454545, 0.55)) == "0.45x [0.44, 0.4544] (n=3)"  # the ends decide
    near = Estimate(0.5, 0.45, 0.54549, 3, "x", "runs")  # .4g alike: 0.5455 both
    assert near.text((0.45454545, 0.54545454)).endswith("0.54549] (n=3)")
    gain = Estimate(10.0, 8.6, 12.0, 3, "%", "runs")
    assert gain.text((8.6363636, 39.7)) == "+10.0% [+8.6, +12.0] (n=3)"  # apart at a region's digits
    assert gain.text((8.62, 39.7)) == "+10.0% [+8.6, +12.0] (n=3)"
    assert gain.text((8.64, 39.7)) == "+10.0% [+8.6, +12.0] (n=3)"  # 8.6 vs 8.64: .4g apart
    close = Estimate(10.0, 8.6001, 12.0, 3, "%", "runs")
    assert close.text((8.6, 39.7)) == "+10.0% [+8.6001, +12.0] (n=3)"
    assert distinct(0.45438, 0.45454545) == 4 and distinct(0.454521, 0.4545454) == 5


def test_a_quantity_with_a_range_keeps_its_interval_inside_it():
    """A share of points cannot leave [0, 1]: S3's "TIPC best in most" read [-0.24, 0.82] over
    two repetitions. ``within`` intersects the interval with the range (coverage unchanged:
    the true share is always inside) and says so in the method, where a pool reads it back."""
    from harness.verdicts.intervals import range_of, within

    est = mean_estimate([0.2, 0.5], units="repetitions")
    assert est.low < 0 and est.high > 1
    held = within(est, 0.0, 1.0)
    assert (held.low, held.value, held.high) == (0.0, est.value, 1.0)
    assert range_of(held.method) == (0.0, 1.0) and range_of(est.method) is None
    inside = within(mean_estimate([0.40, 0.42, 0.41, 0.43]), 0.0, 1.0)
    assert 0 < inside.low < inside.high < 1  # an interval inside the range is left as it is
    assert within(None, 0.0, 1.0) is None

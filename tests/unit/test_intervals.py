"""Intervals on synthetic data whose answer is known."""

import math

import numpy as np
import pytest

from harness.verdicts.intervals import (
    BOOTSTRAP_FROM,
    T975,
    Estimate,
    bootstrap_groups,
    mean_estimate,
)


def test_two_repetitions_give_the_student_t_interval():
    est = mean_estimate([10.0, 12.0], "us")
    # mean 11, sd sqrt(2), t(0.975, 1) = 12.706: half-width 12.706 * sqrt(2) / sqrt(2)
    assert est.value == pytest.approx(11.0)
    assert (est.low, est.high) == pytest.approx((11 - 12.706, 11 + 12.706))
    assert est.n == 2 and "Student t" in est.method


def test_t_quantiles_match_the_known_table_values():
    assert T975[1] == pytest.approx(12.706) and T975[8] == pytest.approx(2.306)
    assert set(T975) == set(range(1, BOOTSTRAP_FROM - 1))  # every df the t branch can see


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

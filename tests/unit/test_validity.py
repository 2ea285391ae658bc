"""Physical bounds: what a shaped wire can carry, CPU per thread, a fan-in point's rounds."""

import math

import pytest

from harness.verdicts.validity import (
    CPU_COUNTER_TICK_S,
    SLACK,
    check_rate,
    check_rounds,
    check_share,
    counter_resolution_pct,
    payload_rate_mbit,
)


def test_a_shaped_wire_carries_1448_of_each_1514_bytes_as_tcp_payload():
    assert payload_rate_mbit(1000) == pytest.approx(1000 * 1448 / 1514)
    assert payload_rate_mbit(100, mtu=9000) == pytest.approx(100 * 8948 / 9014)
    assert payload_rate_mbit(100, timestamps=False) == pytest.approx(100 * 1460 / 1514)


def test_goodput_above_the_payload_rate_is_invalid_with_its_numbers():
    # an MPTCP interval at 1023 Mbit/s on a 1 Gbit/s server link (seen in an S4 run)
    bad = check_rate("mptcp, 4 streams, repetition 3", 1023.0, 1000.0)
    assert bad is not None and bad.bound == pytest.approx(956.4, abs=0.1)
    assert "1023 Mbit/s > 956.4 Mbit/s" in bad.text() and "mptcp, 4 streams" in bad.text()
    assert check_rate("at the wire", 956.0, 1000.0) is None
    assert check_rate("within the clocks' slack", 956.4 * (1 + SLACK) - 0.1, 1000.0) is None
    assert check_rate("no reading", math.nan, 1000.0) is None


def test_a_studys_own_allowance_raises_the_bound_and_is_named():
    assert check_rate("16 KB ping-pong", 102.0, 100.0) is not None
    ok = check_rate("16 KB ping-pong", 102.0, 100.0, allowance_mbit=8.0,
                    why="the first frame leaves before the shaper counts it")
    assert ok is None
    bad = check_rate("16 KB ping-pong", 190.0, 100.0, allowance_mbit=8.0, why="first frame")
    assert bad is not None and "first frame" in bad.text()


def test_cpu_above_100_percent_per_thread_is_invalid():
    assert check_share("polling, 64 B", 117.0).text().startswith("polling, 64 B: CPU share 117 %")
    assert check_share("polling, 64 B", 100.0) is None
    assert check_share("two threads", 150.0, threads=2) is None
    assert check_share("two threads", 201.0, threads=2).bound == 200.0


def test_a_share_may_pass_its_thread_by_the_counters_tick_and_no_more():
    # six exchanges over 30 s (S1's polling client): two ticks each, 0.4 pp
    allowed = counter_resolution_pct(6, 30.0)
    assert allowed == pytest.approx(100 * 2 * CPU_COUNTER_TICK_S * 6 / 30.0)
    assert check_share("polling", 100.3, resolution_pct=allowed) is None
    bad = check_share("polling", 100.5, resolution_pct=allowed)
    assert bad.bound == pytest.approx(100 + allowed) and "tick" in bad.why
    assert counter_resolution_pct(6, 0.0) == 0.0  # no wall time: no allowance


def test_a_fan_in_point_with_no_completed_round_is_invalid():
    bad = check_rounds("tipc, 1:48, 64 KB", 0)
    assert bad is not None and "completed rounds 0 < 1" in bad.text()
    assert check_rounds("tipc, 1:48, 16 KB", 6) is None


def test_a_rate_above_its_paths_measured_capacity_is_invalid_with_the_allowance():
    from harness.verdicts.validity import CAPACITY_ALLOWANCE, check_capacity

    assert CAPACITY_ALLOWANCE == 0.03
    assert check_capacity("p", 97.8, 95.0, "direct") is None  # 95 x 1.03 = 97.85
    bad = check_capacity("p", 112.0, 95.0, "direct", quantity="ping-pong rate")
    assert bad is not None and bad.bound == pytest.approx(97.85)
    assert "bulk transfer over direct in this run carried 95 Mbit/s" in bad.text()
    assert "+3% declared allowance" in bad.text()
    assert check_capacity("p", 500.0, None, "direct") is None  # nothing measured: no bound

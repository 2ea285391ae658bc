"""The measurement's progress line: points done of the total, time elapsed, time left."""

from __future__ import annotations

import io
import time

import pytest

from harness.progress import progress


def test_each_point_advances_the_line_with_elapsed_and_remaining_time():
    out = io.StringIO()
    with progress(4, "s4 iperf3", file=out) as bar:
        for streams in (1, 2):
            time.sleep(0.05)
            bar.step(f"tcp {streams} streams")
    states = [s for s in out.getvalue().split("\r") if s.strip()]
    assert states[0].startswith("s4 iperf3: 0/4 points [00:00 elapsed, ~? left]")
    assert states[-1].startswith("s4 iperf3: 2/4 points [00:00 elapsed, ~00:00 left], tcp 2 streams")
    assert out.getvalue().endswith("\n")  # left at its last state when the block ends


def test_the_line_is_closed_when_the_measurement_fails():
    out = io.StringIO()
    with pytest.raises(RuntimeError), progress(3, "s3 fan-in", file=out) as bar:
        bar.step("tcp 1:8 1 KB")
        raise RuntimeError("a point failed")
    assert "1/3 points" in out.getvalue() and out.getvalue().endswith("\n")

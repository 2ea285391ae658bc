"""A CPU limit below 0.01 CPUs: the kernel's smallest CFS quota (1 ms) over a longer period.

S4's third referee asked for calibration candidates below 0.01 CPUs (1 ms of every 100 ms, the
smallest quota the kernel takes at that period); 0.005 CPUs is 1 ms every 200 ms."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.config.cgroup import MIN_CPUS, CpuLimit, Hierarchy, cfs_period_us, cfs_quota_us
from harness.errors import SpecError


@pytest.mark.parametrize("cpus, quota, period", [
    (0.5, 50_000, 100_000), (0.02, 2_000, 100_000), (0.01, 1_000, 100_000),
    (0.0075, 1_000, 133_333), (0.005, 1_000, 200_000), (0.001, 1_000, 1_000_000),
])
def test_a_limit_keeps_the_kernels_smallest_quota_over_a_longer_period(cpus, quota, period):
    assert (cfs_quota_us(cpus), cfs_period_us(cpus)) == (quota, period)
    assert cfs_quota_us(cpus) / cfs_period_us(cpus) == pytest.approx(cpus, rel=1e-4)


def test_the_cgroup_is_written_with_its_own_period_and_a_smaller_limit_is_refused():
    node = SimpleNamespace(machine=SimpleNamespace(name="m"), name="m")
    limit = CpuLimit(node, 0.005, "s4-sender-calibration-0.005")
    limit.check()
    made = limit.diff({"hierarchy": Hierarchy("/sys/fs/cgroup", 2, ("cpu",))})[-1]
    assert "echo '1000 200000' > " in made.command and made.after == "cpu.max 1000 200000 (0.005 CPUs)"
    v1 = CpuLimit(node, 0.005, "s").diff({"hierarchy": Hierarchy("/sys/fs/cgroup/cpu", 1)})[-1]
    assert "echo 200000 > " in v1.command and "echo 1000 > " in v1.command
    assert MIN_CPUS == 0.001
    with pytest.raises(SpecError, match="out of range"):
        CpuLimit(node, 0.0005).check()

"""Placement by capability, end to end: host for S4, a VM for netem/TIPC, refusal otherwise."""

from __future__ import annotations

import glob
import subprocess

import pytest
from conftest import assert_a_try_on_target, needs_root, needs_tools

from harness.archive.archive import Run
from harness.errors import CapabilityMissing
from harness.lab import placement
from harness.lab.probe import probe
from harness.nodes import LocalNode
from harness.run.session import open_session
from harness.studies.s4 import study as s4
from harness.topology.topology import TopologyBuilder

pytestmark = [pytest.mark.integration, needs_root, needs_tools("iperf3")]


def netem_pair():
    return (TopologyBuilder("netem2").node("a").node("b")
            .link(("a", "eth0", "198.18.0.1/24"), ("b", "eth0", "198.18.0.2/24"),
                  rate_mbit=50, delay_ms=10).build())


def qemu_pids() -> set[str]:
    out = subprocess.run(["pgrep", "-f", "harness-vm-placed"], capture_output=True, text=True)
    return set(out.stdout.split())


def on_target(checks) -> bool:
    """The best direction at >= 90 % of its rate, every RTT 20 ms, TCG slack (18-23)."""
    return max(c.rate_ratio for c in checks) >= 0.9 and all(18 <= c.rtt_ms <= 23 for c in checks)


def test_s4_is_placed_on_the_host(data_root):
    with open_session("s4", {}) as session:
        session.testbed(s4.topology(s4.Params.resolve()), features={"mptcp"})
        assert session.placement()["where"] == "host"
    assert Run.open(session.run.path).meta["placement"]["where"] == "host"


def test_feature_nobody_offers_is_refused_before_anything_changes(data_root, monkeypatch):
    if probe(LocalNode()).has("tipc"):
        pytest.skip("this host has TIPC")
    monkeypatch.setattr(placement, "vm_offer", lambda: placement.VMOffer(
        True, "/boot/vmlinuz-x", "x", set(placement.VM_BUILTIN)))
    monkeypatch.setattr("harness.run.testbed_build.vm_offer", placement.vm_offer)
    with pytest.raises(CapabilityMissing, match="tipc.*neither this host"):
        with open_session("s3", {}) as session:
            session.testbed(netem_pair(), features={"tipc"})
    assert session.journal.entries() == []  # a namespace made would be recorded there
    assert session.run.status == "incomplete"


@pytest.mark.vm
def test_netem_lab_is_placed_in_a_vm_and_verifies(data_root, monkeypatch):
    if probe(LocalNode()).has("netem"):
        pytest.skip("this host has netem: no VM needed")
    if not placement.vm_offer().available:
        pytest.skip(placement.vm_offer().reason)
    with open_session("placed", {}) as session:
        bed = session.testbed(netem_pair(), features={"tipc", "sctp"})
        where = session.placement()
        assert where["where"] == "vm" and "netem" in where["missing_on_host"]
        assert where["vm"]["boot_s"] > 0 and where["vm"]["accel"] in ("kvm", "tcg")
        assert where["scaling"]["ceiling_mbit"] > 50 and where["scaling"]["factor"] == 1.0
        vm = bed.lab.host
        loaded = vm.read_text("/proc/modules")
        assert all(m in loaded for m in ("tipc", "sctp", "sch_netem"))
        tries = []
        for _ in range(3):  # >= 97 % when the host is not overloaded (benchmark)
            checks = session.verify(3)
            tries.append(checks)
            # 2 x 10 ms one-way: the delay line is there, once (a late TCG timer adds to it)
            assert all(18 <= c.rtt_ms <= 30 for c in checks), checks
            if on_target(checks):
                break
        assert_a_try_on_target(tries, on_target,
                               f"rates {[round(c.rate_ratio, 2) for t in tries for c in t]}, "
                               f"RTTs {[round(c.rtt_ms, 1) for t in tries for c in t]} ms")
    assert not qemu_pids()
    assert not glob.glob("/tmp/harness-vm-placed-*")
    assert session.journal.pending() == []

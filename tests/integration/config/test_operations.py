"""Configuration operations change a real node and the journal restores it exactly."""

from __future__ import annotations

import pytest
from conftest import needs_root

from harness.config import apply, congestion, interface, mptcp, sysctl
from harness.config.cgroup import CpuLimit
from harness.config.congestion import DefaultCongestion
from harness.config.sysctl import Sysctl, SysctlAtLeast
from harness.errors import SpecError
from harness.lab.lab import Lab
from harness.nodes import LocalNode
from harness.topology.topology import TopologyBuilder

pytestmark = [pytest.mark.integration, needs_root]


@pytest.fixture
def lab(journal):
    topo = (TopologyBuilder("cfg").node("a").node("b")
            .link(("a", "eth0", "198.18.1.2/24"), ("b", "eth0", "198.18.1.1/24")).build())
    with Lab(topo, journal) as lab:
        yield lab


def test_sysctl_is_recorded_and_restored(journal, lab):
    node = lab.node("a")
    before = sysctl.read_sysctl(node, "net.ipv4.tcp_sack")
    new = "0" if before == "1" else "1"
    with journal.scope():
        (rec,) = apply(journal, [Sysctl(node, "net.ipv4.tcp_sack", new)])
        assert rec.changed and rec.before == before
        assert sysctl.read_sysctl(node, "net.ipv4.tcp_sack") == new
    assert sysctl.read_sysctl(node, "net.ipv4.tcp_sack") == before


def test_unchanged_sysctl_records_nothing_to_undo(journal, lab):
    node = lab.node("a")
    value = sysctl.read_sysctl(node, "net.ipv4.tcp_sack")
    n = len(journal.entries())
    (rec,) = apply(journal, [Sysctl(node, "net.ipv4.tcp_sack", value)])
    assert not rec.changed and len(journal.entries()) == n
    # ... but the run's configuration view has it
    assert journal.configuration()[-1] | {"seq": 0} == {
        "node": "a", "kind": "sysctl", "target": "net.ipv4.tcp_sack", "before": value,
        "after": value, "changed": False, "seq": 0}


def test_sysctl_at_least_raises_only_a_lower_value(journal, lab):
    node = lab.node("a")
    key = "net.ipv4.tcp_syn_retries"  # an integer the namespace has of its own
    before = int(sysctl.read_sysctl(node, key))
    with journal.scope():
        low, high = apply(journal, [SysctlAtLeast(node, key, before - 1),
                                    SysctlAtLeast(node, key, before + 1)])
        assert not low.changed and low.after == str(before)
        assert high.changed and sysctl.read_sysctl(node, key) == str(before + 1)
    assert sysctl.read_sysctl(node, key) == str(before)
    with pytest.raises(SpecError, match="not an integer"):
        apply(journal, [SysctlAtLeast(node, "net.ipv4.tcp_rmem", 1)])


def test_unknown_sysctl_is_a_clear_error(journal, lab):
    with pytest.raises(SpecError, match="no sysctl"):
        apply(journal, [Sysctl(lab.node("a"), "net.ipv4.no_such_key", 1)])


def test_mptcp_endpoint_and_limits_are_restored(journal, lab):
    node = lab.node("a")
    limits = mptcp.read_limits(node)
    with journal.scope():
        apply(journal, [mptcp.enable(node), mptcp.Limits(node, subflows=4, add_addr_accepted=3),
                        mptcp.MptcpEndpoint(node, "198.18.1.2", "eth0", ("subflow",))])
        assert mptcp.read_limits(node) == {"subflows": 4, "add_addr_accepted": 3}
        assert [ep["address"] for ep in mptcp.read_endpoints(node)] == ["198.18.1.2"]
        with pytest.raises(SpecError, match="already has an MPTCP endpoint"):
            apply(journal, [mptcp.MptcpEndpoint(node, "198.18.1.2", "eth0")])
    assert mptcp.read_limits(node) == limits
    assert mptcp.read_endpoints(node) == []


def test_mptcp_limits_out_of_range_are_refused(journal, lab):
    with pytest.raises(SpecError, match="out of range"):
        apply(journal, [mptcp.Limits(lab.node("a"), subflows=99, add_addr_accepted=0)])


def test_default_congestion_in_a_namespace_restores_the_machine(journal, lab):
    host = LocalNode()
    allowed = sysctl.read_sysctl(host, congestion.ALLOWED_KEY)
    available = sysctl.read_sysctl(host, congestion.AVAILABLE_KEY).split()
    target = next((cc for cc in available if cc not in allowed.split()), None) or available[0]
    node = lab.node("a")
    default = sysctl.read_sysctl(node, congestion.DEFAULT_KEY)
    with journal.scope():
        records = apply(journal, [DefaultCongestion(node, target)])
        assert sysctl.read_sysctl(node, congestion.DEFAULT_KEY) == target
        assert target in sysctl.read_sysctl(host, congestion.ALLOWED_KEY).split()
        assert records[-1].node == "a" and records[-1].after == target
    assert sysctl.read_sysctl(host, congestion.ALLOWED_KEY) == allowed
    assert sysctl.read_sysctl(node, congestion.DEFAULT_KEY) == default


def test_cpu_limit_cgroup_is_created_used_and_removed(journal, lab):
    import os

    node = lab.node("a")
    with journal.scope():
        limit = CpuLimit(node, 0.25, "test")
        records = apply(journal, [limit])
        path = limit.path
        assert os.path.isdir(path)
        out = node.run(f"sh -c 'echo $$ > {path}/cgroup.procs && cat /proc/self/cgroup'",
                       timeout=10).stdout
        assert os.path.basename(path) in out
        assert "0.25 CPUs" in records[-1].after
    assert not os.path.exists(path)


def test_mtu_is_restored(journal, lab):
    node = lab.node("a")
    with journal.scope():
        apply(journal, [interface.Mtu(node, "eth0", 9000)])
        assert interface.read_mtu(node, "eth0") == 9000
    assert interface.read_mtu(node, "eth0") == 1500
    with pytest.raises(SpecError, match="no interface"):
        apply(journal, [interface.Mtu(node, "eth7", 1400)])


def offload(node, feature: str) -> bool:
    return interface.offload_fact(node, "eth0", feature).read()


def test_offload_is_restored(journal, lab):
    node = lab.node("a")
    feature = "generic-segmentation-offload"
    before = offload(node, feature)
    with journal.scope():
        (rec,) = apply(journal, [interface.Offload(node, "eth0", feature, not before)])
        assert rec.changed and offload(node, feature) is (not before)
    assert offload(node, feature) is before
    with pytest.raises(SpecError, match="no offload feature"):
        apply(journal, [interface.Offload(node, "eth0", "no-such-offload", True)])


def test_a_batch_of_operations_on_many_namespaces_is_undone_exactly(journal, lab):
    """Operations on two namespaces in one apply: one round trip per machine, all undone."""
    nodes = [lab.node("a"), lab.node("b")]
    keys = ["net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps"]
    found = {(n.name, k): sysctl.read_sysctl(n, k) for n in nodes for k in keys}
    flip = {"0": "1", "1": "0"}
    with journal.scope():
        records = apply(journal, [Sysctl(n, k, flip[found[(n.name, k)]])
                                  for n in nodes for k in keys])
        assert all(r.changed for r in records) and len(records) == 4
        assert all(sysctl.read_sysctl(n, k) == flip[found[(n.name, k)]]
                   for n in nodes for k in keys)
    assert {(n.name, k): sysctl.read_sysctl(n, k) for n in nodes for k in keys} == found

"""A dry run plans every change of a study's testbed and configuration, and changes nothing."""

from __future__ import annotations

import pytest
from conftest import needs_root, netns_names

from harness.config.sysctl import read_sysctl
from harness.errors import SpecError
from harness.nodes import LocalNode
from harness.run.session import open_session
from harness.studies.s4 import study as s4

pytestmark = [pytest.mark.integration, needs_root]


def test_dry_run_plans_lab_and_configuration_and_changes_nothing(data_root):
    params = s4.Params.resolve()
    allowed = read_sysctl(LocalNode(), "net.ipv4.tcp_allowed_congestion_control")
    with open_session("s4", params.to_dict(), dry_run=True) as session:
        bed = session.testbed(s4.topology(params), features={"mptcp"})
        s4.configure_mptcp(session, bed)
        planned = session.planned_changes()
        kinds = [r.kind for r in planned]
        # the lab's build plan, from the topology
        assert kinds.count("netns") == 3 and "veth" in kinds and "qdisc" in kinds
        assert {"route", "rule", "address"} <= set(kinds)
        assert any(r.kind == "sysctl" and r.target == "net.ipv4.ip_forward" and r.node == "router"
                   for r in planned)
        # configuration on nodes not built: unknown before, planned after
        enabled = [r for r in planned if r.target == "net.mptcp.enabled"]
        assert [r.node for r in enabled] == ["client", "server"]
        assert all(r.before == "unknown: not built in a dry run" and r.after == "1"
                   for r in enabled)
        assert any(r.kind == "mptcp-endpoint" and r.target.startswith("198.18.2.2")
                   for r in planned)
        text = session.describe()
        assert text.startswith("dry run of s4: placement host")
        assert "mptcp-endpoint 198.18.2.2 dev eth1" in text
        for step in (lambda: session.verify(1), lambda: session.raw("x", "y"),
                     lambda: session.note(a=1)):
            with pytest.raises(SpecError, match="dry run"):
                step()
        with pytest.raises(SpecError, match="dry run"):
            bed.node("client").run("true")
    # other engineers' labs come and go on this machine: look for ours only
    assert not {n for n in netns_names() if n.startswith(bed.lab.prefix + "-")}
    assert read_sysctl(LocalNode(), "net.ipv4.tcp_allowed_congestion_control") == allowed
    assert not data_root.exists() or not any(data_root.rglob("run.json"))

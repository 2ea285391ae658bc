"""The serialising shaper kind (tbf with a peak rate): its plan, and that htb stays the default."""

from __future__ import annotations

import pytest

from harness.errors import SpecError
from harness.topology.shaping import PEAK_FRAMES, EgressPlan, plan_egress
from harness.topology.topology import Link, LinkEnd, TopologyBuilder


def link(**props) -> Link:
    return Link(LinkEnd("a", "e", "10.0.0.1/24"), LinkEnd("b", "e", "10.0.0.2/24"), **props)


def test_serialise_is_tbf_with_a_peak_rate_just_above_and_a_two_frame_peak_bucket():
    plan = plan_egress(link(rate_mbit=100, shaper="serialise"))
    assert plan.kind == "tbf" and plan.minburst_bytes == PEAK_FRAMES * 1514
    assert 100_000_000 < plan.peak_bit <= 100_100_000
    (root,) = plan.tc_commands("e")
    assert root[:7] == ["qdisc", "add", "dev", "e", "root", "handle", "1:"]
    assert root[7] == "tbf" and "peakrate" in root and "minburst" in root
    assert root[root.index("minburst") + 1] == "3028b"
    assert root[root.index("limit") + 1] == f"{1000 * 1514}b"


def test_serialise_with_delay_puts_netem_under_tbf_and_can_change_it_in_place():
    plan = plan_egress(link(rate_mbit=100, shaper="serialise", delay_ms=5))
    cmds = plan.tc_commands("e")
    assert cmds[0][7] == "tbf" and cmds[1][4:9] == ["parent", "1:1", "handle", "10:", "netem"]
    assert plan.netem_change_command("e")[4:6] == ["parent", "1:1"]


def test_htb_stays_the_default_and_old_plans_still_load():
    plan = plan_egress(link(rate_mbit=100))
    assert plan.kind == "htb" and plan.peak_bit is None
    assert plan.tc_commands("e")[0][7] == "htb"
    old = {k: v for k, v in plan.to_dict().items()
           if k not in ("kind", "peak_bit", "minburst_bytes", "limit_bytes")}
    assert EgressPlan(**old).kind == "htb"  # an archived plan from before the shaper kinds


def test_unknown_shaper_is_refused_and_serialise_needs_tbf():
    with pytest.raises(SpecError, match="shaper 'fast' is unknown"):
        (TopologyBuilder("t").node("a").node("b")
         .link(("a", "e", "10.0.0.1/24"), ("b", "e", "10.0.0.2/24"), rate_mbit=1,
               shaper="fast").build())
    topo = (TopologyBuilder("t").node("a").node("b")
            .link(("a", "e", "10.0.0.1/24"), ("b", "e", "10.0.0.2/24"), rate_mbit=1,
                  shaper="serialise").build())
    assert "tbf" in topo.required_features() and "htb" not in topo.required_features()
    assert "(serialise)" in topo.describe()

"""The netem shaper kind (netem's own rate: departures scheduled on the kernel's clock), S2's WAN
on it, and its rate test reading netem's own counter."""

from __future__ import annotations

import pytest

from harness.errors import SpecError
from harness.lab.verify import Direction, counter_command, rate_call
from harness.nodes import NamespaceNode
from harness.topology.shaping import EgressPlan, plan_egress
from harness.topology.topology import Link, LinkEnd, TopologyBuilder

#: S2's scaled WAN of the README run 20261129T123013Z-b0e40b (f = 0.082)
RATE, DELAY = 81.66123978379593, 29.389708095960508


def link(**props) -> Link:
    return Link(LinkEnd("a", "e", "10.0.0.1/24"), LinkEnd("b", "e", "10.0.0.2/24"), **props)


def test_a_netem_shaped_link_is_one_netem_root_with_the_rate_the_delay_and_the_queue():
    plan = plan_egress(link(rate_mbit=RATE, delay_ms=DELAY, shaper="netem"))
    assert plan.kind == "netem" and plan.burst_bytes is None and plan.fifo is None  # no bucket
    assert plan.tc_commands("e") == [
        ["qdisc", "add", "dev", "e", "root", "handle", "10:", "netem", "delay", "29390us",
         "rate", "81661239bit", "limit", "1000"]]
    # the queue behind the delay line holds more than a BDP of full frames (600 KB): 1000
    # frames less the ~198 on the one-way delay line, 1.2 MB
    on_line = RATE * 1e6 / 8 * DELAY / 1e3 / 1514
    assert (plan.netem_limit - on_line) * 1514 > RATE * 1e6 / 8 * 2 * DELAY / 1e3


def test_the_delay_trim_changes_the_netem_root_in_place_and_keeps_its_rate():
    plan = plan_egress(link(rate_mbit=RATE, delay_ms=DELAY, shaper="netem"))
    trimmed = EgressPlan(**{**plan.to_dict(), "delay_trim_us": 810})
    assert trimmed.netem_change_command("e") == [
        "qdisc", "change", "dev", "e", "root", "handle", "10:", "netem", "delay", "28580us",
        "rate", "81661239bit", "limit", "1000"]


def test_a_rate_alone_needs_netem_and_a_given_queue_comes_on_top_of_the_delay_line():
    plan = plan_egress(link(rate_mbit=10, shaper="netem"))
    assert plan.netem and plan.tc_commands("e")[0][4:9] == ["root", "handle", "10:", "netem",
                                                           "rate"]
    queued = plan_egress(link(rate_mbit=10, delay_ms=12.11, shaper="netem", queue_packets=50))
    assert queued.netem_limit == 50 + 10  # 10 Mbit/s x 12.11 ms = 15.1 KB: 10 frames of 1514 B
    assert plan_egress(link(rate_mbit=10, delay_ms=12.11, queue_packets=50)).netem_limit == 50
    topo = (TopologyBuilder("t").node("a").node("b")
            .link(("a", "e", "10.0.0.1/24"), ("b", "e", "10.0.0.2/24"), rate_mbit=10,
                  shaper="netem").build())
    assert topo.links[0].needs_netem
    assert "netem" in topo.required_features() and "htb" not in topo.required_features()
    assert "(netem)" in topo.describe()


def test_a_byte_queue_limit_is_refused_on_the_netem_shaper():
    with pytest.raises(SpecError, match="counts packets"):
        (TopologyBuilder("t").node("a").node("b")
         .link(("a", "e", "10.0.0.1/24"), ("b", "e", "10.0.0.2/24"), rate_mbit=10,
               shaper="netem", queue_bytes=100_000).build())


def test_the_rate_test_of_a_netem_link_reads_netems_counter_and_htbs_its_class():
    assert counter_command(link(rate_mbit=10, shaper="netem"), "e") == (
        "tc -s qdisc show dev e root")
    assert counter_command(link(rate_mbit=10), "e").startswith(
        "tc -s class show dev e classid 1:1; ")
    lnk = link(rate_mbit=RATE, delay_ms=DELAY, shaper="netem")
    d = Direction(0, lnk, lnk.a, lnk.b, NamespaceNode("x-a"), NamespaceNode("x-b"))
    assert rate_call(d, 5, 5299, 0.1, omit_s=1).command[-2] == "tc -s qdisc show dev e root"


def test_s2s_wan_is_netem_shaped_by_default_and_htb_on_request():
    from harness.studies.s2 import study as s2

    def wan(params):
        return next(lnk for lnk in s2.topology(params).links
                    if lnk.name == "client:wan--server:wan")

    assert plan_egress(wan(s2.Params.resolve())).kind == "netem"
    old = plan_egress(wan(s2.Params.resolve(wan_shaper="htb")))
    assert old.kind == "htb" and old.burst_bytes == 250_000  # 2 ms of 1 Gbit/s, the paper's scale


def test_the_queue_behind_s2s_delay_line_holds_two_bdps_of_full_frames():
    """netem's 1000 packets hold the one-way delay line (198 frames of 1514 B at 81.7 Mbit/s
    and 29.4 ms) and the queue behind it: 802 frames, 1.21 MB, 2.02 BDPs -- at least the one
    BDP one flow needs to keep the link busy through a loss (recorded as run.json wan_queue)."""
    record = plan_egress(link(rate_mbit=RATE, delay_ms=DELAY, shaper="netem")).queue_record()
    assert record["limit_packets"] == 1000 and record["delay_line_frames"] == pytest.approx(
        198.2, abs=0.1)
    assert record["bdp_bytes"] == pytest.approx(600_000, abs=10)  # delay in whole microseconds
    assert record["queue_bdps"] == pytest.approx(2.02, abs=0.01)
    assert plan_egress(link(rate_mbit=RATE, shaper="netem")).queue_record() is None  # no delay
    small = plan_egress(link(rate_mbit=RATE, delay_ms=DELAY, queue_packets=300)).queue_record()
    # htb's netem child with a 300-packet limit: the delay line leaves 0.26 BDP of queue
    assert small["queue_bdps"] == pytest.approx((300 - 198.2) * 1514 / 600_000, abs=0.01)
    assert small["queue_bdps"] < 1

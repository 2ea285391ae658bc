import pytest

from harness.errors import SpecError
from harness.topology.shaping import plan_egress
from harness.topology.topology import Link, LinkEnd, Topology, TopologyBuilder


def two_nodes(**link):
    return (TopologyBuilder("t").node("a").node("b")
            .link(("a", "eth0", "198.18.0.1/24"), ("b", "eth0", "198.18.0.2/24"), **link))


def test_roundtrip_through_dict_keeps_everything():
    topo = (two_nodes(rate_mbit=50, delay_ms=10, loss_pct=0.5, mtu=9000)
            .route("a", "198.18.0.0/15", via="198.18.0.2")
            .rule("a", "198.18.0.1/32", 100, 1000).build())
    again = Topology.from_dict(topo.to_dict())
    assert again == topo
    assert again.required_features() == {"netns", "veth", "htb", "netem"}


def test_describe_says_delay_is_one_way():
    text = two_nodes(rate_mbit=50, delay_ms=10).build().describe()
    assert "one-way delay 10 ms" in text and "50 Mbit/s" in text


@pytest.mark.parametrize("link, message", [
    (dict(rate_mbit=0), "rate 0"),
    (dict(rate_mbit=-5), "rate -5"),
    (dict(delay_ms=-1), "one-way delay"),
    (dict(loss_pct=100), "loss"),
    (dict(mtu=20), "MTU"),
    (dict(queue_packets=10), "queue limit needs a rate"),
    (dict(rate_mbit=10, queue_bytes=100), "cannot hold"),
    (dict(rate_mbit=10, queue_packets=5, queue_bytes=5000), "not both"),
])
def test_bad_links_are_refused_with_a_reason(link, message):
    with pytest.raises(SpecError, match=message):
        two_nodes(**link).build()


def test_unknown_node_and_bad_address_are_refused():
    with pytest.raises(SpecError, match="unknown node 'c'"):
        (TopologyBuilder("t").node("a")
         .link(("a", "eth0", "198.18.0.1/24"), ("c", "eth0", "198.18.0.2/24")).build())
    with pytest.raises(SpecError, match="not valid"):
        (TopologyBuilder("t").node("a").node("b")
         .link(("a", "eth0", "198.18.0.300/24"), ("b", "eth0", "198.18.0.2/24")).build())
    with pytest.raises(SpecError, match="not on one subnet"):
        (TopologyBuilder("t").node("a").node("b")
         .link(("a", "eth0", "198.18.0.1/24"), ("b", "eth0", "198.18.1.2/24")).build())
    with pytest.raises(SpecError, match="no prefix length"):
        (TopologyBuilder("t").node("a").node("b")
         .link(("a", "eth0", "198.18.0.1"), ("b", "eth0", "198.18.0.2/24")).build())


def test_duplicate_address_and_interface_are_refused():
    with pytest.raises(SpecError, match="assigned twice"):
        (TopologyBuilder("t").node("a").node("b")
         .link(("a", "eth0", "198.18.0.1/24"), ("b", "eth0", "198.18.0.1/24")).build())
    with pytest.raises(SpecError, match="used by two links"):
        (TopologyBuilder("t").node("a").node("b")
         .link(("a", "eth0", "198.18.0.1/24"), ("b", "eth0", "198.18.0.2/24"))
         .link(("a", "eth0", "198.18.1.1/24"), ("b", "eth1", "198.18.1.2/24")).build())


def test_route_on_missing_interface_is_refused():
    with pytest.raises(SpecError, match="no interface 'eth9'"):
        two_nodes().route("a", "198.18.0.0/15", dev="eth9").build()


def test_malformed_dict_gives_spec_error():
    with pytest.raises(SpecError, match="malformed topology"):
        Topology.from_dict({"name": "x", "nodes": [{"name": "a"}]})


def test_egress_plan_burst_covers_two_ms_at_rate():
    plan = plan_egress(Link(LinkEnd("a", "e", "10.0.0.1/24"), LinkEnd("b", "e", "10.0.0.2/24"),
                            rate_mbit=1000))
    assert plan.rate_bit == 1_000_000_000
    assert plan.burst_bytes == 250_000  # 1 Gbit/s x 2 ms
    assert not plan.netem and plan.fifo is None
    small = plan_egress(Link(LinkEnd("a", "e", "10.0.0.1/24"), LinkEnd("b", "e", "10.0.0.2/24"),
                             rate_mbit=1))
    assert small.burst_bytes == 32 * 1024  # never below the floor


def test_netem_plan_holds_a_bdp_and_tc_commands_match():
    link = Link(LinkEnd("a", "e", "10.0.0.1/24"), LinkEnd("b", "e", "10.0.0.2/24"),
                rate_mbit=1000, delay_ms=50)
    plan = plan_egress(link)
    # 1 Gbit/s x 50 ms = 6.25 MB = 4167 packets of 1500 B; twice that
    assert plan.netem_limit == 2 * 4167
    cmds = plan.tc_commands("e")
    assert cmds[0][:6] == ["qdisc", "add", "dev", "e", "root", "handle"]
    assert "rate" in cmds[1] and "1000000000bit" in cmds[1]
    assert cmds[2][cmds[2].index("delay") + 1] == "50000us"
    assert cmds[2][cmds[2].index("parent") + 1] == "1:1"


def test_queue_limit_becomes_a_fifo_under_the_shaper():
    link = Link(LinkEnd("a", "e", "10.0.0.1/24"), LinkEnd("b", "e", "10.0.0.2/24"),
                rate_mbit=100, queue_bytes=64000)
    plan = plan_egress(link)
    assert (plan.fifo, plan.fifo_limit) == ("bfifo", 64000)
    assert plan.tc_commands("e")[-1][-3:] == ["bfifo", "limit", "64000"]

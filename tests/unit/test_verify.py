"""The link checker's script output parsing, rate and RTT judgement, and delay trimming."""

from __future__ import annotations

import pytest

from harness.journal.journal import Journal, batch_undo_handler, undo_handler
from harness.lab.counter_rate import parse_samples, steady_rate_bps
from harness.lab.lab import delay_trim_us
from harness.lab.verify import (
    Direction,
    check_direction,
    collect,
    parse_ping_ms,
    rtt_ok,
    verification_calls,
    verification_table,
)
from harness.nodes import LocalNode, NamespaceNode
from harness.nodes.group import machine_script
from harness.nodes.result import Result
from harness.topology.shaping import plan_egress
from harness.topology.topology import Link, LinkEnd

PING = """PING 198.18.0.2 (198.18.0.2) from 198.18.0.1 : 56(84) bytes of data.
64 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=31.7 ms
64 bytes from 198.18.0.2: icmp_seq=2 ttl=64 time=20.1 ms
64 bytes from 198.18.0.2: icmp_seq=3 ttl=64 time=20.3 ms
64 bytes from 198.18.0.2: icmp_seq=4 ttl=64 time=19.9 ms
"""

IPERF = ('{"start": {}, "end": {"sum_sent": {"bits_per_second": 4.9e7, "retransmits": 0}, '
         '"sum_received": {"bits_per_second": 4.8e7, "seconds": 2.0, "bytes": 12000000}}}')


def link(**kw) -> Link:
    return Link(LinkEnd("a", "eth1", "198.18.0.1/24"), LinkEnd("b", "eth1", "198.18.0.2/24"),
                **kw)


def direction(lnk: Link, index: int = 0) -> Direction:
    return Direction(index, lnk, lnk.a, lnk.b, NamespaceNode("x-a"), NamespaceNode("x-b"))


def measured(lnk: Link, samples: str = "", client: str = "", status: int = 0,
             ping: str = PING):
    """What the group runner returns for one shaped direction: its rate test and its ping."""
    d = direction(lnk)
    kinds = [("rate", d, None), ("ping", d, None)]
    return collect(kinds, [Result("x-a", "rate", client, samples, status, 2.0),
                           Result("x-a", "ping", ping, "", 0, 0.5)])


def test_ping_parsing_drops_the_arp_reply_only_when_asked():
    assert parse_ping_ms(PING) == [20.1, 20.3, 19.9]
    assert parse_ping_ms(PING, drop_first=False) == [31.7, 20.1, 20.3, 19.9]
    assert parse_ping_ms("connect: Network is unreachable") == []


def test_rtt_judgement_allows_five_percent_plus_slack():
    assert rtt_ok(20.9, 20.0) is True
    assert rtt_ok(21.4, 20.0) is False  # 5 % (1.0 ms) + 0.3 ms slack
    assert rtt_ok(None, 20.0) is False  # a delayed link that answers no ping fails
    assert rtt_ok(0.05, None) is None  # nothing asked, nothing judged


def test_samples_are_stamped_at_the_midpoint_of_their_clock_bracket():
    text = "SAMPLE 10.0 10.4 0\nbash: some warning\nSAMPLE 11.0 11.2 1000\n"
    assert parse_samples(text) == [(0, 10.2), (1000, 11.1)]
    out = measured(link(rate_mbit=50), samples=text, client='{"x": 1}\n')
    assert out.samples[0] == [(0, 10.2), (1000, 11.1)]
    assert out.status == {0: 0}
    assert out.client[0].strip() == '{"x": 1}'
    assert out.stderr == "bash: some warning\n"  # what was not a sample is kept
    assert parse_ping_ms(out.pings[0]) == [20.1, 20.3, 19.9]


def test_check_direction_compares_counter_rate_and_ping_with_the_spec():
    lnk = link(rate_mbit=50, delay_ms=10)
    # 6.25 MB per second at the shaper's counter = 50 Mbit/s.
    samples = "".join(f"SAMPLE {t}.0 {t}.0 {t * 6_250_000}\n" for t in range(6))
    check = check_direction(direction(lnk), measured(lnk, samples, IPERF), 2)
    assert check.link_layer_mbit == pytest.approx(50.0)
    assert check.rate_ok and check.rtt_ok and check.samples == 6
    assert check.goodput_mbit == pytest.approx(48.0)
    assert check.rtt_ms == pytest.approx(20.1)
    # a shaper that gives 80 %
    samples = "".join(f"SAMPLE {t}.0 {t}.0 {t * 5_000_000}\n" for t in range(6))
    check = check_direction(direction(lnk), measured(lnk, samples, IPERF), 2)
    assert check.rate_ratio == pytest.approx(0.8) and not check.ok


def test_each_try_keeps_its_tool_output_for_the_archive_but_not_in_the_record():
    lnk = link(rate_mbit=50, delay_ms=10)
    samples = "".join(f"SAMPLE {t}.0 {t}.0 {t * 6_250_000}\n" for t in range(3))
    check = check_direction(direction(lnk), measured(lnk, samples, IPERF), 2)
    (text,) = check.outputs
    assert IPERF in text and "SAMPLE 2.000000 12500000" in text and "icmp_seq=4" in text
    assert "outputs" not in check.to_dict() and check.to_dict()["ok"] is True
    check.outputs.append("second try\n")
    assert check.raw_files() == {"verify-a_eth1--b_eth1-a-_b-1.txt": text,
                                 "verify-a_eth1--b_eth1-a-_b-2.txt": "second try\n"}


def test_failed_rate_test_is_an_error_not_a_zero():
    from harness.errors import HarnessError

    out = measured(link(rate_mbit=50), client="error - unable to connect\n", status=1)
    with pytest.raises(HarnessError, match="iperf3 client failed with status 1"):
        check_direction(direction(link(rate_mbit=50)), out, 2)


def test_rate_tests_alone_then_delayed_pings_alone_then_plain_pings_in_batches():
    shaped, plain, delayed = link(rate_mbit=50, delay_ms=10), link(), link(delay_ms=5)
    kinds = verification_calls([direction(shaped, 0), direction(plain, 1),
                                direction(delayed, 2), direction(plain, 3)], seconds=3)
    assert [(k, d.index, c.exclusive) for k, d, c in kinds] == [
        ("rate", 0, True), ("ping", 0, True), ("ping", 2, True),
        ("ping", 1, False), ("ping", 3, False)]
    rate = kinds[0][2]
    assert rate.node.name == "x-a" and rate.command[:2] == ["bash", "--norc"]
    server, ready, client, counter, interval = rate.command[-5:]
    assert server.startswith("nsenter --net=/run/netns/x-b -- iperf3 -s -1 -B 198.18.0.2")
    assert "ss -Hltn" in ready and "x-b" in ready
    assert client.startswith("iperf3 -c 198.18.0.2 -B 198.18.0.1") and "-t 3" in client
    assert counter == ("tc -s class show dev eth1 classid 1:1; "
                       "tc -s qdisc show dev eth1 root") and interval == "0.1"
    timed, untimed = kinds[1][2].command, kinds[3][2].command
    assert timed[:3] == ["ping", "-n", "-c"] and timed[3] == "11"  # timed: 10 + 1 for ARP
    assert untimed[3] == "4"  # recorded only: fewer
    lines = machine_script([c for _k, _d, c in kinds], "T", jobs=16).splitlines()
    runs = [line.split(" ", 2)[1] if line.startswith("__hg_run ") else line
            for line in lines if line.startswith("__hg_run ") or line == "wait"]
    # the three exclusive calls each alone (started, then waited for), the plain pings together
    assert runs == ["0", "wait", "1", "wait", "2", "wait", "3", "4", "wait"]


def test_steady_rate_ignores_ramp_and_tail():
    samples = [(0, 0.0), (100, 1.0), (1100, 2.0), (2100, 3.0), (3100, 4.0), (3150, 5.0)]
    assert steady_rate_bps(samples) == pytest.approx(8000.0)


@pytest.mark.parametrize("rtt, delay, trim", [
    (21.1, 10.0, 550),   # TCG guest: 1.1 ms excess -> 0.55 ms off each direction
    (20.1, 10.0, 0),     # within 1 % of the asked RTT: left alone
    (19.5, 10.0, 0),     # below target: never lengthened here
    (None, 10.0, 0),     # no replies: nothing to go on
    (5.0, 1.0, 999),     # never the whole delay
])
def test_delay_trim(rtt, delay, trim):
    assert delay_trim_us(rtt, delay) == trim


def test_netem_change_command_carries_the_trimmed_delay():
    from dataclasses import replace

    plan = replace(plan_egress(link(rate_mbit=50, delay_ms=10)), delay_trim_us=550)
    assert plan.netem_change_command("eth1") == [
        "qdisc", "change", "dev", "eth1", "parent", "1:1", "handle", "10:", "netem",
        "delay", "9450us", "limit", str(plan.netem_limit)]
    assert "9450us" in plan.tc_commands("eth1")[-1]
    assert plan.delay_us == 10_000  # the asked delay stays on record


def test_batch_undo_takes_consecutive_entries_of_one_node_together(tmp_path):
    calls = []

    @undo_handler("test_batchable", gone_with_namespace=False)
    def _one(node, data):
        calls.append(("one", data["n"]))

    @batch_undo_handler("test_batchable")
    def _many(node, items):
        calls.append(("many", [d["n"] for d in items]))

    @undo_handler("test_other", gone_with_namespace=False)
    def _other(node, data):
        calls.append(("other", data["n"]))

    journal = Journal(tmp_path / "j.jsonl")
    local, other = LocalNode("local"), LocalNode("elsewhere")
    for n, kind, node in [(1, "test_batchable", local), (2, "test_batchable", local),
                          (3, "test_other", local), (4, "test_batchable", other),
                          (5, "test_batchable", local), (6, "test_batchable", local)]:
        journal.record(kind, node, n=n)
    journal.undo_all()
    # newest first; a different kind or node ends a group
    assert calls == [("many", [6, 5]), ("many", [4]), ("other", 3), ("many", [2, 1])]
    assert journal.pending() == []


def test_command_backend_batches_and_orders_namespaces():
    from harness.net.backend import CommandBackend

    backend = CommandBackend(LocalNode("x"))
    for ns in ("sw", "m1", "m2"):
        backend.create_netns(ns)
    # the switch end is created by the mappers' batches: the switch must come last
    backend.configure_interface("sw", "m1", "10.0.1.1/24", 1500)
    backend.add_veth("m1", "eth0", "sw", "m1")
    backend.add_veth("m2", "eth0", "sw", "m2")
    backend.configure_interface("m1", "eth0", "10.0.1.2/24", 1500)
    script = backend.script()
    assert script.count("-batch -") == 4  # root + one per namespace
    assert script.index("ip -n m1 -batch") < script.index("ip -n sw -batch")
    assert script.index("ip -n m2 -batch") < script.index("ip -n sw -batch")
    assert "link add eth0 type veth peer name m1 netns sw" in script


def test_command_backend_breaks_creation_cycles_with_a_first_pass():
    from harness.net.backend import CommandBackend

    backend = CommandBackend(LocalNode("x"))
    backend.add_veth("a", "x", "b", "x")
    backend.add_veth("b", "y", "a", "y")
    backend.configure_interface("a", "x", "10.0.0.1/24", 1500)
    backend.configure_interface("b", "y", "10.0.1.1/24", 1500)
    script = backend.script()
    creates = [script.index("link add x"), script.index("link add y")]
    configures = [script.index("addr add 10.0.0.1/24"), script.index("addr add 10.0.1.1/24")]
    assert max(creates) < min(configures)


# -- the verification table --------------------------------------------------


def _plain(i, rtt, ok=True):
    return dict(link=f"m{i:02d}:eth0--switch:m{i:02d}", direction=f"m{i:02d}->switch",
                configured_mbit=None, expected_rtt_ms=None, rtt_ms=rtt, ok=ok)


def test_plain_links_fold_into_one_row_and_shaped_ones_stay():
    shaped = dict(link="reducer:eth0--switch:red", direction="switch->reducer",
                  configured_mbit=85.2, link_layer_mbit=84.5, rate_ratio=0.991,
                  expected_rtt_ms=None, rtt_ms=1.01, ok=True)
    table = verification_table([shaped] + [_plain(i, 0.2 + i / 100) for i in range(1, 49)])
    assert len(table) == 2
    assert table.rate_ratio[0] == 0.991 and table.rtt_max_ms[0] == 1.01
    folded = table.iloc[1]
    assert folded.link == "48 plain directions"
    assert folded.direction == "m01->switch .. m48->switch"
    assert folded.rtt_ms == pytest.approx(0.445)  # median of 0.21 .. 0.68
    assert folded.rtt_max_ms == pytest.approx(0.68) and folded.ok


def test_a_failed_plain_link_fails_the_folded_row():
    table = verification_table([_plain(1, 0.3), _plain(2, None, ok=False)])
    assert table.ok.tolist() == [False] and table.rtt_ms[0] == 0.3


# -- a user's machines: every path between them, and each link's measured paths ----------
def test_paths_pair_every_interface_with_every_other_machines_interfaces():
    from harness.machines.verify_paths import paths

    found = paths({"client": [("eth0", "192.0.2.10"), ("eth1", "198.51.100.10")],
                   "server": [("ens3", "203.0.113.5")]})
    assert [p.label for p in found] == ["client:eth0->server:ens3", "client:eth1->server:ens3",
                                        "server:ens3->client:eth0", "server:ens3->client:eth1"]
    assert found[1].src_ip == "198.51.100.10" and found[1].dst_ip == "203.0.113.5"


def _s4_bed():
    """S4's topology on two inventory machines, reached (only their names matter here)."""
    from harness.machines.inventory import Inventory
    from harness.run.testbed import InventoryTestbed
    from harness.studies.s4 import study as s4

    inv = Inventory.from_dict({"nodes": {
        "client": {"host": "c", "interfaces": {
            "eth0": {"device": "enp1s0", "address": "192.0.2.10/24"},
            "eth1": {"device": "enp2s0", "address": "198.51.100.10/24"}}},
        "server": {"host": "s", "interfaces": {
            "eth0": {"device": "ens3", "address": "203.0.113.5/24"}}}}})
    bed = InventoryTestbed(s4.topology(s4.Params.resolve()), inv)
    bed.nodes = {"client": None, "server": None}
    return bed


def test_each_inventory_link_lists_the_paths_measured_through_its_interfaces():
    from harness.archive.report_sections import describe_check, link_origin_rows
    from harness.lab.verify import LinkCheck

    bed = _s4_bed()

    def check(link, goodput, rtt, note=""):
        return LinkCheck(link, "", None, None, goodput, None, 0.0, None, rtt, None,
                         rtt is not None, note=note, seconds=1)

    bed.checks = [check("client:enp2s0->server:ens3", 480.0, 0.2),
                  check("server:ens3->client:enp2s0", None, None, "no answer to ping")]
    links = {row["link"]: row for row in bed.links()}
    row = links["client:eth1 - router:eth1"]
    assert not row["shaped_by_harness"]
    assert [m["path"] for m in row["measured"]] == ["client:enp2s0->server:ens3",
                                                    "server:ens3->client:enp2s0"]
    assert links["client:eth0 - router:eth0"]["measured"] == []
    text = link_origin_rows({"testbed": {"links": [row]}})["client:eth1 - router:eth1"]
    assert "client:enp2s0->server:ens3: 480.0 Mbit/s, RTT 0.2 ms" in text
    assert "server:ens3->client:enp2s0: no answer" in text
    assert "unshaped: TCP goodput 480.0 Mbit/s (iperf3, 1 s)" in describe_check(
        bed.checks[0].to_dict())
    assert "no answer to ping" in describe_check(bed.checks[1].to_dict())


def test_rate_tests_only_on_interfaces_the_topology_joins():
    from harness.machines.inventory import Inventory
    from harness.run.testbed import InventoryTestbed
    from harness.studies.s0 import study as s0

    bed = _s4_bed()
    # through S4's router, which the user's network provides: each client port to the server
    assert bed.facing() == {("client:enp1s0", "server:ens3"), ("client:enp2s0", "server:ens3"),
                            ("server:ens3", "client:enp1s0"), ("server:ens3", "client:enp2s0")}
    hosts = {"a1": {"eth0": "10.1.0.2/24"}, "fa": {"priv": "10.1.0.1/24", "pub": "198.18.0.1/24"},
             "fb": {"pub": "198.18.0.2/24", "priv": "10.2.0.1/24"}, "b1": {"eth0": "10.2.0.2/24"}}
    inv = Inventory.from_dict({"nodes": {n: {"host": n, "interfaces": {
        i: {"device": i, "address": a} for i, a in ifs.items()}} for n, ifs in hosts.items()}})
    bed = InventoryTestbed(s0.S0().topology(s0.S0.Params.resolve()), inv)
    bed.nodes = dict.fromkeys(hosts)
    # S0's three links, both ways: 6 of the 26 paths between different machines
    assert bed.facing() == {(x, y) for a, b in (("a1:eth0", "fa:priv"), ("fa:pub", "fb:pub"),
                                                ("fb:priv", "b1:eth0")) for x, y in ((a, b), (b, a))}


def test_a_second_verification_in_one_run_is_archived_apart_and_the_first_kept(tmp_path,
                                                                              monkeypatch):
    """A session verified twice (a test's retry under load did): the first pass's raw files
    and record stay, the second's raw files are prefixed pass2- (archived files are never
    replaced: the same names were refused, "exists already", in a fresh clone's suite)."""
    import json

    from harness.lab.verify import LinkCheck
    from harness.run.session import open_session

    class Bed:  # a testbed that verifies with a fixed reading per pass
        passes = 0

        def verify(self, journal, seconds):
            Bed.passes += 1
            return [LinkCheck("a:eth0--b:eth0", "a->b", 50.0, 50.0, 47.0 + Bed.passes,
                              0.94, 0.0, None, 0.1, True, None,
                              outputs=[f"pass {Bed.passes}\n"])]

        def record(self):
            return {"stand-in": True}

    monkeypatch.setenv("HARNESS_LOCK_DIR", str(tmp_path / "locks"))  # not the machine's
    with open_session("tverify", {}, root=tmp_path) as session:
        session.bed = Bed()
        session.verify(1)
        session.verify(1)
        run = session.run.path
    raw = {p.name: p.read_text() for p in (run / "raw").iterdir()}
    assert raw == {"verify-a_eth0--b_eth0-a-_b-1.txt": "pass 1\n",
                   "pass2-verify-a_eth0--b_eth0-a-_b-1.txt": "pass 2\n"}
    meta = json.loads((run / "run.json").read_text())
    assert [c["goodput_mbit"] for c in meta["link_verification"]] == [49.0]
    assert [[c["goodput_mbit"] for c in p] for p in meta["link_verification_earlier"]] == [[48.0]]

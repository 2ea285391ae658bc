"""S3 parameters, topology, qdisc parsing, TIPC output parsing, the CPU reading and the
measuring plan (the claims: test_s3_claims.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.config import apply, operation, tipc
from harness.errors import SpecError
from harness.studies.s3 import design as s3_design
from harness.studies.s3 import measure as s3_points
from harness.studies.s3 import study as s3


def test_quick_profile_resolves():
    p = s3.Params.resolve()
    assert p.protocols == ("tcp-cubic", "sctp", "tipc")
    assert p.lab_mappers == 48
    assert p.kernel_features() == {"sctp", "tipc"}
    assert s3.Params.resolve(protocols="tcp,tcp-cubic",
                             cpu_protocols="tcp-cubic").kernel_features() == set()
    assert s3.Params.resolve(protocols="tcp,tcp-cubic", cpu_rounds=0).kernel_features() == set()


@pytest.mark.parametrize("given, message", [
    (dict(mappers="8,49"), "more than the lab holds"),
    (dict(cpu_mappers=50), "more than the lab holds"),
    (dict(sizes_kb="0,4"), "out of range"),
    (dict(sizes_kb="128"), "out of range"),
    (dict(protocols="tcp,udp"), "unknown protocol.*udp"),
    (dict(protocols=""), None),  # empty: the default protocols
    (dict(profile="huge"), "unknown profile"),
    (dict(queue_packets=0), "out of range"),
    (dict(sndbuf=100), "out of range"),
    (dict(mapper=4), "unknown parameter"),
    (dict(reducer_own_kernel="maybe"), "true or false, or empty"),
])
def test_bad_parameters_fail_before_anything(given, message):
    if message is None:
        assert s3.Params.resolve(**given).protocols == ("tcp-cubic", "sctp", "tipc")
        return
    with pytest.raises(SpecError, match=message):
        s3.Params.resolve(**given)


def test_topology_48_mappers_and_bottleneck_queue():
    p = s3.Params.resolve(queue_packets=40, port_rate_mbit=80)
    topo = s3.topology(p)
    assert len(topo.nodes) == 50 and len(topo.links) == 49
    port = [ln for ln in topo.links if ln.b.ifname == "red"]
    assert len(port) == 1 and port[0].rate_mbit == 80 and port[0].queue_packets == 40
    mappers = [ln for ln in topo.links if ln.b.ifname != "red"]
    assert all(ln.rate_mbit is None for ln in mappers)  # unshaped by default
    assert topo.node("switch").forwarding
    assert s3.mapper_ip(47) == "198.18.48.2" and s3.mapper_name(47) == "m48"
    with pytest.raises(SpecError):
        s3.topology(p, mappers=49)
    shaped = s3.topology(s3.Params.resolve(mapper_rate_mbit=100, mappers="4", cpu_mappers=4))
    assert len(shaped.links) == 5 and all(ln.rate_mbit for ln in shaped.links)


class FakeNode:
    """Answers every command with ``text``; remembers the commands."""

    name = "switch"

    def __init__(self, text):
        self.text = text
        self.commands = []

    def run(self, cmd, *a, **k):
        self.commands.append(cmd)
        return type("R", (), {"stdout": self.text, "stderr": "", "ok": True,
                              "exit_status": 0})()

    @property
    def machine(self):
        return self

    def describe(self):
        return {"type": "local", "name": self.name}


TC = """qdisc htb 1: root refcnt 3 r2q 10 default 0x1 direct_packets_stat 0 direct_qlen 1000
 Sent 1420030 bytes 1005 pkt (dropped 7, overlimits 62 requeues 0)
 backlog 0b 0p requeues 0
qdisc pfifo 10: parent 1:1 limit 44p
 Sent 1419940 bytes 1004 pkt (dropped 5, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
"""


def test_qdisc_counters_read_the_fifo():
    out = s3_points.qdisc_counters(FakeNode(TC), "red")
    assert out == {"fifo_dropped": 5, "fifo_sent_pkts": 1004, "htb_overlimits": 62}


def test_snapshot_is_one_command_when_the_mappers_share_the_switch_machine():
    from harness.fanin.reducer import MapperFleet
    from harness.nodes import LocalNode, NamespaceNode
    from harness.nodes.ssh import SSHNode

    vm, other = SSHNode("vm", "192.0.2.1"), LocalNode()
    switch = NamespaceNode("lab-switch", vm)
    fleet = MapperFleet("tcp", ["198.18.1.2:1", "198.18.2.2:1"], [(vm, None, 2)],
                        pids={"198.18.1.2:1": 41, "198.18.2.2:1": 42},
                        _listens_of={id(vm): ["198.18.1.2:1", "198.18.2.2:1"]})
    assert s3_points.snapshot_command(switch, fleet) == (
        "nsenter --net=/run/netns/lab-switch -- tc -s qdisc show dev red; echo @@stat; "
        "cat /proc/41/stat /proc/42/stat 2>/dev/null")
    elsewhere = MapperFleet("tcp", ["x:1"], [(other, None, 1)], pids={"x:1": 7},
                            _listens_of={id(other): ["x:1"]})
    assert s3_points.snapshot_command(switch, elsewhere) == ""
    stat = "41 (fanin) S 1 41 41 0 -1 0 0 0 0 0 30 12 0 0 20 0 1 0 900 0 0\n"
    assert s3_points.parse_snapshot(TC + "@@stat\n" + stat) == (
        {"fifo_dropped": 5, "fifo_sent_pkts": 1004, "htb_overlimits": 62}, 42)


def test_a_points_rounds_are_one_frame_of_numbers_led_by_the_points_fields():
    measured = [{"round": i, "duration_ns": 1_000_000 + i, "first_ns": 500 + i,
                 "rate_mbit": 10.5 * i, "overrun": i == 2, "bytes": 4096} for i in range(3)]
    frame = s3_points.round_frame(measured, experiment="rate", protocol="tipc", mappers=48,
                                  size_kb=4, period_ms=0.0, repetition=2)
    assert list(frame.columns) == ["experiment", "protocol", "mappers", "size_kb", "period_ms",
                                   "repetition", *s3_points.ROUND_FIELDS]  # no other key
    assert frame.duration_ns.dtype == np.int64 and frame.overrun.dtype == bool
    assert frame.overrun.tolist() == [False, False, True] and set(frame.protocol) == {"tipc"}
    assert frame.rate_mbit.tolist() == [0.0, 10.5, 21.0]
    empty = s3_points.round_frame([], protocol="sctp")
    assert empty.empty and list(empty.columns) == ["protocol", *s3_points.ROUND_FIELDS]


@pytest.mark.parametrize("text, identity", [
    ("Node Identity                    Hash\n                                 00000000\n", ""),
    ("Node Identity                    Hash\ns3-reducer                       00000000\n",
     "s3-reducer"),
    ("", ""),
])
def test_tipc_identity_parsing(text, identity):
    assert tipc.parse_identity(text) == identity


@pytest.fixture
def one_call_at_a_time(monkeypatch):
    """FakeNode answers node.run only (the group runner has tests of its own)."""
    monkeypatch.setattr(operation, "run_calls",
                        lambda calls, timeout: [n.run(c, check=False) for n, c in calls])


def test_tipc_bearer_arguments_are_checked_before_any_change(journal, one_call_at_a_time):
    node = FakeNode("")
    for kwargs, message in [
        (dict(media="ib", bearer={}), "not supported"),
        (dict(media="udp", bearer=dict(name="x" * 20, localip="198.18.0.1")), "name"),
        (dict(media="udp", bearer=dict(name="s3", localip="nope")), "localip"),
        (dict(media="udp", bearer=dict(name="s3", localip="198.18.0.1", remoteip="x")),
         "remoteip"),
        (dict(media="eth", bearer=dict(dev="bad name!")), "interface name"),
    ]:
        with pytest.raises(SpecError, match=message):
            apply(journal, [tipc.TipcNode(node, "ok", **kwargs)])
    with pytest.raises(SpecError, match="not valid"):
        apply(journal, [tipc.TipcNode(node, "has space", "eth", dict(dev="eth0"))])
    assert journal.entries() == [] and journal.configuration() == []


FRESH = "@tool /sbin/tipc\n@identity\nNode Identity  Hash\n   00000000\n@bearers\n"


@pytest.mark.parametrize("state, message", [
    (FRESH.replace("   00000000", "old-name  00000000"), "already has TIPC identity old-name"),
    (FRESH + "udp:s3\n", "already has TIPC bearer udp:s3"),
    ("@notool\n", "no `tipc` command"),
])
def test_tipc_state_of_any_node_stops_all_nodes_before_a_change(journal, state, message,
                                                               one_call_at_a_time):
    """One bad node among many: refused with nothing journalled and no change made anywhere."""
    nodes = [FakeNode(FRESH), FakeNode(state), FakeNode(FRESH)]
    ops = [tipc.TipcNode(n, f"n{i}", "udp", dict(name="s3", localip=f"198.18.0.{i + 1}"))
           for i, n in enumerate(nodes)]
    with pytest.raises(Exception, match=message):
        apply(journal, ops)
    assert journal.entries() == []
    assert all(not any("enable" in c for c in n.commands) for n in nodes)


def test_tipc_node_is_one_change_and_one_undo_kind(journal, one_call_at_a_time):
    nodes = [FakeNode(FRESH), FakeNode(FRESH)]
    records = apply(journal, [tipc.TipcNode(n, f"n{i}", "udp", dict(
        name="s3", localip=f"198.18.0.{i + 1}", remoteip="198.18.0.9")) for i, n in
        enumerate(nodes)])
    assert [r.kind for r in records] == ["tipc", "tipc"] and all(r.changed for r in records)
    assert {e.kind for e in journal.entries()} == {"tipc-bearer"}
    assert journal.entries()[0].data["identity"] == "n0"
    assert nodes[1].commands[-1].startswith("tipc node set identity n1 && tipc bearer enable "
                                            "media udp name s3 localip 198.18.0.2")


# -- the CPU phase: parameters, period, order ------------------------------------------------

def test_cpu_phase_parameters_and_profiles():
    quick = s3.Params.resolve()
    assert quick.cpu_protocols == ("tipc", "tcp-cubic") and quick.cpu_repetitions >= 2
    verdict = s3.Params.resolve(profile="verdict")
    assert verdict.cpu_repetitions > quick.cpu_repetitions
    assert s3.Params.resolve(cpu_protocols="tcp-cubic,sctp").cpu_protocols == ("tcp-cubic",
                                                                                 "sctp")
    points = s3_points.cpu_points(quick, 100.0)
    # the paper's 25 ms at 1 Gbit/s and 1:50 -> 240 ms at 100 Mbit/s and 1:48
    assert [(p.period_paper_ms, p.period_ms, p.size_kb) for p in points] == [
        (25, 240.0, 1), (25, 240.0, 4)]
    paper = s3_points.cpu_points(s3.Params.resolve(profile="paper"), 100.0)
    assert len(paper) == 3 * 7 and {p.rounds for p in paper} == {200}
    assert {p.period_ms for p in paper} == {240.0, 480.0, 960.0}
    assert {(p.experiment, p.mappers, p.rounds, p.warmup) for p in points} == {("cpu", 48, 6, 1)}
    assert s3_points.cpu_points(s3.Params.resolve(cpu_rounds=0), 100.0) == []
    # the paper profile is the paper's 7 x 7 grid of Fig. 7
    grid = s3.Params.resolve(profile="paper")
    assert len(grid.mappers) == 7 and len(grid.sizes_kb) == 7 and grid.rounds == 1000
    assert max(grid.mappers) == 48 and grid.sizes_kb == (1, 2, 4, 8, 16, 32, 64)


@pytest.mark.parametrize("paper_ms, port, mappers, ours", [
    (25, 1000.0, 50, 25.0),  # the paper's own testbed
    (25, 100.0, 48, 240.0),  # our nominal port
    (25, 10.011, 48, 2397.0),  # the reference run of 2026-11-25, scaled to 10 Mbit/s
    (25, 100.0, 4, 20.0),  # a small fan-in offers less: a shorter period keeps the load
])
def test_cpu_period_keeps_the_papers_offered_load_per_unit_of_port_rate(paper_ms, port,
                                                                         mappers, ours):
    assert s3_design.cpu_period_ms(paper_ms, port, mappers) == ours
    # N x size per period, as a share of the port, is the paper's (to the 1 ms rounding)
    paper_load = 50 * 16e3 * 8 / (paper_ms / 1e3) / 1e9
    assert mappers * 16e3 * 8 / (ours / 1e3) / (port * 1e6) == pytest.approx(paper_load,
                                                                             rel=0.03)
    with pytest.raises(ValueError):
        s3_design.cpu_period_ms(25, 0, 48)


def _stat(busy, idle):
    """/proc/stat's first line with ``busy`` ticks split over user/system/softirq."""
    return [busy // 2, 0, busy // 4, idle, 3, 0, busy - busy // 2 - busy // 4, 7, 50, 0]


def test_system_cpu_is_sars_share_over_the_marked_interval():
    samples = [
        {"t_ns": 0, "stat": _stat(1000, 5000)},  # before the warm-up: not counted
        {"t_ns": 2_000_000_000, "stat": _stat(1900, 5100), "mark": "begin"},
        {"t_ns": 3_000_000_000, "stat": _stat(2000, 5200)},  # a periodic sample
        {"t_ns": 8_000_000_000, "stat": _stat(2200, 6000), "mark": "end"},
        {"t_ns": 8_100_000_000, "stat": _stat(2300, 6000)},  # after: not counted
    ]
    out = s3_points.system_cpu(samples)
    # busy +300, idle +900, iowait and steal unchanged; guest (inside user) not counted twice
    assert out["system_busy_pct"] == pytest.approx(25.0)
    assert out["cpu_interval_s"] == pytest.approx(6.0)
    assert out["system_ticks"] == 1200  # the share's resolution: one tick is 1/1200 of it
    unmarked = s3_points.system_cpu([{k: v for k, v in x.items() if k != "mark"}
                                     for x in samples])
    assert unmarked["system_busy_pct"] == pytest.approx(100 * 1300 / (1300 + 1000))
    assert s3_points.system_cpu(samples[:1])["system_busy_pct"] is None


@pytest.mark.parametrize("given, message", [
    (dict(cpu_repetitions=0), "cpu_repetitions=0 is out of range"),
    (dict(cpu_protocols="tipc,quic"), "cpu_protocols has unknown protocol.*quic"),
    (dict(cpu_protocols="tipc,tcp-cubic,tipc"), "cpu_protocols names tipc twice"),
    (dict(protocols="tcp-cubic,sctp"), r"cpu_protocols has protocol\(s\) tipc that are not in "
                                       r"protocols \(tcp-cubic, sctp\)"),
])
def test_bad_cpu_phase_parameters_fail_with_one_clear_error(given, message):
    with pytest.raises(SpecError, match=message) as error:
        s3.Params.resolve(**given)
    assert error.value.hint  # every refusal says how to fix it


def test_without_a_cpu_phase_its_protocols_are_not_checked():
    assert s3.Params.resolve(protocols="tcp-cubic", cpu_rounds=0).lab_mappers == 48


class FleetBed:
    """Nodes by name; no namespace lab (no port link to look up)."""

    def __init__(self):
        self.nodes = {}

    def node(self, name):
        return self.nodes.setdefault(name, FakeNode(""))


class FleetSession:
    dry_run = False
    journal = None
    scaling = None

    def __init__(self):
        self.raws, self.tables, self.notes = {}, {}, {}

    def raw(self, name, content):
        assert name not in self.raws  # raw files are never replaced
        self.raws[name] = content

    def results(self, frame, name="results"):
        self.tables[name] = frame

    def note(self, **fields):
        self.notes.update(fields)


@pytest.fixture
def fake_fanin(monkeypatch):
    """Fleets and points without a lab: which fleets started (protocol, mappers), in order."""
    from contextlib import contextmanager

    started = []

    @contextmanager
    def fleet(journal, nodes, listens, proto, binary, sockets):
        started.append((proto, sockets.cc, len(nodes)))
        yield type("Fleet", (), {"output": f"{proto} fleet", "listens": listens})()

    def point(session, bed, fleet, binary, variant, point, repetition, params, before):
        # a round takes (1, 2, 3 ms per KB) for sctp, tcp-cubic, tipc, and 1 ms more from
        # one repetition to the next: the CPU-bound period reads their medians
        per_kb = {"sctp": 1, "tcp-cubic": 2, "tipc": 3}[variant]
        row = {"experiment": point.experiment, "protocol": variant, "mappers": point.mappers,
               "size_kb": point.size_kb, "period_ms": point.period_ms,
               "period_paper_ms": point.period_paper_ms, "repetition": repetition,
               "rounds": point.rounds, "rounds_asked": point.rounds,
               "round_ms_mean": per_kb * point.size_kb + repetition - 1}
        return row, pd.DataFrame([{**row, "round": 0}]), ({}, 0)

    monkeypatch.setattr(s3.fanin, "build_on", lambda node: "/bin/fanin")
    monkeypatch.setattr(s3.fanin, "mapper_fleet", fleet)
    monkeypatch.setattr(s3_points, "measure_point", point)
    monkeypatch.setattr(s3, "kernel_record", lambda node: {})
    return started


def _measure(**given):
    params = s3.Params.resolve(**{"mappers": "8", "sizes_kb": "1,4", "cpu_mappers": 6,
                                  **given})
    session = FleetSession()
    s3.S3().measure(session, FleetBed(), params, None)
    return session, params


def test_cpu_phase_starts_a_fresh_fleet_per_protocol_and_repetition_in_a_recorded_order(
        fake_fanin, capsys):
    session, params = _measure(repetitions=2, cpu_repetitions=4, seed=7,
                               cpu_periods_paper_ms="25", cpu_sizes_kb="4,16", cpu_load="wire")
    order = session.notes["s3"]["order"]
    assert order["seed"] == 7 and len(order["rate"]) == 2 and len(order["cpu"]) == 4
    assert all(sorted(o) == ["tcp-cubic", "tipc"] for o in order["cpu"])
    assert len({tuple(o) for o in order["cpu"]}) == 2  # seed 7: both orders occur
    # the rate sweep's fleets (all 8 lab mappers), then one fresh fleet per protocol and CPU
    # repetition (cpu_mappers of them), in the recorded order
    cpu_fleets = [(p, cc, n) for p, cc, n in fake_fanin[6:]]
    assert [n for _p, _cc, n in fake_fanin] == [8] * 6 + [6] * 8
    assert [("tcp-cubic" if cc == "cubic" else p) for p, cc, _n in cpu_fleets] == [
        v for o in order["cpu"] for v in o]
    frame = session.tables["results"]
    cpu = frame[frame.experiment == "cpu"]
    assert len(cpu) == 4 * 2 * 2 and set(cpu.repetition) == {1, 2, 3, 4}
    first = cpu[cpu.repetition == 1].drop_duplicates("protocol").set_index("protocol")["order"]
    assert list(first.sort_values().index) == order["cpu"][0]
    assert set(frame[frame.experiment == "rate"].protocol) == set(params.protocols)
    assert "mappers-cpu-tipc-r4.jsonl" in session.raws and "mappers-sctp-r2.jsonl" in session.raws
    fleets = session.notes["s3"]["fleets"]
    assert [f["experiment"] for f in fleets] == ["rate"] * 6 + ["cpu"] * 8
    assert set(session.notes["s3"]["cpu_protocol_seconds"]) == {"tipc", "tcp-cubic"}
    # every point of both phases is a step of the one progress line
    total = 2 * 3 * 2 + 4 * 2 * 2
    assert f"{total}/{total} points" in capsys.readouterr().err
    # the same seed gives the same orders
    again, _ = _measure(repetitions=2, cpu_repetitions=4, seed=7, cpu_periods_paper_ms="25",
                        cpu_sizes_kb="4,16", cpu_load="wire")
    assert again.notes["s3"]["order"]["cpu"] == order["cpu"]
    assert again.notes["s3"]["fleets"] == [{**f, "seconds": g["seconds"], "start_s": g[
        "start_s"]} for f, g in zip(fleets, again.notes["s3"]["fleets"])]
    # no lab here: the CPU period is the paper's carried over to the nominal 100 Mbit/s port
    # and cpu_mappers=6: 25 ms x 10 x 6 / 50 = 30 ms
    assert set(cpu.period_ms) == {30.0} and set(cpu.period_paper_ms) == {25}
    assert session.notes["s3"]["cpu_periods_ms"] == {"25": 30.0}


def test_cpu_bound_period_is_twice_the_slowest_protocols_back_to_back_round_time(fake_fanin):
    """Issue 35 item 6: the CPU phase loads the receiver's CPU. Its period per point is 2 x
    the slowest CPU protocol's back-to-back round time there (median over repetitions), read
    from the rate sweep where it measured the point, else from a calibration fleet per
    protocol run before the CPU phase; the wire rule's 30 ms (25 x 10 x 6/50) is gone."""
    session, params = _measure(mappers="6", sizes_kb="1,4", repetitions=3, cpu_sizes_kb="1,4,16",
                               cpu_repetitions=2, seed=5)
    assert params.cpu_load == "cpu"  # the default
    frame = session.tables["results"]
    cpu = frame[frame.experiment == "cpu"]
    # tipc is slowest: 3 ms/KB + (0, 1, 2) over the rate sweep's 3 repetitions -> median +1;
    # 16 KB was not in the rate sweep: one calibration fleet (repetition 1: +0) per protocol
    assert cpu.groupby("size_kb").period_ms.unique().map(list).to_dict() == {
        1: [2.0 * (3 + 1)], 4: [2.0 * (12 + 1)], 16: [2.0 * 48]}
    calibration = frame[frame.experiment == "calibration"]
    assert set(calibration.protocol) == {"tipc", "tcp-cubic"} and set(calibration.size_kb) == {16}
    record = session.notes["s3"]["cpu_calibration"]
    assert sorted(record["calibration_fleets"]) == ["tcp-cubic 16 KB", "tipc 16 KB"]
    assert record["points"]["n06-4k-p25ms"] == {"round_ms": {"tipc": 13.0, "tcp-cubic": 9.0},
                                                "slowest": "tipc", "period_ms": 26.0}
    assert session.notes["s3"]["cpu_periods_ms"] == {"25": {"1": 8.0, "4": 26.0, "16": 96.0}}
    # the calibration fleets ran after the rate sweep and before the first CPU fleet
    kinds = [f["experiment"] for f in session.notes["s3"]["fleets"]]
    assert kinds == ["rate"] * 9 + ["calibration"] * 2 + ["cpu"] * 4
    # the wire rule still gives the paper's load per unit of port rate
    wire, _ = _measure(cpu_load="wire", cpu_sizes_kb="1")
    assert set(wire.tables["results"].query("experiment == 'cpu'").period_ms) == {30.0}


def test_points_are_measured_in_an_order_shuffled_per_fleet_from_the_seed(fake_fanin):
    session, _ = _measure(sizes_kb="1,4,16,64", repetitions=3, cpu_rounds=0, seed=11)
    fleets = session.notes["s3"]["fleets"]
    orders = [tuple(f["points"]) for f in fleets]
    assert all(sorted(o) == ["n08-16k", "n08-1k", "n08-4k", "n08-64k"] for o in orders)
    assert len(set(orders)) > 1  # not one fixed order
    frame = session.tables["results"]
    for fleet, (_, rows) in zip(fleets, frame.groupby(["repetition", "order"], sort=False)):
        assert [f"n{r.mappers:02d}-{r.size_kb}k" for r in rows.itertuples()] == fleet["points"]
    other, _ = _measure(sizes_kb="1,4,16,64", repetitions=3, cpu_rounds=0, seed=12)
    assert [f["points"] for f in other.notes["s3"]["fleets"]] != [list(o) for o in orders]


def test_fleet_plan_draws_every_order_before_the_first_fleet():
    from harness.studies.order import MeasuringOrder

    points = [s3_points.Point("rate", 8, s, 5, 1) for s in (1, 4, 16)]
    cpu = [s3_points.Point("cpu", 8, s, 6, 1, 240.0, 25) for s in (4, 16)]
    plan = s3_points.fleet_plan(MeasuringOrder(3), [(points, ["m"] * 8, 2, ("a", "b", "c")),
                                                    (cpu, ["m"] * 6, 3, ("a", "b")),
                                                    ([], [], 5, ("a",))])
    assert [(f.experiment, f.repetition) for f in plan] == [("rate", 1)] * 3 + \
        [("rate", 2)] * 3 + [("cpu", r) for r in (1, 1, 2, 2, 3, 3)]
    assert all(sorted(f.points) == sorted(points if f.experiment == "rate" else cpu)
               for f in plan)
    assert [f.position for f in plan[:3]] == [0, 1, 2]
    assert s3_points.protocol_orders(plan, "cpu") == [[f.variant for f in plan[6 + 2 * i:
                                                                              8 + 2 * i]]
                                                       for i in range(3)]
    again = s3_points.fleet_plan(MeasuringOrder(3), [(points, ["m"] * 8, 2, ("a", "b", "c")),
                                                     (cpu, ["m"] * 6, 3, ("a", "b"))])
    assert again == plan


def test_no_cpu_phase_without_cpu_rounds(fake_fanin):
    session, params = _measure(cpu_rounds=0)
    assert set(session.tables["results"].experiment) == {"rate"}
    assert session.notes["s3"]["order"]["cpu"] == []
    assert len(fake_fanin) == 3 * params.repetitions == 6  # the quick profile: 2 repetitions


def test_the_reducer_port_is_netems_rate_with_the_fifo_as_its_limit_and_its_counters_read():
    """2026-11-29T16:35Z: the port on netem's own rate (htb under TCG carried 0.944-0.964 of
    its rate). One netem root, handle 10:, its limit the 85-packet FIFO, no bucket; the drops
    and packets the study reads per point are that qdisc's."""
    from harness.studies.s3.measure import parse_qdisc
    from harness.topology.shaping import plan_egress

    for profile in ("quick", "verdict"):
        params = s3.Params.resolve(profile=profile)
        assert params.port_shaper == "netem"
        (port,) = [link for link in s3.topology(params).links if link.rate_mbit]
        plan = plan_egress(port)
        assert (plan.kind, plan.netem_limit, plan.fifo, plan.burst_bytes) == ("netem", 85, None,
                                                                              None)
        assert plan.tc_commands("red") == [["qdisc", "add", "dev", "red", "root", "handle", "10:",
                                            "netem", "rate", f"{int(port.rate_mbit * 1e6)}bit",
                                            "limit", "85"]]
    shown = ("qdisc netem 10: root refcnt 2 limit 85 rate 75Mbit\n"
             " Sent 1234567 bytes 900 pkt (dropped 17, overlimits 0 requeues 0)\n"
             " backlog 0b 0p requeues 0\n")
    assert parse_qdisc(shown) == {"fifo_dropped": 17, "fifo_sent_pkts": 900, "htb_overlimits": 0}

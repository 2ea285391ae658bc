"""The fan-in generator for real: TCP in a host namespace lab; SCTP and TIPC in a VM lab.

Host part: a 1:4 fan-in through a routing "switch" namespace whose port to the
reducer is shaped with a small FIFO. Checks: every requested byte arrives
(the program verifies content; we check counts on both sides), rounds are
counted, round times are monotonic and plausible against the shaped rate,
the queue drops are read, and nothing is left running.

VM part (marker ``vm``): the same with SCTP and TIPC (UDP bearers configured
by harness.config.tipc) inside one VM.
"""

from __future__ import annotations

import os

import pytest
from conftest import group_alive, needs_root, netns_names

from harness import fanin
from harness.lab.lab import Lab
from harness.studies.s3 import measure as s3_points
from harness.studies.s3 import study as s3

pytestmark = [pytest.mark.integration, needs_root]

RATE = 50.0
N = 4


def _params(**kw):
    # a host lab: this host's kernel has no sch_netem, so the port is htb (S3's default is netem's
    # rate since 2026-11-29T16:35Z, which its VM labs carry)
    return s3.Params.resolve(port_rate_mbit=RATE, queue_packets=44, mappers=(N,), cpu_rounds=0,
                             port_shaper="htb", **kw)


def _check_rounds(result, n, size, rounds, rate_mbit):
    out = result.output
    assert result.ok, (result.exit_status, out.errors, result.stderr[-500:])
    measured = out.measured()
    assert [r["round"] for r in out.rounds] == list(range(len(out.rounds)))
    assert len(measured) == rounds == out.summary["rounds_done"]
    assert out.summary["bytes"] == n * size * rounds  # every requested byte arrived
    starts = [r["start_ns"] for r in out.rounds]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    for r in measured:
        assert 0 < r["first_ns"] <= r["duration_ns"]
        assert r["rate_mbit"] == pytest.approx(n * size * 8 / r["duration_ns"] * 1e3, rel=1e-3)
    # the shaped port bounds the rate (payload < link-layer bytes), bursts aside
    if n * size >= 256 * 1024:
        assert sum(r["rate_mbit"] for r in measured) / len(measured) <= rate_mbit * 1.15


def test_tcp_fanin_in_host_lab(journal):
    params = _params(protocols="tcp-cubic")
    topo = s3.topology(params)
    binary = str(fanin.build_local())
    with Lab(topo, journal, prefix=f"fi{os.getpid() % 100000}") as lab:
        nodes = [lab.node(s3.mapper_name(i)) for i in range(N)]
        listens = [fanin.mapper_address("tcp", s3.mapper_ip(i), s3.PORT, i) for i in range(N)]
        with fanin.mapper_fleet(journal, nodes, listens, "tcp", binary,
                                fanin.SocketOptions(cc="cubic")) as fleet:
            assert len(fleet.pids) == N
            groups = [proc.info.pid for _m, proc, _c in fleet.groups]
            before = s3_points.qdisc_counters(lab.node("switch"), "red")
            spec = fanin.ReduceSpec("tcp", 65536, 10, warmup=1,
                                    sockets=fanin.SocketOptions(cc="cubic"))
            result = fanin.run_reducer(lab.node("reducer"), binary, spec, listens)
            _check_rounds(result, N, 65536, 10, RATE)
            assert result.output.start["congestion"] == "cubic"
            after = s3_points.qdisc_counters(lab.node("switch"), "red")
            assert after["fifo_sent_pkts"] - before["fifo_sent_pkts"] >= N * 11 * 65536 / 1500
            assert fanin.mapper_cpu_ticks(fleet) >= 0
            # counters read around the run inside the reducer's own command
            bracket = s3_points.snapshot_command(lab.node("switch"), fleet)
            assert bracket
            result = fanin.run_reducer(lab.node("reducer"), binary, spec, listens,
                                       bracket=bracket)
            _check_rounds(result, N, 65536, 10, RATE)
            (q0, cpu0), (q1, cpu1) = map(s3_points.parse_snapshot, result.bracket)
            # nothing but a stray ARP or ACK crosses the queue between two points
            assert after["fifo_sent_pkts"] <= q0["fifo_sent_pkts"] <= after["fifo_sent_pkts"] + 5
            assert q1["fifo_sent_pkts"] - q0["fifo_sent_pkts"] >= N * 11 * 65536 / 1500
            assert cpu1 >= cpu0 >= 0  # the mappers' ticks, read before and after ...
            for text in result.bracket:  # ... from every mapper's /proc/PID/stat
                assert len(text.split("@@stat", 1)[1].strip().splitlines()) == N
            # the same counters in one command of their own (reducer on another machine)
            q2, cpu2 = s3_points.snapshot(lab.node("switch"), fleet)
            assert q1["fifo_sent_pkts"] <= q2["fifo_sent_pkts"] <= q1["fifo_sent_pkts"] + 5
            assert q2["fifo_dropped"] >= q1["fifo_dropped"] and cpu2 >= cpu1
            after = q2
            # periodic rounds keep their grid
            spec = fanin.ReduceSpec("tcp", 1024, 5, period_us=50_000, cpu_sample_ms=20)
            result = fanin.run_reducer(lab.node("reducer"), binary, spec, listens)
            _check_rounds(result, N, 1024, 5, RATE)
            # each round starts on its slot of the 50 ms grid, never before it: a late round
            # does not shift the next (an overrun, a round still running at the next slot,
            # restarts the grid). How late a wake-up is belongs to the machine's load, so the
            # median, not every round, must be within a busy machine's scheduling
            rounds = result.output.rounds
            late, anchor, slot = [], None, 0
            for r in rounds:
                if anchor is None or r["overrun"]:
                    anchor, slot = r["start_ns"], 0
                late.append(r["start_ns"] - (anchor + slot * 50_000_000))
                slot += 1
            assert all(d >= -1e6 for d in late), late
            assert sorted(late)[len(late) // 2] <= 20e6, late
            assert sum(r["overrun"] for r in rounds) < len(rounds) - 1, rounds  # a grid was kept
            assert len(result.output.cpu) >= 3
            # the machine's CPU is read at two marks: the first measured round's start and
            # the end of the last round's period. Rounds after the first start on their slots,
            # so the marks are over 4 periods apart whatever the wake-ups; with no overrun
            # round 0 (it never sleeps) starts the grid, and the end mark waits for the slot
            # after the last round (a mark read as the last round ends is most of a period
            # early) but not for one more
            marks = {c["mark"]: c for c in result.output.cpu if c.get("mark")}
            assert set(marks) == {"begin", "end"}
            took = (marks["end"]["t_ns"] - marks["begin"]["t_ns"]) / 1e9
            assert took > 4 * 0.050
            if not any(r["overrun"] for r in rounds):
                grid_end = rounds[0]["start_ns"] + len(rounds) * 50_000_000
                assert marks["end"]["t_ns"] >= grid_end - 25_000_000, (marks, rounds)
                assert took < 6 * 0.050
        exits = fleet.exits
        assert len(exits) == N
        assert sum(e["requests"] for e in exits) == N * (11 + 11 + 5)
        assert sum(e["bytes"] for e in exits) == N * (2 * 11 * 65536 + 5 * 1024)
        assert not [p for p in groups if group_alive(p)]
    assert not [n for n in netns_names() if n.startswith(lab.prefix)]


def test_reducer_failure_is_reported(journal):
    """No mapper listening: a clear error naming the target, exit status 3, nothing left."""
    params = _params(protocols="tcp")
    binary = str(fanin.build_local())
    with Lab(s3.topology(params, mappers=1), journal, prefix=f"fj{os.getpid() % 100000}") as lab:
        spec = fanin.ReduceSpec("tcp", 1024, 1, connect_timeout_s=0.3)
        target = fanin.mapper_address("tcp", s3.mapper_ip(0), s3.PORT, 0)
        with pytest.raises(fanin.FaninError, match="Connection refused") as info:
            fanin.run_reducer(lab.node("reducer"), binary, spec, [target])
        assert "exited 3" in str(info.value)


def test_missing_protocol_is_a_clear_error(journal):
    """On a kernel without SCTP the mappers fail to start with a hint (host kernel here)."""
    from harness.lab.probe import probe

    if probe(__import__("harness.nodes", fromlist=["LocalNode"]).LocalNode()).features.get("sctp"):
        pytest.skip("this kernel has SCTP")
    binary = str(fanin.build_local())
    params = _params(protocols="sctp")
    with Lab(s3.topology(params, mappers=1), journal, prefix=f"fk{os.getpid() % 100000}") as lab:
        listen = fanin.mapper_address("sctp", s3.mapper_ip(0), s3.PORT, 0)
        with pytest.raises(fanin.FaninError, match="no SCTP"):
            with fanin.mapper_fleet(journal, [lab.node("m01")], [listen], "sctp", binary):
                pass
    assert journal.pending() == []

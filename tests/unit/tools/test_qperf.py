"""qperf command lines and reports.

The samples are modelled (no RDMA device, no second node here), laid out as
qperf 0.4.11 prints them -- a ``test:`` line, then ``name  =  value unit``
lines with the values right-aligned, units scaled by 1000 and sizes shown in
KiB with the byte count in parentheses (its place_show/view_* functions) --
with made-up values.
"""

from __future__ import annotations

import pytest

from harness.errors import HarnessError, SpecError
from harness.nodes.result import Result
from harness.tools import qperf
from harness.tools.qperf import QperfRun

# `qperf vm1 -t 2 -m 64 -vv rc_lat tcp_bw` (no -uu: scaled units and commas)
SCALED = """\
rc_lat:
    latency          =   28.7 us
    msg_rate         =   34.8 K/sec
    msg_size         =     64 bytes
    time             =      2 sec
    timeout          =      5 sec
    loc_cpus_used    =    101 % cpus
    loc_cpus_user    =   39.5 % cpus
    loc_cpus_kernel  =   61.5 % cpus
    loc_real_time    =      2 sec
    loc_cpu_time     =   2.02 sec
    loc_send_bytes   =   4.45 MB
    loc_recv_bytes   =   4.45 MB
    loc_send_msgs    = 69,598
    loc_recv_msgs    = 69,597
    rem_cpus_used    =    100 % cpus
    rem_send_msgs    = 69,597
tcp_bw:
    bw               =   11.7 MB/sec
    msg_rate         =    179 /sec
    msg_size         =     64 KiB (65,536)
    time             =      2 sec
    send_cost        =    131 ms/GB
    recv_cost        =    142 ms/GB
    send_cpus_used   =    153 % cpus
    recv_cpus_used   =    166 % cpus
    send_bytes       =   23.4 MB
    recv_msgs        =    357
"""
# the same with -uu (what the harness asks for): base units, no commas
UNIFIED = """\
rc_lat:
    latency        =     28700 ns
    msg_rate       =     34800 /sec
    msg_size       =        64 bytes
    loc_cpus_used  =       101 % cpus
    rem_cpus_used  =       100 % cpus
    loc_send_msgs  =     69598
"""


def test_scaled_units_commas_and_kib_are_read_into_base_units():
    rc, tcp = qperf.parse_output(SCALED)
    assert rc.test == "rc_lat" and rc.latency_us == pytest.approx(28.7)
    assert rc.values["msg_rate"] == pytest.approx(34_800)
    assert rc.msg_size == 64 and rc.values["loc_send_msgs"] == 69_598
    assert rc.values["loc_send_bytes"] == pytest.approx(4.45e6)
    assert rc.values["loc_cpu_time"] == pytest.approx(2.02) and rc.bw_mbit_s is None
    assert tcp.bw_mbit_s == pytest.approx(93.6) and tcp.msg_size == 65536
    assert tcp.values["send_cost"] == pytest.approx(0.131) and tcp.latency_us is None
    assert tcp.text["msg_size"] == "64 KiB (65,536)"
    assert tcp.row() == {"test": "tcp_bw", "msg_size": 65536, "latency_us": None,
                         "bw_mbit_s": pytest.approx(93.6), "msg_rate_per_s": 179.0,
                         "send_cpus_used": 153.0, "recv_cpus_used": 166.0}


def test_unified_units_read_the_same():
    (rc,) = qperf.parse_output(UNIFIED)
    scaled = qperf.parse_output(SCALED)[0]
    for name in ("latency", "msg_rate", "msg_size", "loc_cpus_used", "loc_send_msgs"):
        assert rc.values[name] == pytest.approx(scaled.values[name])


def test_bits_per_second_and_strings():
    text = "rc_bw:\n    bw  =  940 Mb/sec\n    id  =  rxe0:1\n"
    (rc,) = qperf.parse_output(text)
    assert rc.bw_mbit_s == pytest.approx(940) and rc.text["id"] == "rxe0:1"
    assert "id" not in rc.values


def test_a_test_without_a_result_is_an_error():
    with pytest.raises(HarnessError, match="no result for rc_lat"):
        qperf.parse_output("rc_lat:\nfailed to find any InfiniBand devices\n")
    with pytest.raises(HarnessError, match="any test.*failed to connect"):
        qperf.parse_output("qperf: failed to connect to vm1\n")
    with pytest.raises(HarnessError, match="unknown unit"):
        qperf.parse_output("rc_lat:\n    latency  =  3 fortnights\n")


def test_client_and_server_command_lines():
    run = QperfRun(("rc_lat", "rc_bw"), msg_size=64, seconds=3, device="rxe0", poll=False)
    argv = run.client_argv("10.0.1.1")
    assert argv[:2] == ["prlimit", "--memlock=unlimited"]
    assert argv[2:4] == ["qperf", "10.0.1.1"] and argv[-2:] == ["rc_lat", "rc_bw"]
    for flag, value in (("-m", "64"), ("-t", "3"), ("-i", "rxe0:1"), ("-cp", "0"),
                        ("-lp", "19765"), ("-to", "30")):
        assert argv[argv.index(flag) + 1] == value
    assert "-uu" in argv and "-vv" in argv
    tcp = QperfRun(("tcp_lat",), verbose=False).client_argv("10.0.1.1")
    assert "-i" not in tcp and "-m" not in tcp and "-vv" not in tcp
    assert qperf.server_argv(19800) == ["prlimit", "--memlock=unlimited", "qperf", "-lp",
                                        "19800"]


@pytest.mark.parametrize("run, match", [
    (QperfRun(("ud_lat",)), "not supported"), (QperfRun(()), "not supported"),
    (QperfRun(("tcp_lat",), msg_size=0), "out of range"),
    (QperfRun(("tcp_lat",), seconds=1.5), "whole number"),
    (QperfRun(("tcp_lat",), device="rxe0"), "no RC test"),
    (QperfRun(("tcp_lat",), precision=20), "precision"),
    (QperfRun(("tcp_lat",), exchange_timeout_s=0), "exchange timeout"),
])
def test_bad_runs_are_refused(run, match):
    with pytest.raises(SpecError, match=match):
        run.client_argv("10.0.1.1")


def test_the_client_returns_results_or_says_why_it_failed():
    class Node:
        name = "vm2"

        def __init__(self, status, out, err=""):
            self.answer = (status, out, err)

        def run(self, argv, **_kw):
            return Result(self.name, " ".join(argv), self.answer[1], self.answer[2],
                          self.answer[0], 1.0)

    run = QperfRun(("rc_lat",))
    assert qperf.client(Node(0, UNIFIED), run, "vm1")[0].latency_us == pytest.approx(28.7)
    with pytest.raises(HarnessError, match="exit 1.*failed to connect"):
        qperf.client(Node(1, "", "qperf: failed to connect to vm1"), run, "vm1")


def test_a_sweep_runs_every_size_in_the_order_given_in_one_command_and_parses_by_size():
    sweep = qperf.QperfSweep((512, 4), seconds=2, listen_port=19001)
    script = sweep.client_command("198.18.1.2")
    assert script.index("@size 512") < script.index("@size 4")
    assert script.count("tcp_lat tcp_bw") == 2 and "-t 2" in script and "-lp 19001" in script
    got = qperf.parse_sweep("@size 512\ntcp_lat:\n    latency  =  70500 ns\n"
                            "tcp_bw:\n    bw  =  8000000 bytes/sec\n"
                            "@size 4\ntcp_lat:\n    latency  =  70000 ns\n"
                            "tcp_bw:\n    bw  =  100000 bytes/sec\n")
    assert [r.latency_us for r in got[512]][0] == pytest.approx(70.5)
    assert got[4][1].bw_mbit_s == pytest.approx(0.8)
    with pytest.raises(HarnessError, match="qperf at 4 B"):
        qperf.parse_sweep("@size 4\nfailed to connect\n")
    with pytest.raises(SpecError):
        qperf.QperfSweep(()).client_command("h")


def test_a_latency_only_sweep_runs_tcp_lat_alone_and_needs_less_time():
    both, lat = qperf.QperfSweep((4, 64)), qperf.QperfSweep((4, 64), tests=("tcp_lat",))
    script = lat.client_command("198.18.1.2")
    assert script.count("tcp_lat") == 2 and "tcp_bw" not in script
    assert lat.timeout_s() == both.timeout_s() - 2 * 1


def test_rc_tests_connect_through_the_rdma_cm_when_asked():
    """Without the CM qperf's RC tests on Soft-RoCE stopped with 'failed to modify QP to RTR'
    (no RoCE v2 GID); -cm1 resolves the peer from its IP address (issue 34 item 8)."""
    argv = QperfRun(("rc_lat", "rc_bw"), msg_size=64, use_cm=True).client_argv("198.18.1.2")
    assert "-cm1" in argv and argv[-2:] == ["rc_lat", "rc_bw"]
    assert "-cm1" not in QperfRun(("rc_lat",)).client_argv("198.18.1.2")
    with pytest.raises(SpecError, match="no RC test"):
        QperfRun(("tcp_lat",), use_cm=True).client_argv("198.18.1.2")
    script = qperf.QperfSweep((4, 64), tests=("rc_lat", "rc_bw"), use_cm=True) \
        .client_command("198.18.1.2")
    assert script.count("-cm1") == 2 and script.count("rc_lat rc_bw") == 2

"""The fan-in generator's spec checks, output parsing, and the C program's own argument checks."""

from __future__ import annotations

import json
import subprocess

import pytest

from harness import fanin
from harness.errors import SpecError
from harness.fanin import build
from harness.fanin.spec import ReduceSpec, SocketOptions, mapper_address, parse_output


def test_mapper_addresses_per_protocol():
    assert mapper_address("tcp", "198.18.1.2", 47000, 0) == "198.18.1.2:47000"
    assert mapper_address("sctp", "fd00::2", 47000, 3) == "[fd00::2]:47000"
    assert mapper_address("tipc", "ignored", 47000, 7) == f"{fanin.TIPC_SERVICE_TYPE}:7"
    with pytest.raises(SpecError, match="unknown protocol"):
        mapper_address("udp", "198.18.1.2", 1, 0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(proto="tcp", size=8, rounds=1), "size"),
    (dict(proto="tcp", size=2 << 20, rounds=1), "size"),
    (dict(proto="tcp", size=1024, rounds=0), "rounds"),
    (dict(proto="sctp", size=1024, rounds=1, sockets=SocketOptions(cc="cubic")), "TCP only"),
    (dict(proto="tcp", size=1024, rounds=1, sockets=SocketOptions(cc="cu bic")), "not valid"),
    (dict(proto="tcp", size=1024, rounds=1, round_timeout_s=0), "round_timeout_s"),
    (dict(proto="quic", size=1024, rounds=1), "unknown protocol"),
])
def test_reduce_spec_rejects_bad_input(kwargs, message):
    with pytest.raises(SpecError, match=message):
        ReduceSpec(**kwargs)


def test_reduce_argv_and_time_bound():
    spec = ReduceSpec("tcp", 4096, 10, warmup=2, period_us=25_000,
                      sockets=SocketOptions(65536, 65536, "cubic"), round_timeout_s=5)
    argv = spec.argv("/x/fanin", ["198.18.1.2:1", "198.18.2.2:1"])
    assert argv[:4] == ["/x/fanin", "reduce", "--proto", "tcp"]
    assert argv[argv.index("--targets") + 1] == "198.18.1.2:1,198.18.2.2:1"
    assert argv[argv.index("--cc") + 1] == "cubic"
    assert spec.time_bound_s() >= 12 * 5.025
    with pytest.raises(SpecError):
        spec.argv("/x/fanin", [])


def test_parse_output_splits_events():
    lines = [
        {"event": "start", "n": 2, "clk_tck": 100},
        {"event": "round", "round": 0, "warmup": True, "duration_ns": 5, "rate_mbit": 1.0},
        {"event": "cpu", "stat": [1, 2, 3, 4]},
        {"event": "round", "round": 1, "warmup": False, "duration_ns": 4, "rate_mbit": 2.0},
        {"event": "summary", "ok": True},
    ]
    text = "\n".join(json.dumps(x) for x in lines) + "\nnot json\n{broken\n"
    out = parse_output(text)
    assert out.start["n"] == 2 and len(out.rounds) == 2 and len(out.cpu) == 1
    assert [r["round"] for r in out.measured()] == [1]
    assert out.errors and not out.ok  # the broken line is reported
    assert parse_output("\n".join(json.dumps(x) for x in lines)).ok


@pytest.fixture(scope="module")
def binary():
    try:
        return str(build.build_local())
    except Exception as exc:  # no compiler
        pytest.skip(f"cannot build the generator: {exc}")


@pytest.mark.parametrize("args, message", [
    (["serve"], "--proto is required"),
    (["reduce", "--proto", "udp"], "tcp, sctp or tipc"),
    (["reduce", "--proto", "tcp", "--targets", "1.2.3.4:1", "--size", "8"], "--size"),
    (["reduce", "--proto", "tcp", "--targets", "1.2.3.4"], "no ':'"),
    (["reduce", "--proto", "tipc", "--targets", "5:1"], "service type"),
    (["reduce", "--proto", "sctp", "--targets", "1.2.3.4:1", "--cc", "cubic"], "tcp only"),
    (["reduce", "--proto", "tcp"], "needs --targets"),
    (["bogus"], "serve' or 'reduce'"),
])
def test_program_rejects_bad_arguments(binary, args, message):
    res = subprocess.run([binary, *args], capture_output=True, text=True, timeout=10)
    assert res.returncode == 2
    err = json.loads(res.stderr.strip().splitlines()[-1])
    assert err["event"] == "error" and message in err["message"]


def test_loopback_rounds_every_byte_arrives(binary):
    """Two mappers on loopback; request counts and bytes match on both sides."""
    refused = subprocess.run([binary, "serve", "--proto", "tcp", "--listen", "127.0.0.1:0"],
                             capture_output=True, text=True, timeout=10)
    assert refused.returncode == 2 and "port must be an integer in 1..65535" in refused.stderr
    ports = [47811, 47812]
    servers = [subprocess.Popen([binary, "serve", "--proto", "tcp", "--listen", f"127.0.0.1:{p}"],
                                stdout=subprocess.PIPE, text=True) for p in ports]
    try:
        for s in servers:
            assert json.loads(s.stdout.readline())["event"] == "listening"
        res = subprocess.run([binary, "reduce", "--proto", "tcp", "--targets",
                              ",".join(f"127.0.0.1:{p}" for p in ports), "--size", "3000",
                              "--rounds", "7", "--warmup", "1"],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        out = parse_output(res.stdout)
        assert out.ok and len(out.measured()) == 7 and out.summary["bytes"] == 2 * 3000 * 7
        assert [r["round"] for r in out.rounds] == list(range(8))
        assert all(r["duration_ns"] >= r["first_ns"] > 0 for r in out.rounds)
    finally:
        for s in servers:
            s.terminate()
    exits = [json.loads(s.stdout.read().strip().splitlines()[-1]) for s in servers]
    assert all(s.wait(10) == 0 for s in servers)
    assert [e["requests"] for e in exits] == [8, 8]
    assert [e["bytes"] for e in exits] == [8 * 3000, 8 * 3000]


def test_periodic_rounds_mark_the_measured_interval_for_the_machines_cpu(binary):
    """The generator reads /proc/stat as the first measured round starts ("begin", after the
    warm-up) and when the last round's period ends ("end"): exactly rounds x period apart
    when no round overran -- the interval over which S3 takes the machine's CPU share."""
    server = subprocess.Popen([binary, "serve", "--proto", "tcp", "--listen", "127.0.0.1:47813"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(server.stdout.readline())["event"] == "listening"
        res = subprocess.run([binary, "reduce", "--proto", "tcp", "--targets", "127.0.0.1:47813",
                              "--size", "1024", "--rounds", "4", "--warmup", "2",
                              "--period-us", "40000"], capture_output=True, text=True, timeout=60)
    finally:
        server.terminate()
        server.wait(10)
    assert res.returncode == 0, res.stderr
    out = parse_output(res.stdout)
    marks = {c["mark"]: c for c in out.cpu if "mark" in c}
    assert set(marks) == {"begin", "end"} and len(out.cpu) == 4  # and the first and last
    assert marks["begin"]["round"] == 2  # the first measured round, after 2 warm-up rounds
    # the begin mark is read just before the first measured round starts (a mark on another
    # round is a period off); the end mark on or after the slot that follows the last round,
    # which round 0 anchors (it never sleeps: the grid starts with it) when no round overran
    # -- a mark read as the last round ends is most of a period early. Bounds are in
    # periods, not milliseconds: a wake-up's lateness is the machine's load (the marks of a
    # loaded machine read 0.1170 s for 3 x 40 ms in S3's CI run, 2026-11-27)
    first_measured = out.measured()[0]["start_ns"]
    assert 0 <= first_measured - marks["begin"]["t_ns"] < 0.5 * 40e6
    interval = (marks["end"]["t_ns"] - marks["begin"]["t_ns"]) / 1e9
    assert interval > 3 * 0.040  # the 2nd to 4th measured rounds start on their slots
    if not out.summary["overruns"]:
        grid_end = out.rounds[0]["start_ns"] + len(out.rounds) * 40e6
        assert marks["end"]["t_ns"] >= grid_end - 0.5 * 40e6, (marks, out.rounds)
        assert interval < 5 * 0.040
    assert all(len(c["stat"]) >= 8 for c in marks.values())


def test_cache_key_changes_with_source_and_compiler():
    a = build.PROGRAM.cache_key(b"x", "gcc 12")
    assert a != build.PROGRAM.cache_key(b"y", "gcc 12") and a != build.PROGRAM.cache_key(b"x", "gcc 13")
    assert len(a) == 16

"""benchmarks/relay_bench.py's parsing and summary: NPtcp's file, the paths and their ports,
each peer against srd paired per run, srd's share of the free-relay bound, the table."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from harness.verdicts.intervals import t_quantile

_SPEC = importlib.util.spec_from_file_location(
    "relay_bench", Path(__file__).resolve().parents[3] / "benchmarks" / "relay_bench.py")
bench = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("relay_bench", bench)  # its dataclasses look their module up
_SPEC.loader.exec_module(bench)


def result(path: str, run: int, gbps: float, relay_cpu: float | None = None,
           host_cpu: float = 1.0, half: float = 10.0, half_1k: float = 20.0,
           retr: int = 0) -> bench.PathResult:
    return bench.PathResult(
        path, run, throughput_gbps=gbps, retransmits=retr, relay_cpu_s_per_gb=relay_cpu,
        relay_cpu_cores=relay_cpu, host_busy_cores=2.0, host_cpu_s_per_gb=host_cpu,
        pingpong={"median_us": half, "p99_us": half}, pingpong_1k={"median_us": half_1k})


NPTCP_FILE = """\
       1   0.000763   0.00001000
    1024   0.781250   0.00001250
"""


def test_nptcp_gives_the_half_round_trip_of_the_size_asked_for():
    assert bench.nptcp_half_rtt_us(NPTCP_FILE, 1) == pytest.approx(10.0)
    assert bench.nptcp_half_rtt_us(NPTCP_FILE, 1024) == pytest.approx(12.5)


def test_nptcp_without_the_size_names_the_sizes_it_has():
    with pytest.raises(ValueError, match=r"no 512-byte line \(sizes: \[1, 1024\]\)"):
        bench.nptcp_half_rtt_us(NPTCP_FILE, 512)
    with pytest.raises(ValueError, match="sizes: none"):
        bench.nptcp_half_rtt_us("", 1)


def test_every_relay_listens_on_a_port_of_its_own():
    """Two relays in a row use their offset and the next port: no two relays may share one,
    and no relay port may reach another test's server port (iperf3 5201, NPtcp 6000, echo 7000)."""
    ports = []
    for path, offset in bench.RELAY_PORT_OFFSET.items():
        ports += [offset, offset + 1] if path.endswith("2") else [offset]
    assert len(ports) == len(set(ports)) == 3 * len(bench.KINDS)
    assert min(ports) > 0 and bench.IPERF_PORT + max(ports) < bench.NP_PORT
    assert set(bench.RELAY_PORT_OFFSET) == set(bench.PATHS) - {"forward"}


def test_an_absent_peer_leaves_its_paths_out():
    assert bench.paths_of(["haproxy", "srd"]) == ("forward", "haproxy", "haproxy2", "srd", "srd2")
    assert bench.kind_of("gosplice2") == "gosplice" and bench.kind_of("srd") == "srd"


def test_pairs_are_made_per_run_and_only_where_both_paths_have_a_value():
    results = [result("srd", 1, 2.0), result("nginx", 1, 3.0), result("srd", 2, 2.0),
               result("nginx", 3, 5.0), result("srd", 3, None), result("nginx", 2, 1.0)]
    assert bench.paired(results, "nginx", "srd", lambda r: r.throughput_gbps) == [(3.0, 2.0),
                                                                                  (1.0, 2.0)]


def test_each_peer_is_compared_with_srd_of_as_many_relays_with_a_t_interval():
    gbps = {"srd": [2.0, 3.0, 2.5], "haproxy": [3.0, 3.3, 2.5],
            "srd2": [1.0, 1.0, 1.0], "haproxy2": [2.0, 2.0, 2.0]}
    results = [result(p, run, g, relay_cpu=0.5 if "srd" in p else 1.0,
                      half=10.0 if "srd" in p else 16.0)
               for p, values in gbps.items() for run, g in enumerate(values, start=1)]
    versus = bench.versus_srd(results)
    assert set(versus) == {"haproxy", "haproxy2"}  # srd is not its own peer
    ratios = [1.5, 1.1, 1.0]
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    half = t_quantile(0.975, 2) * sd / math.sqrt(3)
    got = versus["haproxy"]["throughput_x"]
    assert got["value"] == pytest.approx(math.exp(mean))
    assert got["low"] == pytest.approx(math.exp(mean - half))
    assert got["high"] == pytest.approx(math.exp(mean + half))
    assert got["n"] == 3
    assert versus["haproxy2"]["throughput_x"]["value"] == pytest.approx(2.0)  # against srd2
    assert versus["haproxy"]["relay_cpu_s_per_gb_x"]["value"] == pytest.approx(2.0)
    assert versus["haproxy"]["half_rtt_1b_us_minus_srd"]["value"] == pytest.approx(6.0)
    assert versus["haproxy2"]["half_rtt_1b_us_minus_srd"]["value"] == pytest.approx(3.0)  # per relay


def test_srd_share_of_the_free_relay_bound_is_its_ratio_over_the_bound():
    analysis = {"per_run": [
        {"path": "srd", "throughput_ratio": 0.8, "free_relay_ratio": 1.0},
        {"path": "srd", "throughput_ratio": 0.45, "free_relay_ratio": 0.5},
        {"path": "srd2", "throughput_ratio": 0.3, "free_relay_ratio": 0.6},
        {"path": "socat", "throughput_ratio": 0.1, "free_relay_ratio": 1.0},
        {"path": "srd2", "throughput_ratio": 0.3, "free_relay_ratio": None}]}
    share = bench.share_of_free_relay_bound(analysis)
    assert share["srd"]["value"] == pytest.approx(math.sqrt(0.8 * 0.9))
    assert share["srd"]["n"] == 2
    assert share["srd2"]["value"] == pytest.approx(0.5) and share["srd2"]["n"] == 1


def test_the_summary_covers_the_measured_paths_and_the_table_puts_peers_beside_srd():
    results = []
    for run in (1, 2, 3):
        results += [result("forward", run, 5.0, host_cpu=1.0, half=5.0),
                    result("srd", run, 2.0 + run / 10, relay_cpu=0.2, host_cpu=2.0),
                    result("nginx", run, 1.0, relay_cpu=0.4, host_cpu=3.0),
                    result("srd2", run, 1.5, relay_cpu=0.4, host_cpu=3.0),
                    result("nginx2", run, 0.9, relay_cpu=0.8, host_cpu=4.0)]
    summary = bench.summarize(results)
    assert summary["paths"] == ["forward", "nginx", "nginx2", "srd", "srd2"]
    assert "haproxy" not in summary
    rows = bench.side_by_side(summary)
    body = [r for r in rows[2:]]
    assert [r.split("|")[1:3] for r in body] == [
        [" 1 ", " nginx "], [" 1 ", " srd "], [" 2 ", " nginx "], [" 2 ", " srd "],
        [" 0 ", " forward "]]
    nginx = body[0].split("|")
    assert nginx[3].strip() == "1.00" and nginx[4].strip().startswith("0.45 [")  # 1 / 2.2 ...
    assert nginx[6].strip().startswith("2.00")  # CPU per GB: 0.4 / 0.2
    assert body[1].split("|")[4].strip() == "1"  # srd against itself

"""Study S0 end to end through `harness run`, and its bad-input and relay-robustness checks."""

from __future__ import annotations

import json
import socket
import struct
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import checked_outputs, group_alive, needs_root, needs_tools, netns_names, run_harness
from crate_validation import assert_exports_valid

from harness.errors import HarnessError, SpecError
from harness.lab.lab import Lab
from harness.nodes.facts import listening_ports
from harness.relay.line import netns_socket
from harness.relay.process import relay
from harness.run.testbed import LabTestbed
from harness.studies.s0 import bench as s0_bench
from harness.studies.s0 import study as s0
from harness.tools import pingpong
from harness.tools.sockets import check_ports_free

pytestmark = [pytest.mark.integration, needs_root,
              needs_tools("iperf3", "nft", "conntrack", "socat", "gcc")]

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "s0_relay.ipynb"


def harness(*args, data, cache):
    return run_harness(*args, env={"HARNESS_DATA": str(data), "HARNESS_CACHE_DIR": str(cache)},
                       timeout=900)


def test_s0_small_run_has_three_methods_translation_and_leaves_nothing(tmp_path, monkeypatch):
    before = netns_names()
    out = harness("run", "-q", str(NOTEBOOK), "-p", "sizes", "1,1K,64K", "-p", "repetitions", "1",
                  "-p", "latency_budget_s", "0.02", "-p", "stream_budget_s", "0.03",
                  "-p", "bench_repetitions", "1", "-p", "bench_seconds", "1",
                  "-p", "flows", "3", "-p", "verify_seconds", "2", "-p", "far", "True",
                  "-p", "far_repetitions", "1",
                  data=tmp_path / "data", cache=tmp_path / "cache")
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = list((tmp_path / "data" / "runs" / "s0").iterdir())
    assert_exports_valid(run_dir, tmp_path / "crate", monkeypatch)  # issue 38: a crate to deposit
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and meta["error"] is None
    # every link really is shaped to 100 Mbit/s (exact rate checks are S4's; this machine is shared)
    assert len(meta["link_verification"]) == 6
    assert all(0.8 <= c["rate_ratio"] <= 1.2 for c in meta["link_verification"])
    assert (run_dir / "report.html").stat().st_size > 10_000
    # the notebook's output check, as nbval compared it when the suite ran this notebook at
    # its quick profile (now `nox -s slow`): the claims' columns and the methods
    checked = checked_outputs(run_dir / "notebook.ipynb")
    assert checked == checked_outputs(NOTEBOOK) and len(checked) == 1, checked

    # TSO/GSO/GRO off on both ends of every shaped link (3 links x 2 ends x 3 features), each
    # change recorded with the state it found, in the main lab and the distance sweep's
    offloads = [c for c in meta["configuration"] if c["kind"] == "offload"]
    assert len(offloads) == 2 * 18 and {c["after"] for c in offloads} == {"off"}
    # the run's own wire probe (issue 33 item 4): every size over the direct path's three links,
    # each judged by its fastest round trip against the path's bound. On a quiet machine 1 B
    # and 1 KB cross this lab faster than three 100 Mbit/s links allow (the shaper's bucket);
    # on a loaded one even the fastest 1 B round trip can exceed the 16 us bound (CI
    # 2026-11-29), so the test holds the probe to its rule, not to the machine's load
    probe = meta["wire_probe"]
    assert probe["links"] == 3 and probe["rate_mbit"] == 100.0
    by_size = {p["size"]: p for p in probe["sizes"]}
    assert sorted(by_size) == [1, 1024, 65536]
    for point in by_size.values():
        assert point["pingpong_mbit"] == pytest.approx(point["size"] * 8 / point["half_rtt_us"])
        assert point["serialises"] == (point["pingpong_mbit"] <= point["wire_mbit"] * 1.02)
    print("wire probe:", {s: (round(p["pingpong_mbit"], 1), round(p["wire_mbit"], 1))
                          for s, p in by_size.items()})
    # each path's capacity, a bulk transfer of its own (issue 33 item 5): at most the wire's
    capacity = meta["path_capacity"]["paths"]
    assert sorted(capacity) == ["direct", "nat_srd", "proxies"]
    assert all(20 < p["mbit"] <= 100 * 1448 / 1514 * 1.02 for p in capacity.values()), capacity
    assert (run_dir / "raw" / "capacity.json").exists()

    frame = pd.read_parquet(run_dir / "results.parquet")
    assert sorted(frame.method.unique()) == ["direct", "nat_srd", "proxies"]
    assert sorted(frame["size"].unique()) == [1, 1024, 65536]
    # No latency order between the methods here: on this 2-core machine the relay path's fastest
    # tenth at 1 B was below direct's in 1 of 4 idle runs (43.1 against 50.5 us), and CI's median
    # too (142.0 against 162.7 us): a process's wake-up on an idle CPU costs more than a relay
    # hop. The latency ratios are the study's claims, decided with their intervals (verdicts).
    assert (frame.stream_mbit > 0).all() and (frame.half_rtt_us > 0).all()

    nat_rows = pd.read_parquet(run_dir / "nat.parquet")
    assert len(nat_rows) == 1
    row = nat_rows.iloc[0]
    assert row.rule_packets >= 1 and row.translated_bytes > 0
    assert row.conntrack_translated == 1 and row.translated_to == "198.18.0.1"
    assert not row.direct_translated  # direct crossed fa untranslated
    seen = meta["s0"]["srd_on_fb"]["accepts_by_client_ip"]
    assert set(seen) == {"198.18.0.1"}  # the SRD never saw a private address of cluster A
    assert sorted(r["kind"] for r in meta["s0"]["relays"]) == ["mux-entry", "mux-exit", "srd"]
    # each relay's settings, as it reported them when it started (issue 37: what it trusts)
    settings = {r["kind"]: r["settings"] for r in meta["s0"]["relays"]}
    assert (settings["srd"]["idle_timeout"], settings["srd"]["max_per_peer"]) == ("900.000", "256")
    assert settings["mux-exit"]["trunk"] == settings["mux-entry"]["trunk"] == "hmac-sha256"
    assert settings["mux-exit"]["max_frame"] == "65536"
    assert "size_order" in frame  # the sizes' order is drawn per repetition
    assert (run_dir / "registration.json").exists()
    claims = pd.read_csv(run_dir / "claims.csv")
    # S0's registered claims, then issue 27's relay targets judged on the archived benchmark
    from harness.relay import targets as relay_targets
    assert (run_dir / "raw" / "relay-benchmark.json").exists()
    assert "invalid" in claims and len(claims) == (len(s0.S0().registration().claims)
                                                    + len(relay_targets.claims()))
    # a point above its path's capacity is invalid where this lab's wire serialises its size or
    # above its path's unshaped rate, and so is every claim resting on it; at a size the probe
    # shows not serialised and within the unshaped rate it is outside the paper's regime, and
    # its claims are not testable here, measured anyway (the fourth review, change of 13:14Z);
    # the shaper bounds a bulk transfer at every size, so only latency and ping-pong claims may
    # rest on either
    invalid = claims[claims.outcome == "invalid"]
    assert invalid.claim_id.str.match(r"s0\.(latency|bandwidth\.pingpong)\.").all(), invalid.claim_id
    outside = claims[claims.reason.fillna("").str.contains("possible in this lab")]
    assert (outside.outcome == "not testable here").all(), outside.outcome
    assert outside.claim_id.str.match(r"s0\.(latency|bandwidth\.pingpong)\.").all(), outside.claim_id
    assert outside.reason.str.contains("measured anyway: ").all(), outside.reason

    far = pd.read_parquet(run_dir / "far.parquet")
    assert sorted(far.one_way_delay_ms.unique()) == [0.0, 2.0, 10.0]
    assert len(far) == 3 * 3 * 2  # delays x methods x sizes, one repetition
    direct = far[(far.method == "direct") & (far["size"] == 1)].set_index("one_way_delay_ms")
    assert direct.half_rtt_us[10.0] > 9000  # the delay was there (at 0 ms TCG read 0.3-4 ms)

    conns = pd.read_parquet(run_dir / "connections.parquet").set_index("method")
    assert conns.loc["direct", "tcp_connections_per_flow"] == 1
    # two proxies: 3 flows into fa's proxy, ONE shared connection to fb, 3 from fb to b1
    assert conns.loc["proxies", "fb_peers_fa_public"] == 1
    assert conns.loc["proxies", "tcp_connections_per_flow"] == pytest.approx(7 / 3)
    assert conns.loc["nat_srd", "tcp_connections_per_flow"] == 2
    assert conns.loc["nat_srd", "snat_entries_fa"] == 3
    assert conns.loc["nat_srd", "fb_peers_fa_public"] == 3  # NAT: one per flow
    assert list(conns.public_segment_connections) == [3, 1, 3]
    # each flow crosses both srdmux halves, or fb's srd; the shared connection ends once for all
    assert conns.user_space_relays_per_flow.to_dict() == {"direct": 0, "proxies": 2, "nat_srd": 1}
    assert conns.loc["proxies", "relay_connection_ends_per_flow"] == pytest.approx(4 / 3)

    # the relays' context switches around a 1 B ping-pong, per repetition and relayed method
    switches = pd.read_parquet(run_dir / "switches.parquet")
    assert sorted(switches.method.unique()) == ["nat_srd", "proxies"]
    assert sorted(switches.repetition.unique()) == sorted(frame.repetition.unique())
    assert (switches.round_trips > 200).all() and (switches.context_switches > 0).all()
    # voluntary (a relay sleeping until its message) and involuntary (the machine preempting it)
    # apart, summing to the whole the claims count (change #22)
    assert (switches.voluntary > 0).all() and (switches.involuntary >= 0).all()
    assert (switches.voluntary + switches.involuntary == switches.context_switches).all()
    assert switches.set_index("method").relays.to_dict() == {"proxies": 2, "nat_srd": 1}
    shown = claims.set_index("claim_id")
    assert set(shown.loc[shown.source == "reading", "outcome"]) == {"shown"}

    bench = pd.read_parquet(run_dir / "bench.parquet")
    assert set(bench.path) == set(s0_bench.BENCH_PATHS)
    assert (bench.iperf_mbit > 0).all()
    srd = bench[bench.relay == "srd"]
    assert (srd.relay_cpu_s > 0).all()
    assert meta["s0"]["bench_where"] == "second namespace lab, unshaped"

    # Nothing left: namespaces of both labs, NAT tables (they lived in those namespaces),
    # relay and server processes, the journal's pending changes.
    prefixes = {meta["testbed"]["prefix"], meta["bench_testbed"]["prefix"]}
    assert not [n for n in netns_names() - before if n.split("-")[0] in prefixes]
    journal = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    done = {r["seq"] for r in journal if r["op"] == "undone"}
    assert {r["seq"] for r in journal if r["op"] == "do"} == done
    pids = [r["data"]["pid"] for r in journal if r["op"] == "do" and r["kind"] == "process"]
    assert len(pids) >= 10 and not [p for p in pids if group_alive(p)]
    assert sum(1 for r in journal if r.get("kind") == "nat-table") >= 2
    # the proxies' key files: one per half and pair, recorded by folder, removed (undone above)
    keys = [r["data"]["path"] for r in journal if r["op"] == "do" and r["kind"] == "file"
            and "/harness-srdmux-" in r["data"]["path"]]
    assert len(keys) >= 2 and not [k for k in keys if Path(k).exists()]


@pytest.mark.parametrize("args, message", [
    (["-p", "sizes", "0"], "out of range"),
    (["-p", "sizes", "2M"], "out of range"),
    (["-p", "size", "4"], "unknown parameter"),
    (["-p", "rate_mbit", "-5"], "out of range"),
])
def test_bad_input_is_refused_before_any_run_exists(tmp_path, args, message):
    out = harness("run", "-q", str(NOTEBOOK), *args, data=tmp_path, cache=tmp_path / "cache")
    assert out.returncode == 2
    assert message in out.stderr
    assert not (tmp_path / "runs").exists()


# -- checks and relay robustness on a live S0 lab -------------------------------------------------

@pytest.fixture
def bed(journal, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with Lab(s0.topology(s0.Params.resolve(rate_mbit=0)), journal) as lab:
        yield LabTestbed(lab)


def test_fronts_ports_and_targets_are_checked_before_relays_start(journal, bed):
    s0.check_fronts(bed)  # the lab's fronts are complete
    fb = bed.node("fb")
    # a port in use on a front
    with journal.process(fb, ["socat", "TCP-LISTEN:7100,bind=198.18.0.2,reuseaddr", "-"]):
        deadline = time.monotonic() + 10
        while 7100 not in listening_ports(fb) and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(SpecError, match="port 7100 is in use on fb"):
            check_ports_free(fb, s0.FB_PORTS, s0.PORTS_USER)
    # a relay target that does not answer: refused before any relay process starts
    started = len([e for e in journal.entries() if e.kind == "process"])
    with pytest.raises(HarnessError, match="does not answer"):
        with relay(journal, fb, "srd", "198.18.0.2:7100", "10.2.0.2:7000"):
            pass
    assert len([e for e in journal.entries() if e.kind == "process"]) == started
    # a front without its public interface address
    fa = bed.node("fa")
    fa.run(["ip", "addr", "del", "198.18.0.1/24", "dev", "pub"], timeout=10)
    with pytest.raises(SpecError, match="front node fa has no pub interface"):
        s0.check_fronts(bed)


def test_srd_survives_peers_that_disconnect_mid_stream(journal, bed):
    plan = s0.Plan.of(bed)
    with pingpong.server(journal, bed.node("b1"), plan.b1, s0.SERVER_PORT), \
            relay(journal, bed.node("fb"), "srd", f"{plan.fb_pub}:{s0.SRD_PORT}",
                  f"{plan.b1}:{s0.SERVER_PORT}") as srd:
        for _ in range(3):  # a client that resets in the middle of a 1 MB ping-pong
            sock = netns_socket(bed.node("a1"))
            sock.connect((plan.fb_pub, s0.SRD_PORT))
            sock.sendall(pingpong.HEADER.pack(b"P", 1 << 20, 1) + b"x" * (300 * 1024))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # RST mid-message
        sock = netns_socket(bed.node("a1"))  # and one that half-closes mid-stream
        sock.connect((plan.fb_pub, s0.SRD_PORT))
        sock.sendall(pingpong.HEADER.pack(b"S", 1 << 20, 4) + b"y" * (1 << 20))
        sock.shutdown(socket.SHUT_WR)
        sock.close()
        time.sleep(0.3)
        assert srd.running()
        result = pingpong.client(journal, bed.node("a1"), {"via_srd": (plan.fb_pub, s0.SRD_PORT)},
                                 [1, 65536], 0.02, 0.02)
        assert [p["size"] for p in result["targets"]["via_srd"]["points"]] == [1, 65536]
        assert srd.running()
    assert srd.exit_status == 0
    reasons = {e.get("reason") for e in srd.handle.events("close")}
    assert reasons - {"eof"}  # the aborted streams were seen as such, and survived

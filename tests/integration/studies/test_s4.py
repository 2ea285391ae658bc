"""Study S4 end to end through `harness run` (papermill), on a real namespace lab."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import needs_root, needs_tools, netns_names, run_harness
from crate_validation import assert_exports_valid

from harness.lab.verify import RATE_TOLERANCE

pytestmark = [pytest.mark.integration, needs_root,
              needs_tools("iperf3", "mptcpize", "globus-url-copy", "globus-gridftp-server")]

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "s4_mptcp.ipynb"


def harness(*args, data):
    return run_harness(*args, env={"HARNESS_DATA": str(data)}, timeout=600)


def test_s4_small_sweep_calibrates_the_limit_aggregates_both_paths_and_limits_the_sender(tmp_path, monkeypatch):
    out = harness("run", "-q", str(NOTEBOOK), "-p", "streams", "1,10", "-p", "duration_s", "2",
                  "-p", "repetitions", "1", "-p", "sender_cpus", "0,anchored",
                  "-p", "calibration_cpus", "0.005,0.02", "-p", "calibration_repetitions", "1",
                  "-p", "gridftp_streams", "2", "-p", "gridftp_mbytes", "16",
                  "-p", "verify_seconds", "2", data=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = list((tmp_path / "runs" / "s4").iterdir())
    assert_exports_valid(run_dir, tmp_path / "crate", monkeypatch)  # issue 38: a crate to deposit
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete"
    assert meta["placement"]["where"] == "host"
    assert meta["provenance"]["git"]["commit"]
    for c in meta["link_verification"]:
        # each link shaped and limited: a 1 s reading of a 500 Mbit/s link beside the suite's
        # other worker (TCG VMs) read 0.86-0.96 on fresh clones, and once 1.085 at load 5
        # beside an S1 run (2026-11-27: too few counter samples under load): 2 s readings;
        # the run's verdict is kept
        assert 0.8 <= c["rate_ratio"] <= 1.03, c
        assert c["rate_ok"] == (c["rate_ratio"] >= RATE_TOLERANCE), c
    kinds = {c["kind"] for c in meta["configuration"]}
    assert kinds >= {"sysctl", "mptcp-endpoint"}
    assert any(k.startswith("cgroup-v") for k in kinds), kinds  # the sender's CPU limit
    assert (run_dir / "report.html").stat().st_size > 10_000
    assert (run_dir / "notebook.ipynb").exists()
    # the calibration: one stream per transport at each candidate, before any claim's point,
    # archived with the choice, which the claims' limited points then use
    calibration = pd.read_parquet(run_dir / "calibration.parquet")
    assert sorted(zip(calibration.sender_cpus, calibration.transport)) == [
        (0.005, "mptcp"), (0.005, "tcp"), (0.02, "mptcp"), (0.02, "tcp")]
    assert set(calibration.streams) == {1}
    chosen = meta["calibration"]["chosen_cpus"]
    assert chosen in (0.005, 0.02) and set(calibration.anchored_cpus) == {chosen}
    from harness.studies.s4.calibration import choose_limit

    assert choose_limit(calibration).cpus == chosen  # the registered rule, re-applied
    assert [c["sender_cpus"] for c in meta["calibration"]["candidates"]] == [0.005, 0.02]
    # below 0.01 CPUs the kernel's smallest quota, 1 ms, over a 200 ms period (the third review)
    cgroups = [c for c in meta["configuration"] if str(c["kind"]).startswith("cgroup-v")]
    assert any("1000 200000" in str(c.get("after")) or "cfs_period_us 200000" in str(c.get("after"))
               for c in cgroups), cgroups
    raw = {p.name: p.stat().st_mtime for p in (run_dir / "raw").iterdir()}
    first_claim = min(t for name, t in raw.items() if name.startswith(("iperf3-", "gridftp-")))
    assert max(t for name, t in raw.items() if name.startswith("calibration-")) <= first_claim
    frame = pd.read_parquet(run_dir / "results.parquet")
    iperf = frame[frame.tool == "iperf3"]
    assert set(zip(iperf.limit, iperf.sender_cpus)) == {("nolimit", 0.0), ("anchored", chosen)}
    free = iperf[iperf.limit == "nolimit"].groupby("transport").goodput_mbit.max()
    assert free["mptcp"] >= 1.8 * free["tcp"]
    # the limit bites: the sender's cgroup ran out of quota during every limited point (a
    # goodput comparison is not robust here: at load 15 one unlimited MPTCP stream got 877
    # Mbit/s, one at 0.02 CPUs 868), and no point without a limit has a cgroup
    limited = frame[frame.limit == "anchored"]
    assert (limited.cpu_throttled_periods > 0).all(), \
        limited[["transport", "streams", "cpu_periods", "cpu_throttled_periods"]]
    assert frame[frame.limit == "nolimit"].cpu_periods.isna().all()
    assert (calibration.cpu_throttled_periods > 0).all()
    mp = iperf[iperf.transport == "mptcp"]
    assert (mp.path2_tx_bytes > 0.25 * (mp.path1_tx_bytes + mp.path2_tx_bytes)).all()
    assert (mp.mp_join_syn_ack_rx > 0).all()
    tcp = iperf[iperf.transport == "tcp"]
    assert (tcp.path2_tx_bytes < 0.01 * tcp.path1_tx_bytes).all()  # single path really is
    assert len(iperf) == 8 and len(frame[frame.tool == "gridftp"]) == 4
    assert sorted(set(iperf.order)) == list(range(8))  # one shuffled order over all factors
    # what ran: CUBIC on both transports, uncoupled; the kernel's MPTCP scheduler recorded
    controllers = meta["controllers"]
    assert controllers["reported_by_iperf3"] == {"tcp": ["cubic"], "mptcp": ["cubic"]}
    kernel = controllers["client_kernel"]
    assert kernel["net.mptcp.enabled"] == "1" and kernel["coupled_controllers"] == []
    assert "cubic" in kernel["net.ipv4.tcp_available_congestion_control"].split()
    assert "uncoupled" in controllers["mptcp"]
    claims = pd.read_csv(run_dir / "claims.csv").set_index("claim_id")
    # one repetition: no interval, so no verdict; the anchored claims are judged (no interval)
    # or not testable (the calibration outside the margin, a gate failed), never decided
    assert set(claims.outcome) <= {"inconclusive", "not testable here"}
    anchored = claims.loc["s4.mptcp_peak@anchored"]
    # the paper's stack (MPTCP v0.95, iperf) is not this lab's: the anchored MPTCP claims say so
    assert "stack failed (the paper's stack: MPTCP v0.95" in anchored.reason, anchored.reason
    assert "cpu_throttled" in str(anchored.gates) and "cpu_throttled" in str(claims.loc["s4.tcp_peak@anchored", "gates"])
    assert "net.mptcp.mptcp_enabled" in kernel and not kernel["net.mptcp.mptcp_enabled"]
    # the paper's coupled BALIA is not in this kernel: the claims it can move say so, read from
    # the run's own record of its controllers (the gate congestion_control)
    for claim in ("s4.mptcp_gain_1_10@anchored", "s4.gain_contrast_1_10@anchored",
                  "s4.gain_contrast_1_10@nolimit"):
        assert claims.loc[claim, "outcome"] == "not testable here", claim
        assert "the paper's coupled controller (BALIA) is not available in this kernel" in \
            claims.loc[claim, "reason"], claims.loc[claim, "reason"]
    assert "congestion_control" not in str(claims.loc["s4.mptcp_peak@anchored", "gates"])
    prefix = meta["testbed"]["prefix"]
    assert not [n for n in netns_names() if n.startswith(prefix)]


@pytest.mark.parametrize("args, message", [
    (["-p", "streams", "0"], "out of range"),
    (["-p", "stream", "4"], "unknown parameter"),
    (["-p", "path_rate_mbit", "-5"], "out of range"),
    (["-p", "profile", "huge"], "unknown profile"),
    (["-p", "run_dir", "/tmp"], "set by `harness run`"),
    (["--inventory", "/nonexistent/inventory.yaml"], "does not exist"),
])
def test_bad_input_is_refused_before_any_run_exists(tmp_path, args, message):
    out = harness("run", "-q", str(NOTEBOOK), *args, data=tmp_path)
    assert out.returncode == 2
    assert message in out.stderr
    assert not (tmp_path / "runs").exists()


def test_inventory_missing_a_node_is_refused(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("nodes:\n  client:\n    host: 127.0.0.1\n    interfaces:\n"
                   "      eth0: {device: lo, address: 127.0.0.1/8}\n"
                   "      eth1: {device: lo, address: 127.0.0.2/8}\n")
    out = harness("run", "-q", str(NOTEBOOK), "--inventory", str(inv), data=tmp_path)
    assert out.returncode == 2
    assert "no node 'server'" in out.stderr
    assert not (tmp_path / "runs").exists()

"""Study S1 end to end through `harness run` (papermill): two whole-machine VMs on this host.

Small: four sizes, two repetitions, few iterations. Checks the placement (two
VMs, each node its VM's initial namespace), the Soft-RoCE configuration and its
undo, every method's rows, Table 1, the claims table, and that nothing is left
running.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import needs_root, run_harness, survivors
from crate_validation import assert_exports_valid

from harness.journal.journal import Journal
from harness.studies.s1 import analysis as s1_analysis
from harness.studies.s1.validity import impossible_shares
from harness.verdicts.gates.facts import RunFacts

pytestmark = [pytest.mark.integration, pytest.mark.vm, needs_root]

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "s1_via.ipynb"


def harness(*args, data, timeout=1800):
    # HARNESS_UNDO_IN_VMS: the changes inside the VMs are undone one by one, as on a real
    # machine (`rdma link delete`, MTUs, renamed NICs), not left to end with the VMs
    return run_harness(*args, env={"HARNESS_DATA": str(data), "HARNESS_UNDO_IN_VMS": "1"},
                       timeout=timeout)



@pytest.mark.timeout(1800)  # two TCG VMs; past 600 s beside another S1 run (2026-11-27)
def test_s1_small_run_in_two_vms(tmp_path, monkeypatch):
    out = harness("run", "-q", str(NOTEBOOK), "-p", "sizes", "4,64,1024,16384",
                  "-p", "repetitions", "2", "-p", "iterations", "50", "-p", "bw_iterations",
                  "50", "-p", "tcp_budget_s", "0.03", "-p", "seed", "7", "-p", "rdma_write",
                  "true", "-p", "wire_mbit", "30", data=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = list((tmp_path / "runs" / "s1").iterdir())
    assert_exports_valid(run_dir, tmp_path / "crate", monkeypatch)  # issue 38: a crate to deposit
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete", meta.get("measurement_error")
    assert meta["placement"]["where"] == "vm" and meta["placement"]["machines"] == 2
    assert meta["testbed"]["whole_machine_nodes"] == ["a", "b"]
    kinds = [c["kind"] for c in meta["configuration"]]
    assert kinds.count("rdma-link") == 2 and kinds.count("mtu") == 2
    lines = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    journalled = {e["seq"]: e["kind"] for e in lines if "kind" in e and "seq" in e}
    undone = {e["seq"] for e in lines if e.get("op") == "undone"}
    assert list(journalled.values()).count("root-nic") == 2  # each wire end renamed in place
    assert set(journalled) <= undone, "every change of the run was undone"
    # the machines (issue 34 items 1-2): one vCPU per VM unless the host has a core for each
    # vCPU of two 2-vCPU VMs (booted maxcpus=1, the 2-CPU level bringing CPU 1 online)
    facts = RunFacts.from_meta(meta)
    moved = [e for e in lines if e.get("kind") == "cpu-online" and "seq" in e]
    pinning = meta["placement"]["vcpu_pinning"]
    if facts.host_cores >= 4:
        assert facts.vcpus_per_vm == 2 and "maxcpus=1" in meta["placement"]["vm"]["kernel_args"]
        assert len(moved) == 2 * 2 and all(e["seq"] in undone for e in moved)
        assert {str(x["online"]) for x in meta["s1"]["online_cpus"]} == {
            str({"a": "0", "b": "0"}), str({"a": "0-1", "b": "0-1"})}
    else:
        assert facts.vcpus_per_vm == 1 and moved == [] and meta["s1"]["levels"] == [1]
        assert "2" in meta["s1"]["levels_skipped"]
        assert {str(x["online"]) for x in meta["s1"]["online_cpus"]} == {
            str({"a": "0", "b": "0"})}
    # each vCPU thread on a host core of its own (2 VMs x 1 vCPU on a 2-core host)
    assert pinning["pinned"] is (facts.vms * facts.vcpus_per_vm <= facts.host_cores), pinning
    if pinning["pinned"]:
        cores = [core for vm in pinning["vcpus"].values() for core in vm.values()]
        assert len(cores) == facts.vms * facts.vcpus_per_vm == len(set(cores))
    assert meta["s1"]["rdma"]["active_mtu"] == 1024 and meta["s1"]["rdma"]["gid_index"] is not None
    # the wire shaped at both ends (wire_mbit 30, scaled when the VMs' wire carries less: to
    # 11.1 Mbit/s at load 5-7, 2026-11-27), its qdiscs journalled (and undone, above), and the
    # claims read the wire the lab built
    plans = meta["testbed"]["egress_plans"]
    factor = meta["placement"]["scaling"]["factor"]
    assert 0 < factor <= 1
    assert plans["a:wire"]["rate_bit"] == plans["b:wire"]["rate_bit"] \
        == pytest.approx(30e6 * factor)
    assert "qdisc" in set(journalled.values())
    frame = pd.read_parquet(run_dir / "results.parquet")
    assert set(frame.method) == {"verbs-send", "verbs-write", "verbs-send-events",
                                 "verbs-send-bw", "verbs-send-bw-events", "verbs-write-bw",
                                 "tcp-nodelay", "tcp-nagle", "tcp-qperf", "tcp-count",
                                 "tcp-count-nodelay", "verbs-qperf"}
    # TCP's side of the bandwidth claims: ib_send_bw's count of messages, its server journalled
    count = frame[frame.method.isin(["tcp-count", "tcp-count-nodelay"])]
    assert len(count) == 2 * 2 * 4 and (count.iterations == 50).all() and (count.bw_mbit > 0).all()
    assert [e for e in lines if e.get("kind") == "process" and "msgcount" in str(e.get("data"))
            and e["seq"] in undone], "the msgcount server recorded and stopped"
    assert {4, 64, 1024, 16384} <= set(frame["size"]) and set(frame.repetition) == {1, 2}
    # the Nagle claim's nine sizes <= 1 KiB, measured by the streaming tool
    assert set(frame[frame.method == "tcp-nagle"]["size"]) >= {4, 8, 16, 32, 64, 128, 256, 512}
    if 2 in set(frame.cpus):
        assert set(frame[frame.cpus == 2].method) == {"verbs-send", "verbs-send-events",
                                                      "tcp-qperf"}
        assert (frame[frame.cpus == 2].latency_mean_us > 0).all()
    frame = frame[frame.cpus == 1]  # the rows every claim but the SMP one rests on
    # qperf RC through the RDMA CM: each row a latency, or its refusal said in that row (CI of
    # 2026-11-30: the CM refused repetition 1 and connected in repetition 2 of one run)
    rc = frame[frame.method == "verbs-qperf"]
    assert len(rc) == 2 * 4 and ((rc.latency_mean_us > 0)
                                 | rc.note.str.contains("qperf RC over Soft-RoCE failed")).all()
    lat = frame[(frame.kind != "bandwidth") & (frame.method != "verbs-qperf")]
    assert (lat.latency_us > 0).all()
    assert frame[frame.method == "verbs-send"].cpu_us_per_rt.notna().all()
    # the CPU share of the measured exchanges, on the scheduler's clock: within one thread by
    # the rule the CPU claim is gated by (all sizes summed, the counters' tick allowed). One
    # size alone may read a little over: 1.932 s of CPU in 1.894 s (102 %) at 1024 B polling
    # at load 5-7 (2026-11-27), where the sum over the sweep read 98 %
    share, readings = s1_analysis.cpu_share(frame), s1_analysis.cpu_readings(frame)
    assert not impossible_shares(share, readings), share
    assert (frame[frame.method == "tcp-qperf"].latency_mean_us > 0).all()
    assert (frame[(frame.kind != "latency") & (frame.method != "verbs-qperf")].bw_mbit > 0).all()
    table1 = pd.read_parquet(run_dir / "table1.parquet")
    assert "Soft-RoCE (rxe0)" in table1.columns and "TCP" in table1.columns
    claims = pd.read_parquet(run_dir / "claims.parquet")
    assert len(claims) == 11 and "not testable here" in set(claims.outcome)
    by_id = claims.set_index("claim_id")
    smp = by_id.loc["s1.smp_latency_larger"]
    # judged only where the run's recorded facts pass its gates (harness.verdicts.gates): under
    # TCG, or where two VMs of 2 vCPUs exceed the host's cores, not testable here with the counts
    in_regime = facts.accel == "kvm" and facts.vms * 2 <= facts.host_cores
    if in_regime:
        assert smp.outcome in ("reproduced", "not reproduced", "inconclusive"), smp.reason
    else:
        assert smp.outcome == "not testable here" and "not in the paper's regime" in smp.reason
        if facts.vms * 2 > facts.host_cores:
            assert (f"{facts.vms * 2} vCPUs ({facts.vms} VMs x 2, the claim's level; the run "
                    f"booted {facts.vcpus_per_vm}) on {facts.host_cores} host cores") in smp.gates
    # the bandwidth claims pass the machine gates at one vCPU per VM; under TCG the emulator's
    # per-message work decides them first (change #24), else 50 messages a point do not decide
    # them (the registration asks 10^4); either way said with the estimate
    small = by_id.loc["s1.verbs_bw_better_small"]
    assert "uniprocessor: passed" in small.gates and "no_oversubscription: passed" in small.gates
    assert small.outcome == "not testable here" and small.ours != "-"
    if facts.accel == "kvm":
        assert "below the 10000" in small.reason, small.reason
    else:
        assert "accelerated_virtualisation: FAILED" in small.gates, small.gates
    assert by_id.loc["s1.polling_raises_bandwidth"].ours != "-"
    large = claims.set_index("claim_id").loc["s1.verbs_bw_large"]
    assert f"shaped to {30 * factor:.4g} Mbit/s" in large.note, large.note
    assert (run_dir / "raw" / "ibv_devinfo-a.txt").exists()
    assert (run_dir / "report.html").stat().st_size > 10_000
    assert [e for e in Journal(run_dir / "journal.jsonl").entries()
            if e.kind == "process" and "qemu-system" in e.data["command"]], "VMs recorded"
    assert not survivors(run_dir / "journal.jsonl"), "a QEMU or other process survived"


@pytest.mark.parametrize("args, message", [
    (["-p", "sizes", "4,2097152"], "more than the paper's largest size"),
    (["-p", "mtu", "4000"], "not one of the choices"),
    (["-p", "completion", "events"], "must include polling"),
])
def test_s1_bad_input_fails_before_any_change(tmp_path, args, message):
    out = harness("run", "-q", str(NOTEBOOK), *args, data=tmp_path, timeout=300)
    assert out.returncode != 0
    assert message in out.stderr + out.stdout

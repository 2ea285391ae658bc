"""Study S3 end to end through `harness run` (papermill): placed in a VM lab on this host.

Small: 1:4 fan-in, two sizes, a few rounds, all three protocols, two repetitions (a
fresh mapper fleet per protocol each); a CPU phase of two repetitions (TIPC and TCP
CUBIC) at the paper's 25 ms carried over to the port. Checks the archive (the figures'
data, the registration, the verdict table with its regimes), the placement and that
nothing is left running.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import needs_root, netns_names, run_harness, survivors
from crate_validation import assert_exports_valid

from harness.journal.journal import Journal

pytestmark = [pytest.mark.integration, pytest.mark.vm, needs_root]

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "s3_tipc.ipynb"


def harness(*args, data, timeout=2400):
    return run_harness(*args, env={"HARNESS_DATA": str(data)}, timeout=timeout)



def test_s3_small_run_in_vm_lab(tmp_path, monkeypatch):
    out = harness("run", "-q", str(NOTEBOOK), "-p", "mappers", "4", "-p", "sizes_kb", "1,16",
                  "-p", "rounds", "5", "-p", "warmup", "1", "-p", "repetitions", "2",
                  "-p", "cpu_mappers", "4", "-p", "cpu_sizes_kb", "4",
                  "-p", "cpu_rounds", "3", "-p", "cpu_repetitions", "2",
                  "-p", "verify_seconds", "1", data=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = list((tmp_path / "runs" / "s3").iterdir())
    assert_exports_valid(run_dir, tmp_path / "crate", monkeypatch)  # issue 38: a crate to deposit
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete"
    assert meta["placement"]["where"] == "vm"  # TIPC needs a kernel apart from the mappers'
    assert set(meta["placement"]["vms"]) == {"reducer"}
    assert meta["placement"]["machines"] == 2
    (wire_ceiling,) = meta["placement"]["wire_ceilings_mbit"].values()
    assert wire_ceiling > 0
    assert meta["testbed"]["machines"].keys() == {"", "reducer"}
    assert meta["s3"]["tipc"]["links_up"] == 4
    # TIPC on its Ethernet bearer, as the paper ran it: the switch bridges its ports
    assert meta["s3"]["tipc"]["media"] == "eth" and meta["s3"]["tipc"]["bearer"] == "eth:eth0"
    assert "eth:eth0" in meta["s3"]["tipc"]["reducer"]["bearers"][0]
    kinds = {c["kind"] for c in meta["configuration"]}
    assert {"tipc", "l2-switch"} <= kinds  # one TIPC operation per node, and the bridge
    assert meta["s3"]["port_shaper"] == "netem"  # the default since 2026-11-29 (htb missed 0.97)
    assert meta["s3"]["port_scaling"] == "ceiling" and meta["s3"]["port_rate_registered_mbit"] is None
    frame = pd.read_parquet(run_dir / "results.parquet")
    assert set(frame.protocol) == {"tcp-cubic", "sctp", "tipc"}
    # 4 KB at 1:4 is not in the rate sweep: one calibration fleet per CPU protocol set the period
    assert set(frame.experiment) == {"rate", "cpu", "calibration"}
    assert frame.ok.all(), frame[~frame.ok].error.tolist()
    assert (frame.rounds == frame.rounds_asked).all()
    assert (frame.rate_mbit_mean > 0).all() and (frame.queue_pkts > 0).all()
    rate = frame[frame.experiment == "rate"]
    assert sorted(set(rate.repetition)) == [1, 2] and len(rate) == 2 * 3 * 2
    # each fleet measured its points in its own recorded order
    fleets = [f for f in meta["s3"]["fleets"] if f["experiment"] == "rate"]
    assert len(fleets) == 6 and all(sorted(f["points"]) == ["n04-16k", "n04-1k"] for f in fleets)
    # every protocol's bytes crossed the switch port -- TIPC too, now that the reducer
    # has a kernel of its own (in one kernel TIPC short-cuts: wire share ~0.02-0.2)
    share = frame[frame.experiment == "rate"].groupby("protocol").wire_share.median()
    assert (share > 0.8).all(), share.to_dict()
    cpu = frame[frame.experiment == "cpu"]
    assert cpu.reducer_cpu_pct.notna().all() and (cpu.reducer_cpu_ms_per_round > 0).all()
    # the machine's CPU as sar: over the measured rounds, in the CPU-bound regime: a period
    # of 2 x the slower CPU protocol's back-to-back round time, calibrated before the phase
    calibration = meta["s3"]["cpu_calibration"]
    assert sorted(calibration["calibration_fleets"]) == ["tcp-cubic 4 KB", "tipc 4 KB"]
    point = calibration["points"]["n04-4k-p25ms"]
    # rounded to 1 ms from the round times run.json keeps to 0.01 ms (7.25 may be 7.2537: 15)
    assert abs(point["period_ms"] - max(1.0, 2 * max(point["round_ms"].values()))) <= 0.5 + 0.01
    assert set(cpu.period_ms) == {point["period_ms"]}
    assert meta["s3"]["cpu_periods_ms"] == {"25": {"4": point["period_ms"]}}
    # a share of the machine's ticks: never above 100 %; over a 0.2 s small-run window a TCG
    # guest's 100 Hz ticks can all land idle (0.0 seen in CI-like load), so only the run as a
    # whole must show work
    assert ((cpu.system_busy_pct >= 0) & (cpu.system_busy_pct <= 100)).all()
    assert (cpu.system_busy_pct > 0).any(), cpu.system_busy_pct.tolist()
    # With no overrun the rounds after the first start on their grid points and the "end" mark
    # is read at or after the point that follows the last round; the "begin" mark is read when
    # the first round's sleep returns, late by the wake-up (0.1170 s for 3 x 40 ms in CI at load
    # ~5, 2026-11-27), a lateness the second round starting on time bounds by one period
    kept = cpu[cpu.overruns == 0]
    assert (kept.cpu_interval_s > (kept.rounds - 1) * kept.period_ms / 1000).all()
    # the CPU phase: 2 repetitions x the CPU protocols, each pass's order recorded
    assert set(cpu.protocol) == {"tipc", "tcp-cubic"} and len(cpu) == 4
    assert sorted(cpu.repetition) == [1, 1, 2, 2]
    orders = meta["s3"]["order"]["cpu"]
    assert len(orders) == 2 and all(sorted(o) == ["tcp-cubic", "tipc"] for o in orders)
    assert [f["protocol"] for f in meta["s3"]["fleets"] if f["experiment"] == "cpu"] == [
        p for o in orders for p in o]
    claims = pd.read_csv(run_dir / "claims.csv").set_index("claim_id")
    registered = json.loads((run_dir / "registration.json").read_text())
    assert [c["id"] for c in registered["claims"]] == list(claims.index)
    # 1:4 is outside every claim's regime (the paper: 1:48, and 1:50 for the CPU): not
    # testable, with the run's own numbers; the lab check holds: TIPC crossed the wire
    assert "1:4; the paper's regime is 1:50" in claims.loc["s3.tipc_cpu_saving", "reason"]
    for cid in ("s3.tipc_gain_avg", "s3.tipc_gain_max", "s3.tipc_collapse_16kb"):
        assert claims.loc[cid, "outcome"] == "not testable here", cid
    assert claims.loc["s3.lab_tipc_on_the_wire", "outcome"] in ("met", "inconclusive")
    assert claims.loc["s3.tipc_best_most", "n"] == 2  # repetitions, not rounds
    assert (run_dir / "report.html").stat().st_size > 10_000
    assert [e for e in Journal(run_dir / "journal.jsonl").entries()
            if e.kind == "process" and "qemu-system" in e.data["command"]], "VMs recorded"
    assert not survivors(run_dir / "journal.jsonl"), "a QEMU or other process survived"
    assert not [n for n in netns_names() if n.startswith(meta["testbed"]["prefix"])]


@pytest.mark.parametrize("args, message", [
    (["-p", "mappers", "49"], "more than the lab holds"),
    (["-p", "sizes_kb", "128"], "out of range"),
    (["-p", "protocols", "tcp,quic"], "unknown protocol"),
    (["-p", "cpu_protocols", "tipc,quic"], "unknown protocol"),
    (["-p", "protocols", "tcp-cubic,sctp"], "not in protocols"),
])
def test_s3_bad_input_fails_before_any_change(tmp_path, args, message):
    out = harness("run", "-q", str(NOTEBOOK), *args, data=tmp_path, timeout=300)
    assert out.returncode != 0
    assert message in out.stderr + out.stdout

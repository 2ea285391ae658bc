"""S0 end to end on four SSH-only machines (a1, fa, fb, b1) the harness did not build.

The fronts route between the private segments and the public one, as a site's would; the
harness adds its forwarding setting and NAT on the fronts, records them and undoes them.
Costly: a small run took 268-300 s here at host load 6.5-7.8 (2026-11-26), beside the
other engineers' runs; at load 12-14 (2026-11-27) it ran past 600 s, hence its own limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import needs_root, needs_tools

from ..machines import running_machines, s0_machines, s0_networks, skip_reason

pytestmark = [pytest.mark.integration, needs_root, needs_tools("iperf3", "socat", "NPtcp")]

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "s0_relay.ipynb"


@pytest.mark.timeout(1500)
def test_s0_runs_on_the_inventory_and_leaves_every_machine_as_found(tmp_path):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with running_machines(s0_networks(), s0_machines()) as m:
        before = {n: m.snapshot(n) for n in m.machines}
        out = m.harness("run", "-q", str(NOTEBOOK), "--inventory", str(m.inventory_path),
                        "--share-machine", "-p", "sizes", "1,64K", "-p", "repetitions", "1",
                        "-p", "latency_budget_s", "0.02", "-p", "stream_budget_s", "0.03",
                        "-p", "bench_repetitions", "1", "-p", "bench_seconds", "1",
                        "-p", "flows", "2", "-p", "verify_seconds", "1",
                        env={"HARNESS_DATA": str(tmp_path)}, timeout=1400)
        assert out.returncode == 0, out.stderr[-4000:]
        (run_dir,) = list((tmp_path / "runs" / "s0").iterdir())
        meta = json.loads((run_dir / "run.json").read_text())
        assert meta["status"] == "complete" and meta["placement"]["where"] == "inventory"
        bed = meta["testbed"]
        assert {n: bed["machines"][n]["hostname"] for n in m.machines} == \
            {n: x.hostname for n, x in m.machines.items()}
        assert bed["address_plan"]["fa"]["pub"]["address"] == "198.18.0.1/24"
        assert not any(link["shaped_by_harness"] for link in bed["links"])
        changed = {(c["node"], c["kind"]) for c in meta["configuration"]}
        assert ("fa", "sysctl") in changed and ("fb", "sysctl") in changed, changed
        assert not meta["not_undone"]
        # the real paths of S0's three links measured both ways (iperf3), the others pinged
        rated = {c["link"] for c in meta["link_verification"] if c["goodput_mbit"]}
        assert rated == {"a1:eth0->fa:priv", "fa:priv->a1:eth0", "fa:pub->fb:pub",
                         "fb:pub->fa:pub", "fb:priv->b1:eth0", "b1:eth0->fb:priv"}, rated
        print(f"S0 on four machines: {meta.get('session_timings')}")
        assert (run_dir / "claims.csv").exists() and (run_dir / "report.html").exists()
        assert {n: m.snapshot(n) for n in m.machines} == before
        assert all(not m.processes(n) for n in m.machines)

"""A whole study on machines the harness did not build, reached over SSH only (issue 25).

The machines (:mod:`tests.integration.machines`): namespaces with their own hostname,
/run and sshd, joined by a switch that also routes (the user's network as found). The
harness runs from the switch's management address and knows them only from the
inventory. Each test snapshots every machine (addresses, links, routes, rules, qdiscs,
MPTCP endpoints and limits, net.* sysctls) before and after: the run must leave them as
found. S4's small run took 61-69 s here (host load 1.6-3.1, 2026-11-26).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import needs_root, needs_tools

from ..machines import congestion_allowed, running_machines, s4_machines, s4_networks, skip_reason

pytestmark = [pytest.mark.integration, needs_root,
              needs_tools("iperf3", "mptcpize", "globus-url-copy", "globus-gridftp-server")]

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "s4_mptcp.ipynb"
PING_NOTEBOOK = Path(__file__).resolve().parents[2] / "studies" / "ping_study.ipynb"
SMALL = ("-p", "streams", "1,10", "-p", "duration_s", "2", "-p", "repetitions", "1",
         "-p", "sender_cpus", "0,0.01", "-p", "gridftp_streams", "2",
         "-p", "gridftp_mbytes", "16", "-p", "verify_seconds", "1")


@pytest.fixture(scope="module")
def machines():
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with congestion_allowed("cubic"), running_machines(s4_networks(), s4_machines(),
                                                       unprivileged_user=True) as m:
        yield m


def snapshots(m) -> dict:
    return {name: m.snapshot(name) for name in m.machines}


def machine_run_dir(m, name: str) -> list[str]:
    """The files in a machine's own /run (its mount namespace, seen through its sshd).

    Folders are left out: the harness keeps its lock folder /run/harness and its stop
    folder /run/harness-tracked once made (as on the controlling machine); a lock, a stop
    file or a process record left in them would show here."""
    pid = m.machines[name].sshd_pid
    out = subprocess.run(["nsenter", "-t", str(pid), "-m", "find", "/run", "-mindepth", "1",
                          "-not", "-type", "d"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return sorted(out.split())


def run_s4(m, data: Path, inventory: Path, *extra: str):
    return m.harness("run", "-q", str(NOTEBOOK), "--inventory", str(inventory),
                     "--share-machine", *SMALL, *extra, env={"HARNESS_DATA": str(data)})


def test_s4_runs_on_the_inventory_and_leaves_every_machine_as_found(machines, tmp_path):
    m = machines
    before, run_before = snapshots(m), {n: machine_run_dir(m, n) for n in m.machines}
    out = run_s4(m, tmp_path, m.inventory_path)
    assert out.returncode == 0, out.stderr[-4000:]
    (run_dir,) = list((tmp_path / "runs" / "s4").iterdir())
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and meta["placement"]["where"] == "inventory"
    # reached over SSH: the machines' own hostnames, not the controller's
    bed = meta["testbed"]
    assert {n: bed["machines"][n]["hostname"] for n in m.machines} == \
        {n: x.hostname for n, x in m.machines.items()}
    assert {n: bed["nodes"][n]["type"] for n in m.machines} == {"client": "ssh", "server": "ssh"}
    assert all(a["root"] for a in meta["access"].values())
    for name, machine in bed["machines"].items():
        assert machine["kernel"] and meta["capabilities"][name]["tools"]["iperf3"]
        assert machine["sysctls"]["net.mptcp.enabled"] == "1"
    assert bed["address_plan"]["client"]["eth1"] == {"device": "eth1",
                                                     "address": "198.51.100.10/24"}
    assert any("192.0.2.10/24" in line for line in bed["machines"]["client"]["addresses"])
    # the harness shaped nothing here, and says so; verification reached every real path
    assert {link["made_by"] for link in bed["links"]} == {"the user's network as found"}
    assert not any(link["shaped_by_harness"] for link in bed["links"])
    assert "the user&#x27;s network as found" in (run_dir / "report.html").read_text() or \
        "the user's network as found" in (run_dir / "report.html").read_text()
    checks = {c["link"]: c for c in meta["link_verification"]}
    paths = {"client:eth0->server:eth0", "client:eth1->server:eth0",
             "server:eth0->client:eth0", "server:eth0->client:eth1"}
    assert set(checks) == paths
    assert all(c["rtt_ms"] and c["rtt_ms"] > 0 for c in checks.values())
    # each real path's rate measured (iperf3, 1 s; veths through a namespace bridge carry
    # Gbit/s), not judged: nothing was configured to compare it with
    assert all(c["goodput_mbit"] > 50 and c["rate_ok"] is None and c["seconds"] == 1
               for c in checks.values()), checks
    by_link = {link["link"]: link for link in bed["links"]}
    assert {m["path"] for m in by_link["client:eth1 - router:eth1"]["measured"]} == \
        {"client:eth1->server:eth0", "server:eth0->client:eth1"}
    assert "unshaped: TCP goodput" in (run_dir / "report.html").read_text()
    # the changes: recorded per machine, then undone
    kinds = {(c["node"], c["kind"]) for c in meta["configuration"]}
    assert {("client", "sysctl"), ("server", "sysctl"), ("client", "mptcp-endpoint")} <= kinds
    assert not meta["not_undone"]
    assert set(meta["machine_lock"]) >= {"client", "server"}  # and the controller's, "local"
    frame = pd.read_parquet(run_dir / "results.parquet")
    mp = frame[(frame.tool == "iperf3") & (frame.transport == "mptcp")]
    assert (mp.path2_tx_bytes > 0).all()  # the second real path carried data
    assert len(pd.read_csv(run_dir / "claims.csv")) > 0
    assert snapshots(m) == before
    assert {n: machine_run_dir(m, n) for n in m.machines} == run_before
    assert all(not m.processes(n) for n in m.machines)


def test_s4_as_an_ordinary_user_measures_what_it_can_and_changes_nothing(machines, tmp_path):
    """Issue 25, "Privileges on a user's cluster", with a shipped study: both machines
    reached as an ordinary user who may not sudo. S4 measures TCP and MPTCP as the machines
    are; the client's second-path endpoint and the sender's cgroup are recorded as changes
    not made, with their privileges; the limited sender's points are not measured at all
    (an unlimited point under a limit's name would be a false point); the claims resting on
    a missing change are "not testable here", the others judged; nothing is changed."""
    m = machines
    inventory = m.write_inventory(tmp_path / "user.yaml", {n: m.user for n in m.machines})
    before, run_before = snapshots(m), {n: machine_run_dir(m, n) for n in m.machines}
    out = run_s4(m, tmp_path, inventory)
    assert out.returncode == 0, out.stderr[-4000:]
    (run_dir,) = list((tmp_path / "runs" / "s4").iterdir())
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and not meta["configuration"]
    assert all(not a["root"] for a in meta["access"].values())
    not_made = {(r["node"], r["kind"]): r["privilege"] for r in meta["as_found"]["not_made"]}
    assert not_made[("client", "mptcp-endpoint")].startswith("CAP_NET_ADMIN")
    (cgroup,) = [k for node, k in not_made if k.startswith("cgroup-v")]  # the host's version
    assert not_made[("client", cgroup)].startswith("root (a cgroup")
    assert list(meta["sender_cpus_not_measured"]) == ["cpu0.01"]
    frame = pd.read_parquet(run_dir / "results.parquet")
    assert set(frame.sender_cpus) == {0.0} and set(frame.transport) == {"tcp", "mptcp"}
    assert (frame.goodput_mbit > 0).all()
    mp = frame[(frame.tool == "iperf3") & (frame.transport == "mptcp")]
    assert (mp.path2_tx_bytes < 0.01 * mp.path1_tx_bytes).all()  # no endpoint: no 2nd path
    verdicts = pd.read_csv(run_dir / "claims.csv").set_index("claim_id")
    for claim in ("s4.tcp_peak@anchored", "s4.mptcp_both_paths", "s4.mptcp_peak@nolimit"):
        assert verdicts.loc[claim, "outcome"] == "not testable here", claim
        assert f"as {m.user}" in verdicts.loc[claim, "reason"], claim
    assert "root (a cgroup" in verdicts.loc["s4.tcp_gain_1_10@anchored", "reason"]
    assert "not measured: its cgroup" in meta["sender_cpus_not_measured"]["cpu0.01"]
    assert "CAP_NET_ADMIN" in verdicts.loc["s4.mptcp_both_paths", "reason"]
    # TCP without a limit rests on no change: judged on the machines as found
    assert "as found" not in str(verdicts.loc["s4.tcp_peak@nolimit", "reason"])
    assert snapshots(m) == before
    assert {n: machine_run_dir(m, n) for n in m.machines} == run_before
    assert all(not m.processes(n) for n in m.machines)


def test_machines_without_tipc_are_refused_for_s3_naming_the_feature(machines, tmp_path):
    """S3's TIPC needs the tipc module: these machines lack it (``modprobe tipc`` is the
    user's to do; the harness loads no module on a user's machine)."""
    m = machines
    client, server = m.machines["client"], m.machines["server"]
    inventory = tmp_path / "s3.yaml"
    data = m.inventory()
    data["nodes"] = {
        "reducer": {"host": client.management_address,
                    "interfaces": {"eth0": {"device": "eth0", "address": "192.0.2.10/24"}}},
        "m01": {"host": server.management_address,
                "interfaces": {"eth0": {"device": "eth0", "address": "203.0.113.5/24"}}}}
    inventory.write_text(yaml.safe_dump(data))
    before = snapshots(m)
    out = m.harness("run", "-q", str(NOTEBOOK.with_name("s3_tipc.ipynb")), "--inventory",
                    str(inventory), "--share-machine", "-p", "lab_mappers", "1",
                    env={"HARNESS_DATA": str(tmp_path)})
    assert out.returncode != 0
    assert "tipc" in out.stderr and ("reducer" in out.stderr or "m01" in out.stderr), \
        out.stderr[-3000:]
    assert snapshots(m) == before
    for run_dir in (tmp_path / "runs").glob("s3/*"):
        meta = json.loads((run_dir / "run.json").read_text())
        assert meta["status"] != "complete" and not meta.get("configuration")
        assert not set(meta.get("machine_lock") or {}) & {"reducer", "m01"}  # none locked


def test_a_machine_reached_as_an_ordinary_user_is_refused_by_a_study_that_must_change_it(
        machines, tmp_path):
    """A study that measures nothing without its changes (the ping demo declares no
    ``as_found``) on an inventory whose b is reached as the fixture's user: the run stops
    before the probe and any lock, naming the machine, the user and what to do; a, reached
    as root, is recorded as root. (S4 can measure as found: see the test above.)"""
    m = machines
    data = m.inventory({"server": m.user})
    nodes = data["nodes"]
    for node in nodes.values():
        node["interfaces"] = {"eth0": node["interfaces"]["eth0"]}
    data["nodes"] = {"a": nodes["client"], "b": nodes["server"]}
    inventory = tmp_path / "user.yaml"
    inventory.write_text(yaml.safe_dump(data, sort_keys=False))
    before = snapshots(m)
    out = m.harness("run", "-q", str(PING_NOTEBOOK), "--inventory", str(inventory),
                    "--share-machine", env={"HARNESS_DATA": str(tmp_path)})
    assert out.returncode != 0
    assert f"b (user {m.user}, uid" in out.stderr, out.stderr[-3000:]
    assert "measures nothing without changing" in out.stderr and "log in as root" in out.stderr
    assert snapshots(m) == before
    (run_dir,) = list((tmp_path / "runs" / "ping-demo").iterdir())
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] != "complete" and not meta.get("configuration")
    assert meta["access"]["a"]["root"] and not meta["access"]["b"]["root"]
    assert not set(meta.get("machine_lock") or {}) & {"a", "b"}  # none locked


def test_roles_outnumbering_the_machines_are_refused_naming_the_role(machines, tmp_path):
    m = machines
    data = m.inventory()
    del data["nodes"]["server"]
    inventory = tmp_path / "client-only.yaml"
    inventory.write_text(yaml.safe_dump(data))
    before = snapshots(m)
    out = run_s4(m, tmp_path, inventory)
    assert out.returncode == 2
    assert "no node 'server'" in out.stderr
    assert not (tmp_path / "runs").exists()
    assert snapshots(m) == before

"""S4's small run as one 2-node Slurm job (issue 25 part 3).

Its own cluster: the compute nodes are the inventory tests' S4 machines (client with two
paths, server; tests/integration/machines.py), so the job's inventory, built from the
allocation and a template, reaches the very ports the inventory test uses. S4 makes CUBIC
its nodes' default, which a namespace may do only when the host allows it: the
``congestion_allowed`` fixture of those tests adds exactly cubic for this module and takes
exactly it out again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import needs_root, needs_tools

from ..inventory.test_inventory_run import SMALL, snapshots
from ..machines import congestion_allowed, s4_machines, s4_networks
from .cluster import running_cluster, skip_reason

# In `nox -s slow` only: its parts each run in the suite -- S4 on these very machines over SSH
# (inventory/test_inventory_run.py), a job whose inventory is built from the allocation and a
# template (test_slurm.py), a template's per-node sections (unit/test_slurm.py) -- and their
# combination took 289 s of a worker (its cluster, then S4 in a job) at load 12-16.
pytestmark = [pytest.mark.integration, pytest.mark.slow, needs_root,
              needs_tools("iperf3", "mptcpize", "globus-url-copy", "globus-gridftp-server")]

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "s4_mptcp.ipynb"


@pytest.fixture(scope="module")
def cluster():
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with congestion_allowed("cubic"), running_cluster(networks=s4_networks(),
                                                      specs=s4_machines()) as c:
        yield c


def template(cluster, path: Path) -> Path:
    """The devices and addresses of each role (a cluster's template would use {ip} ...)."""
    ports = {name: {p.ifname: {"device": p.ifname, "address": p.address}
                    for p in m.spec.ports} for name, m in cluster.machines.machines.items()}
    path.write_text(yaml.safe_dump({
        "ssh": {"user": "root", "key": str(cluster.user_key),
                "known_hosts": str(cluster.known_hosts)},
        "nodes": {name: {"interfaces": p} for name, p in ports.items()}}))
    return path


def test_s4_small_run_as_one_two_node_job(cluster, tmp_path):
    before = snapshots(cluster.machines)
    data = tmp_path / "data"
    data.mkdir()
    out = cluster.harness("run", str(NOTEBOOK), *SMALL, "--slurm", "--time=10", "--wait",
                          "--inventory-template", str(template(cluster, tmp_path / "t.yaml")),
                          "--share-machine", env={"HARNESS_DATA": str(data)}, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    (run_dir,) = list((data / "runs" / "s4").iterdir())
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and meta["placement"]["where"] == "inventory"
    slurm = meta["slurm"]
    assert slurm["roles"] == {"client": "client", "server": "server"}
    assert "#SBATCH --nodes=2" in slurm["script"] and "#SBATCH --exclusive" in slurm["script"]
    bed = meta["testbed"]
    assert {n: bed["machines"][n]["hostname"] for n in ("client", "server")} == \
        {n: m.hostname for n, m in cluster.machines.machines.items()}
    assert not meta["not_undone"] and len((run_dir / "claims.csv").read_text()) > 0
    assert "Slurm job" in (run_dir / "report.html").read_text()
    cluster.wait_idle()
    assert snapshots(cluster.machines) == before

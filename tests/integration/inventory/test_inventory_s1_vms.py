"""S1 on two VMs booted as plain machines: the harness gets only their SSH address, port and
host key, through an inventory (issue 25 part 1).

The fixture boots two TCG VMs with :mod:`harness.vm` (Debian's full kernel: rdma_rxe, which
S1's Soft-RoCE needs and this host's kernel lacks), cabled by one wire, and plays the user:
it gives each wire NIC its address (the user's network as found) and writes an inventory
naming each VM's forwarded SSH port, its host key (the known_hosts boot_vm wrote) and the
key to log in with. Then ``harness run notebooks/s1_via.ipynb --inventory`` must reach a
complete run, configure the machines (MTU, the rxe link), measure and undo, leaving the
VMs as found. The VMs are the fixture's: the run does not boot, adopt or end them.

Slow (TCG): marked ``vm`` like S1's own tests and ``slow``: run only by ``nox -s slow`` (see
docs/measurements.md, "Inventory machines": measured time there).
"""

from __future__ import annotations

import json
import shlex
from contextlib import ExitStack
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import needs_root

from harness.journal.journal import Journal
from harness.lab.placement import EXTRA_VM_MEMORY_MIB, vm_cpus
from harness.studies.s1.study import ADDRESSES, WIRE

# S1 on two user VMs takes ~10 min of TCG: `nox -s slow` (HARNESS_SLOW_TESTS=1) runs it
pytestmark = [pytest.mark.integration, pytest.mark.vm, pytest.mark.slow, needs_root]

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "s1_via.ipynb"
MACS = {"a": "52:54:00:6b:00:01", "b": "52:54:00:6b:00:02"}


def wire_device(vm, mac: str) -> str:
    """The guest's name of the NIC with ``mac`` (the test's own look, as a user would)."""
    for line in vm.run(["ip", "-o", "link", "show"], timeout=60).stdout.splitlines():
        if mac in line.lower():
            return line.split(":")[1].strip().split("@")[0]
    raise AssertionError(f"no NIC with MAC {mac} in {vm.name}")


def snapshot(vm, device: str) -> dict[str, str]:
    """The wire NIC and the RDMA links (not the module list: `rdma link add` makes the
    kernel load rdma_rxe by itself, and it stays loaded)."""
    def run(*argv: str) -> str:
        return vm.run(list(argv), timeout=60, check=False).stdout

    return {"link": run("ip", "-o", "link", "show", "dev", device),
            "addresses": run("ip", "-o", "addr", "show", "dev", device),
            "rdma": run("rdma", "link", "show")}


@pytest.fixture(scope="module")
def user_vms(tmp_path_factory):
    from harness.vm.fleet import boot_together
    from harness.vm.machine import VM, Wire
    from harness.vm.qemu import free_udp_ports

    workdir = tmp_path_factory.mktemp("s1-user-vms")
    journal = Journal(workdir / "journal.jsonl")
    port_a, port_b = free_udp_ports(2)
    specs = {"a": VM(name="user-s1-a", cpus=vm_cpus(), memory_mib=EXTRA_VM_MEMORY_MIB,
                     wires=(Wire(MACS["a"], port_a, port_b),)),
             "b": VM(name="user-s1-b", cpus=vm_cpus(), memory_mib=EXTRA_VM_MEMORY_MIB,
                     wires=(Wire(MACS["b"], port_b, port_a),))}
    with ExitStack() as stack:
        stack.callback(journal.undo_all)
        vms = boot_together(specs, journal, stack)
        devices = {}
        for label, vm in vms.items():  # the user's network as found
            dev = devices[label] = wire_device(vm, MACS[label])
            vm.run(f"ip addr add {shlex.quote(ADDRESSES[label])} dev {shlex.quote(dev)} && "
                   f"ip link set dev {shlex.quote(dev)} up", timeout=60)
        inventory = {"nodes": {label: {
            "host": vm.host, "port": vm.port, "user": "root", "key": vm.key_filename,
            "known_hosts": vm.known_hosts,
            "interfaces": {WIRE: {"device": devices[label], "address": ADDRESSES[label]}}}
            for label, vm in vms.items()}}
        path = workdir / "inventory.yaml"
        path.write_text(yaml.safe_dump(inventory, sort_keys=False))
        yield vms, devices, path


@pytest.mark.timeout(3600)  # two TCG boots and S1's quick profile: see the module's doc
def test_s1_runs_on_two_vms_known_only_by_their_ssh_address_port_and_host_key(user_vms,
                                                                              tmp_path):
    from conftest import run_harness

    vms, devices, inventory = user_vms
    before = {label: snapshot(vm, devices[label]) for label, vm in vms.items()}
    # harness.vm's guests have a read-only /run/harness (their boot share: sshd's keys), where
    # a user's machine has a writable /run: the lock folder moves, on both ends, to one
    # both can write (made by the lock itself; the guest's ends with it)
    out = run_harness("run", "-q", str(NOTEBOOK), "--inventory", str(inventory),
                      "--share-machine", "-p", "profile", "quick",
                      env={"HARNESS_DATA": str(tmp_path),
                           "HARNESS_LOCK_DIR": str(tmp_path / "locks")}, timeout=3000)
    assert out.returncode == 0, out.stderr[-4000:]
    (run_dir,) = list((tmp_path / "runs" / "s1").iterdir())
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete", meta.get("measurement_error")
    assert meta["placement"]["where"] == "inventory"  # no VM booted by the run itself
    bed = meta["testbed"]
    assert {n: bed["nodes"][n]["port"] for n in vms} == {n: vm.port for n, vm in vms.items()}
    assert all(meta["capabilities"][n]["features"]["rdma_rxe"] for n in vms)
    kinds = [c["kind"] for c in meta["configuration"]]
    assert kinds.count("rdma-link") == 2 and not meta["not_undone"]
    assert all(c["goodput_mbit"] for c in meta["link_verification"])
    frame = pd.read_parquet(run_dir / "results.parquet")
    assert {"verbs-send", "tcp-nodelay"} <= set(frame.method)
    assert len(pd.read_csv(run_dir / "claims.csv")) > 0
    assert {label: snapshot(vm, devices[label]) for label, vm in vms.items()} == before
    print(f"S1 quick on two user VMs: {meta.get('session_timings')}")

"""The VMs of one lab: one per machine label of a topology, wired where links cross them.

A topology whose nodes sit in separate kernels (``TopologyNode.machine``) gets a
VM per machine label; each link between two machines becomes a wire -- a NIC
in each VM whose frames QEMU carries as UDP datagrams between two loopback
ports. The VMs boot at once (one thread each); every one that came up is
shut down by the caller's ExitStack, also when another failed or Ctrl-C
arrived while they booted.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack

from ..journal.journal import Journal
from ..lab.placement import EXTRA_VM_MEMORY_MIB, vm_cpus, vm_memory_mib
from ..topology.topology import Topology
from .boot import VMNode, boot_vm
from .machine import VM, Wire
from .qemu import free_loopback_port, free_udp_ports
from .txstall import WiredConsole
from .wirekind import wire_kind_from_env


def boot_lab_vms(topology: Topology, study: str, journal: Journal,
                 stack: ExitStack) -> tuple[dict[str, VMNode], dict[tuple[str, str], str]]:
    """Boot a VM per machine label (``""``: the main one, which gets the spare memory).

    Returns the VMs by label and, for every wired interface ``(node, ifname)``,
    the MAC of the NIC that becomes it (the lab adopts NICs by MAC).
    """
    machines = topology.machines()
    wires: dict[str, list[Wire]] = {label: [] for label in machines}
    nics: dict[tuple[str, str], str] = {}
    kind = wire_kind_from_env()  # HARNESS_VM_WIRE; the default: dgram
    for k, link in enumerate(topology.wires()):
        # dgram: a UDP port each, each side sends to the other's. stream: one TCP port, on
        # which the VM of the smaller machine label listens (the main VM, ""), so a VM only
        # ever waits for VMs before it (boot._await_wire_servers) and never in a circle
        ports = free_udp_ports(2) if kind.backend == "dgram" else [free_loopback_port()] * 2
        first = min(topology.machine_of(link.a.node), topology.machine_of(link.b.node))
        for side, (end, port, peer_port) in enumerate(((link.a, *ports),
                                                       (link.b, *reversed(ports)))):
            mac = f"52:54:00:5e:{k:02x}:{side + 1:02x}"
            machine = topology.machine_of(end.node)
            wires[machine].append(Wire(mac, port, peer_port, kind=kind, listen=(
                kind.backend == "stream" and machine == first)))
            nics[(end.node, end.ifname)] = mac
    extra = len(machines) - 1
    specs = {}
    for label in machines:
        name = f"{study}-lab" if not label else f"{study}-{label}"
        memory = vm_memory_mib(extra_vms=extra) if not label else EXTRA_VM_MEMORY_MIB
        disks = tuple(d for n in topology.nodes if n.machine == label for d in n.disks)
        # qmp: QEMU's view of a wire's queues if one stalls (stall_evidence.stall_evidence)
        specs[label] = VM(name=name, cpus=topology.vms.cpus or vm_cpus(), memory_mib=memory,
                          wires=tuple(wires[label]), disks=disks,
                          kernel_args=topology.vms.kernel_args, qmp=bool(wires[label]))
    return boot_together(specs, journal, stack), nics


def boot_together(specs: dict[str, VM], journal: Journal, stack: ExitStack) -> dict[str, VMNode]:
    """Boot several VMs at once (one thread each); every one that came up is shut down by
    ``stack``, also when another failed or Ctrl-C arrived meanwhile."""
    booted: dict = {}
    errors: list[BaseException] = []

    def boot(label, spec) -> None:
        manager = boot_vm(spec, journal)
        try:
            booted[label] = (manager, manager.__enter__())
        except BaseException as exc:  # handed to the caller
            errors.append(exc)

    threads = [threading.Thread(target=boot, args=item, name=f"boot-{item[1].name}",
                                daemon=True) for item in specs.items()]
    for thread in threads:
        thread.start()
    interrupted = False
    for thread in threads:
        while thread.is_alive():
            try:
                thread.join()
            except KeyboardInterrupt:
                interrupted = True
    for label in specs:  # shut down in reverse boot order, like nested `with`s
        if label in booted:
            stack.push(booted[label][0].__exit__)
    if errors:
        raise errors[0]
    if interrupted:
        raise KeyboardInterrupt
    return {label: booted[label][1] for label in specs}


def wired_consoles(topology: Topology, vms: dict[str, VMNode],
                   nics: dict[tuple[str, str], str]) -> list[WiredConsole]:
    """Each lab VM's console log and the names its wires have in the guest (the kernel
    names a NIC by its current name in its TX watchdog lines), for :mod:`.txstall`."""
    out = []
    for label, vm in vms.items():
        ifnames = tuple(sorted({ifname for node, ifname in nics
                                if topology.machine_of(node) == label}))
        if ifnames and vm.console_log:
            macs = tuple(sorted(mac for (node, _ifname), mac in nics.items()
                                if topology.machine_of(node) == label))
            out.append(WiredConsole(vm.name, vm.console_log, ifnames,
                                    qmp_socket=vm.qmp_socket, macs=macs))
    return out


def pin_lab_vcpus(vms: dict[str, VMNode]) -> dict:
    """Each vCPU of the lab's VMs on a host core of its own where the cores suffice
    (:mod:`harness.vm.pinning`); the record for run.json."""
    from .pinning import pin_vcpus

    return pin_vcpus({vm.name: vm.boot.qemu_pid for vm in vms.values()},
                     {vm.name: vm.boot.cpus for vm in vms.values()})


def cap_disks(topology: Topology, vms: dict[str, VMNode], factor: float) -> dict[str, dict]:
    """Cap every node's disks at their rates times ``factor`` (the links' scaling), so a disk
    keeps its ratio to the network; what was set, by node and disk, for the run record."""
    from .qmp import set_disk_rates

    out: dict[str, dict] = {}
    for node in topology.nodes:
        if not node.disks:
            continue
        vm = vms[node.machine]
        scaled = {disk.name: disk.scaled(factor) for disk in node.disks}
        set_disk_rates(vm.qmp_socket, {vm.disks[name]: (d.read_mbyte_s, d.write_mbyte_s)
                                       for name, d in scaled.items()})
        out[node.name] = {name: {"serial": d.serial, "size_mib": d.size_mib,
                                 "read_mbyte_s": d.read_mbyte_s, "write_mbyte_s": d.write_mbyte_s,
                                 "scaled_by": factor} for name, d in scaled.items()}
    return out

"""S1's CPU levels: both machines on one online CPU (the paper's uniprocessor kernel, 001:44:
every claim but the SMP one) or on two (the SMP claim's second level, 001:52) for a block, CPU
1 brought online or taken offline through the journal and put back as found.

Which machines S1 asks for (:func:`vm_shape`): VMs of one vCPU each, unless the SMP level is
asked for and the host has a core for every vCPU of two 2-vCPU VMs; those boot ``maxcpus=1``
(the kernel comes up on CPU 0, CPU 1 present and offline) and the 2-CPU level brings CPU 1
online. Either way each vCPU is pinned to a host core of its own. x86's CPU 0 cannot go
offline, so a level moves CPU 1 only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ...config.cpu import KIND as CPU_KIND
from ...config.cpu import CpuOnline
from ...errors import HarnessError
from ...run.session import Session
from ...topology.topology import VMShape

HOTPLUG_CPU = 1  # the CPU the levels move (x86's CPU 0 cannot go offline)
ONLINE_LIST = "/sys/devices/system/cpu/online"
PRESENT_LIST = "/sys/devices/system/cpu/present"
#: what ONLINE_LIST reads at each level (and PRESENT_LIST on a machine that has the level)
ONLINE_AT = {1: "0", 2: "0-1"}
#: S1's lab: two machines
MACHINES = 2
#: how the UP level's kernel is booted on a 2-vCPU VM (the paper's UP kernel, 001:44)
UP_BOOT = "maxcpus=1"


def vm_shape(levels, host_cores: int) -> VMShape:
    """The VMs S1 asks for: 2 vCPUs each, booted :data:`UP_BOOT`, when the 2-CPU level is
    asked for and the host has a core for each of the lab's vCPUs; else 1 vCPU each (the
    2-CPU level then cannot be measured: s1.smp_latency_larger's gate says so with the
    counts). Pinned to host cores of their own either way, where the cores suffice."""
    if 2 in levels and host_cores >= MACHINES * 2:
        return VMShape(cpus=2, kernel_args=(UP_BOOT,), pin=True)
    return VMShape(cpus=1, pin=True)


def host_cores() -> int:
    """The host cores this process (and the VMs it starts) may run on."""
    import os

    return len(os.sched_getaffinity(0))


def read_present(nodes) -> dict[str, str]:
    """Each node's present CPUs as the kernel lists them ("0", "0-1")."""
    return {node.name: node.run(["cat", PRESENT_LIST], timeout=30).stdout.strip()
            for node in nodes}


def measurable_levels(levels, present: dict[str, str]) -> tuple[int, ...]:
    """The asked ``levels`` the machines can run: 1 always (CPU 0), 2 where every machine
    has CPUs 0 and 1 present."""
    both = all(value == ONLINE_AT[2] for value in present.values())
    return tuple(c for c in levels if c == 1 or (c == 2 and both))


def read_online(nodes) -> dict[str, str]:
    """Each node's online CPUs as the kernel lists them ("0-1", "0")."""
    return {node.name: node.run(["cat", ONLINE_LIST], timeout=30).stdout.strip()
            for node in nodes}


@contextmanager
def cpu_level(session: Session, nodes, cpus: int) -> Iterator[dict[str, str]]:
    """Both machines on ``cpus`` online CPUs for the block: CPU 1 offline at level 1 and
    online at level 2 (journalled where that changes it; put back as found when the block
    ends, also on error or Ctrl-C; on a 1-vCPU machine level 1 changes nothing). Yields the
    online CPUs read back from each machine, and stops if they are not the level's.

    Only the CPU entries are undone at the end, never the journal's whole scope: tools copy
    their scripts into the machines on first use (journalled files), and undoing those with
    the level took the ping-pong script from under the next level (integration run,
    2026-11-27). An entry left pending by an interrupt is undone with the run's teardown."""
    journal = session.journal
    before = {entry.seq for entry in journal.pending()}
    present = read_present(nodes)
    session.apply(*(CpuOnline(node, HOTPLUG_CPU, cpus == 2) for node in nodes
                    if cpus == 2 or present[node.name] != ONLINE_AT[1]))
    taken = [entry for entry in journal.pending()
             if entry.seq not in before and entry.kind == CPU_KIND]
    try:
        online = read_online(nodes)
        if any(value != ONLINE_AT[cpus] for value in online.values()):
            raise HarnessError(f"at the {cpus}-CPU level the machines' online CPUs read "
                               f"{online}, not {ONLINE_AT[cpus]!r} each",
                               "did something else change the CPUs meanwhile?")
        yield online
    finally:
        for entry in reversed(taken):
            journal.undo(entry)

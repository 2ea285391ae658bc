"""S1's CPU levels (the SMP factor, s1.smp_latency_larger): both machines on one or on two
online CPUs for a block, CPU 1 taken offline through the journal and brought back as found.

The 1-CPU level exists for the paper's SMP observation (001:52); x86's CPU 0 cannot go
offline, so the level takes CPU 1 and needs machines with exactly CPUs 0 and 1 online.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ...config.cpu import KIND as CPU_KIND
from ...config.cpu import CpuOnline
from ...errors import HarnessError
from ...run.session import Session

HOTPLUG_CPU = 1  # the CPU the 1-CPU level takes offline (x86's CPU 0 cannot go offline)
ONLINE_LIST = "/sys/devices/system/cpu/online"
#: what ONLINE_LIST reads at each level in a 2-vCPU VM
ONLINE_AT = {1: "0", 2: "0-1"}


def read_online(nodes) -> dict[str, str]:
    """Each node's online CPUs as the kernel lists them ("0-1", "0")."""
    return {node.name: node.run(["cat", ONLINE_LIST], timeout=30).stdout.strip()
            for node in nodes}


@contextmanager
def cpu_level(session: Session, nodes, cpus: int) -> Iterator[dict[str, str]]:
    """Both machines on ``cpus`` online CPUs for the block: level 1 takes CPU 1 offline
    (journalled; brought back when the block ends, also on error or Ctrl-C), level 2 has it
    online (as found: configure saw it so). Yields the online CPUs read back from each
    machine, and stops if they are not the level's.

    Only the CPU entries are undone at the end, never the journal's whole scope: tools copy
    their scripts into the machines on first use (journalled files), and undoing those with
    the level took the ping-pong script from under the next level (integration run,
    2026-11-27). An entry left pending by an interrupt is undone with the run's teardown."""
    journal = session.journal
    before = {entry.seq for entry in journal.pending()}
    session.apply(*(CpuOnline(node, HOTPLUG_CPU, cpus == 2) for node in nodes))
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

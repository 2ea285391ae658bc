"""Each vCPU of a lab's VMs on a host core of its own, where the host's cores suffice.

Two VMs of one vCPU each on a 2-core host may still share a core when the host's scheduler
puts both emulator threads there; pinning each vCPU thread (QEMU names them ``CPU n/TCG`` or
``CPU n/KVM`` with ``-name ...,debug-threads=on``) to a core of its own makes "one vCPU, one
core" a fact rather than a hope. Where the lab has more vCPUs than the cores this process
may run on, nothing is pinned and the record says why (the oversubscription gate,
:mod:`harness.verdicts.gates`, then decides what the run can judge).

The threads belong to QEMU processes this run started and end with them: nothing to undo.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

_VCPU_THREAD = re.compile(r"CPU (\d+)/(TCG|KVM|HVF|WHPX)")


@dataclass(frozen=True)
class VcpuThread:
    vm: str
    vcpu: int
    tid: int


def vcpu_threads(vm: str, qemu_pid: int, proc: str = "/proc") -> list[VcpuThread]:
    """The vCPU threads of one QEMU process, by vCPU index (none when QEMU did not name
    them, or the process is gone)."""
    out = []
    try:
        tids = os.listdir(f"{proc}/{qemu_pid}/task")
    except OSError:
        return []
    for tid in tids:
        try:
            with open(f"{proc}/{qemu_pid}/task/{tid}/comm") as fh:
                name = fh.read().strip()
        except OSError:
            continue
        match = _VCPU_THREAD.fullmatch(name)
        if match:
            out.append(VcpuThread(vm, int(match.group(1)), int(tid)))
    return sorted(out, key=lambda t: t.vcpu)


def plan(threads: list[VcpuThread], cores: list[int]) -> dict[int, int] | None:
    """Thread id -> host core, each thread its own core; None when there are more threads
    than cores."""
    if not threads or len(threads) > len(cores):
        return None
    return {t.tid: core for t, core in zip(threads, sorted(cores))}


def pin_vcpus(qemu_pids: Mapping[str, int], expected: Mapping[str, int]) -> dict:
    """Pin the vCPU threads of the VMs ``qemu_pids`` (name -> QEMU pid; ``expected``: name ->
    vCPUs booted) to distinct host cores; the record for run.json (``pinned`` and, per VM,
    each vCPU's core; or why nothing was pinned)."""
    cores = sorted(os.sched_getaffinity(0))
    threads = [t for name, pid in qemu_pids.items() for t in vcpu_threads(name, pid)]
    found = {name: sum(1 for t in threads if t.vm == name) for name in qemu_pids}
    if any(found[name] != expected[name] for name in qemu_pids):
        return {"pinned": False, "host_cores": cores,
                "why": f"QEMU's vCPU threads not all found by name (found {found}, booted "
                       f"{dict(expected)})"}
    assignment = plan(threads, cores)
    if assignment is None:
        return {"pinned": False, "host_cores": cores,
                "why": f"{len(threads)} vCPUs on {len(cores)} host cores: not one core each"}
    for tid, core in assignment.items():
        os.sched_setaffinity(tid, {core})
    return {"pinned": True, "host_cores": cores,
            "vcpus": {name: {str(t.vcpu): assignment[t.tid] for t in threads if t.vm == name}
                      for name in qemu_pids}}

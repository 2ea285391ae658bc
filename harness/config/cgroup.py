"""A CPU limit for chosen processes, in a cgroup of the harness's own.

cgroup v2 (``cpu.max`` = quota/period) where the unified hierarchy has the
cpu controller, else cgroup v1's cpu hierarchy (``cpu.cfs_quota_us`` /
``cpu.cfs_period_us``). 0.5 CPUs is 50 ms every 100 ms. Processes join at
start (see :meth:`Node.spawn`'s ``cgroup``: both versions take a pid written
to ``cgroup.procs``). cgroups belong to the machine, not to a network
namespace, so the directory is made on the machine under any namespace node.
"""

from __future__ import annotations

import secrets

from ..errors import CapabilityMissing, SpecError
from ..journal import Journal, undo_handler
from ..nodes import Node
from .record import ChangeRecord

PERIOD_US = 100_000


def find_cpu_hierarchy(machine: Node) -> tuple[str, int]:
    """(mount point, cgroup version) of the hierarchy that holds the cpu controller."""
    mounts = machine.read_text("/proc/self/mounts")
    v1 = None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        point, fstype, options = parts[1], parts[2], parts[3].split(",")
        if fstype == "cgroup2":
            ctl = machine.run(["cat", f"{point}/cgroup.controllers"], check=False, timeout=10)
            if ctl.ok and "cpu" in ctl.stdout.split():
                return point, 2
        elif fstype == "cgroup" and "cpu" in options:
            v1 = point
    if v1:
        return v1, 1
    raise CapabilityMissing(f"{machine.name} has no cgroup cpu controller mounted",
                            "mount cgroup v2 (or v1's cpu hierarchy), or run without a CPU limit")


def cpu_limit(journal: Journal, node: Node, cpus: float, label: str = "sender"
              ) -> tuple[str, list[ChangeRecord]]:
    """Make a cgroup limited to ``cpus`` CPUs; return its path and the change records."""
    if not 0.01 <= cpus <= 1024:
        raise SpecError(f"CPU limit {cpus} is out of range",
                        "give the number of CPUs the process may use, e.g. 0.5 (0.01..1024)")
    machine = node.machine
    root, version = find_cpu_hierarchy(machine)
    records = []
    if version == 2:
        subtree = machine.read_text(f"{root}/cgroup.subtree_control").split()
        if "cpu" not in subtree:
            journal.record("cgroup-controller", machine, root=root, controller="cpu")
            machine.run(f"echo +cpu > {root}/cgroup.subtree_control", timeout=10)
            records.append(ChangeRecord(machine.name, "cgroup-controller",
                                        f"{root}/cgroup.subtree_control",
                                        " ".join(subtree), "+cpu", True))
    path = f"{root}/harness-{label}-{secrets.token_hex(4)}"
    journal.record("cgroup", machine, path=path)
    machine.run(["mkdir", path], timeout=10)
    quota = int(round(cpus * PERIOD_US))
    if version == 2:
        machine.run(f"echo '{quota} {PERIOD_US}' > {path}/cpu.max", timeout=10)
        setting = f"cpu.max {quota} {PERIOD_US}"
    else:
        machine.run(f"echo {PERIOD_US} > {path}/cpu.cfs_period_us && "
                    f"echo {quota} > {path}/cpu.cfs_quota_us", timeout=10)
        setting = f"cpu.cfs_quota_us {quota} / cpu.cfs_period_us {PERIOD_US}"
    records.append(ChangeRecord(machine.name, f"cgroup-v{version}", path, None,
                                f"{setting} ({cpus:g} CPUs)", True))
    return path, records


@undo_handler("cgroup", gone_with_namespace=False)
def _remove_cgroup(node: Node, data: dict) -> None:
    # Its processes were stopped before (undo runs newest first); rmdir fails if any remain.
    node.run(f"test -d {data['path']} && rmdir {data['path']} || true", timeout=10)


@undo_handler("cgroup-controller", gone_with_namespace=False)
def _disable_controller(node: Node, data: dict) -> None:
    node.run(f"echo -{data['controller']} > {data['root']}/cgroup.subtree_control",
             check=False, timeout=10)

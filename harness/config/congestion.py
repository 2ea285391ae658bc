"""The default TCP congestion control of a node (for programs without a per-socket option).

Inside a child network namespace the kernel allows only controls listed in
the *machine's* ``net.ipv4.tcp_allowed_congestion_control`` (else EPERM), so
when needed that list is extended on the machine -- recorded and restored
like any other sysctl.
"""

from __future__ import annotations

from ..errors import CapabilityMissing
from ..journal import Journal
from ..nodes import Node
from .record import ChangeRecord
from .sysctl import read_sysctl, set_sysctl

DEFAULT_KEY = "net.ipv4.tcp_congestion_control"
ALLOWED_KEY = "net.ipv4.tcp_allowed_congestion_control"
AVAILABLE_KEY = "net.ipv4.tcp_available_congestion_control"


def set_default_congestion(journal: Journal, node: Node, name: str) -> list[ChangeRecord]:
    available = read_sysctl(node, AVAILABLE_KEY).split()
    if name not in available:
        raise CapabilityMissing(f"{node.name} has no congestion control {name!r} "
                                f"(available: {' '.join(available)})",
                                f"load its module (modprobe tcp_{name}) or choose another")
    records = []
    machine = node.machine
    if machine is not node:  # a namespace: its machine's list limits it
        allowed = read_sysctl(machine, ALLOWED_KEY).split()
        if name not in allowed:
            records.append(set_sysctl(journal, machine, ALLOWED_KEY, " ".join([*allowed, name])))
    records.append(set_sysctl(journal, node, DEFAULT_KEY, name))
    return records

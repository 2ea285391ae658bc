"""The default TCP congestion control of a node (for programs without a per-socket option).

Inside a child network namespace the kernel allows only controls listed in
the *machine's* ``net.ipv4.tcp_allowed_congestion_control`` (else EPERM), so
when needed that list is extended on the machine -- recorded and restored
like any other sysctl, in the same operation, before the default is set.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CapabilityMissing
from ..nodes import Node
from .operation import UNKNOWN, Change, Fact, Operation
from .sysctl import sysctl_change, sysctl_fact

DEFAULT_KEY = "net.ipv4.tcp_congestion_control"
ALLOWED_KEY = "net.ipv4.tcp_allowed_congestion_control"
AVAILABLE_KEY = "net.ipv4.tcp_available_congestion_control"


@dataclass
class DefaultCongestion(Operation):
    """Make ``name`` the default congestion control of ``node`` (and allowed on its machine)."""

    node: Node
    name: str

    def facts(self) -> dict[str, Fact]:
        facts = {"available": sysctl_fact(self.node, AVAILABLE_KEY),
                 "default": sysctl_fact(self.node, DEFAULT_KEY)}
        machine = self.node.machine
        if machine is not self.node:
            facts["allowed"] = sysctl_fact(machine, ALLOWED_KEY)
        return facts

    def diff(self, facts: dict) -> list[Change]:
        available = facts["available"]
        if available is not UNKNOWN and self.name not in available.split():
            raise CapabilityMissing(f"{self.node.name} has no congestion control {self.name!r} "
                                    f"(available: {available})",
                                    f"load its module (modprobe tcp_{self.name}) or choose "
                                    "another")
        changes = []
        allowed = facts.get("allowed")
        if allowed is not None:
            names = [] if allowed is UNKNOWN else allowed.split()
            if self.name not in names:
                changes.append(sysctl_change(self.node.machine, ALLOWED_KEY, allowed,
                                             " ".join([*names, self.name])))
        changes.append(sysctl_change(self.node, DEFAULT_KEY, facts["default"], self.name))
        return changes

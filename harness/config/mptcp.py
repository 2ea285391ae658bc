"""Upstream Linux MPTCP (v1): enabling it, the path manager's limits and endpoints.

``ip mptcp limits`` caps the subflows per connection and the ADD_ADDRs
accepted; ``ip mptcp endpoint`` tells the in-kernel path manager which local
addresses may open extra subflows. Both are per network namespace.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from ..errors import SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import expect
from ..nodes import Node, Result
from .operation import UNKNOWN, Change, Fact, Operation
from .sysctl import Sysctl

MAX_SUBFLOWS = 8  # kernel limit (MPTCP_PM_ADDR_MAX)
ENDPOINT_FLAGS = ("subflow", "signal", "backup", "fullmesh")
#: The kernel's MPTCP facts a run records (each read where the kernel has it: the scheduler
#: sysctls came with 6.6, path_manager with 6.15; net.mptcp.mptcp_enabled is the out-of-tree
#: v0.9x's switch, 004:66, which upstream lacks: the stack gate reads it) and its TCP
#: congestion controls.
KERNEL_KEYS = ("net.mptcp.enabled", "net.mptcp.mptcp_enabled", "net.mptcp.scheduler",
               "net.mptcp.available_schedulers", "net.mptcp.path_manager",
               "net.mptcp.available_path_managers", "net.ipv4.tcp_available_congestion_control")
#: The coupled controllers of the out-of-tree MPTCP (v0.9x): LIA, OLIA, BALIA, wVegas. The
#: upstream kernel has none of them; each subflow runs the socket's own, uncoupled.
COUPLED_CONTROLLERS = ("lia", "olia", "balia", "wvegas")


def enable(node: Node) -> Sysctl:
    return Sysctl(node, "net.mptcp.enabled", 1)


def kernel_fact(node: Node) -> Fact:
    """What ``node``'s kernel offers MPTCP (:data:`KERNEL_KEYS`, a key it lacks read as None)
    and whether any coupled controller is among its congestion controls."""
    command = "; ".join(f"printf '%s=%s\\n' {k} \"$(sysctl -n {k} 2>/dev/null)\""
                        for k in KERNEL_KEYS)

    def parse(res: Result) -> dict:
        found: dict = {key: None for key in KERNEL_KEYS}
        for line in res.stdout.splitlines():
            key, _, value = line.partition("=")
            if key in found:
                found[key] = " ".join(value.split()) or None
        controls = (found["net.ipv4.tcp_available_congestion_control"] or "").split()
        found["coupled_controllers"] = sorted(set(controls) & set(COUPLED_CONTROLLERS))
        return found

    return Fact(node, command, parse)


def read_kernel(node: Node) -> dict:
    return kernel_fact(node).read()


def limits_fact(node: Node) -> Fact:
    def parse(res: Result) -> dict[str, int]:
        if not res.ok:
            raise SpecError(f"{node.name} cannot show MPTCP limits: {res.stderr.strip()}",
                            "MPTCP needs kernel >= 5.6 and iproute2 with `ip mptcp`")
        # iproute2 6.1 prints limits as text even with -j: "add_addr_accepted 0 subflows 2"
        words = res.stdout.split()
        data = dict(zip(words[::2], words[1::2]))
        return {"subflows": int(data.get("subflows", 0)),
                "add_addr_accepted": int(data.get("add_addr_accepted", 0))}

    return Fact(node, "ip mptcp limits show", parse)


def read_limits(node: Node) -> dict[str, int]:
    return limits_fact(node).read()


def limits_command(limits: dict) -> str:
    return shlex.join(["ip", "mptcp", "limits", "set", "subflow", str(limits["subflows"]),
                       "add_addr_accepted", str(limits["add_addr_accepted"])])


@dataclass
class Limits(Operation):
    node: Node
    subflows: int
    add_addr_accepted: int

    def check(self) -> None:
        for name, value in (("subflows", self.subflows),
                            ("add_addr_accepted", self.add_addr_accepted)):
            if not 0 <= value <= MAX_SUBFLOWS:
                raise SpecError(f"MPTCP limit {name}={value} is out of range",
                                f"use 0..{MAX_SUBFLOWS}")

    def facts(self) -> dict[str, Fact]:
        return {"limits": limits_fact(self.node)}

    def diff(self, facts: dict) -> list[Change]:
        before = facts["limits"]
        after = {"subflows": self.subflows, "add_addr_accepted": self.add_addr_accepted}
        shown = before if before is UNKNOWN else json.dumps(before)
        change = Change(self.node, "mptcp-limits", "limits", shown, json.dumps(after))
        if before != after:
            change.command = limits_command(after)
            change.undo = {"before": before}
        return [change]


def endpoints_fact(node: Node) -> Fact:
    def parse(res: Result) -> list[dict]:
        if not res.ok:
            raise SpecError(f"{node.name} cannot list MPTCP endpoints: {res.stderr.strip()}",
                            "MPTCP needs kernel >= 5.6 and iproute2 with `ip mptcp`")
        return json.loads(res.stdout or "[]")

    return Fact(node, "ip -j mptcp endpoint show", parse)


def read_endpoints(node: Node) -> list[dict]:
    return endpoints_fact(node).read()


@dataclass
class MptcpEndpoint(Operation):
    """An MPTCP endpoint (the kernel's word, ``ip mptcp endpoint``): announce ``address`` on
    ``dev`` to the path manager (e.g. as a subflow source).

    An endpoint for the address that exists already was not made by this run:
    refused, never taken over (its removal would change someone else's setup).
    """

    node: Node
    address: str
    dev: str
    flags: tuple[str, ...] = ("subflow",)

    def check(self) -> None:
        unknown = sorted(set(self.flags) - set(ENDPOINT_FLAGS))
        if unknown:
            raise SpecError(f"unknown MPTCP endpoint flags {unknown}",
                            f"use some of {sorted(ENDPOINT_FLAGS)}")

    def facts(self) -> dict[str, Fact]:
        return {"endpoints": endpoints_fact(self.node)}

    def diff(self, facts: dict) -> list[Change]:
        existing = [] if facts["endpoints"] is UNKNOWN else facts["endpoints"]
        for ep in existing:
            if ep.get("address") == self.address:
                raise SpecError(f"{self.node.name} already has an MPTCP endpoint for "
                                f"{self.address} (id {ep.get('id')})",
                                "it was not made by this run: remove it yourself "
                                "(ip mptcp endpoint delete id N) or leave the address out")
        ep_id = max((int(ep.get("id", 0)) for ep in existing), default=0) + 1
        return [Change(self.node, "mptcp-endpoint", f"{self.address} dev {self.dev}", None,
                       f"id {ep_id} {' '.join(self.flags)}",
                       command=shlex.join(["ip", "mptcp", "endpoint", "add", self.address,
                                           "dev", self.dev, "id", str(ep_id), *self.flags]),
                       undo={"id": ep_id, "address": self.address})]


@undo_handler("mptcp-limits")
def _restore_limits(node: Node, data: dict) -> None:
    before = data.get("before")
    if not isinstance(before, dict):
        raise undo_checks.refuse("mptcp-limits", "before is not a mapping", before)
    limits = {k: undo_checks.integer("mptcp-limits", before.get(k), k, 0, 64)
              for k in ("subflows", "add_addr_accepted")}
    command = limits_command(limits)
    tried = node.run(command, check=False, timeout=10)
    found = read_limits(node)
    expect({k: found.get(k) for k in limits}, limits, f"MPTCP limits of {node.name}", command,
           tried)


@undo_handler("mptcp-endpoint")
def _remove_endpoint(node: Node, data: dict) -> None:
    ep_id = undo_checks.integer("mptcp-endpoint", data.get("id"), "id", 1, 255)
    address = undo_checks.network("mptcp-endpoint", data.get("address"), "address")
    command = shlex.join(["ip", "mptcp", "endpoint", "delete", "id", str(ep_id)])

    def ours() -> list[dict]:
        return [ep for ep in read_endpoints(node)
                if int(ep.get("id", -1)) == ep_id and ep.get("address") == address]

    tried = node.run(command, check=False, timeout=10) if ours() else None
    expect(len(ours()), 0, f"MPTCP endpoint {ep_id} ({address}) on {node.name}", command, tried)

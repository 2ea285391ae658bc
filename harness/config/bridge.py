"""An Ethernet switch inside a node: its ports joined in one Linux bridge (iproute2).

A lab's links are point-to-point (veth pairs, wires between VMs) and a router node joins
them at the IP layer. A protocol that runs on Ethernet itself -- TIPC's Ethernet bearer
(``tipc bearer enable media eth dev IF``), the bearer the S3 paper ran -- needs its peers
on one layer-2 segment, as the paper's 48-port switch put them. :class:`L2Switch` turns
a router node into that switch:

* a bridge ``name`` (STP off: ports forward at once) is made, and each port leaves the IP
  layer and joins it; the ports' IPv4 addresses move onto the bridge, so the node still
  routes IP between its subnets (a router on a stick) and every route of the lab's other
  nodes stays valid;
* ``isolated`` ports (the bridge's port isolation) reach only the ports that are not
  isolated: the mappers of a fan-in star see the reducer and not each other, so no
  discovery protocol builds a full mesh among them;
* a port's egress qdiscs stay where the lab put them: a shaped port shapes bridged
  frames as it shaped routed packets.

Fact -> diff -> journal -> apply (:mod:`harness.config.operation`): the node's interfaces
are read first (a bridge of that name already there, or a port that does not exist, is
refused before anything changes); the change records every port's addresses before it
runs, and the undo deletes the bridge (the ports leave it) and puts the addresses back.
"""

from __future__ import annotations

import ipaddress
import json
import shlex
from dataclasses import dataclass

from ..errors import SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import settle
from ..nodes import Node, Result
from .operation import UNKNOWN, Change, Fact, Operation

UNDO_KIND = "l2-switch"


def interfaces_fact(node: Node) -> Fact:
    """{interface: [its IPv4 addresses in CIDR form]} of ``node``."""

    def parse(res: Result) -> dict[str, list[str]]:
        if not res.ok:
            raise SpecError(f"{node.name}: cannot list its interfaces: "
                            f"{(res.stderr or res.stdout).strip()[-300:]}",
                            "is iproute2 installed there (`ip -j addr`)?")
        return {entry["ifname"]: [f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", [])
                                  if a.get("family") == "inet"]
                for entry in json.loads(res.stdout or "[]")}

    return Fact(node, "ip -j addr show", parse)


@dataclass
class L2Switch(Operation):
    """Join ``ports`` of ``node`` in the bridge ``name``; ``isolated``: ports that reach only
    the ports not in it (module docstring)."""

    node: Node
    name: str
    ports: tuple[str, ...]
    isolated: tuple[str, ...] = ()

    def check(self) -> None:
        for ifname in (self.name, *self.ports):
            undo_checks.ifname(UNDO_KIND, ifname)
        if not self.ports:
            raise SpecError(f"switch {self.name} on {self.node.name} has no ports",
                            "name the interfaces it joins")
        if len(set(self.ports)) != len(self.ports):
            raise SpecError(f"switch {self.name} on {self.node.name} names a port twice",
                            "name each interface once")
        stray = sorted(set(self.isolated) - set(self.ports))
        if stray:
            raise SpecError(f"switch {self.name} on {self.node.name}: isolated ports "
                            f"{', '.join(stray)} are not among its ports",
                            "isolate only ports of the switch")

    def facts(self) -> dict[str, Fact]:
        return {"interfaces": interfaces_fact(self.node)}

    def diff(self, facts: dict) -> list[Change]:
        found = facts["interfaces"]
        if found is UNKNOWN:  # a dry run: the node is not built
            addresses = {port: [] for port in self.ports}
        else:
            if self.name in found:
                raise SpecError(f"{self.node.name} already has an interface {self.name}",
                                "it was not made by this run: choose another bridge name")
            missing = [p for p in self.ports if p not in found]
            if missing:
                raise SpecError(f"{self.node.name} has no interface {', '.join(missing)}",
                                f"its interfaces are {', '.join(sorted(found))}")
            addresses = {port: list(found[port]) for port in self.ports}
        return [Change(self.node, "l2-switch", self.name,
                       {port: addresses[port] for port in self.ports},
                       f"bridge {self.name} of {len(self.ports)} ports"
                       + (f" ({len(self.isolated)} isolated)" if self.isolated else ""),
                       command=self.command(addresses), undo_kind=UNDO_KIND,
                       undo={"name": self.name, "addresses": addresses})]

    def command(self, addresses: dict[str, list[str]]) -> str:
        """Three processes whatever the number of ports (``ip -batch``, ``bridge -batch``): in
        an emulated VM under load each ``ip`` costs a second, and 49 ports took three
        commands each. A batch stops at its first failed line, with a non-zero status."""
        links = [f"link add {self.name} type bridge stp_state 0 forward_delay 0"]
        for port in self.ports:
            links += [f"addr flush dev {port}", f"link set dev {port} master {self.name}"]
        links += [f"addr add {a} dev {self.name}" for port in self.ports for a in addresses[port]]
        links.append(f"link set dev {self.name} up")
        command = _batch("ip", links)
        if self.isolated:
            command += " && " + _batch("bridge", [f"link set dev {port} isolated on"
                                                  for port in self.isolated])
        return command


def _batch(tool: str, lines: list[str]) -> str:
    """``tool -batch -`` fed ``lines`` (names checked by :meth:`L2Switch.check`: no quoting
    needed inside the batch; the printf arguments are quoted for the shell)."""
    return f"printf '%s\\n' {' '.join(shlex.quote(line) for line in lines)} | {tool} -batch -"


@undo_handler(UNDO_KIND)
def _undo_switch(node: Node, data: dict) -> None:
    """Delete the bridge (its ports leave it) and give the ports their addresses back."""
    name = undo_checks.ifname(UNDO_KIND, data.get("name"), "name")
    addresses = data.get("addresses")
    if not isinstance(addresses, dict):
        raise undo_checks.refuse(UNDO_KIND, "addresses is not a table", addresses)
    lines = [f"! ip link show dev {shlex.quote(name)} >/dev/null 2>&1 || ip link del {shlex.quote(name)}"]
    looks = [f"! ip link show dev {shlex.quote(name)} >/dev/null 2>&1"]
    for port, cidrs in addresses.items():
        port = undo_checks.ifname(UNDO_KIND, port, "port")
        for cidr in cidrs or []:
            try:
                ipaddress.ip_interface(cidr)
            except (TypeError, ValueError):
                raise undo_checks.refuse(UNDO_KIND, "an address is not an address", cidr) from None
            lines.append(f"ip addr replace {shlex.quote(cidr)} dev {shlex.quote(port)}")
            # as found: the port has its address again, or the port itself is gone
            looks.append(f"{{ ! ip link show dev {shlex.quote(port)} >/dev/null 2>&1 || "
                         f"ip -o addr show dev {shlex.quote(port)} | grep -qF {shlex.quote(' ' + cidr + ' ')}; }}")
    settle(node, act="; ".join(lines), look=" && ".join(looks),
           what=f"bridge {name} on {node.name} (or its ports' addresses)",
           finish="; ".join(lines), timeout=60)

"""A host route (one address, /32 or /128) through a chosen gateway, recorded and removed.

Why a study needs one: GlusterFS's client connects to the bricks at the addresses in
the volume's definition, whatever address it fetched that definition from. S2's one
file server has a LAN and a WAN address and its brick is defined on the LAN one, so a
client that mounts the volume "across the WAN" would move its data over the LAN wire
(measured: the parallel file system's "WAN" write and read equal its LAN ones, 4.03
against 4.01 MB/s and 7.55 against 7.75, while the WAN's goodput was 3.7 MB/s). A host
route to the brick's address through the server's WAN address makes that traffic
cross the WAN; the server answers the client's WAN address over the WAN as well.

The undo is the lab's ``route`` handler (:mod:`harness.net.backend`): ``ip route del``.
A route to that exact destination that the run did not make is refused, never replaced.
"""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass

from ..errors import SpecError
from ..net import backend as netbackend  # noqa: F401 -- registers the "route" undo handler used here
from ..nodes import Node, Result
from .operation import UNKNOWN, Change, Fact, Operation


def host_prefix(address: str) -> str:
    """``198.18.2.1`` -> ``198.18.2.1/32`` (``/128`` for IPv6); SpecError if not an address."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise SpecError(f"{address!r} is not an IP address",
                        "give the host route's destination as an address") from None
    return f"{ip}/{ip.max_prefixlen}"


@dataclass
class HostRoute(Operation):
    """On ``node``: ``destination`` (one address) reached through ``gateway``."""

    node: Node
    destination: str
    gateway: str

    def check(self) -> None:
        host_prefix(self.destination)
        host_prefix(self.gateway)

    @property
    def prefix(self) -> str:
        return host_prefix(self.destination)

    def facts(self) -> dict[str, Fact]:
        def parse(res: Result) -> str:
            if not res.ok:
                raise SpecError(f"{self.node.name}: `ip route show` failed: "
                                f"{(res.stderr or res.stdout).strip()}")
            return res.stdout.strip()

        family = "-6" if ":" in self.destination else "-4"
        command = shlex.join(["ip", family, "-o", "route", "show", "exact", self.prefix])
        return {"route": Fact(self.node, command, parse)}

    def diff(self, facts: dict) -> list[Change]:
        after = f"via {self.gateway}"
        found = facts["route"]
        change = Change(self.node, "route", self.prefix, "none", after)
        if found is not UNKNOWN and found:
            if f" via {self.gateway} " in f" {found} ":
                change.before = after
                return [change]
            raise SpecError(f"{self.node.name} already has a route to {self.prefix}: {found}",
                            "it was not made by this run: remove it yourself, or measure "
                            "on a machine without it")
        change.command = shlex.join(["ip", "route", "add", self.prefix, "via", self.gateway])
        change.undo = {"destination": self.prefix}
        return [change]

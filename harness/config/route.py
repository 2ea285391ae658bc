"""A host route (one address, /32 or /128) through a chosen gateway, recorded and removed.

Why a study needs one: GlusterFS's client connects to the bricks at the addresses in
the volume's definition, whatever address it fetched that definition from. S2's one
file server has a LAN and a WAN address and its brick is defined on the LAN one, so a
client that mounts the volume "across the WAN" would move its data over the LAN wire
(measured: the parallel file system's "WAN" write and read equal its LAN ones, 4.03
against 4.01 MB/s and 7.55 against 7.75, while the WAN's goodput was 3.7 MB/s). A host
route to the brick's address through the server's WAN address makes that traffic
cross the WAN; the server answers the client's WAN address over the WAN as well.

A host route also carries a TCP timer (``rto_min``): Linux's minimum retransmission
timeout is 200 ms whatever the path, which on a WAN whose delays a lab has scaled by 1 / f
no longer stands in the paper's ratio to the round trip. ``rto_min`` on the route to the
peer (which iproute2 always locks, so TCP takes it over its own: ``tcp_rto_min``) scales
it with the delays. A route only to a device (``device``, no gateway) is the directly
connected peer's.

The undo is the lab's ``route`` handler (:mod:`harness.net.backend`): ``ip route del``.
A route to that exact destination that the run did not make is refused, never replaced.
"""

from __future__ import annotations

import ipaddress
import re
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


#: the largest rto_min a route may carry: TCP's own largest RTO (TCP_RTO_MAX, 120 s)
RTO_MIN_MAX_MS = 120_000
_DEVICE = re.compile(r"^[A-Za-z0-9_.-]{1,15}\Z")


@dataclass
class HostRoute(Operation):
    """On ``node``: ``destination`` (one address) reached through ``gateway`` and/or out of
    ``device``, with TCP's minimum RTO ``rto_min_ms`` on it when given (0: the kernel's)."""

    node: Node
    destination: str
    gateway: str = ""
    device: str = ""
    rto_min_ms: int = 0

    def check(self) -> None:
        host_prefix(self.destination)
        if self.gateway:
            host_prefix(self.gateway)
        if not self.gateway and not self.device:
            raise SpecError(f"a host route to {self.destination} needs a gateway or a device",
                            "give gateway= (an address) or device= (an interface name)")
        if self.device and not _DEVICE.match(self.device):
            raise SpecError(f"{self.device!r} is not an interface name",
                            "give the device as 1-15 letters, digits, '_', '.' or '-'")
        if not 0 <= int(self.rto_min_ms) <= RTO_MIN_MAX_MS:
            raise SpecError(f"rto_min {self.rto_min_ms} ms is out of range",
                            f"give 1..{RTO_MIN_MAX_MS} ms (TCP's largest RTO), or 0 for the "
                            "kernel's own")

    def route_words(self) -> list[str]:
        """What follows the prefix in ``ip route add``."""
        words = ["via", self.gateway] if self.gateway else []
        words += ["dev", self.device] if self.device else []
        return words + (["rto_min", f"{int(self.rto_min_ms)}ms"] if self.rto_min_ms else [])

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
        after = " ".join(self.route_words())
        found = facts["route"]
        change = Change(self.node, "route", self.prefix, "none", after)
        if found is not UNKNOWN and found:
            wanted = [f" via {self.gateway} "] if self.gateway else []
            wanted += [f" dev {self.device} "] if self.device else []
            wanted += [" rto_min "] if self.rto_min_ms else []
            if all(word in f" {found} " for word in wanted):
                change.before = after
                return [change]
            raise SpecError(f"{self.node.name} already has a route to {self.prefix}: {found}",
                            "it was not made by this run: remove it yourself, or measure "
                            "on a machine without it")
        change.command = shlex.join(["ip", "route", "add", self.prefix, *self.route_words()])
        change.undo = {"destination": self.prefix}
        return [change]

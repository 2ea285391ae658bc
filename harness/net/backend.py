"""What a lab asks of a network backend, and the undo of every change it makes.

The lab decides *what* to change (namespaces, veths, NICs, addresses, qdiscs, routes and
rules) and records it in the journal first; a backend only carries the change out, through
:class:`NetBackend`. There are two:

* :class:`~harness.net.netlink_backend.NetlinkBackend` talks netlink directly from this
  process on the machine that runs the harness: fast, no process per change.
* :class:`~harness.net.command_backend.CommandBackend` issues the same changes as
  ``ip``/``tc`` commands through any :class:`~harness.nodes.Node` (a VM or a remote host).

Undo goes through plain commands on nodes (the handlers below), whichever backend made
the change, so a crashed run can be cleaned from its journal alone. They are registered
here: every journal record of these kinds names this module as its kinds' module
(:mod:`harness.journal.undo_registry`), as every journal written so far does. The lab
takes both backends from here, as before they moved to modules of their own (2026-11-29).
"""

from __future__ import annotations

import shlex
from typing import Protocol

from ..journal import undo_checks
from ..journal.journal import batch_undo_handler, undo_handler
from ..journal.undo_left import settle
from ..nodes import Node
from ..topology.shaping import EgressPlan
from ..topology.topology import Route, Rule
from .command_backend import ADOPT_NIC, RENAME_NIC, CommandBackend
from .netlink_backend import NetlinkBackend

__all__ = ["ADOPT_NIC", "RENAME_NIC", "CommandBackend", "NetBackend", "NetlinkBackend"]


class NetBackend(Protocol):
    """The calls a lab makes to change a network. Each change is queued; :meth:`flush` makes
    what is queued (the lab calls it once the journal holds every change); :meth:`close`
    ends it: nothing queued after the last flush is made."""

    def create_netns(self, name: str) -> None: ...
    def add_veth(self, ns_a: str, if_a: str, ns_b: str, if_b: str) -> None: ...
    def adopt_nic(self, ns: str, mac: str, ifname: str) -> None: ...
    def rename_nic(self, mac: str, ifname: str) -> None: ...
    def configure_interface(self, ns: str, ifname: str, address: str, mtu: int) -> None: ...
    def loopback_up(self, ns: str) -> None: ...
    def apply_egress(self, ns: str, ifname: str, plan: EgressPlan) -> None: ...
    def add_route(self, ns: str, route: Route) -> None: ...
    def add_rule(self, ns: str, rule: Rule) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


# -- undo: plain commands, so any run's journal can be undone from any process --
# Each handler checks its record by kind first (harness.journal.undo_checks): names by the kernel's
# pattern, addresses as addresses, numbers as numbers; every word reaching a shell is quoted.

@undo_handler("netns", gone_with_namespace=False)
def _undo_netns(host: Node, data: dict) -> None:
    name = undo_checks.name("netns", data.get("name"))
    n = shlex.quote(name)
    settle(host, act=f"[ ! -e /run/netns/{n} ] || ip netns delete {n}",
           look=f"[ ! -e /run/netns/{n} ]", what=f"network namespace {name}",
           finish=f"ip netns delete {n} (its processes first: ip netns pids {n})")


@batch_undo_handler("netns")
def _undo_netns_batch(host: Node, items: list[dict]) -> None:
    """Delete the recorded namespaces that still exist with one `ip -batch` (one process,
    not one per namespace: 49 took 0.6 s as separate `ip netns delete`s here), then check
    that none is left. The kernel frees a namespace, with its veth ends, qdiscs, routes
    and rules, once nothing holds it any more (the lab's processes are stopped first)."""
    names = " ".join(shlex.quote(undo_checks.name("netns", d.get("name"))) for d in items)
    host.run(f"for n in {names}; do [ -e \"/run/netns/$n\" ] && echo \"netns delete $n\"; done "
             f"| ip -force -batch -; fail=0; for n in {names}; do if [ -e \"/run/netns/$n\" ]; "
             f"then echo \"namespace $n is still there\" >&2; fail=1; fi; done; exit $fail",
             timeout=30 + len(items))


@undo_handler("nic")
def _undo_nic(node: Node, data: dict) -> None:
    """Hand an adopted NIC back to the root namespace (namespace deletion would too)."""
    name = undo_checks.ifname("nic", data.get("ifname"))
    dev = shlex.quote(name)
    settle(node, act=f"ip link set dev {dev} netns 1", look=_no_link(dev),
           what=f"NIC {name} in {node.name}", finish=f"ip link set dev {dev} netns 1")


def _no_link(dev: str) -> str:
    """Shell: the link ``dev`` (quoted) is not in the node's namespace."""
    return f"! ip link show dev {dev} >/dev/null 2>&1"


@undo_handler("root-nic")
def _undo_root_nic(node: Node, data: dict) -> None:
    """A whole-machine node's wire NIC: addresses off, down, its name and MTU as before."""
    dev = shlex.quote(undo_checks.ifname("root-nic", data.get("ifname")))
    name = shlex.quote(undo_checks.ifname("root-nic", data.get("name"), "name"))
    mtu = undo_checks.integer("root-nic", data.get("mtu"), "mtu", 68, 65535)
    act = (f"if ip link show dev {dev} >/dev/null 2>&1; then ip addr flush dev {dev}; "
           f"ip link set dev {dev} down; ip link set dev {dev} mtu {mtu}; "
           f"[ {dev} = {name} ] || ip link set dev {dev} name {name}; fi")
    # as found: gone, or named as before, down, at its MTU, with no IPv4 address
    look = (f"if ! ip link show dev {name} >/dev/null 2>&1; then {_no_link(dev)}; else "
            f"s=$(ip -o link show dev {name}); case \"$s\" in *'<UP'*|*',UP'*) echo \"$s\"; "
            f"false;; *' mtu {mtu} '*) [ -z \"$(ip -o -4 addr show dev {name})\" ];; "
            "*) echo \"$s\"; false;; esac; fi")
    settle(node, act=act, look=look, what=f"NIC {data.get('ifname')} as the run set it up",
           finish=f"ip addr flush dev {dev}; ip link set dev {dev} down mtu {mtu} name {name}")


@undo_handler("veth")
def _undo_veth(node: Node, data: dict) -> None:
    name = undo_checks.ifname("veth", data.get("ifname"))
    dev = shlex.quote(name)
    settle(node, act=f"! ip link show dev {dev} >/dev/null 2>&1 || ip link delete dev {dev}",
           look=_no_link(dev), what=f"link {name} on {node.name}",
           finish=f"ip link delete dev {dev}")


@undo_handler("qdisc")
def _undo_qdisc(node: Node, data: dict) -> None:
    """Delete the root qdisc the run set; as found when the device is gone or its root is the
    kernel's default again (handle 0:)."""
    name = undo_checks.ifname("qdisc", data.get("ifname"))
    dev = shlex.quote(name)
    settle(node, act=f"tc qdisc del dev {dev} root",
           look=f"{_no_link(dev)} || tc qdisc show dev {dev} root | grep -q ' 0: root' "
                f"|| {{ tc qdisc show dev {dev} root; false; }}",
           what=f"the qdisc on {name} of {node.name}", finish=f"tc qdisc del dev {dev} root")


@undo_handler("route")
def _undo_route(node: Node, data: dict) -> None:
    destination = undo_checks.network("route", data.get("destination"), "destination")
    table = []
    if data.get("table"):
        table = ["table", str(undo_checks.integer("route", data["table"], "table", 1, 2**32 - 1))]
    shown = shlex.join(["ip", "route", "show", "exact", destination, *table])
    settle(node, act=shlex.join(["ip", "route", "del", destination, *table]),
           look=f"[ -z \"$({shown} 2>/dev/null)\" ] || {{ {shown}; false; }}",
           what=f"route {destination} {' '.join(table)} on {node.name}".replace("  ", " "),
           finish=shlex.join(["ip", "route", "del", destination, *table]))


@undo_handler("rule")
def _undo_rule(node: Node, data: dict) -> None:
    source = undo_checks.network("rule", data.get("source"), "source")
    table = undo_checks.integer("rule", data.get("table"), "table", 1, 2**32 - 1)
    priority = undo_checks.integer("rule", data.get("priority"), "priority", 0, 2**32 - 1)
    rule = ["from", source, "table", str(table), "priority", str(priority)]
    # `ip rule show` prints "PRIORITY:<tab>from SOURCE lookup TABLE" (a host address without /32)
    shown = f"{priority}:\tfrom {_rule_source(source)} lookup {table}"
    settle(node, act=shlex.join(["ip", "rule", "del", *rule]),
           look=f"! ip rule show | grep -qxF \"$(printf {shlex.quote(shown)})\"",
           what=f"rule {' '.join(rule)} on {node.name}",
           finish=shlex.join(["ip", "rule", "del", *rule]))


def _rule_source(source: str) -> str:
    """A rule's source as `ip rule show` prints it: ``all``, an address, or a network."""
    import ipaddress

    if source == "default":
        return "all"
    net = ipaddress.ip_network(source, strict=False)
    if net.prefixlen == 0:
        return "all"
    return str(net.network_address) if net.prefixlen == net.max_prefixlen else net.with_prefixlen

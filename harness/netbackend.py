"""Two ways to make namespaces, veths, addresses, qdiscs, routes and rules.

* :class:`Pyroute2Backend` talks netlink directly (pyroute2) on the machine
  that runs the harness: fast, no process per change.
* :class:`CommandBackend` issues the same changes as ``ip``/``tc`` commands
  through any :class:`~harness.nodes.Node` (a VM or a remote host).

The lab decides *what* to change and records it in the journal first; a
backend only carries the change out. Undo goes through commands on nodes
(see the handlers at the bottom), so a crashed run can be cleaned from its
journal alone.
"""

from __future__ import annotations

import shlex
import subprocess
from typing import Protocol

from . import undo_checks
from .journal import batch_undo_handler, undo_handler
from .nodes import Node
from .shaping import EgressPlan
from .topology import Route, Rule


class NetBackend(Protocol):
    def create_netns(self, name: str) -> None: ...
    def add_veth(self, ns_a: str, if_a: str, ns_b: str, if_b: str) -> None: ...
    def adopt_nic(self, ns: str, mac: str, ifname: str) -> None: ...
    def rename_nic(self, mac: str, ifname: str) -> None: ...
    def configure_interface(self, ns: str, ifname: str, address: str, mtu: int) -> None: ...
    def loopback_up(self, ns: str) -> None: ...
    def apply_egress(self, ns: str, ifname: str, plan: EgressPlan) -> None: ...
    def add_route(self, ns: str, route: Route) -> None: ...
    def add_rule(self, ns: str, rule: Rule) -> None: ...
    def close(self) -> None: ...


class Pyroute2Backend:
    """Netlink on the local machine, one IPRoute socket per namespace."""

    def __init__(self) -> None:
        from pyroute2 import IPRoute, netns

        self._IPRoute = IPRoute
        self._netns = netns
        self._sockets: dict[str, object] = {}

    def _ipr(self, ns: str):
        if ns not in self._sockets:
            self._sockets[ns] = self._IPRoute(netns=ns)
        return self._sockets[ns]

    def _index(self, ns: str, ifname: str) -> int:
        found = self._ipr(ns).link_lookup(ifname=ifname)
        if not found:
            raise RuntimeError(f"interface {ifname} not found in namespace {ns}")
        return found[0]

    def create_netns(self, name: str) -> None:
        self._netns.create(name)

    def add_veth(self, ns_a: str, if_a: str, ns_b: str, if_b: str) -> None:
        self._ipr(ns_a).link("add", ifname=if_a, kind="veth",
                             peer={"ifname": if_b, "net_ns_fd": ns_b})

    def adopt_nic(self, ns: str, mac: str, ifname: str) -> None:
        from .errors import SpecError

        raise SpecError("a lab on this host cannot take a NIC for a wire between machines",
                        "wires join VMs: place the study in VM labs")

    def rename_nic(self, mac: str, ifname: str) -> None:
        from .errors import SpecError

        raise SpecError("a lab on this host cannot rename one of its NICs",
                        "whole-machine nodes are VMs: place the study in VM labs")

    def configure_interface(self, ns: str, ifname: str, address: str, mtu: int) -> None:
        ipr = self._ipr(ns)
        idx = self._index(ns, ifname)
        ip, _, prefix = address.partition("/")
        ipr.link("set", index=idx, mtu=mtu)
        ipr.addr("add", index=idx, address=ip, prefixlen=int(prefix))
        ipr.link("set", index=idx, state="up")

    def loopback_up(self, ns: str) -> None:
        self._ipr(ns).link("set", index=self._index(ns, "lo"), state="up")

    def apply_egress(self, ns: str, ifname: str, plan: EgressPlan) -> None:
        if plan.kind != "htb":  # tbf with a peak rate (a serialising link): tc's own commands
            for cmd in plan.tc_commands(ifname):
                subprocess.run(["tc", "-n", ns, *cmd], check=True, capture_output=True,
                               timeout=30)
            return
        ipr, idx = self._ipr(ns), self._index(ns, ifname)
        parent = None
        if plan.rate_bit is not None:
            ipr.tc("add", "htb", index=idx, handle="1:", default=1)
            ipr.tc("add-class", "htb", index=idx, handle="1:1", parent="1:",
                   rate=f"{plan.rate_bit}bit", ceil=f"{plan.rate_bit}bit",
                   burst=plan.burst_bytes, cburst=plan.burst_bytes)
            parent = "1:1"
        where = {"parent": parent} if parent else {}
        if plan.netem:
            ipr.tc("add", "netem", index=idx, handle="10:", delay=plan.netem_delay_us,
                   loss=plan.loss_pct, limit=plan.netem_limit, **where)
        elif plan.fifo == "bfifo":
            # pyroute2 0.9 adds a bfifo at the root whatever its parent ("File exists"
            # under htb): use the plan's own tc command for this one qdisc.
            subprocess.run(["tc", "-n", ns, *plan.tc_commands(ifname)[-1]], check=True,
                           capture_output=True, timeout=30)
        elif plan.fifo:
            ipr.tc("add", plan.fifo, index=idx, handle="10:", limit=plan.fifo_limit, **where)

    def add_route(self, ns: str, route: Route) -> None:
        args: dict = {"dst": "0.0.0.0/0" if route.destination == "default" else route.destination}
        if route.via:
            args["gateway"] = route.via
        if route.dev:
            args["oif"] = self._index(ns, route.dev)
        if route.table:
            args["table"] = route.table
        self._ipr(ns).route("add", **args)

    def add_rule(self, ns: str, rule: Rule) -> None:
        src, _, plen = rule.source.partition("/")
        self._ipr(ns).rule("add", table=rule.table, priority=rule.priority, src=src,
                           src_len=int(plen or 32))

    def close(self) -> None:
        for ipr in self._sockets.values():
            ipr.close()
        self._sockets.clear()


# Move the root namespace's NIC with this MAC into a lab namespace, renamed.
ADOPT_NIC = """dev=
for d in /sys/class/net/*; do
  [ "$(cat "$d/address" 2>/dev/null)" = {mac} ] && dev=${{d##*/}}
done
[ -n "$dev" ] || {{ echo "no NIC with MAC "{mac}" in the root namespace" >&2; exit 1; }}
ip link set dev "$dev" netns {ns} name {ifname}"""

# Rename the root namespace's NIC with this MAC (a whole-machine node's wire end).
RENAME_NIC = """dev=
for d in /sys/class/net/*; do
  [ "$(cat "$d/address" 2>/dev/null)" = {mac} ] && dev=${{d##*/}}
done
[ -n "$dev" ] || {{ echo "no NIC with MAC "{mac}" in the root namespace" >&2; exit 1; }}
[ "$dev" = {ifname} ] || {{ ip link set dev "$dev" down && ip link set dev "$dev" name {ifname}; }}"""


class CommandBackend:
    """The same changes as iproute2 commands on ``host`` (a VM or remote machine).

    Commands are queued and sent as ONE shell script when the lab is built
    (``flush``): over SSH into an emulated VM every round trip costs ~0.5 s,
    and every process the script starts costs ~0.2 s more there. So the
    script runs ``ip``/``tc`` in batch mode: one ``ip -batch`` in the root
    namespace creates every namespace, then one ``ip -n NS -batch`` per
    namespace creates the veth pairs that start there (peer straight into its
    namespace) and configures its interfaces, routes and rules, and one
    ``tc -n NS -batch`` its qdiscs. A namespace's batch runs after the batches
    that create its veth ends (a veth cannot be created from the root
    namespace: the kernel looks its name up there, and a lab's ``eth0`` clashes
    with the host's). A batch
    stops at its first error, and the script with it. The journal already
    holds every change before the script runs; undo tolerates what the script
    did not get to.
    """

    def __init__(self, host: Node):
        self.host = host
        self._root: list[list[str]] = []  # `ip` commands in the root namespace
        self._veth: dict[str, list[list[str]]] = {}  # veth pairs created from each namespace
        self._peers: dict[str, set[str]] = {}  # namespace -> namespaces it puts veth ends in
        self._ip: dict[str, list[list[str]]] = {}  # per namespace, in order
        self._tc: dict[str, list[list[str]]] = {}
        self._nics: list[tuple[str, str, str]] = []  # (netns, mac, ifname) to move in
        self._renames: list[tuple[str, str]] = []  # (mac, ifname) renamed in the root namespace

    def _ns_ip(self, ns: str, *args: str) -> None:
        self._ip.setdefault(ns, []).append(list(args))

    def script(self) -> str:
        """The queued changes as one shell script (empty if nothing is queued)."""
        parts: list[str] = []

        def batch(argv: list[str], lines: list[list[str]]) -> None:
            if argv[1:2] == ["-n"] and argv[2] == "":  # the root namespace's own batch
                argv = [argv[0], *argv[3:]]
            if lines:
                body = "\n".join(shlex.join(line) for line in lines)
                parts.append(f"{shlex.join(argv)} <<'HARNESS_BATCH'\n{body}\nHARNESS_BATCH")

        batch(["ip", "-batch", "-"], self._root)
        for ns, mac, ifname in self._nics:
            parts.append(ADOPT_NIC.format(mac=shlex.quote(mac), ns=shlex.quote(ns),
                                          ifname=shlex.quote(ifname)))
        for mac, ifname in self._renames:
            parts.append(RENAME_NIC.format(mac=shlex.quote(mac), ifname=shlex.quote(ifname)))
        order, cyclic = self._creation_order()
        for ns in cyclic:  # veths among namespaces that create into each other: first
            batch(["ip", "-n", ns, "-batch", "-"], self._veth.get(ns, []))
        for ns in order:
            lines = ([] if ns in cyclic else self._veth.get(ns, [])) + self._ip.get(ns, [])
            batch(["ip", "-n", ns, "-batch", "-"], lines)
        for ns, lines in self._tc.items():
            batch(["tc", "-n", ns, "-batch", "-"], lines)
        return "set -e\n" + "\n".join(parts) if parts else ""

    def _creation_order(self) -> tuple[list[str], set[str]]:
        """Namespaces in an order where each comes after those creating veth ends in it.

        Namespaces caught in a cycle are returned too (in the second value):
        their veths are created in a pass of their own before any configuration.
        """
        names = list(dict.fromkeys([*self._veth, *self._ip]))
        waiting = {ns: {src for src, dsts in self._peers.items() if ns in dsts and src != ns}
                   for ns in names}
        order: list[str] = []
        while True:
            ready = [ns for ns in names if ns not in order and not waiting[ns] - set(order)]
            if not ready:
                break
            order += ready
        cyclic = {ns for ns in names if ns not in order}
        return order + [ns for ns in names if ns in cyclic], cyclic

    def flush(self) -> None:
        script = self.script()
        self._root, self._veth, self._peers, self._ip, self._tc = [], {}, {}, {}, {}
        self._nics, self._renames = [], []
        if script:
            self.host.run(script, timeout=300)

    def create_netns(self, name: str) -> None:
        self._root.append(["netns", "add", name])

    def add_veth(self, ns_a: str, if_a: str, ns_b: str, if_b: str) -> None:
        self._veth.setdefault(ns_a, []).append(["link", "add", if_a, "type", "veth", "peer",
                                                "name", if_b, "netns", ns_b])
        self._peers.setdefault(ns_a, set()).add(ns_b)

    def adopt_nic(self, ns: str, mac: str, ifname: str) -> None:
        self._nics.append((ns, mac, ifname))

    def rename_nic(self, mac: str, ifname: str) -> None:
        self._renames.append((mac, ifname))

    def configure_interface(self, ns: str, ifname: str, address: str, mtu: int) -> None:
        self._ns_ip(ns, "link", "set", ifname, "mtu", str(mtu))
        self._ns_ip(ns, "addr", "add", address, "dev", ifname)
        self._ns_ip(ns, "link", "set", ifname, "up")

    def loopback_up(self, ns: str) -> None:
        self._ns_ip(ns, "link", "set", "lo", "up")

    def apply_egress(self, ns: str, ifname: str, plan: EgressPlan) -> None:
        self._tc.setdefault(ns, []).extend(plan.tc_commands(ifname))

    def add_route(self, ns: str, route: Route) -> None:
        args = ["route", "add", route.destination]
        if route.via:
            args += ["via", route.via]
        if route.dev:
            args += ["dev", route.dev]
        if route.table:
            args += ["table", str(route.table)]
        self._ns_ip(ns, *args)

    def add_rule(self, ns: str, rule: Rule) -> None:
        self._ns_ip(ns, "rule", "add", "from", rule.source, "table", str(rule.table),
                    "priority", str(rule.priority))

    def close(self) -> None:
        self.flush()


# -- undo: plain commands, so any run's journal can be undone from any process --
# Each handler checks its record by kind first (harness.undo_checks): names by the kernel's
# pattern, addresses as addresses, numbers as numbers; every word reaching a shell is quoted.

@undo_handler("netns", gone_with_namespace=False)
def _undo_netns(host: Node, data: dict) -> None:
    name = undo_checks.name("netns", data.get("name"))
    if host.run(["test", "-e", f"/run/netns/{name}"], check=False, timeout=10).ok:
        host.run(["ip", "netns", "delete", name], timeout=30)


@batch_undo_handler("netns")
def _undo_netns_batch(host: Node, items: list[dict]) -> None:
    """Delete the recorded namespaces that still exist, in one command."""
    names = " ".join(shlex.quote(undo_checks.name("netns", d.get("name"))) for d in items)
    host.run(f"fail=0; for n in {names}; do if [ -e \"/run/netns/$n\" ]; then "
             f"ip netns delete \"$n\" || fail=1; fi; done; exit $fail",
             timeout=30 + 5 * len(items))


@undo_handler("nic")
def _undo_nic(node: Node, data: dict) -> None:
    """Hand an adopted NIC back to the root namespace (namespace deletion would too)."""
    dev = shlex.quote(undo_checks.ifname("nic", data.get("ifname")))
    node.run(f"ip link set dev {dev} netns 1 2>/dev/null || true", timeout=30)


@undo_handler("root-nic")
def _undo_root_nic(node: Node, data: dict) -> None:
    """A whole-machine node's wire NIC: addresses off, down, its name and MTU as before."""
    dev = shlex.quote(undo_checks.ifname("root-nic", data.get("ifname")))
    name = shlex.quote(undo_checks.ifname("root-nic", data.get("name"), "name"))
    mtu = undo_checks.integer("root-nic", data.get("mtu"), "mtu", 68, 65535)
    node.run(f"if ip link show dev {dev} >/dev/null 2>&1; then ip addr flush dev {dev}; "
             f"ip link set dev {dev} down; ip link set dev {dev} mtu {mtu}; "
             f"[ {dev} = {name} ] || ip link set dev {dev} name {name}; fi", timeout=30)


@undo_handler("veth")
def _undo_veth(node: Node, data: dict) -> None:
    dev = shlex.quote(undo_checks.ifname("veth", data.get("ifname")))
    node.run(f"ip link show dev {dev} >/dev/null 2>&1 && ip link delete dev {dev} || true",
             timeout=30)


@undo_handler("qdisc")
def _undo_qdisc(node: Node, data: dict) -> None:
    dev = undo_checks.ifname("qdisc", data.get("ifname"))
    node.run(["tc", "qdisc", "del", "dev", dev, "root"], check=False, timeout=30)


@undo_handler("route")
def _undo_route(node: Node, data: dict) -> None:
    args = ["ip", "route", "del", undo_checks.network("route", data.get("destination"),
                                                      "destination")]
    if data.get("table"):
        args += ["table", str(undo_checks.integer("route", data["table"], "table", 1, 2**32 - 1))]
    node.run(args, check=False, timeout=30)


@undo_handler("rule")
def _undo_rule(node: Node, data: dict) -> None:
    source = undo_checks.network("rule", data.get("source"), "source")
    table = undo_checks.integer("rule", data.get("table"), "table", 1, 2**32 - 1)
    priority = undo_checks.integer("rule", data.get("priority"), "priority", 0, 2**32 - 1)
    node.run(["ip", "rule", "del", "from", source, "table", str(table),
              "priority", str(priority)], check=False, timeout=30)

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

import os
import shlex
import subprocess
import time
from typing import Protocol

from ..journal import undo_checks
from ..journal.journal import batch_undo_handler, undo_handler
from ..journal.undo_left import settle
from ..nodes import Node
from ..topology.shaping import EgressPlan
from ..topology.topology import Route, Rule


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
    def flush(self) -> None: ...
    def close(self) -> None: ...


class NetlinkBackend:
    """Netlink from this process on the local machine: changes queued, made in :meth:`flush`.

    Measured on a star of 48 hosts at 100 Mbit/s on this 2-core machine (2026-11-27,
    load 5-7), the pyroute2 backend this replaces built in 7-10 s: a forked helper per
    namespace to create it and another to open its socket (~3.5 s), one request per
    call (~1.6 s), an fsync per journal record (~0.9 s). Here, in the lab's worker
    thread (:func:`harness.lab.lab.in_worker_thread`):

    1. each namespace is made by the thread itself, with its rtnetlink socket
       (:func:`harness.net.namespaces.create`: no fork);
    2. every veth pair is one request from the root namespace, both ends made straight
       in their namespaces with the interface index chosen here (so no lookups);
    3. each namespace's addresses, links up, qdiscs, routes and rules go to its socket
       in a few writes (:class:`harness.net.netlink.Batch`), each request acknowledged;
    4. tbf with a peak rate (a serialising link, :mod:`harness.topology.shaping`) goes to one
       ``tc -n NS -batch`` per namespace that has it.

    Measured after (same star, fresh process, load 10-11): built in 0.56-0.72 s
    (namespaces 0.09-0.18, veths 0.02-0.07, configuration 0.12-0.17, the forwarding
    sysctl 0.12), torn down in 0.06-0.09 s.

    The lab journals every change before :meth:`flush`; undo is by commands (below).
    ``requests`` counts what was sent, by kind; ``phase_s`` times each step.
    """

    def __init__(self) -> None:
        self._netns: list[str] = []
        self._veths: list[tuple[str, str, str, str]] = []
        self._lo: list[str] = []
        self._ifaces: list[tuple[str, str, str, int]] = []
        self._egress: list[tuple[str, str, EgressPlan]] = []
        self._routes: list[tuple[str, Route]] = []
        self._rules: list[tuple[str, Rule]] = []
        self._fds: dict[str, int] = {}
        self._socks: dict[str, object] = {}
        self._next_index: dict[str, int] = {}
        self._index: dict[tuple[str, str], int] = {}
        self._templates = None
        self._tc: dict[str, list[list[str]]] = {}  # tc commands per namespace
        self.requests: dict[str, int] = {}
        self.phase_s: dict[str, float] = {}

    # -- queueing (nothing is made until flush) --
    def create_netns(self, name: str) -> None:
        self._netns.append(name)

    def add_veth(self, ns_a: str, if_a: str, ns_b: str, if_b: str) -> None:
        self._veths.append((ns_a, if_a, ns_b, if_b))

    def adopt_nic(self, ns: str, mac: str, ifname: str) -> None:
        from ..errors import SpecError

        raise SpecError("a lab on this host cannot take a NIC for a wire between machines",
                        "wires join VMs: place the study in VM labs")

    def rename_nic(self, mac: str, ifname: str) -> None:
        from ..errors import SpecError

        raise SpecError("a lab on this host cannot rename one of its NICs",
                        "whole-machine nodes are VMs: place the study in VM labs")

    def configure_interface(self, ns: str, ifname: str, address: str, mtu: int) -> None:
        self._ifaces.append((ns, ifname, address, mtu))

    def loopback_up(self, ns: str) -> None:
        self._lo.append(ns)

    def apply_egress(self, ns: str, ifname: str, plan: EgressPlan) -> None:
        self._egress.append((ns, ifname, plan))

    def add_route(self, ns: str, route: Route) -> None:
        self._routes.append((ns, route))

    def add_rule(self, ns: str, rule: Rule) -> None:
        self._rules.append((ns, rule))

    # -- making --
    def _count(self, kind: str, n: int = 1) -> None:
        self.requests[kind] = self.requests.get(kind, 0) + n

    def _timed(self, phase: str, started: float) -> float:
        now = time.monotonic()
        self.phase_s[phase] = self.phase_s.get(phase, 0.0) + now - started
        return now

    def flush(self) -> None:
        from . import namespaces, netlink

        started = time.monotonic()
        ready = namespaces.run_dir_shared() if self._netns else True
        with namespaces.own_thread_namespace() as home:
            for name in self._netns:
                fd, sock = namespaces.create(name, home, ready)
                ready = True  # `ip netns add` set the folder up if it was not
                self._fds[name], self._socks[name] = fd, sock
                self._next_index[name] = max(netlink.link_indexes(sock)) + 1
                self._count("netns")
                self._count("link dump")
            started = self._timed("namespaces", started)
            if self._veths:
                root = netlink.open_socket()  # this thread's own namespace: the root one
                try:
                    batch = netlink.Batch(root, "the root namespace")
                    for ns_a, if_a, ns_b, if_b in self._veths:
                        batch.add(netlink.veth(if_a, self._new_index(ns_a, if_a),
                                               self._fd(ns_a), if_b,
                                               self._new_index(ns_b, if_b), self._fd(ns_b)))
                    self._count("veth", len(batch))
                    self._count("socket write", -(-len(batch) // netlink.CHUNK_MESSAGES))
                    batch.send()
                finally:
                    root.close()
            started = self._timed("veths", started)
        self._configure()
        started = self._timed("configure", started)
        self._tc_processes()
        self._timed("tc processes", started)
        self._netns, self._veths, self._lo, self._ifaces = [], [], [], []
        self._egress, self._routes, self._rules = [], [], []

    def _fd(self, ns: str) -> int:
        if ns not in self._fds:  # a namespace of an earlier flush of this backend
            self._fds[ns] = os.open(f"/run/netns/{ns}", os.O_RDONLY | os.O_CLOEXEC)
        return self._fds[ns]

    def _new_index(self, ns: str, ifname: str) -> int:
        if ns not in self._next_index:
            raise RuntimeError(f"namespace {ns} was not made by this lab's backend")
        index = self._index[(ns, ifname)] = self._next_index[ns]
        self._next_index[ns] += 1
        return index

    def _ifindex(self, ns: str, ifname: str) -> int:
        if (ns, ifname) not in self._index:
            raise RuntimeError(f"interface {ifname} not made in namespace {ns} by this lab")
        return self._index[(ns, ifname)]

    def _configure(self) -> None:
        from . import netlink

        batches: dict[str, netlink.Batch] = {}

        def batch(ns: str) -> netlink.Batch:
            if ns not in batches:
                if ns not in self._socks:
                    raise RuntimeError(f"namespace {ns} was not made by this lab's backend")
                batches[ns] = netlink.Batch(self._socks[ns], f"namespace {ns}")
            return batches[ns]

        for ns in self._lo:
            batch(ns).add(netlink.link_up(netlink.LOOPBACK_IFINDEX))
            self._count("link")
        for ns, ifname, address, mtu in self._ifaces:
            index = self._ifindex(ns, ifname)
            batch(ns).add(netlink.address(index, address))
            batch(ns).add(netlink.link_up(index, mtu))
            self._count("address")
            self._count("link")
        for ns, ifname, plan in self._egress:
            self._egress_requests(batch(ns), ns, ifname, plan)
        for ns, route in self._routes:
            oif = self._ifindex(ns, route.dev) if route.dev else None
            batch(ns).add(netlink.route(route.destination, route.via, oif, route.table))
            self._count("route")
        for ns, rule in self._rules:
            batch(ns).add(netlink.rule(rule.source, rule.table, rule.priority))
            self._count("rule")
        for b in batches.values():
            self._count("socket write", -(-len(b) // netlink.CHUNK_MESSAGES))
            b.send()

    def _egress_requests(self, batch, ns: str, ifname: str, plan: EgressPlan) -> None:
        """htb and fifos packed here (:mod:`harness.net.netlink_tc`), netem by pyroute2 (only
        where the host has it), tbf with a peak rate by one `tc` per namespace."""
        from . import netlink_tc

        if plan.kind != "htb":
            self._tc.setdefault(ns, []).extend(plan.tc_commands(ifname))
            return
        index = self._ifindex(ns, ifname)
        messages = []
        parent = None
        if plan.rate_bit is not None:
            messages += [netlink_tc.htb_root(index),
                         netlink_tc.htb_class(index, plan.rate_bit, plan.burst_bytes)]
            parent = "1:1"
        if plan.netem:
            from .netlink import TcTemplates

            if self._templates is None:
                self._templates = TcTemplates()
            where = {"parent": parent} if parent else {}
            for raw in self._templates.requests(
                    "add", "netem", handle="10:", delay=plan.netem_delay_us,
                    loss=plan.loss_pct, limit=plan.netem_limit, **where):
                batch.add_raw(raw, f"netem on {ifname}", index=index)
            self._count("qdisc/class")
        elif plan.fifo:
            messages.append(netlink_tc.fifo(index, plan.fifo, plan.fifo_limit, parent))
        for message in messages:
            batch.add(message)
        self._count("qdisc/class", len(messages))

    def _tc_processes(self) -> None:
        for ns, lines in self._tc.items():
            subprocess.run(["tc", "-n", ns, "-batch", "-"], check=True, capture_output=True,
                           timeout=30 + len(lines), input="\n".join(
                               shlex.join(line) for line in lines).encode())
            self._count("tc process")
        self._tc = {}

    def close(self) -> None:
        for sock in self._socks.values():
            sock.close()
        for fd in self._fds.values():
            os.close(fd)
        self._socks.clear()
        self._fds.clear()
        if self._templates is not None:
            self._templates.close()
            self._templates = None


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
        """Drop what was queued and not flushed: the lab flushes once the journal holds it."""
        self._root, self._veth, self._peers, self._ip, self._tc = [], {}, {}, {}, {}
        self._nics, self._renames = [], []


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

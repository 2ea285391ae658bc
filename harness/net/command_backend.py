"""The lab's network changes as ``ip``/``tc`` commands through any
:class:`~harness.nodes.Node` (a VM or a remote host), sent as one script.

The lab decides *what* to change and records it in the journal first; this backend only
carries the change out, in :meth:`CommandBackend.flush`. Undo goes through commands on
nodes (:mod:`harness.net.backend`), so a crashed run can be cleaned from its journal alone.
"""

from __future__ import annotations

import shlex

from ..nodes import Node
from ..topology.shaping import EgressPlan
from ..topology.topology import Route, Rule

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

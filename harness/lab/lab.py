"""Realise a :class:`~harness.topology.topology.Topology` as network namespaces.

Each node becomes a namespace, each link a veth pair with its addresses, MTU
and egress qdiscs (see :mod:`harness.topology.shaping`), then routes, rules and
forwarding. Every change is journalled before it is made; leaving the
``with Lab(...)`` block (normally, on error or on Ctrl-C) removes exactly
what was made, newest first.

A topology whose nodes carry machine labels spans several machines (VMs):
``hosts`` maps each label to its machine, and a link between machines is a
wire -- an existing NIC on each side (found by MAC, ``nics``), moved into the
node's namespace under the link's interface name and configured like a veth
end. When the namespace is deleted the kernel hands the NIC back to its root
namespace.

A node that takes its whole machine (``TopologyNode.whole_machine``) gets no
namespace: it is the machine's initial namespace (:class:`MachineRootNode`),
its wire NIC is renamed there and configured like any other end, and the undo
takes the addresses off and gives the NIC back its name and MTU. The lab
refuses to do that to this host (placement puts such labs in VMs).
"""

from __future__ import annotations

import os
import secrets
import shlex
import statistics
import threading
import time
from dataclasses import dataclass, field, replace

from ..config.operation import apply
from ..config.record import ChangeRecord
from ..config.sysctl import Sysctl
from ..errors import SpecError
from ..journal.journal import Journal
from ..net.backend import CommandBackend, NetBackend, NetlinkBackend
from ..nodes import LocalNode, MachineRootNode, NamespaceNode, Node, described_within
from ..nodes.group import Call, run_group
from ..tools.ping import parse_ping_ms, ping_argv
from ..topology.shaping import EgressPlan, plan_egress
from ..topology.topology import Link, Topology
from .probe import Capabilities, probe, require

CALIBRATION_PINGS = 10
# Trim a delay line only when the host adds more than this share of the asked RTT.
TRIM_THRESHOLD = 0.01


def undo_in_vms() -> bool:
    """``HARNESS_UNDO_IN_VMS=1``: undo changes inside a run's own VMs one by one."""
    return os.environ.get("HARNESS_UNDO_IN_VMS", "") not in ("", "0")


def delay_trim_us(rtt_ms: float | None, one_way_delay_ms: float) -> int:
    """Microseconds to take off each direction's netem delay so the RTT becomes 2 x delay.

    Half the measured excess, when it exceeds TRIM_THRESHOLD of the asked RTT;
    never the whole delay; nothing when the RTT is unknown or not above target.
    """
    if rtt_ms is None:
        return 0
    excess = rtt_ms - 2 * one_way_delay_ms
    if excess <= TRIM_THRESHOLD * 2 * one_way_delay_ms:
        return 0
    return min(int(round(excess * 1000 / 2)), int(one_way_delay_ms * 1000) - 1)


def in_worker_thread(fn):
    """Run ``fn`` in a fresh thread and wait for it, even through Ctrl-C.

    The netlink backend enters each new namespace in the thread that runs it
    (a namespace belongs to a thread, :mod:`harness.net.namespaces`): a fresh thread
    keeps that away from the caller's, and has no asyncio loop for pyroute2's
    synchronous API to clash with (a Jupyter kernel runs one). Ctrl-C during the
    wait is held until the worker is done, so that teardown never races a
    half-finished build.
    """
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # handed to the caller
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="harness-netlink", daemon=True)
    worker.start()
    interrupted = False
    while worker.is_alive():
        try:
            worker.join()
        except KeyboardInterrupt:
            interrupted = True
    if "error" in outcome:
        raise outcome["error"]
    if interrupted:
        raise KeyboardInterrupt
    return outcome.get("value")


@dataclass
class LabTimings:
    build_s: float | None = None
    teardown_s: float | None = None
    # where the build went (netlink backend): seconds per step, requests per kind
    phases_s: dict[str, float] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)


@dataclass
class Lab:
    topology: Topology
    journal: Journal
    host: Node = field(default_factory=LocalNode)
    prefix: str = ""
    capabilities: Capabilities | None = None
    hosts: dict[str, Node] = field(default_factory=dict)  # machine label -> machine
    nics: dict[tuple[str, str], str] = field(default_factory=dict)  # (node, ifname) -> MAC
    # The machines are VMs of this run, stopped after the lab: what the lab and the study
    # change inside them ends with them (see teardown)
    machines_end_with_run: bool = False

    def __post_init__(self) -> None:
        self.topology.validate()
        self.hosts = {"": self.host, **self.hosts}
        missing = [m for m in self.topology.machines() if m not in self.hosts]
        if missing:
            raise SpecError(f"lab {self.topology.name!r} puts nodes on machines {missing} but "
                            "no machine was given for them", "pass hosts={label: node}")
        for link in self.topology.wires():
            for end in (link.a, link.b):
                if (end.node, end.ifname) not in self.nics:
                    raise SpecError(f"link {link.name} joins two machines but no NIC was given "
                                    f"for {end.node}:{end.ifname}",
                                    "pass nics={(node, ifname): mac} for both ends of a wire")
        if not self.prefix:
            self.prefix = f"h{secrets.token_hex(3)}"
        self.whole = set(self.topology.whole_machine_nodes())
        for name in sorted(self.whole):
            if self.hosts[self.topology.machine_of(name)].is_local:
                raise SpecError(f"node {name} takes its machine's initial network namespace, "
                                "and its machine is this host", "never this host's own network "
                                "stack: let the placement put the lab in VMs")
        self.nodes: dict[str, NamespaceNode | MachineRootNode] = {
            node.name: MachineRootNode(self.hosts[node.machine], node.name) if node.whole_machine
            else NamespaceNode(self.netns_name(node.name), self.hosts[node.machine], node.name)
            for node in self.topology.nodes
        }
        self._root_nics: dict[tuple[str, str], tuple[str, int]] = {}  # -> (name, mtu) before
        self.plans: dict[str, dict] = {}
        self.timings = LabTimings()
        self.delay_calibration: list[dict] = []
        self._scope_start: int | None = None
        self._built = False

    def netns_name(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def _ns(self, node: str) -> str:
        """The namespace a node's interfaces are in: "" for a whole-machine node."""
        return "" if node in self.whole else self.netns_name(node)

    def node(self, name: str) -> NamespaceNode | MachineRootNode:
        if name not in self.nodes:
            raise SpecError(f"lab {self.topology.name!r} has no node {name!r}",
                            f"use one of: {', '.join(self.nodes)}")
        return self.nodes[name]

    def address(self, node: str, ifname: str) -> str:
        """The IP address (without prefix length) of ``node``'s interface ``ifname``."""
        return self.topology.interface(node, ifname).ip

    # -- lifecycle -------------------------------------------------------------
    def __enter__(self) -> Lab:
        self.build()
        return self

    def __exit__(self, *exc) -> None:
        self.teardown()

    def host_of(self, node: str) -> Node:
        return self.hosts[self.topology.machine_of(node)]

    def _backend(self, host: Node) -> NetBackend:
        if host.is_local and host.machine is host:  # netlink from this process
            return NetlinkBackend()
        return CommandBackend(host)

    def build(self) -> None:
        """Check the host can do it, then create everything. Nothing changes if the check fails."""
        if self.capabilities is None:
            self.capabilities = probe(self.host)
        require(self.capabilities, self.topology.required_features(),
                purpose=f"lab {self.topology.name!r}")
        # One command per machine for all names: each is a round trip to a VM or remote host.
        for label in self.topology.machines():
            host = self.hosts[label]
            paths = " ".join(n.netns_path for n in self.nodes.values()
                             if n.machine is host and n.netns_path)
            taken = host.run(f"for p in {paths}; do [ -e $p ] && echo ${{p##*/}}; done; true",
                             timeout=30).stdout.split() if paths else []
            if taken:
                raise SpecError(f"namespace(s) {', '.join(taken)} already exist on {host.name}",
                                "choose another lab prefix")
        self._read_root_nics()
        started = time.monotonic()
        self._scope_start = max((e.seq for e in self.journal.entries()), default=0)
        try:
            in_worker_thread(self._build_with_new_backend)
            self.calibrate_delays()
        except BaseException:
            self.teardown()
            raise
        self._built = True
        self.timings.build_s = time.monotonic() - started

    def _read_root_nics(self) -> None:
        """Name and MTU of every wire NIC a whole-machine node renames, for the undo."""
        for link in self.topology.wires():
            for end in (link.a, link.b):
                if end.node not in self.whole:
                    continue
                mac = self.nics[(end.node, end.ifname)]
                listing = self.host_of(end.node).run(
                    "for d in /sys/class/net/*; do echo ${d##*/} $(cat $d/address) "
                    "$(cat $d/mtu); done", timeout=30).stdout
                found = [line.split() for line in listing.splitlines()
                         if len(line.split()) == 3 and line.split()[1] == mac.lower()]
                if not found:
                    raise SpecError(f"no NIC with MAC {mac} in the initial namespace of "
                                    f"{self.host_of(end.node).name} (node {end.node})",
                                    "is it still in a namespace of an earlier lab?")
                self._root_nics[(end.node, end.ifname)] = (found[0][0], int(found[0][2]))

    def _build_with_new_backend(self) -> None:
        backends = {label: self._backend(host) for label, host in self.hosts.items()
                    if label in self.topology.machines()}
        try:
            self._build_with(backends)
        finally:
            for backend in backends.values():
                backend.close()

    def _build_with(self, backends: dict[str, NetBackend]) -> None:
        """Queue every change on its machine's backend, journal them all (one write), then
        make them: backends only queue until ``flush``, so no change is made before its
        record is on disk (an fsync per record took ~0.9 s of a 48-host star's build)."""
        topo = self.topology
        records: list[tuple[str, Node, dict]] = []

        def backend(node: str) -> NetBackend:
            return backends[topo.machine_of(node)]

        for name, node in self.nodes.items():
            if name in self.whole:
                continue
            records.append(("netns", node.parent, {"name": node.netns}))
            backend(name).create_netns(node.netns)
            backend(name).loopback_up(node.netns)
        for link in topo.links:
            if topo.is_wire(link):
                for end in (link.a, link.b):
                    mac = self.nics[(end.node, end.ifname)]
                    if end.node in self.whole:
                        was, mtu = self._root_nics[(end.node, end.ifname)]
                        records.append(("root-nic", self.nodes[end.node], {
                            "ifname": end.ifname, "mac": mac, "name": was, "mtu": mtu}))
                        backend(end.node).rename_nic(mac, end.ifname)
                        continue
                    records.append(("nic", self.nodes[end.node],
                                    {"ifname": end.ifname, "mac": mac}))
                    backend(end.node).adopt_nic(self.netns_name(end.node), mac, end.ifname)
            else:
                ns_a, ns_b = self.netns_name(link.a.node), self.netns_name(link.b.node)
                records.append(("veth", self.nodes[link.a.node], {
                    "ifname": link.a.ifname, "peer": f"{link.b.node}:{link.b.ifname}"}))
                backend(link.a.node).add_veth(ns_a, link.a.ifname, ns_b, link.b.ifname)
            plan = plan_egress(link)
            for end in (link.a, link.b):
                node = self.nodes[end.node]
                backend(end.node).configure_interface(self._ns(end.node), end.ifname,
                                                      end.address, link.mtu)
                if not plan.empty:
                    records.append(("qdisc", node, {"ifname": end.ifname}))
                    backend(end.node).apply_egress(self._ns(end.node), end.ifname, plan)
                self.plans[f"{end.node}:{end.ifname}"] = plan.to_dict()
        for route in topo.routes:
            records.append(("route", self.nodes[route.node], {
                "destination": route.destination, "table": route.table}))
            backend(route.node).add_route(self._ns(route.node), route)
        for rule in topo.rules:
            records.append(("rule", self.nodes[rule.node], {
                "source": rule.source, "table": rule.table, "priority": rule.priority}))
            backend(rule.node).add_rule(self._ns(rule.node), rule)
        self.journal.record_many(records)
        for b in backends.values():  # sysctls below go through the node: the lab must exist
            b.flush()
            for kind, count in getattr(b, "requests", {}).items():
                self.timings.requests[kind] = self.timings.requests.get(kind, 0) + count
            for phase, seconds in getattr(b, "phase_s", {}).items():
                self.timings.phases_s[phase] = self.timings.phases_s.get(phase, 0.0) + seconds
        started = time.monotonic()
        apply(self.journal, self.sysctls())
        self.timings.phases_s["sysctls"] = time.monotonic() - started

    def sysctls(self, nodes: dict[str, Node] | None = None) -> list[Sysctl]:
        """The sysctl operations the lab applies once its namespaces exist (forwarding).

        ``nodes``: the nodes to apply them to, if not the lab's own (a dry run's
        planned nodes).
        """
        nodes = self.nodes if nodes is None else nodes
        return [Sysctl(nodes[node.name], "net.ipv4.ip_forward", 1)
                for node in self.topology.nodes if node.forwarding]

    def plan(self) -> list[ChangeRecord]:
        """What :meth:`build` would create, as records (a dry run prints them; nothing runs).

        The same steps as the build, from the topology alone: namespaces, veth
        pairs or adopted NICs, addresses and MTUs, egress qdiscs (the
        :func:`~harness.topology.shaping.plan_egress` commands), routes and rules. The
        sysctls are operations: :meth:`sysctls`.
        """
        topo = self.topology
        out: list[ChangeRecord] = []

        def add(node: str, kind: str, target: str, after: str) -> None:
            out.append(ChangeRecord(node, kind, target, None, after, True))

        for name, node in self.nodes.items():
            if name not in self.whole:
                add(node.parent.name, "netns", node.netns, f"namespace for node {name}")
        for link in topo.links:
            if topo.is_wire(link):
                for end in (link.a, link.b):
                    add(end.node, "nic", end.ifname,
                        f"the VM's NIC for link {link.name}, renamed in the VM's initial "
                        "namespace" if end.node in self.whole else
                        f"the VM's NIC for link {link.name}, moved into the namespace")
            else:
                add(link.a.node, "veth", link.a.ifname, f"veth pair to {link.b.node}:"
                    f"{link.b.ifname} (link {link.name})")
            plan = plan_egress(link)
            for end in (link.a, link.b):
                add(end.node, "address", end.ifname, f"{end.address} mtu {link.mtu} up")
                if not plan.empty:
                    add(end.node, "qdisc", end.ifname,
                        "; ".join(shlex.join(["tc", *c]) for c in plan.tc_commands(end.ifname)))
        for route in topo.routes:
            add(route.node, "route", route.destination,
                " ".join(x for x in (f"via {route.via}" if route.via else "",
                                     f"dev {route.dev}" if route.dev else "",
                                     f"table {route.table}" if route.table else "") if x))
        for rule in topo.rules:
            add(rule.node, "rule", f"from {rule.source}",
                f"table {rule.table} priority {rule.priority}")
        return out

    def calibrate_delays(self) -> None:
        """Make each delayed link's RTT what was asked, net of the host's own latency.

        A host adds latency of its own to every delay line: a fork-free veth
        hop and netem's timer take ~0.05 ms on bare metal but ~1 ms in an
        emulated (TCG) VM, which would put a 20 ms RTT at 21. For each distinct
        delay, the first link with it is pinged (netem already in place) and
        half the excess is trimmed from the netem delay of every link with that
        delay, in each direction. Measured and recorded (``delay_calibration``);
        the links' verification then measures the result like any other.
        """
        groups: dict[float, list[Link]] = {}
        for link in self.topology.links:
            if link.delay_ms:
                groups.setdefault(link.delay_ms, []).append(link)
        rtts = self._probe_rtts({delay: links[0] for delay, links in groups.items()})
        changes: dict[int, tuple[Node, list[str]]] = {}  # per machine: its tc commands
        for delay, links in groups.items():
            rtt = rtts.get(delay)
            trim_us = delay_trim_us(rtt, delay)
            self.delay_calibration.append({
                "one_way_delay_ms": delay, "probe_link": links[0].name,
                "rtt_before_trim_ms": rtt,
                "host_excess_ms": None if rtt is None else rtt - 2 * delay,
                "trim_us_per_direction": trim_us, "links": len(links)})
            if not trim_us:
                continue
            for end in (e for link in links for e in (link.a, link.b)):
                key = f"{end.node}:{end.ifname}"
                plan = replace(EgressPlan(**self.plans[key]), delay_trim_us=trim_us)
                self.plans[key] = plan.to_dict()
                host = self.host_of(end.node)
                ns = self._ns(end.node)
                changes.setdefault(id(host), (host, []))[1].append(
                    shlex.join(["tc", *(["-n", ns] if ns else []),
                                *plan.netem_change_command(end.ifname)]))
        for host, lines in changes.values():
            host.run("set -e\n" + "\n".join(lines), timeout=30 + len(lines))

    def _probe_rtts(self, probes: dict[float, Link]) -> dict[float, float]:
        """Median RTT over each probe link (netem in place), from its a end: one round trip
        per machine that holds probe links' a ends, one ping at a time, machines one after
        another (a ping must not share the CPU with another). Missing where no reply came
        back."""
        delays = list(probes)
        calls = [Call(self.nodes[link.a.node],
                      ping_argv(link.a.ip, link.b.ip, CALIBRATION_PINGS),
                      timeout=10 + CALIBRATION_PINGS * 0.1 * 4, exclusive=True)
                 for link in probes.values()]
        rtts: dict[float, float] = {}
        for delay, result in zip(delays, run_group(calls, concurrent=False)):
            times = parse_ping_ms(result.stdout + result.stderr)
            if times:
                rtts[delay] = statistics.median(times)
        return rtts

    def teardown(self) -> None:
        """Undo what this lab recorded (and anything recorded after it inside its scope).

        With ``machines_end_with_run`` (the lab's machines are VMs this run booted and stops
        next), changes inside those machines are left pending: their state lives in the
        guest's kernel and tmpfs and ends with QEMU, after which the VM's boot marks them
        undone (:func:`harness.vm.boot.forget_guest_changes`; ``harness lab clean`` does the
        same after a SIGKILL). Undoing them one SSH command at a time under TCG took 97 s of
        an S2 run's 104 s teardown (NFS, GlusterFS, mounts, sysctls, MTUs, renamed NICs).
        Changes on this host are undone as always. ``HARNESS_UNDO_IN_VMS=1`` undoes the
        guests' changes one by one too (what a real machine needs; the S1 integration test
        runs it so that `rdma link delete` and the rest stay tested).
        """
        if self._scope_start is None:
            return
        started = time.monotonic()
        inside = [host.describe() for host in self.hosts.values() if not host.is_local]
        leave = None
        if self.machines_end_with_run and inside and not undo_in_vms():
            def leave(entry) -> bool:
                return any(described_within(entry.node, machine) for machine in inside)
        try:
            self.journal.undo_all(after_seq=self._scope_start, leave=leave)
        finally:
            self.timings.teardown_s = time.monotonic() - started
            self._built = False

    def egress_plan(self, node: str, ifname: str) -> EgressPlan | None:
        plan = self.plans.get(f"{node}:{ifname}")
        return EgressPlan(**plan) if plan else None

    def record(self) -> dict:
        """What to archive about this lab."""
        return {
            "host": self.host.describe(),
            "machines": {label: host.describe() for label, host in self.hosts.items()
                         if label in self.topology.machines()},
            "wires": {f"{n}:{i}": mac for (n, i), mac in self.nics.items()},
            "prefix": self.prefix,
            "namespaces": {name: getattr(node, "netns", None) for name, node in self.nodes.items()},
            "whole_machine_nodes": sorted(self.whole),
            "topology": self.topology.to_dict(),
            "egress_plans": self.plans,
            "delay_calibration": self.delay_calibration,
            "build_s": self.timings.build_s,
            "teardown_s": self.timings.teardown_s,
        }

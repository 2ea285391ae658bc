"""Realise a :class:`~harness.topology.Topology` as network namespaces.

Each node becomes a namespace, each link a veth pair with its addresses, MTU
and egress qdiscs (see :mod:`harness.shaping`), then routes, rules and
forwarding. Every change is journalled before it is made; leaving the
``with Lab(...)`` block (normally, on error or on Ctrl-C) removes exactly
what was made, newest first.
"""

from __future__ import annotations

import secrets
import shlex
import statistics
import threading
import time
from dataclasses import dataclass, field, replace

from .config.record import ConfigLog
from .config.sysctl import set_sysctl
from .errors import SpecError
from .journal import Journal
from .netbackend import CommandBackend, NetBackend, Pyroute2Backend
from .nodes import LocalNode, NamespaceNode, Node
from .probe import Capabilities, probe, require
from .shaping import EgressPlan, plan_egress
from .topology import Link, Topology
from .verify import parse_ping_ms, ping_command

CALIBRATION_PINGS = 10
# Trim a delay line only when the host adds more than this share of the asked RTT.
TRIM_THRESHOLD = 0.01


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

    pyroute2's synchronous API drives its own asyncio loop, which fails in a
    thread that already runs one (a Jupyter kernel). A worker thread has no
    loop. Ctrl-C during the wait is held until the worker is done, so that
    teardown never races a half-finished build.
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


@dataclass
class Lab:
    topology: Topology
    journal: Journal
    host: Node = field(default_factory=LocalNode)
    prefix: str = ""
    capabilities: Capabilities | None = None
    config: ConfigLog = field(default_factory=ConfigLog)

    def __post_init__(self) -> None:
        self.topology.validate()
        if not self.prefix:
            self.prefix = f"h{secrets.token_hex(3)}"
        self.nodes: dict[str, NamespaceNode] = {
            spec.name: NamespaceNode(self.netns_name(spec.name), self.host, spec.name)
            for spec in self.topology.nodes
        }
        self.plans: dict[str, dict] = {}
        self.timings = LabTimings()
        self.delay_calibration: list[dict] = []
        self._scope_start: int | None = None
        self._built = False

    def netns_name(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def node(self, name: str) -> NamespaceNode:
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

    def _backend(self) -> NetBackend:
        if isinstance(self.host, LocalNode):
            return Pyroute2Backend()
        return CommandBackend(self.host)

    def build(self) -> None:
        """Check the host can do it, then create everything. Nothing changes if the check fails."""
        if self.capabilities is None:
            self.capabilities = probe(self.host)
        require(self.capabilities, self.topology.required_features(),
                purpose=f"lab {self.topology.name!r}")
        # One command for all names: each is a round trip to a VM or remote host.
        paths = " ".join(f"/run/netns/{node.netns}" for node in self.nodes.values())
        taken = self.host.run(f"for p in {paths}; do [ -e $p ] && echo ${{p##*/}}; done; true",
                              timeout=30).stdout.split()
        if taken:
            raise SpecError(f"namespace(s) {', '.join(taken)} already exist on {self.host.name}",
                            "choose another lab prefix")
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

    def _build_with_new_backend(self) -> None:
        backend = self._backend()
        try:
            self._build_with(backend)
        finally:
            backend.close()

    def _build_with(self, backend: NetBackend) -> None:
        topo, journal = self.topology, self.journal
        for node in self.nodes.values():
            journal.record("netns", self.host, name=node.netns)
            backend.create_netns(node.netns)
            backend.loopback_up(node.netns)
        for link in topo.links:
            ns_a, ns_b = self.netns_name(link.a.node), self.netns_name(link.b.node)
            journal.record("veth", self.nodes[link.a.node], ifname=link.a.ifname,
                           peer=f"{link.b.node}:{link.b.ifname}")
            backend.add_veth(ns_a, link.a.ifname, ns_b, link.b.ifname)
            plan = plan_egress(link)
            for end in (link.a, link.b):
                node = self.nodes[end.node]
                backend.configure_interface(node.netns, end.ifname, end.address, link.mtu)
                if not plan.empty:
                    journal.record("qdisc", node, ifname=end.ifname)
                    backend.apply_egress(node.netns, end.ifname, plan)
                self.plans[f"{end.node}:{end.ifname}"] = plan.to_dict()
        for route in topo.routes:
            journal.record("route", self.nodes[route.node], destination=route.destination,
                           table=route.table)
            backend.add_route(self.netns_name(route.node), route)
        for rule in topo.rules:
            journal.record("rule", self.nodes[rule.node], source=rule.source, table=rule.table,
                           priority=rule.priority)
            backend.add_rule(self.netns_name(rule.node), rule)
        flush = getattr(backend, "flush", None)
        if flush:  # sysctls below go through the node: the lab must exist first
            flush()
        for spec in topo.nodes:
            if spec.forwarding:
                node = self.nodes[spec.name]
                self.config.add(set_sysctl(journal, node, "net.ipv4.ip_forward", 1))

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
        if not groups:
            return
        script = []
        for i, links in enumerate(groups.values()):
            first = links[0]
            script.append(f"echo @@{i}; nsenter --net=/run/netns/{self.netns_name(first.a.node)} -- "
                          + ping_command(first.a.ip, first.b.ip, CALIBRATION_PINGS) + " 2>&1")
        budget = 30 + len(groups) * (10 + CALIBRATION_PINGS * 0.1 * 4)
        text = self.host.run("\n".join(script) + "\ntrue", timeout=budget).stdout
        sections = {int(part.split(None, 1)[0]): part for part in text.split("@@")[1:]}
        changes = []
        for i, (delay, links) in enumerate(groups.items()):
            times = parse_ping_ms(sections.get(i, ""))
            rtt = statistics.median(times) if times else None
            excess = None if rtt is None else rtt - 2 * delay
            trim_us = delay_trim_us(rtt, delay)
            self.delay_calibration.append({
                "one_way_delay_ms": delay, "probe_link": links[0].name,
                "rtt_before_trim_ms": rtt, "host_excess_ms": excess,
                "trim_us_per_direction": trim_us, "links": len(links)})
            if not trim_us:
                continue
            for link in links:
                for end in (link.a, link.b):
                    key = f"{end.node}:{end.ifname}"
                    plan = replace(EgressPlan(**self.plans[key]), delay_trim_us=trim_us)
                    self.plans[key] = plan.to_dict()
                    changes.append(shlex.join(["tc", "-n", self.netns_name(end.node),
                                               *plan.netem_change_command(end.ifname)]))
        if changes:
            self.host.run("set -e\n" + "\n".join(changes), timeout=30 + len(changes))

    def teardown(self) -> None:
        """Undo what this lab recorded (and anything recorded after it inside its scope)."""
        if self._scope_start is None:
            return
        started = time.monotonic()
        try:
            self.journal.undo_all(after_seq=self._scope_start)
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
            "prefix": self.prefix,
            "namespaces": {name: node.netns for name, node in self.nodes.items()},
            "topology": self.topology.to_dict(),
            "egress_plans": self.plans,
            "delay_calibration": self.delay_calibration,
            "build_s": self.timings.build_s,
            "teardown_s": self.timings.teardown_s,
        }

"""Lab topologies declared as data: nodes, links, routes and policy-routing rules.

A :class:`Topology` only *describes* a lab; :mod:`harness.lab.lab` realises it.
Every delay here is ONE-WAY (applied on each end's egress, so the round-trip
time over an otherwise idle link is twice it). Rates are in Mbit/s at the link
layer (Ethernet header included, as the shaper counts them) and apply to both
directions of a link.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import asdict, dataclass, field

from ..errors import SpecError

IFNAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}\Z")
NODENAME = re.compile(r"^[a-z][a-z0-9]{0,11}\Z")
SHAPERS = ("htb", "serialise", "netem")  # how a link's rate is enforced: harness.topology.shaping


@dataclass(frozen=True)
class LinkEnd:
    """One end of a link: an interface of a node with an address in CIDR form."""

    node: str
    ifname: str
    address: str  # e.g. "198.18.1.2/24"

    @property
    def ip(self) -> str:
        return str(ipaddress.ip_interface(self.address).ip)

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_interface(self.address).network


@dataclass(frozen=True)
class Link:
    """A point-to-point link (a veth pair in a namespace lab).

    rate_mbit: shaped rate in each direction (None = unshaped).
    delay_ms: one-way delay in each direction (needs netem).
    loss_pct: random loss in each direction, percent (needs netem).
    queue_packets / queue_bytes: limit of the bottleneck queue in each
        direction (a switch-port buffer); None keeps the kernel default.
    shaper: how a rate is enforced (see :mod:`harness.topology.shaping`): "htb" (a
        token bucket with a burst of >= 2 ms at the rate, the default) or
        "serialise" (tbf with a peak rate just above the rate and a one-frame
        peak bucket: every frame leaves at the wire's pace, as on a real
        Ethernet, and no burst builds up while the link is idle) or "netem"
        (netem's own rate, the delay line and the queue in one qdisc: each frame's
        departure is scheduled on the kernel's clock after the frame before it, so
        a stall of an emulating machine delays frames without losing link time,
        and nothing bursts after idle; its queue limit counts packets).
    """

    a: LinkEnd
    b: LinkEnd
    rate_mbit: float | None = None
    delay_ms: float = 0.0
    loss_pct: float = 0.0
    queue_packets: int | None = None
    queue_bytes: int | None = None
    mtu: int = 1500
    shaper: str = "htb"

    @property
    def name(self) -> str:
        return f"{self.a.node}:{self.a.ifname}--{self.b.node}:{self.b.ifname}"

    @property
    def shaped(self) -> bool:
        return self.rate_mbit is not None

    @property
    def needs_netem(self) -> bool:
        return self.delay_ms > 0 or self.loss_pct > 0 or (self.shaped and self.shaper == "netem")


@dataclass(frozen=True)
class Route:
    """A route on a node. ``table`` None means the main table."""

    node: str
    destination: str  # "default" or CIDR
    via: str | None = None
    dev: str | None = None
    table: int | None = None


@dataclass(frozen=True)
class Rule:
    """A policy-routing rule: traffic from ``source`` uses ``table``."""

    node: str
    source: str  # CIDR or address
    table: int
    priority: int


DISKNAME = re.compile(r"^[a-z][a-z0-9-]{0,19}\Z")


@dataclass(frozen=True)
class DataDisk:
    """A block device of its own for a whole-machine node: in a VM lab, an emulated disk
    (virtio, found in the guest by its serial ``harness-<name>``) whose throughput is
    capped at the rates given -- a server's storage, so that "limited by the disk" can
    show. Rates are in MB/s (10^6 bytes) at the paper's scale; a VM lab scales them
    with the links (:class:`harness.lab.placement.Scaling`), so the disk keeps its ratio
    to the network. ``None``: uncapped (as fast as the emulation goes)."""

    name: str
    size_mib: int = 1024
    read_mbyte_s: float | None = None
    write_mbyte_s: float | None = None

    @property
    def serial(self) -> str:
        return f"harness-{self.name}"

    def validate(self, node: str) -> None:
        if not DISKNAME.match(self.name):
            raise SpecError(f"disk name {self.name!r} of node {node} is not valid",
                            "use 1-20 lower-case letters, digits and '-', starting with a letter")
        if not 64 <= self.size_mib <= 1 << 20:
            raise SpecError(f"disk {self.name} of node {node}: size_mib={self.size_mib} is out "
                            "of range", "use 64..1048576 MiB (the file is sparse)")
        for what, rate in (("read", self.read_mbyte_s), ("write", self.write_mbyte_s)):
            if rate is not None and not 0.1 <= rate <= 100_000:
                raise SpecError(f"disk {self.name} of node {node}: {what} rate {rate} MB/s is "
                                "out of range", "use 0.1..100000 MB/s, or None for uncapped")

    def scaled(self, factor: float) -> DataDisk:
        """The same disk with its rates multiplied by ``factor`` (a lab's link scaling)."""
        return DataDisk(self.name, self.size_mib,
                        None if self.read_mbyte_s is None else self.read_mbyte_s * factor,
                        None if self.write_mbyte_s is None else self.write_mbyte_s * factor)


@dataclass(frozen=True)
class TopologyNode:
    """A lab node. ``machine``: nodes with the same label share one kernel ("" = the lab's
    main machine); a link between nodes on different machines is a wire between them --
    for traffic that must not be short-cut inside one kernel (TIPC between namespaces).

    ``whole_machine``: the node is its machine's initial network namespace, not a
    namespace of its own -- for kernel facilities that live only there (Soft-RoCE's
    UDP socket on Linux 6.x). Such a node is alone on its machine, and a lab that
    has one is never built on this host (it would reconfigure the host's own
    network stack): it goes into VMs, one per machine.

    ``disks``: block devices of its own (:class:`DataDisk`); only a whole-machine node
    has them (a namespace shares its machine's disks)."""

    name: str
    forwarding: bool = False  # acts as an IP router
    machine: str = ""
    whole_machine: bool = False
    disks: tuple[DataDisk, ...] = ()


_KERNEL_ARG = re.compile(r"[A-Za-z0-9_.,-]+(=[A-Za-z0-9_.,-]+)?")


@dataclass(frozen=True)
class VMShape:
    """How each VM of a VM lab is built, when a study's claims need a machine of a given
    shape (S1: the paper's uniprocessor kernel, 001:44). The default is the harness's.

    ``cpus``: vCPUs per VM (0: :func:`harness.lab.placement.vm_cpus`); ``kernel_args``:
    appended to the guest kernel's command line (e.g. ``maxcpus=1``: the kernel boots on
    one CPU and the others stay present, offline, for CPU hotplug); ``pin``: each vCPU
    thread on a host core of its own, where the host's cores suffice for all the lab's
    vCPUs (recorded either way, :mod:`harness.vm.pinning`)."""

    cpus: int = 0
    kernel_args: tuple[str, ...] = ()
    pin: bool = False

    def validate(self) -> None:
        if not 0 <= self.cpus <= 64:
            raise SpecError(f"VM shape: cpus={self.cpus} is out of range",
                            "use 1..64 vCPUs per VM, or 0 for the harness's default")
        for arg in self.kernel_args:
            if not isinstance(arg, str) or not _KERNEL_ARG.fullmatch(arg):
                raise SpecError(f"VM shape: kernel argument {arg!r} is not a plain word or "
                                "key=value", "give arguments like maxcpus=1 or nosmp, one each")


@dataclass(frozen=True)
class Topology:
    name: str
    nodes: tuple[TopologyNode, ...]
    links: tuple[Link, ...]
    routes: tuple[Route, ...] = ()
    rules: tuple[Rule, ...] = ()
    notes: str = ""
    vms: VMShape = VMShape()
    #: "" (the default): a VM lab too slow for the links' rates scales them to its measured
    #: ceiling (:func:`harness.lab.placement.fit_to_ceiling`). Else the rates are registered
    #: by design, this text says where (S3's verdict profile): the lab measures its ceiling
    #: and, when it cannot carry them, the run stops before anything is measured.
    fixed_rates: str = ""

    # -- queries -------------------------------------------------------------
    def node(self, name: str) -> TopologyNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise SpecError(
            f"topology {self.name!r} has no node {name!r}",
            f"use one of: {', '.join(n.name for n in self.nodes)}",
        )

    def link_ends(self, node: str | None = None) -> list[LinkEnd]:
        ends = [e for link in self.links for e in (link.a, link.b)]
        return [e for e in ends if node is None or e.node == node]

    def interface(self, node: str, ifname: str) -> LinkEnd:
        for end in self.link_ends(node):
            if end.ifname == ifname:
                return end
        raise SpecError(
            f"node {node!r} of topology {self.name!r} has no interface {ifname!r}",
            f"its interfaces are: {', '.join(e.ifname for e in self.link_ends(node)) or 'none'}",
        )

    def machines(self) -> list[str]:
        """Machine labels in use, the main machine ("") first."""
        return sorted({n.machine for n in self.nodes}, key=lambda m: (m != "", m))

    def machine_of(self, node: str) -> str:
        return self.node(node).machine

    def whole_machine_nodes(self) -> list[str]:
        """Nodes that are their machine's initial namespace (see :class:`TopologyNode`)."""
        return [n.name for n in self.nodes if n.whole_machine]

    def is_wire(self, link: Link) -> bool:
        """A link between two machines (not a veth inside one)."""
        return self.machine_of(link.a.node) != self.machine_of(link.b.node)

    def wires(self) -> list[Link]:
        return [link for link in self.links if self.is_wire(link)]

    def required_features(self) -> set[str]:
        """Kernel features a namespace lab of this topology needs."""
        needed = {"netns", "veth"}
        for link in self.links:
            if link.shaped and link.shaper != "netem":
                needed.add("tbf" if link.shaper == "serialise" else "htb")
        if any(link.needs_netem for link in self.links):
            needed.add("netem")
        return needed

    # -- validation ------------------------------------------------------------
    def validate(self) -> Topology:
        """Raise :class:`SpecError` for the first problem found; return self."""
        self.vms.validate()
        names = [n.name for n in self.nodes]
        for name in names:
            if not NODENAME.match(name):
                raise SpecError(
                    f"node name {name!r} is not valid",
                    "use 1-12 lower-case letters and digits, starting with a letter",
                )
        if len(set(names)) != len(names):
            raise SpecError(f"topology {self.name!r} declares a node twice: {names}")
        for node in self.nodes:
            if node.machine and not NODENAME.match(node.machine):
                raise SpecError(f"machine label {node.machine!r} of node {node.name} is not valid",
                                "use 1-12 lower-case letters and digits, starting with a letter")
            for disk in node.disks:
                disk.validate(node.name)
            if node.disks and not node.whole_machine:
                raise SpecError(f"node {node.name} has disks but is a namespace of a machine "
                                "it shares", "give it whole_machine=True (a machine of its own)")
            if len({d.name for d in node.disks}) != len(node.disks):
                raise SpecError(f"node {node.name} names a disk twice", "give each disk its own name")
            sharing = [n.name for n in self.nodes if n.machine == node.machine and n is not node]
            if node.whole_machine and sharing:
                raise SpecError(f"node {node.name} takes its whole machine "
                                f"({node.machine or 'the main one'}) but {', '.join(sharing)} "
                                "is there too", "give every whole-machine node a machine label "
                                "of its own")
        seen_if: set[tuple[str, str]] = set()
        seen_ip: set[str] = set()
        for link in self.links:
            for end in (link.a, link.b):
                if end.node not in names:
                    raise SpecError(
                        f"link {link.name} names unknown node {end.node!r}",
                        f"declare it in nodes, or use one of: {', '.join(names)}",
                    )
                if not IFNAME.match(end.ifname):
                    raise SpecError(
                        f"interface name {end.ifname!r} on {end.node} is not valid",
                        "use at most 15 characters: letters, digits, '_', '.', '-'",
                    )
                if (end.node, end.ifname) in seen_if:
                    raise SpecError(f"interface {end.node}:{end.ifname} is used by two links")
                seen_if.add((end.node, end.ifname))
                try:
                    iface = ipaddress.ip_interface(end.address)
                except ValueError:
                    raise SpecError(
                        f"address {end.address!r} of {end.node}:{end.ifname} is not valid",
                        "write it in CIDR form, e.g. 198.18.1.2/24",
                    ) from None
                if "/" not in end.address:
                    raise SpecError(
                        f"address {end.address!r} of {end.node}:{end.ifname} has no prefix length",
                        "write it in CIDR form, e.g. 198.18.1.2/24",
                    )
                if str(iface.ip) in seen_ip:
                    raise SpecError(f"address {iface.ip} is assigned twice")
                seen_ip.add(str(iface.ip))
            if link.a.network != link.b.network:
                raise SpecError(
                    f"link {link.name}: {link.a.address} and {link.b.address} are not on one subnet",
                    "give both ends addresses of the same prefix",
                )
            if link.rate_mbit is not None and not (0 < link.rate_mbit <= 100_000):
                raise SpecError(
                    f"link {link.name}: rate {link.rate_mbit} Mbit/s is out of range",
                    "use a rate above 0 and at most 100000 Mbit/s, or None for unshaped",
                )
            if not (0 <= link.delay_ms <= 10_000):
                raise SpecError(f"link {link.name}: one-way delay {link.delay_ms} ms is out of range",
                                "use 0..10000 ms")
            if not (0 <= link.loss_pct < 100):
                raise SpecError(f"link {link.name}: loss {link.loss_pct}% is out of range",
                                "use 0 <= loss < 100")
            if link.queue_packets is not None and link.queue_bytes is not None:
                raise SpecError(f"link {link.name}: give queue_packets or queue_bytes, not both")
            if link.queue_packets is not None and link.queue_packets < 1:
                raise SpecError(f"link {link.name}: queue limit must be at least 1 packet")
            if link.queue_bytes is not None and link.queue_bytes < link.mtu:
                raise SpecError(f"link {link.name}: a queue of {link.queue_bytes} B cannot hold "
                                f"one {link.mtu} B packet", "use queue_bytes >= mtu")
            if (link.queue_packets or link.queue_bytes) and not link.shaped:
                raise SpecError(f"link {link.name}: a queue limit needs a rate",
                                "set rate_mbit: the queue fills only behind a bottleneck")
            if link.shaper not in SHAPERS:
                raise SpecError(f"link {link.name}: shaper {link.shaper!r} is unknown",
                                f"use one of {', '.join(SHAPERS)}")
            if link.shaper == "netem" and link.queue_bytes is not None:
                raise SpecError(f"link {link.name}: the netem shaper's queue limit counts packets, "
                                f"not bytes (queue_bytes={link.queue_bytes})",
                                "give queue_packets, or use shaper htb for a byte limit")
            if not (68 <= link.mtu <= 65535):
                raise SpecError(f"link {link.name}: MTU {link.mtu} is out of range", "use 68..65535")
        for route in self.routes:
            self.node(route.node)
            if route.via is None and route.dev is None:
                raise SpecError(f"route to {route.destination} on {route.node} needs via or dev")
            if route.dev is not None:
                self.interface(route.node, route.dev)
        for rule in self.rules:
            self.node(rule.node)
        return self

    # -- serialisation -----------------------------------------------------
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Topology:
        try:
            return cls(
                name=data["name"],
                nodes=tuple(TopologyNode(**{**n, "disks": tuple(
                    DataDisk(**d) for d in n.get("disks", ()))}) for n in data["nodes"]),
                links=tuple(
                    Link(**{**ln, "a": LinkEnd(**ln["a"]), "b": LinkEnd(**ln["b"])})
                    for ln in data["links"]
                ),
                routes=tuple(Route(**r) for r in data.get("routes", ())),
                rules=tuple(Rule(**r) for r in data.get("rules", ())),
                notes=data.get("notes", ""),
                vms=VMShape(**{**data.get("vms", {}), "kernel_args": tuple(
                    (data.get("vms") or {}).get("kernel_args", ()))}),
                fixed_rates=data.get("fixed_rates", ""),
            ).validate()
        except (KeyError, TypeError) as exc:
            raise SpecError(f"malformed topology: {exc}",
                            "compare with Topology.to_dict() of a study's topology") from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def describe(self) -> str:
        """A human-readable listing, for notebooks and `harness lab show`."""
        lines = [f"topology {self.name}: {len(self.nodes)} nodes, {len(self.links)} links"]
        for node in self.nodes:
            role = " (router)" if node.forwarding else ""
            role += " (a whole machine: its initial namespace)" if node.whole_machine else ""
            ifs = ", ".join(f"{e.ifname} {e.address}" for e in self.link_ends(node.name))
            lines.append(f"  node {node.name}{role}: {ifs}")
            for disk in node.disks:
                rates = ", ".join(f"{what} {rate:g} MB/s" for what, rate in
                                  (("read", disk.read_mbyte_s), ("write", disk.write_mbyte_s))
                                  if rate is not None) or "uncapped"
                lines.append(f"    disk {disk.name}: {disk.size_mib} MiB, {rates}")
        for link in self.links:
            props = [f"{link.rate_mbit:g} Mbit/s" if link.shaped else "unshaped"]
            if link.shaped and link.shaper != "htb":
                props[0] += f" ({link.shaper})"
            if link.delay_ms:
                props.append(f"one-way delay {link.delay_ms:g} ms")
            if link.loss_pct:
                props.append(f"loss {link.loss_pct:g}%")
            if link.queue_packets:
                props.append(f"queue {link.queue_packets} pkts")
            if link.queue_bytes:
                props.append(f"queue {link.queue_bytes} B")
            props.append(f"MTU {link.mtu}")
            lines.append(f"  link {link.name}: {', '.join(props)}")
        for route in self.routes:
            table = f" table {route.table}" if route.table else ""
            via = f" via {route.via}" if route.via else ""
            dev = f" dev {route.dev}" if route.dev else ""
            lines.append(f"  route {route.node}: {route.destination}{via}{dev}{table}")
        for rule in self.rules:
            lines.append(f"  rule {rule.node}: from {rule.source} lookup {rule.table} "
                         f"pref {rule.priority}")
        return "\n".join(lines)


@dataclass
class TopologyBuilder:
    """Small helper to declare topologies in study code without repetition."""

    name: str
    nodes: list[TopologyNode] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)

    def node(self, name: str, forwarding: bool = False, machine: str = "",
             whole_machine: bool = False, disks: tuple[DataDisk, ...] = ()) -> TopologyBuilder:
        self.nodes.append(TopologyNode(name, forwarding, machine, whole_machine, tuple(disks)))
        return self

    def link(self, a: tuple[str, str, str], b: tuple[str, str, str], **props) -> TopologyBuilder:
        self.links.append(Link(LinkEnd(*a), LinkEnd(*b), **props))
        return self

    def route(self, node: str, destination: str, via: str | None = None,
              dev: str | None = None, table: int | None = None) -> TopologyBuilder:
        self.routes.append(Route(node, destination, via, dev, table))
        return self

    def rule(self, node: str, source: str, table: int, priority: int) -> TopologyBuilder:
        self.rules.append(Rule(node, source, table, priority))
        return self

    def build(self, notes: str = "", vms: VMShape | None = None,
              fixed_rates: str = "") -> Topology:
        return Topology(self.name, tuple(self.nodes), tuple(self.links), tuple(self.routes),
                        tuple(self.rules), notes, vms or VMShape(), fixed_rates).validate()

"""Where a study runs: a namespace lab built here, or real machines from an inventory.

Study code asks a testbed for nodes, addresses and device names by the
topology's logical names, so the same notebook runs on both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..journal.journal import Journal
from ..lab.lab import Lab
from ..lab.verify import LinkCheck, verify_lab
from ..machines.facts import MachineFacts, read_machine_facts
from ..machines.inventory import Inventory
from ..machines.verify_paths import verify_machines
from ..nodes import Node
from ..topology.topology import Topology


class LabTestbed:
    kind = "namespace-lab"

    def __init__(self, lab: Lab):
        self.lab = lab
        self.topology = lab.topology

    def node(self, name: str) -> Node:
        return self.lab.node(name)

    def address(self, node: str, ifname: str) -> str:
        return self.lab.address(node, ifname)

    def device(self, node: str, ifname: str) -> str:
        self.topology.interface(node, ifname)
        return ifname

    def verify(self, journal: Journal, seconds: int = 2) -> list[LinkCheck]:
        return verify_lab(journal, self.lab, seconds)

    def record(self) -> dict:
        return {"kind": self.kind, **self.lab.record()}


@dataclass
class InventoryTestbed:
    topology: Topology
    inventory: Inventory
    nodes: dict[str, Node] = field(default_factory=dict)
    kind: str = "inventory"
    #: each machine as found, read before the run changes anything (:mod:`harness.machines.facts`)
    found: dict[str, MachineFacts] = field(default_factory=dict)
    #: the paths between the machines as measured by :meth:`verify`
    checks: list[LinkCheck] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.inventory.check_covers(self.topology)

    def connect(self) -> None:
        """Reach every machine before anything changes (fail early, naming the host)."""
        for name in self.inventory.hosts:
            if any(n.name == name for n in self.topology.nodes):
                node = self.inventory.connect(name)
                node.run("true", timeout=20)
                self.nodes[name] = node
        for name, node in self.nodes.items():
            self.found[name] = read_machine_facts(node)

    def node(self, name: str) -> Node:
        if name not in self.nodes:
            self.topology.node(name)
            raise KeyError(f"node {name!r} is provided by the real network, not the inventory")
        return self.nodes[name]

    def address(self, node: str, ifname: str) -> str:
        return self.inventory.hosts[node].interfaces[ifname].ip

    def device(self, node: str, ifname: str) -> str:
        return self.inventory.hosts[node].interfaces[ifname].device

    def verify(self, journal: Journal, seconds: int = 2) -> list[LinkCheck]:
        """Real links are not shaped by us: measure each path's RTT and goodput between the
        machines (:mod:`harness.machines.verify_paths`); :meth:`links` puts them beside each link."""
        interfaces = {name: [(i.device, i.ip) for i in self.inventory.hosts[name].interfaces
                             .values()] for name in self.nodes}
        self.checks = verify_machines(journal, self.nodes, interfaces, seconds,
                                      rate_paths=self.facing())
        return self.checks

    def facing(self) -> set[tuple[str, str]]:
        """("machine:device", "machine:device") of interfaces the study's topology joins:
        by one link, or through a router the user's network provides (not in the
        inventory); both directions. Only these paths get a rate test."""
        def label(end) -> str:
            return f"{end.node}:{self.inventory.hosts[end.node].interfaces[end.ifname].device}"

        present = [(link.a, link.b) for link in self.topology.links]
        pairs = {(label(a), label(b)) for a, b in present
                 if a.node in self.nodes and b.node in self.nodes}
        by_router: dict[str, list[str]] = {}
        for a, b in present:
            for end, other in ((a, b), (b, a)):
                if end.node in self.nodes and other.node not in self.nodes:
                    by_router.setdefault(other.node, []).append(label(end))
        for ends in by_router.values():
            pairs |= {(x, y) for x in ends for y in ends if x.split(":")[0] != y.split(":")[0]}
        return pairs | {(y, x) for x, y in pairs}

    def close(self) -> None:
        for node in self.nodes.values():
            node.close()

    def address_plan(self) -> dict[str, dict[str, dict[str, str]]]:
        """The inventory's devices and addresses for each machine and logical interface."""
        return {name: {ifname: {"device": i.device, "address": i.address}
                       for ifname, i in self.inventory.hosts[name].interfaces.items()}
                for name in self.nodes}

    def links(self) -> list[dict]:
        """Each link of the study's topology and who made it: on a user's machines the
        harness shapes none (no qdisc, no netem); the rate and delay the topology plans are
        what the paper's testbed had, the user's network is what it is."""
        rows = []
        for link in self.topology.links:
            ends = [f"{e.node}:{e.ifname}" for e in (link.a, link.b)]
            devices = [self.inventory.hosts[e.node].interfaces[e.ifname].device
                       if e.node in self.nodes else None for e in (link.a, link.b)]
            rows.append({"link": " - ".join(ends), "devices": devices,
                         "planned_mbit": link.rate_mbit, "planned_delay_ms": link.delay_ms,
                         "shaped_by_harness": False,
                         "made_by": "the user's network as found",
                         "measured": self._measured(link)})
        return rows

    def _measured(self, link) -> list[dict]:
        """The verified paths that start or end at this link's interfaces on the machines
        (a link to a router the user's network provides: the paths through it)."""
        ends = {f"{e.node}:{self.inventory.hosts[e.node].interfaces[e.ifname].device}"
                for e in (link.a, link.b) if e.node in self.nodes}
        rows = []
        for check in self.checks:
            src, _, dst = check.link.partition("->")
            if src in ends or dst in ends:
                rows.append({"path": check.link, "goodput_mbit": check.goodput_mbit,
                             "rtt_ms": check.rtt_ms, "seconds": check.seconds,
                             **({"note": check.note} if check.note else {})})
        return rows

    def record(self) -> dict:
        return {
            "kind": self.kind,
            "inventory": self.inventory.path,
            "nodes": {name: node.describe() for name, node in self.nodes.items()},
            "machines": {name: facts.to_dict() for name, facts in self.found.items()},
            "address_plan": self.address_plan(),
            "links": self.links(),
            "topology": self.topology.to_dict(),
        }


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)

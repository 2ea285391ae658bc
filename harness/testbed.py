"""Where a study runs: a namespace lab built here, or real machines from an inventory.

Study code asks a testbed for nodes, addresses and device names by the
topology's logical names, so the same notebook runs on both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .inventory import Inventory
from .journal import Journal
from .lab import Lab
from .machine_facts import MachineFacts, read_machine_facts
from .nodes import Node
from .tools.ping import ping_rtt_ms
from .topology import Topology
from .verify import LinkCheck, verify_lab


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
    #: each machine as found, read before the run changes anything (:mod:`.machine_facts`)
    found: dict[str, MachineFacts] = field(default_factory=dict)

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
        """Real links are not shaped by us: record reachability and RTT between the machines."""
        checks = []
        names = list(self.nodes)
        for src in names:
            for src_if in self.inventory.hosts[src].interfaces.values():
                for dst in names:
                    if dst == src:
                        continue
                    for dst_if in self.inventory.hosts[dst].interfaces.values():
                        rtt = ping_rtt_ms(self.nodes[src], dst_if.ip, src_if.ip, count=3)
                        checks.append(LinkCheck(
                            link=f"{src}:{src_if.device}->{dst}:{dst_if.device}",
                            direction=f"{src}->{dst}", configured_mbit=None,
                            link_layer_mbit=None, goodput_mbit=None, rate_ratio=None,
                            configured_one_way_delay_ms=0.0, expected_rtt_ms=None, rtt_ms=rtt,
                            rate_ok=None, rtt_ok=rtt is not None))
        return checks

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
                         "made_by": "the user's network as found"})
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

"""Real machines from an inventory file, standing in for a study's lab nodes.

An inventory maps the study's node names to SSH hosts and the study's
logical interface names to real devices and addresses::

    ssh:                       # defaults for every node
      user: root
      key: ~/.ssh/id_ed25519
      known_hosts: ~/.ssh/known_hosts
      accept_unknown_hosts: false   # true only if you have checked the keys another way
    nodes:
      client:
        host: client.lab.example.org
        port: 22
        interfaces:
          eth0: {device: enp1s0f0, address: 192.0.2.10/24}
          eth1: {device: enp1s0f1, address: 198.51.100.10/24}
      server:
        host: server.lab.example.org
        interfaces:
          eth0: {device: ens3, address: 203.0.113.5/24}

Nodes of the topology that are routers (forwarding) may be left out: the
real network between the machines takes their place. The harness builds
nothing on real machines; it configures them with recorded, reversible
operations and undoes those at the end.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .errors import SpecError
from .nodes import Node
from .topology import Topology


@dataclass(frozen=True)
class InventoryInterface:
    device: str
    address: str

    @property
    def ip(self) -> str:
        return str(ipaddress.ip_interface(self.address).ip)


@dataclass(frozen=True)
class InventoryHost:
    name: str
    host: str
    port: int = 22
    user: str = "root"
    key: str | None = None
    known_hosts: str | None = None
    accept_unknown_hosts: bool = False
    interfaces: dict[str, InventoryInterface] = field(default_factory=dict)


@dataclass(frozen=True)
class Inventory:
    path: str
    hosts: dict[str, InventoryHost]

    @classmethod
    def load(cls, path: str | Path) -> Inventory:
        path = Path(path).expanduser()
        if not path.exists():
            raise SpecError(f"inventory {path} does not exist",
                            "give the path of a YAML inventory (see harness/inventory.py)")
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise SpecError(f"inventory {path} is not valid YAML: {exc}") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data, source: str = "<inventory>") -> Inventory:
        def bad(what: str) -> SpecError:
            return SpecError(f"inventory {source}: {what}",
                             "see the format in harness/inventory.py or README.md")

        if not isinstance(data, dict) or not isinstance(data.get("nodes"), dict) \
                or not data["nodes"]:
            raise bad("needs a non-empty mapping 'nodes: {name: {host: ...}}'")
        defaults = data.get("ssh") or {}
        if not isinstance(defaults, dict):
            raise bad("'ssh' must be a mapping")
        unknown = set(defaults) - {"user", "key", "known_hosts", "accept_unknown_hosts", "port"}
        if unknown:
            raise bad(f"unknown keys under 'ssh': {sorted(unknown)}")
        hosts = {}
        for name, entry in data["nodes"].items():
            if not isinstance(entry, dict) or not entry.get("host"):
                raise bad(f"node {name!r} needs a 'host'")
            unknown = set(entry) - {"host", "port", "user", "key", "known_hosts",
                                    "accept_unknown_hosts", "interfaces"}
            if unknown:
                raise bad(f"node {name!r} has unknown keys {sorted(unknown)}")
            merged = {**defaults, **entry}
            interfaces = {}
            for ifname, iface in (entry.get("interfaces") or {}).items():
                if not isinstance(iface, dict) or "device" not in iface or "address" not in iface:
                    raise bad(f"interface {name}:{ifname} needs 'device' and 'address'")
                try:
                    ipaddress.ip_interface(iface["address"])
                except ValueError:
                    raise bad(f"interface {name}:{ifname} has an invalid address "
                              f"{iface['address']!r}") from None
                interfaces[ifname] = InventoryInterface(str(iface["device"]),
                                                        str(iface["address"]))
            try:
                port = int(merged.get("port", 22))
            except (TypeError, ValueError):
                raise bad(f"node {name!r} has a non-numeric port") from None
            if not 1 <= port <= 65535:
                raise bad(f"node {name!r} has port {port} out of range 1..65535")
            accept = merged.get("accept_unknown_hosts", False)
            if not isinstance(accept, bool):
                raise bad("accept_unknown_hosts must be true or false")
            hosts[name] = InventoryHost(
                name=name, host=str(merged["host"]), port=port,
                user=str(merged.get("user", "root")), key=merged.get("key"),
                known_hosts=merged.get("known_hosts"), accept_unknown_hosts=accept,
                interfaces=interfaces,
            )
        return cls(source, hosts)

    def check_covers(self, topology: Topology) -> None:
        """Every non-router node and each of its interfaces must be in the inventory."""
        for node in topology.nodes:
            if node.name not in self.hosts:
                if node.forwarding:
                    continue
                raise SpecError(f"inventory {self.path} has no node {node.name!r}, which study "
                                f"topology {topology.name!r} needs",
                                f"add nodes.{node.name} with its host and interfaces")
            host = self.hosts[node.name]
            for end in topology.link_ends(node.name):
                if end.ifname not in host.interfaces:
                    raise SpecError(
                        f"inventory node {node.name!r} lacks interface {end.ifname!r}",
                        f"map it to a real device: nodes.{node.name}.interfaces.{end.ifname}: "
                        "{device: ..., address: ...}")

    def connect(self, name: str) -> Node:
        from .nodes.ssh import SSHNode

        host = self.hosts[name]
        return SSHNode(name=name, host=host.host, port=host.port, user=host.user,
                       key_filename=str(Path(host.key).expanduser()) if host.key else None,
                       known_hosts=str(Path(host.known_hosts).expanduser())
                       if host.known_hosts else None,
                       accept_unknown_host=host.accept_unknown_hosts)

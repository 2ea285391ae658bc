"""Real machines from an inventory file, standing in for a study's lab nodes.

An inventory maps the study's node names to SSH hosts and the study's
logical interface names to real devices and addresses::

    ssh:                       # defaults for every node
      user: root
      key: ~/.ssh/id_ed25519
      known_hosts: ~/.ssh/known_hosts
      accept_unknown_hosts: false   # true only if you have checked the keys another way
      ssh_agent: false              # true: offer ssh-agent's keys to this node (default off)
      sudo: false                   # true: a login that is not root may use `sudo -n`
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

``ssh_agent`` (under ``ssh`` or a node) is off by default: an agent offers every key
it holds to whichever host asks, so it is allowed only where the inventory says so (an
encrypted key must then be in the agent; otherwise use ``key:``).

``sudo`` (under ``ssh`` or a node) is off by default: a login that is not root then
changes nothing on that machine (see :mod:`harness.machines.privileges`). ``sudo: true`` says the
login may run commands as root with ``sudo -n`` (a NOPASSWD rule: the harness never types
a password); every command on that machine then runs through it (:mod:`harness.nodes.sudo`).

Nodes of the topology that are routers (forwarding) may be left out: the
real network between the machines takes their place. The harness builds
nothing on real machines; it configures them with recorded, reversible
operations and undoes those at the end.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import SpecError
from ..nodes import Node
from ..topology.topology import Topology

#: What may reach a command line: Linux interface names (at most 15 bytes, IFNAMSIZ - 1)
#: without '/', whitespace or shell metacharacters; host names and IP addresses; POSIX user
#: names. Anything else is refused when the inventory is read.
DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}")
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
USER_NAME = re.compile(r"[a-z_][a-z0-9_.-]*")
PASSWORD_KEYS = {"password", "passphrase", "pass", "password_auth", "key_passphrase"}


def _check_name(value: str, pattern: re.Pattern, what: str, source: str) -> None:
    if not pattern.fullmatch(value):
        raise SpecError(f"inventory {source}: {what} {value!r} is not allowed",
                        "use letters, digits and . _ - only (no spaces or shell characters); "
                        "a device name has at most 15 characters")


def _refuse_passwords(entry: dict, where: str, source: str) -> None:
    found = sorted(PASSWORD_KEYS & set(entry))
    if found:
        raise SpecError(f"inventory {source}: {where} has {found[0]!r}: password "
                        "authentication is refused",
                        "use key authentication (key: PATH to a private key, or ssh-agent); "
                        "never write passwords into an inventory")


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
    ssh_agent: bool = False
    #: the login may use ``sudo -n`` (only meaningful when ``user`` is not root)
    sudo: bool = False
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
                            "give the path of a YAML inventory (see harness/machines/inventory.py)")
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise SpecError(f"inventory {path} is not valid YAML: {exc}") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data, source: str = "<inventory>") -> Inventory:
        def bad(what: str) -> SpecError:
            return SpecError(f"inventory {source}: {what}",
                             "see the format in harness/machines/inventory.py or docs/how-to/own-machines.md")

        if not isinstance(data, dict) or not isinstance(data.get("nodes"), dict) \
                or not data["nodes"]:
            raise bad("needs a non-empty mapping 'nodes: {name: {host: ...}}'")
        unknown = set(data) - {"ssh", "nodes"}
        if unknown:
            raise bad(f"unknown top-level keys {sorted(unknown)}")
        defaults = data.get("ssh") or {}
        if not isinstance(defaults, dict):
            raise bad("'ssh' must be a mapping")
        _refuse_passwords(defaults, "ssh", source)
        unknown = set(defaults) - {"user", "key", "known_hosts", "accept_unknown_hosts", "port",
                                    "ssh_agent", "sudo"}
        if unknown:
            raise bad(f"unknown keys under 'ssh': {sorted(unknown)}")
        hosts = {}
        seen: dict[str, str] = {}  # ip -> node:interface that has it
        for name, entry in data["nodes"].items():
            if not isinstance(entry, dict) or not entry.get("host"):
                raise bad(f"node {name!r} needs a 'host'")
            _refuse_passwords(entry, f"node {name!r}", source)
            unknown = set(entry) - {"host", "port", "user", "key", "known_hosts",
                                    "accept_unknown_hosts", "ssh_agent", "sudo", "interfaces"}
            if unknown:
                raise bad(f"node {name!r} has unknown keys {sorted(unknown)}")
            merged = {**defaults, **entry}
            _check_name(str(merged["host"]), HOST_NAME, f"node {name!r}: host name", source)
            _check_name(str(merged.get("user", "root")), USER_NAME, f"node {name!r}: user name",
                        source)
            interfaces = {}
            for ifname, iface in (entry.get("interfaces") or {}).items():
                if not isinstance(iface, dict) or "device" not in iface or "address" not in iface:
                    raise bad(f"interface {name}:{ifname} needs 'device' and 'address'")
                unknown = set(iface) - {"device", "address"}
                if unknown:
                    raise bad(f"interface {name}:{ifname} has unknown keys {sorted(unknown)}")
                _check_name(str(iface["device"]), DEVICE_NAME,
                            f"interface {name}:{ifname}: device name", source)
                try:
                    ip = str(ipaddress.ip_interface(iface["address"]).ip)
                except ValueError:
                    raise bad(f"interface {name}:{ifname} has an invalid address "
                              f"{iface['address']!r}") from None
                if ip in seen:
                    raise bad(f"address {ip} is given twice: {seen[ip]} and {name}:{ifname}")
                seen[ip] = f"{name}:{ifname}"
                interfaces[ifname] = InventoryInterface(str(iface["device"]),
                                                        str(iface["address"]))
            raw_port = merged.get("port", 22)
            try:
                if isinstance(raw_port, bool):
                    raise TypeError
                port = int(raw_port)
            except (TypeError, ValueError):
                raise bad(f"node {name!r} has a non-numeric port") from None
            if not 1 <= port <= 65535:
                raise bad(f"node {name!r} has port {port} out of range 1..65535")
            accept = merged.get("accept_unknown_hosts", False)
            if not isinstance(accept, bool):
                raise bad("accept_unknown_hosts must be true or false (YAML true/false, not text)")
            agent = merged.get("ssh_agent", False)
            if not isinstance(agent, bool):
                raise bad("ssh_agent must be true or false (YAML true/false, not text)")
            sudo = merged.get("sudo", False)
            if not isinstance(sudo, bool):
                raise bad("sudo must be true or false (YAML true/false, not text)")
            if accept and not merged.get("known_hosts"):
                raise SpecError(
                    f"inventory {source}: node {name!r}: accept_unknown_hosts needs an explicit "
                    "known_hosts file",
                    "trust on first use records each accepted key there, so that a changed key "
                    "is refused next time: add known_hosts: PATH (under ssh or the node)")
            hosts[name] = InventoryHost(
                name=name, host=str(merged["host"]), port=port,
                user=str(merged.get("user", "root")), key=merged.get("key"),
                known_hosts=merged.get("known_hosts"), accept_unknown_hosts=accept,
                ssh_agent=agent, sudo=sudo, interfaces=interfaces,
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
        from ..nodes.ssh import SSHNode
        from ..nodes.sudo import SudoSSHNode

        host = self.hosts[name]
        kind = SudoSSHNode if host.sudo and host.user != "root" else SSHNode
        return kind(name=name, host=host.host, port=host.port, user=host.user,
                       key_filename=str(Path(host.key).expanduser()) if host.key else None,
                       known_hosts=str(Path(host.known_hosts).expanduser())
                       if host.known_hosts else None,
                       accept_unknown_host=host.accept_unknown_hosts,
                       allow_agent=host.ssh_agent)

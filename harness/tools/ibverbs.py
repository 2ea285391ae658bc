"""RDMA devices as the verbs library sees them (``ibv_devinfo -v``), and the paper's Table 1.

The paper's Table 1 lists what each VIA implementation offers; S1 rebuilds it
from the devices themselves, one column per RDMA device used, beside a
column for kernel TCP built from the socket API's facts.

``ibv_devinfo -v`` (rdma-core) prints one ``key: value`` per line, a device
(``hca_id:``) then its ports (``port:``), with flag lists one name per line
under their key (``device_cap_flags:``). It does not list the queue-pair
types: they follow from the transport -- the InfiniBand transport (native IB
and RoCE, Soft-RoCE included: rxe implements RC, UC and UD) defines reliable
connected, unreliable connected and unreliable datagram; iWARP has RC only --
and XRC is a device flag. RDMA read needs responder resources
(``max_qp_rd_atom`` > 0); atomics are ``atomic_cap``. Each column says which
of its entries were inferred from the transport rather than read.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from dataclasses import dataclass, field

from ..errors import CapabilityMissing, SpecError
from ..nodes import Node
from .registry import Tool

IBV_DEVINFO = Tool("ibv_devinfo", "dpkg-query -W ibverbs-utils", "ibverbs-utils")

_FIELD = re.compile(r"^\s*([A-Za-z_][\w \[\]]*?):\s*(.*?)\s*$")
_FLAG = re.compile(r"^\s+([A-Z0-9_]+(?: [A-Z0-9_]+)*)\s*$")
_CODE = re.compile(r"\s*\(-?\d+\)$")  # "InfiniBand (0)" -> "InfiniBand"
_NO_DEVICE = ("No IB devices found", "Failed to get IB devices list")


@dataclass(frozen=True)
class VerbsPort:
    port: int
    state: str  # PORT_ACTIVE, PORT_DOWN...
    max_mtu: int
    active_mtu: int  # RoCE: the largest IB MTU below the netdev's (1500 -> 1024)
    link_layer: str  # Ethernet (RoCE, iWARP) or InfiniBand
    gids: dict[int, str] = field(default_factory=dict)  # index -> "0000:...:0a00:0101, RoCE v2"
    fields: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def ipv4_gid_index(self, version: str = "RoCE v2") -> int | None:
        """The GID index of the port's IPv4 address (an IPv4-mapped GID, ``::ffff:a.b.c.d``):
        what perftest's ``-x`` needs for RoCE over IPv4 (its default, 0, is the link-local
        IPv6 GID)."""
        for index, gid in sorted(self.gids.items()):
            address, _, kind = gid.partition(", ")
            try:  # rdma-core 44 prints "::ffff:198.18.1.1"; older ones every group in hex
                mapped = ipaddress.IPv6Address(address.strip()).ipv4_mapped
            except ValueError:
                continue
            if mapped is not None and kind == version:
                return index
        return None


@dataclass(frozen=True)
class VerbsDevice:
    name: str
    transport: str  # InfiniBand (IB and RoCE) or iWARP
    max_qp: int
    max_cq: int
    max_mr: int
    max_qp_rd_atom: int
    atomic_cap: str  # ATOMIC_NONE, ATOMIC_HCA, ATOMIC_GLOB
    device_cap_flags: tuple[str, ...]
    ports: tuple[VerbsPort, ...]
    fields: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    lists: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def qp_types(self) -> tuple[str, ...]:
        """Queue-pair types, from the transport (see the module's doc) and the XRC flag."""
        types = ("RC",) if self.transport == "iWARP" else ("RC", "UC", "UD")
        return types + (("XRC",) if "XRC" in self.device_cap_flags else ())


def _int(text: str) -> int:
    return int(_CODE.sub("", text).split()[0], 0)


def parse_devinfo(text: str) -> list[VerbsDevice]:
    """Every device and port in ``ibv_devinfo -v`` output (none: an empty list)."""
    blocks: list[dict] = []
    for line in text.splitlines():
        flag = _FLAG.match(line)
        match = _FIELD.match(line)
        if flag and not match and blocks:
            target = blocks[-1]["ports"][-1] if blocks[-1]["ports"] else blocks[-1]
            if target["list"]:
                target["lists"].setdefault(target["list"], []).append(flag.group(1))
            continue
        if not match:
            continue
        key, value = match.groups()
        if key == "hca_id":
            blocks.append({"name": value, "fields": {}, "lists": {}, "list": None, "ports": []})
        elif not blocks:
            continue
        elif key == "port":
            blocks[-1]["ports"].append({"port": value, "fields": {}, "lists": {}, "list": None,
                                        "gids": {}})
        else:
            target = blocks[-1]["ports"][-1] if blocks[-1]["ports"] else blocks[-1]
            if key.startswith("GID["):
                target["gids"][int(key[4:].rstrip("]"))] = value
            target["fields"][key] = value
            target["list"] = key if value == "" or "cap_flags" in key else None
    return [_device(b) for b in blocks]


def _device(block: dict) -> VerbsDevice:
    f = block["fields"]
    ports = tuple(VerbsPort(_int(p["port"]), _CODE.sub("", p["fields"].get("state", "")),
                            _int(p["fields"].get("max_mtu", "0")),
                            _int(p["fields"].get("active_mtu", "0")),
                            p["fields"].get("link_layer", ""), p["gids"], p["fields"])
                  for p in block["ports"])
    return VerbsDevice(block["name"], _CODE.sub("", f.get("transport", "")),
                       _int(f.get("max_qp", "0")), _int(f.get("max_cq", "0")),
                       _int(f.get("max_mr", "0")), _int(f.get("max_qp_rd_atom", "0")),
                       _CODE.sub("", f.get("atomic_cap", "")),
                       tuple(block["lists"].get("device_cap_flags", ())), ports, f,
                       {k: tuple(v) for k, v in block["lists"].items()})


def read_devices(node: Node, device: str | None = None) -> list[VerbsDevice]:
    """The RDMA devices of ``node`` (or the one named); CapabilityMissing if there is none."""
    argv = ["ibv_devinfo", "-v"] + (["-d", device] if device else [])
    res = node.run(argv, check=False, timeout=30)
    devices = parse_devinfo(res.stdout) if res.ok else []
    if not devices:
        why = (res.stderr or res.stdout).strip()[-200:]
        missing = res.exit_status == 127 or ("not found" in why and "ibv_devinfo" in why)
        raise CapabilityMissing(
            f"{node.name}: no RDMA device{' ' + device if device else ''} ({why or 'none'})",
            f"install the verbs tools: apt-get install {IBV_DEVINFO.package} ibverbs-providers"
            if missing else "add one (a Soft-RoCE link: harness.config.rdma.RxeLink) or use a "
            "machine with an RDMA NIC; `rdma link show` lists them")
    return devices


@dataclass(frozen=True)
class FeatureColumn:
    """One column of Table 1: what one implementation offers (None: not applicable)."""

    name: str
    transport: str
    link_layer: str
    mtu: int  # the MTU a message is cut into on this path (RDMA: the active MTU)
    max_mtu: int | None
    qp_types: tuple[str, ...]
    rdma_write: bool
    rdma_read: bool
    atomics: str  # "none" or the verbs atomic capability
    max_qp: int | None
    max_cq: int | None
    max_mr: int | None
    inferred: tuple[str, ...] = ()  # entries that follow from the transport, not read

    def cells(self) -> dict[str, str]:
        """The column as Table 1's text, feature by feature."""
        def amount(value: int | None) -> str:
            return "n/a" if value is None else f"{value:,}"

        def mark(name: str, text: str) -> str:
            return f"{text} (by transport)" if name in self.inferred else text

        return {"Transport": self.transport, "Link layer": self.link_layer,
                "MTU (bytes)": str(self.mtu) + ("" if self.max_mtu is None
                                                else f" (max {self.max_mtu})"),
                "Queue-pair types": mark("qp_types", ", ".join(self.qp_types)),
                "RDMA write": mark("rdma_write", "yes" if self.rdma_write else "no"),
                "RDMA read": "yes" if self.rdma_read else "no",
                "Atomics": self.atomics, "Max QPs": amount(self.max_qp),
                "Max CQs": amount(self.max_cq), "Max MRs": amount(self.max_mr)}


def device_column(device: VerbsDevice, port: int = 1, label: str = "") -> FeatureColumn:
    """Table 1's column for ``device`` (its ``port``), e.g. rxe0 over a 1500-byte Ethernet."""
    found = next((p for p in device.ports if p.port == port), None)
    if found is None:
        raise CapabilityMissing(f"{device.name} has no port {port}",
                                f"its ports: {[p.port for p in device.ports]}")
    roce = device.transport == "InfiniBand" and found.link_layer == "Ethernet"
    transport = "InfiniBand verbs over RoCE" if roce else f"{device.transport} verbs"
    if roce and found.gids:
        versions = sorted({g.rsplit(", ", 1)[1] for g in found.gids.values() if ", " in g})
        transport += f" ({', '.join(versions)})" if versions else ""
    return FeatureColumn(label or device.name, transport, found.link_layer, found.active_mtu,
                         found.max_mtu, device.qp_types, True, device.max_qp_rd_atom > 0,
                         "none" if device.atomic_cap in ("ATOMIC_NONE", "") else
                         device.atomic_cap, device.max_qp, device.max_cq, device.max_mr,
                         inferred=("qp_types", "rdma_write"))


@dataclass(frozen=True)
class SocketFacts:
    """What the socket API offers on a path: the netdev's MTU and link type, open-file limits."""

    mtu: int
    link_layer: str  # from /sys/class/net/DEV/type: 1 is Ethernet
    max_sockets: int  # min(RLIMIT_NOFILE, fs.file-max): each connection is a descriptor


def socket_facts_command(netdev: str) -> str:
    sys = f"/sys/class/net/{netdev}"
    return (f"cat {shlex.quote(sys + '/mtu')} {shlex.quote(sys + '/type')} && ulimit -n && "
            "cat /proc/sys/fs/file-max")


def parse_socket_facts(text: str) -> SocketFacts:
    mtu, kind, nofile, file_max = (line.strip() for line in text.strip().splitlines()[:4])
    limits = [int(v) for v in (nofile, file_max) if v.isdigit()]  # "unlimited" is no limit
    return SocketFacts(int(mtu), {"1": "Ethernet", "772": "loopback"}.get(kind, f"type {kind}"),
                       min(limits) if limits else 0)


def read_socket_facts(node: Node, netdev: str) -> SocketFacts:
    """:class:`SocketFacts` of ``netdev`` on ``node``; SpecError if it has no such device."""
    res = node.run(socket_facts_command(netdev), check=False, timeout=20)
    if not res.ok or len(res.stdout.split()) < 4:
        raise SpecError(f"{node.name} has no interface {netdev!r}",
                        f"list its interfaces with `ip link` on {node.name}")
    return parse_socket_facts(res.stdout)


def tcp_column(facts: SocketFacts, label: str = "TCP") -> FeatureColumn:
    """Table 1's column for kernel TCP: a byte stream, reliable and connected (RC's role);
    no remote memory access, no atomics; its only limit on "queue pairs" is descriptors."""
    return FeatureColumn(label, "TCP/IP, kernel sockets", facts.link_layer, facts.mtu, None,
                         ("stream (reliable, connected)",), False, False, "none",
                         facts.max_sockets or None, None, None)


def table1(columns: list[FeatureColumn]) -> list[dict[str, str]]:
    """Table 1 as rows (feature, then one cell per column), the paper's layout."""
    cells = [c.cells() for c in columns]
    return [{"Feature": feature, **{c.name: cell[feature] for c, cell in zip(columns, cells)}}
            for feature in cells[0]] if cells else []

"""rtnetlink requests encoded here and sent many to a socket write, each acknowledged.

Why: a lab of 48 hosts needs ~600 link, address, qdisc and route changes. Sent
one request per call through pyroute2's synchronous API (an asyncio loop turn,
a send and a wait for each), they took ~1.6 s of a 7-10 s build on this 2-core
machine (2026-11-27, load 5-7). The kernel reads every request of one
``sendto`` in turn and acknowledges each (``NLM_F_ACK``), so a namespace's
whole configuration is a few socket writes. The messages (veth pairs, ``link
set``, addresses, routes, rules) are packed here with :mod:`struct`, htb and
fifos in :mod:`harness.net.netlink_tc`; netem (only where the host has it) is
encoded by pyroute2 once per distinct qdisc (:class:`TcTemplates`) and its bytes
reused with the interface index and sequence number patched in.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
from dataclasses import dataclass, field

NETLINK_ROUTE = 0
NETLINK_CAP_ACK = 10
NETLINK_EXT_ACK = 11
SOL_NETLINK = 270

NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x4, 0x300
NLM_F_EXCL, NLM_F_CREATE = 0x200, 0x400
NLM_F_ACK_TLVS = 0x200
NLMSGERR_ATTR_MSG = 1

RTM_NEWLINK, RTM_GETLINK, RTM_NEWADDR, RTM_NEWROUTE, RTM_NEWRULE = 16, 18, 20, 24, 32
IFLA_IFNAME, IFLA_MTU, IFLA_LINKINFO, IFLA_NET_NS_FD = 3, 4, 18, 28
IFLA_INFO_KIND, IFLA_INFO_DATA, VETH_INFO_PEER = 1, 2, 1
IFA_ADDRESS, IFA_LOCAL = 1, 2
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_TABLE = 1, 4, 5, 15
FRA_SRC, FRA_PRIORITY, FRA_TABLE = 2, 6, 15
IFF_UP = 1
RT_TABLE_MAIN, RT_TABLE_COMPAT = 254, 252
RTPROT_BOOT, RT_SCOPE_UNIVERSE, RT_SCOPE_LINK, RTN_UNICAST = 3, 0, 253, 1
FR_ACT_TO_TBL = 1
LOOPBACK_IFINDEX = 1  # the kernel gives every namespace's lo index 1

HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port
IFINFO = struct.Struct("=BxHiII")  # ifinfomsg: family, type, index, flags, change
IFADDR = struct.Struct("=BBBBI")  # ifaddrmsg: family, prefix length, flags, scope, index
RTMSG = struct.Struct("=BBBBBBBBI")  # rtmsg and fib_rule_hdr share this layout
INDEX_OFFSET = HEADER.size + 4  # ifinfomsg, ifaddrmsg and tcmsg all keep the index here
# A socket write carries at most this many requests / bytes: every acknowledgement is a
# buffer of its own in the socket's receive queue, and one dropped there would be waited for.
CHUNK_MESSAGES = 256
CHUNK_BYTES = 64 * 1024
RCVBUF = 4 << 20


class NetlinkError(OSError):
    """A request the kernel refused: its errno, what the request was, the kernel's words."""


def attr(kind: int, payload: bytes) -> bytes:
    """One rtattr (type, length, payload), padded to 4 bytes."""
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + b"\0" * (-size % 4)


def _name(text: str) -> bytes:
    return text.encode() + b"\0"


def _u32(value: int) -> bytes:
    return struct.pack("=I", value)


def _family(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> int:
    return socket.AF_INET if ip.version == 4 else socket.AF_INET6


@dataclass(frozen=True)
class Message:
    """One request without its header: type, flags (REQUEST and ACK are added), body, and
    what it does in words (for an error)."""

    type: int
    flags: int
    body: bytes
    what: str


def veth(ifname: str, index: int, ns_fd: int, peer: str, peer_index: int,
         peer_ns_fd: int) -> Message:
    """A veth pair made straight in its two namespaces (given as open fds), each end with
    the index asked: the kernel checks a name in the namespace it goes to, so a lab's
    ``eth0`` never meets the host's, and the index is known without asking."""
    peer_body = (IFINFO.pack(0, 0, peer_index, 0, 0) + attr(IFLA_IFNAME, _name(peer))
                 + attr(IFLA_NET_NS_FD, _u32(peer_ns_fd)))
    info = attr(IFLA_INFO_KIND, b"veth\0") + attr(IFLA_INFO_DATA,
                                                  attr(VETH_INFO_PEER, peer_body))
    body = (IFINFO.pack(0, 0, index, 0, 0) + attr(IFLA_IFNAME, _name(ifname))
            + attr(IFLA_NET_NS_FD, _u32(ns_fd)) + attr(IFLA_LINKINFO, info))
    return Message(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, body,
                   f"veth {ifname} (index {index}) -- {peer} (index {peer_index})")


def link_up(index: int, mtu: int | None = None) -> Message:
    """Set a link up (and its MTU), by index."""
    body = IFINFO.pack(0, 0, index, IFF_UP, IFF_UP)
    if mtu is not None:
        body += attr(IFLA_MTU, _u32(mtu))
    return Message(RTM_NEWLINK, 0, body, f"link {index} up" + (f" mtu {mtu}" if mtu else ""))


def address(index: int, cidr: str) -> Message:
    """Add an address (``198.18.1.2/24``) to a link, as `ip addr add` does (local = address)."""
    iface = ipaddress.ip_interface(cidr)
    packed = iface.ip.packed
    body = (IFADDR.pack(_family(iface.ip), iface.network.prefixlen, 0, 0, index)
            + attr(IFA_LOCAL, packed) + attr(IFA_ADDRESS, packed))
    return Message(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, body,
                   f"address {cidr} on link {index}")


def _table(table: int | None) -> tuple[int, bytes]:
    table = table or RT_TABLE_MAIN
    return (table if table < 256 else RT_TABLE_COMPAT), attr(RTA_TABLE, _u32(table))


def route(destination: str, via: str | None, oif: int | None, table: int | None) -> Message:
    """A unicast route (``default`` or a network), via a gateway and/or out of a link."""
    if destination == "default":  # the family of its gateway, IPv4 without one
        v6 = via is not None and ipaddress.ip_address(via).version == 6
        net = ipaddress.ip_network("::/0" if v6 else "0.0.0.0/0")
    else:
        net = ipaddress.ip_network(destination, strict=False)
    small, table_attr = _table(table)
    scope = RT_SCOPE_UNIVERSE if via else RT_SCOPE_LINK
    body = RTMSG.pack(_family(net.network_address), net.prefixlen, 0, 0, small, RTPROT_BOOT,
                      scope, RTN_UNICAST, 0) + table_attr
    if net.prefixlen:
        body += attr(RTA_DST, net.network_address.packed)
    if via:
        body += attr(RTA_GATEWAY, ipaddress.ip_address(via).packed)
    if oif:
        body += attr(RTA_OIF, _u32(oif))
    return Message(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, body,
                   f"route {destination} via {via} oif {oif} table {table}")


def rule(source: str, table: int, priority: int) -> Message:
    """A policy-routing rule: from ``source`` look up ``table``, at ``priority``."""
    net = ipaddress.ip_network(source, strict=False)
    small, _ = _table(table)
    body = (RTMSG.pack(_family(net.network_address), 0, net.prefixlen, 0, small, 0, 0,
                       FR_ACT_TO_TBL, 0)
            + attr(FRA_SRC, net.network_address.packed) + attr(FRA_TABLE, _u32(table))
            + attr(FRA_PRIORITY, _u32(priority)))
    return Message(RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, body,
                   f"rule from {source} table {table} priority {priority}")


def open_socket() -> socket.socket:
    """An rtnetlink socket in the calling thread's network namespace (it stays there)."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
    try:
        sock.setsockopt(socket.SOL_SOCKET, 33, RCVBUF)  # SO_RCVBUFFORCE (root)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    for option in (NETLINK_CAP_ACK, NETLINK_EXT_ACK):
        try:
            sock.setsockopt(SOL_NETLINK, option, 1)
        except OSError:  # older kernels: plain acknowledgements
            pass
    sock.bind((0, 0))
    sock.settimeout(30)
    return sock


@dataclass
class Batch:
    """Requests for one socket, sent in as few writes as the kernel takes, each acknowledged.

    ``send`` raises :class:`NetlinkError` for the first request the kernel refused
    (the requests before it are made; the journal holds them all, and undo tolerates
    what was not)."""

    sock: socket.socket
    where: str  # the namespace, for errors
    seq: int = 0
    _queued: list[tuple[bytes, str]] = field(default_factory=list)

    def add(self, message: Message) -> None:
        self.add_raw(HEADER.pack(HEADER.size + len(message.body), message.type,
                                 message.flags | NLM_F_REQUEST | NLM_F_ACK, 0, 0)
                     + message.body, message.what)

    def add_raw(self, data: bytes, what: str, index: int | None = None) -> None:
        """A request already encoded (header included); ``index`` patched in if given."""
        buf = bytearray(data)
        if index is not None:
            struct.pack_into("=i", buf, INDEX_OFFSET, index)
        self._queued.append((bytes(buf), what))

    def __len__(self) -> int:
        return len(self._queued)

    def send(self) -> int:
        """Send everything queued; return how many requests were made."""
        queued, self._queued = self._queued, []
        start = 0
        while start < len(queued):
            end, size = start, 0
            while end < len(queued) and end - start < CHUNK_MESSAGES and (
                    end == start or size + len(queued[end][0]) <= CHUNK_BYTES):
                size += len(queued[end][0])
                end += 1
            self._send_chunk(queued[start:end])
            start = end
        return len(queued)

    def _send_chunk(self, chunk: list[tuple[bytes, str]]) -> None:
        data = bytearray()
        whats: dict[int, str] = {}
        for raw, what in chunk:
            self.seq += 1
            msg = bytearray(raw)
            struct.pack_into("=I", msg, 8, self.seq)
            data += msg + b"\0" * (-len(msg) % 4)
            whats[self.seq] = what
        self.sock.sendto(bytes(data), (0, 0))
        failures: list[tuple[int, int, str]] = []
        while whats:
            try:
                buf = self.sock.recv(1 << 20)
            except TimeoutError:
                raise NetlinkError(errno.ETIMEDOUT, f"no acknowledgement from the kernel in "
                                   f"{self.where} for: {'; '.join(list(whats.values())[:3])}") from None
            for seq, code, text in _acks(buf):
                what = whats.pop(seq, None)
                if what is not None and code:
                    failures.append((-code, seq, f"{what}: {text}" if text else what))
        if failures:
            code, _seq, what = min(failures, key=lambda f: f[1])
            raise NetlinkError(code, f"{os.strerror(code)} in {self.where}: {what}"
                               + (f" (and {len(failures) - 1} more)" if len(failures) > 1
                                  else ""))


def _acks(buf: bytes):
    """(sequence, error code, kernel's message) of each acknowledgement in ``buf``."""
    offset = 0
    while offset + HEADER.size <= len(buf):
        length, kind, flags, seq, _port = HEADER.unpack_from(buf, offset)
        if length < HEADER.size:
            break
        if kind == NLMSG_ERROR:
            (code,) = struct.unpack_from("=i", buf, offset + HEADER.size)
            text = ""
            if code and flags & NLM_F_ACK_TLVS:
                text = _ext_ack_text(buf[offset + HEADER.size + 4 + HEADER.size:
                                         offset + length])
            yield seq, code, text
        offset += (length + 3) & ~3


def _ext_ack_text(tlvs: bytes) -> str:
    offset = 0
    while offset + 4 <= len(tlvs):
        size, kind = struct.unpack_from("=HH", tlvs, offset)
        if size < 4:
            break
        if kind == NLMSGERR_ATTR_MSG:
            return tlvs[offset + 4:offset + size].rstrip(b"\0").decode(errors="replace")
        offset += (size + 3) & ~3
    return ""


def link_indexes(sock: socket.socket) -> set[int]:
    """The interface indexes in use in the socket's namespace (one dump request)."""
    request = HEADER.pack(HEADER.size + IFINFO.size, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP,
                          1, 0) + IFINFO.pack(0, 0, 0, 0, 0)
    sock.sendto(request, (0, 0))
    found: set[int] = set()
    while True:
        buf = sock.recv(1 << 20)
        offset = 0
        while offset + HEADER.size <= len(buf):
            length, kind, _flags, _seq, _port = HEADER.unpack_from(buf, offset)
            if kind == NLMSG_DONE:
                return found
            if kind == NLMSG_ERROR:
                (code,) = struct.unpack_from("=i", buf, offset + HEADER.size)
                raise NetlinkError(-code, f"listing links: {os.strerror(-code)}")
            if kind == RTM_NEWLINK:
                found.add(struct.unpack_from("=i", buf, INDEX_OFFSET + offset)[0])
            if length < HEADER.size:
                return found
            offset += (length + 3) & ~3


class TcTemplates:
    """tc requests encoded by pyroute2 once per distinct qdisc, reused per link.

    The same netem on every link of a lab is the same request but for the interface
    index (pyroute2 takes ~0.6 ms of Python per request, and 0.65 s to import): the
    bytes are kept by their arguments and the index patched in (:data:`INDEX_OFFSET`).
    """

    def __init__(self) -> None:
        self._cache: dict[tuple, list[bytes]] = {}
        self._ipb = None

    def requests(self, *args, **kwargs) -> list[bytes]:
        key = (args, tuple(sorted(kwargs.items())))
        if key not in self._cache:
            if self._ipb is None:
                from pyroute2 import IPBatch

                self._ipb = IPBatch()
            self._ipb.reset()
            self._ipb.tc(*args, index=LOOPBACK_IFINDEX, **kwargs)
            data = bytes(self._ipb.asyncore.batch)
            found, offset = [], 0
            while offset < len(data):
                (length,) = struct.unpack_from("=I", data, offset)
                found.append(data[offset:offset + length])
                offset += (length + 3) & ~3
            self._cache[key] = found
        return self._cache[key]

    def close(self) -> None:
        if self._ipb is not None:
            self._ipb.close()
            self._ipb = None

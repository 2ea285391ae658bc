"""rtnetlink requests as packed here, batches against a socket that answers like the kernel,
and the journal's one-write records and marks."""

from __future__ import annotations

import json
import socket
import struct

import pytest

from harness.journal import journal as journal_module
from harness.journal.journal import Journal
from harness.net import (
    backend as netbackend,  # noqa: F401 -- registers the lab's undo handlers
)
from harness.net import (
    netlink,
)
from harness.net.namespaces import run_dir_shared
from harness.nodes import LocalNode, NamespaceNode


def attrs(body: bytes, offset: int) -> dict[int, bytes]:
    out = {}
    while offset + 4 <= len(body):
        size, kind = struct.unpack_from("=HH", body, offset)
        out[kind] = body[offset + 4:offset + size]
        offset += (size + 3) & ~3
    return out


def test_address_is_local_and_address_with_its_prefix_and_link():
    msg = netlink.address(7, "198.18.3.2/30")
    family, prefix, _flags, _scope, index = netlink.IFADDR.unpack_from(msg.body)
    assert (family, prefix, index) == (socket.AF_INET, 30, 7)
    found = attrs(msg.body, netlink.IFADDR.size)
    assert found[netlink.IFA_LOCAL] == found[netlink.IFA_ADDRESS] == bytes([198, 18, 3, 2])
    v6 = netlink.address(2, "2001:db8::2/64")
    assert netlink.IFADDR.unpack_from(v6.body)[:2] == (socket.AF_INET6, 64)


def test_default_route_takes_its_gateways_family_and_a_table_over_255_its_attribute():
    v4 = netlink.route("default", "198.18.1.1", None, None)
    family, dst_len, *_rest = netlink.RTMSG.unpack_from(v4.body)
    assert (family, dst_len) == (socket.AF_INET, 0)
    assert netlink.RTA_DST not in attrs(v4.body, netlink.RTMSG.size)
    v6 = netlink.route("default", "2001:db8::1", None, None)
    assert netlink.RTMSG.unpack_from(v6.body)[0] == socket.AF_INET6
    big = netlink.route("198.18.0.0/15", None, 3, 1000)
    fields = netlink.RTMSG.unpack_from(big.body)
    assert fields[1] == 15 and fields[4] == netlink.RT_TABLE_COMPAT
    found = attrs(big.body, netlink.RTMSG.size)
    assert struct.unpack("=I", found[netlink.RTA_TABLE])[0] == 1000
    assert struct.unpack("=I", found[netlink.RTA_OIF])[0] == 3
    assert fields[6] == netlink.RT_SCOPE_LINK  # no gateway: on the link


def test_veth_names_both_namespaces_and_indexes():
    msg = netlink.veth("p1", 5, 11, "eth0", 2, 12)
    assert netlink.IFINFO.unpack_from(msg.body)[2] == 5
    top = attrs(msg.body, netlink.IFINFO.size)
    assert top[netlink.IFLA_IFNAME] == b"p1\0"
    assert struct.unpack("=I", top[netlink.IFLA_NET_NS_FD])[0] == 11
    info = attrs(top[netlink.IFLA_LINKINFO], 0)
    assert info[netlink.IFLA_INFO_KIND] == b"veth\0"
    peer = attrs(info[netlink.IFLA_INFO_DATA], 0)[netlink.VETH_INFO_PEER]
    assert netlink.IFINFO.unpack_from(peer)[2] == 2
    peer_attrs = attrs(peer, netlink.IFINFO.size)
    assert peer_attrs[netlink.IFLA_IFNAME] == b"eth0\0"
    assert struct.unpack("=I", peer_attrs[netlink.IFLA_NET_NS_FD])[0] == 12


class Kernel:
    """A socket that acknowledges every request it is sent, refusing the sequence numbers
    in ``refuse`` with EEXIST and an extended-ack message."""

    def __init__(self, refuse=()):
        self.writes: list[list[int]] = []
        self.refuse = set(refuse)
        self._replies: list[bytes] = []

    def sendto(self, data: bytes, _addr) -> None:
        seqs, offset = [], 0
        while offset < len(data):
            length, _type, _flags, seq, _port = netlink.HEADER.unpack_from(data, offset)
            seqs.append(seq)
            offset += (length + 3) & ~3
        self.writes.append(seqs)
        for seq in seqs:
            code = -17 if seq in self.refuse else 0
            original = netlink.HEADER.pack(16, 0, 0, seq, 0)
            tlv = netlink.attr(netlink.NLMSGERR_ATTR_MSG, b"File exists here\0") if code else b""
            body = struct.pack("=i", code) + original + tlv
            self._replies.append(netlink.HEADER.pack(
                16 + len(body), netlink.NLMSG_ERROR, netlink.NLM_F_ACK_TLVS if code else 0,
                seq, 0) + body)

    def recv(self, _size: int) -> bytes:
        replies, self._replies = self._replies[:7], self._replies[7:]
        return b"".join(replies)


def test_batch_sends_in_chunks_and_waits_for_every_acknowledgement():
    kernel = Kernel()
    batch = netlink.Batch(kernel, "namespace x")
    for i in range(600):
        batch.add(netlink.link_up(i + 2, 1500))
    assert batch.send() == 600
    assert [len(w) for w in kernel.writes] == [256, 256, 88]
    assert kernel.writes[0][0] == 1 and kernel.writes[-1][-1] == 600


def test_batch_raises_the_first_refusal_with_the_request_and_the_kernels_words():
    kernel = Kernel(refuse={3, 5})
    batch = netlink.Batch(kernel, "namespace hx-a")
    for i in range(6):
        batch.add(netlink.address(2, f"198.18.0.{i + 1}/24"))
    with pytest.raises(netlink.NetlinkError) as err:
        batch.send()
    text = str(err.value)
    assert "namespace hx-a" in text and "address 198.18.0.3/24 on link 2" in text
    assert "File exists here" in text and "and 1 more" in text
    assert err.value.errno == 17


def test_run_dir_shared_reads_mountinfo():
    shared = "812 26 0:25 /netns /run/netns rw,nosuid shared:5 - tmpfs tmpfs rw\n"
    private = "812 26 0:25 /netns /run/netns rw,nosuid - tmpfs tmpfs rw\n"
    other = "30 1 0:25 / /run rw shared:5 - tmpfs tmpfs rw\n"
    assert run_dir_shared(other + shared)
    assert not run_dir_shared(other + private)
    assert not run_dir_shared(other)


def test_record_many_is_one_fsync_and_each_change_its_own_line(tmp_path, monkeypatch):
    syncs = []
    real = journal_module.os.fsync
    monkeypatch.setattr(journal_module.os, "fsync", lambda fd: (syncs.append(fd), real(fd)))
    j = Journal(tmp_path / "j.jsonl")
    node = NamespaceNode("hx-a", LocalNode())
    entries = j.record_many([("qdisc", node, {"ifname": f"eth{i}"}) for i in range(50)])
    assert len(syncs) == 1
    assert [e.seq for e in entries] == list(range(1, 51))
    again = Journal(tmp_path / "j.jsonl")
    assert [e.data["ifname"] for e in again.pending()] == [f"eth{i}" for i in range(50)]
    assert all(e.machine for e in again.pending())  # each names its machine
    # a crash mid-write tears the last line only: the others stand
    with open(tmp_path / "j.jsonl", "ab") as fh:
        fh.write(b'{"op": "do", "seq": 51, "ki')
    torn = Journal(tmp_path / "j.jsonl")
    assert len(torn.pending()) == 50 and len(torn.problems) == 1


def test_changes_in_a_namespace_are_undone_with_it_in_one_write(tmp_path, monkeypatch):
    deleted = []
    monkeypatch.setitem(journal_module._BATCH_HANDLERS, "netns",
                        lambda host, items: deleted.extend(d["name"] for d in items))
    j = Journal(tmp_path / "j.jsonl")
    host = LocalNode()
    inside = NamespaceNode("hx-a", host)
    j.record_many([("netns", host, {"name": "hx-a"}),
                   *[("qdisc", inside, {"ifname": f"eth{i}"}) for i in range(20)]])
    syncs = []
    real = journal_module.os.fsync
    monkeypatch.setattr(journal_module.os, "fsync", lambda fd: (syncs.append(fd), real(fd)))
    j.undo_all()
    assert deleted == ["hx-a"] and len(syncs) == 1
    assert j.pending() == [] and Journal(tmp_path / "j.jsonl").pending() == []


def test_changes_in_a_namespace_that_was_not_deleted_stay_pending(tmp_path, monkeypatch):
    def refuse(host, items):
        raise RuntimeError("device or resource busy")

    monkeypatch.setitem(journal_module._BATCH_HANDLERS, "netns", refuse)
    j = Journal(tmp_path / "j.jsonl")
    host = LocalNode()
    j.record_many([("netns", host, {"name": "hx-a"}),
                   ("qdisc", NamespaceNode("hx-a", host), {"ifname": "eth0"})])
    with pytest.raises(journal_module.UndoFailed, match="its namespace was not deleted"):
        j.undo_all()
    assert {e.kind for e in Journal(tmp_path / "j.jsonl").pending()} == {"netns", "qdisc"}
    assert not any(json.loads(line)["op"] == "undone"
                   for line in (tmp_path / "j.jsonl").read_text().splitlines())


def test_htb_class_is_packed_as_tc_packs_it(monkeypatch):
    from harness.net import netlink_tc

    monkeypatch.setattr(netlink_tc, "tick_in_usec", lambda: 15.625)  # 1000/64: Linux's
    msg = netlink_tc.htb_class(4, 100_000_000, 32768)
    _family, index, handle, parent, _info = netlink_tc.TCMSG.unpack_from(msg.body)
    assert (index, handle, parent) == (4, 0x10001, 0x10000)
    top = attrs(msg.body, netlink_tc.TCMSG.size)
    assert top[netlink_tc.TCA_KIND] == b"htb\0"
    options = attrs(top[netlink_tc.TCA_OPTIONS], 0)
    opt = options[netlink_tc.TCA_HTB_PARMS]
    cell_log, linklayer, _overhead, align, _mpu, rate = netlink_tc.RATESPEC.unpack_from(opt)
    assert (cell_log, linklayer, align, rate) == (3, 1, -1, 12_500_000)  # bytes per second
    buffer, cbuffer = struct.unpack_from("=II", opt, 24)
    # tc: 32768 B at 12.5 MB/s is 2621 whole microseconds, 40953 ticks (reads back 32750 B)
    assert buffer == cbuffer == 40953
    assert len(options[netlink_tc.TCA_HTB_RTAB]) == 1024
    assert netlink_tc.TCA_HTB_RATE64 not in options
    fast = attrs(attrs(netlink_tc.htb_class(4, 40_000_000_000, 10_000_000).body,
                       netlink_tc.TCMSG.size)[netlink_tc.TCA_OPTIONS], 0)
    assert struct.unpack("=Q", fast[netlink_tc.TCA_HTB_RATE64])[0] == 5_000_000_000
    assert netlink_tc.RATESPEC.unpack_from(fast[netlink_tc.TCA_HTB_PARMS])[5] == 0xFFFFFFFF


def test_fifo_sits_under_its_parent_with_its_limit():
    from harness.net import netlink_tc

    msg = netlink_tc.fifo(3, "bfifo", 30000, "1:1")
    assert netlink_tc.TCMSG.unpack_from(msg.body)[2:4] == (0x100000, 0x10001)
    top = attrs(msg.body, netlink_tc.TCMSG.size)
    assert top[netlink_tc.TCA_KIND] == b"bfifo\0"
    assert struct.unpack("=I", top[netlink_tc.TCA_OPTIONS])[0] == 30000
    assert netlink_tc.TCMSG.unpack_from(netlink_tc.fifo(3, "pfifo", 20, None).body)[3] \
        == netlink_tc.TC_H_ROOT
    with pytest.raises(ValueError):
        netlink_tc.fifo(3, "netem", 1, None)

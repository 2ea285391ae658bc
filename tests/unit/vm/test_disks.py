"""A lab node's own disks: declared in the topology, attached and capped by QEMU, set over QMP."""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest

from harness.errors import SpecError
from harness.topology.topology import DataDisk, Topology, TopologyBuilder
from harness.vm.machine import VM
from harness.vm.qemu import disk_args
from harness.vm.qmp import QmpError, qmp_commands, set_disk_rates


def server_topology(*disks: DataDisk) -> Topology:
    return (TopologyBuilder("fs").node("server", machine="srv", whole_machine=True, disks=disks)
            .node("client", machine="cli", whole_machine=True)
            .link(("server", "lan", "198.18.2.1/24"), ("client", "lan", "198.18.2.2/24"))
            .build())


def test_disks_survive_the_archive_round_trip():
    topo = server_topology(DataDisk("nfs", 512, 110, 30), DataDisk("pfs", 2048, 500, None))
    again = Topology.from_dict(json.loads(topo.to_json()))
    assert again == topo
    assert again.node("server").disks[1] == DataDisk("pfs", 2048, 500.0, None)
    assert "disk nfs: 512 MiB, read 110 MB/s, write 30 MB/s" in topo.describe()
    assert "disk pfs: 2048 MiB, read 500 MB/s" in topo.describe()


@pytest.mark.parametrize("disk, words", [
    (DataDisk("Bad_Name"), "not valid"),
    (DataDisk("d", size_mib=10), "size_mib=10"),
    (DataDisk("d", read_mbyte_s=0), "read rate 0"),
    (DataDisk("d", write_mbyte_s=1e9), "write rate"),
])
def test_bad_disks_are_refused(disk, words):
    with pytest.raises(SpecError, match=words):
        server_topology(disk)


def test_only_a_whole_machine_node_has_disks():
    with pytest.raises(SpecError, match="has disks but is a namespace"):
        TopologyBuilder("t").node("a", disks=(DataDisk("d"),)).node("b").link(
            ("a", "e", "198.18.1.1/24"), ("b", "e", "198.18.1.2/24")).build()
    with pytest.raises(SpecError, match="names a disk twice"):
        server_topology(DataDisk("d"), DataDisk("d"))


def test_scaling_keeps_the_disk_to_link_ratio():
    disk = DataDisk("nfs", 512, 110, 30).scaled(0.1)
    assert disk.read_mbyte_s == pytest.approx(11) and disk.write_mbyte_s == pytest.approx(3)
    assert DataDisk("x", read_mbyte_s=None).scaled(0.1).read_mbyte_s is None


def test_qemu_attaches_each_disk_capped_and_named_by_serial():
    args = disk_args(((DataDisk("nfs", 512, 110, 30), "/b/disk-nfs.raw"),
                      (DataDisk("pfs"), "/b/disk-pfs.raw")))
    assert args[1].startswith("file=/b/disk-nfs.raw,if=none,id=disk0,format=raw")
    assert "throttling.bps-read=110000000" in args[1]
    assert "throttling.bps-write=30000000" in args[1]
    assert "throttling" not in args[5]
    assert args[3] == "virtio-blk-pci,drive=disk0,id=vdisk0,serial=harness-nfs"
    assert args[7].endswith("serial=harness-pfs")
    with pytest.raises(SpecError, match="two disks share a name"):
        VM("v", disks=(DataDisk("d"), DataDisk("d"))).validate()


class FakeQmp:
    """A QMP server on a Unix socket: greeting, an event before each reply, one error."""

    def __init__(self, path: str, refuse: str = ""):
        self.path, self.refuse, self.received = path, refuse, []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(1)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn, conn.makefile("rw") as stream:
            stream.write(json.dumps({"QMP": {"version": {}, "capabilities": []}}) + "\n")
            stream.flush()
            for line in stream:
                msg = json.loads(line)
                self.received.append(msg)
                stream.write(json.dumps({"event": "NIC_RX_FILTER_CHANGED"}) + "\n")
                if msg["execute"] == self.refuse:
                    reply = {"error": {"class": "GenericError", "desc": "Device 'x' not found"}}
                else:
                    reply = {"return": {}}
                stream.write(json.dumps(reply) + "\n")
                stream.flush()


def test_disk_rates_are_set_over_qmp(tmp_path):
    server = FakeQmp(str(tmp_path / "qmp.sock"))
    set_disk_rates(server.path, {"vdisk0": (11.0, 3.0), "vdisk1": (None, None)})
    server.thread.join(5)
    names = [m["execute"] for m in server.received]
    assert names == ["qmp_capabilities", "block_set_io_throttle", "block_set_io_throttle"]
    first = server.received[1]["arguments"]
    assert (first["id"], first["bps_rd"], first["bps_wr"], first["bps"]) == \
        ("/machine/peripheral/vdisk0/virtio-backend", 11_000_000, 3_000_000, 0)
    assert server.received[2]["arguments"]["bps_rd"] == 0  # uncapped


def test_a_refused_command_and_a_missing_socket_are_clear_errors(tmp_path):
    server = FakeQmp(str(tmp_path / "qmp.sock"), refuse="block_set_io_throttle")
    with pytest.raises(QmpError, match="refused block_set_io_throttle: Device 'x' not found"):
        qmp_commands(server.path, [("block_set_io_throttle", {})])
    with pytest.raises(QmpError, match="did the VM exit"):
        qmp_commands(os.fspath(tmp_path / "none.sock"), [])

"""QEMU's view of a stalled wire NIC's queues (harness.vm.queues), against a stand-in QMP
socket that answers as QEMU 7.2's x-query-virtio* commands do (qapi/virtio.json)."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from harness.vm.queues import nic_view, reading
from harness.vm.stall_evidence import stall_evidence
from harness.vm.txstall import WiredConsole

MGMT = "/machine/peripheral-anon/device[3]/virtio-backend"
WIRE = "/machine/peripheral-anon/device[4]/virtio-backend"
LAB = Path(__file__).parent / "data" / "s1-a416eb-lab-console.txt"


EVENT_IDX = {"transports": ["VIRTIO_RING_F_EVENT_IDX: Used & avail. event fields enabled"]}


def _fake_qmp(path: str, tx: dict, avail_idx: int, broken: bool = False, mac_known=True,
              memory: dict | None = None):
    def answer(command: str, args: dict):
        if command == "qmp_capabilities":
            return {}
        if command == "x-query-virtio":
            return [{"path": MGMT, "name": "virtio-net"}, {"path": "/x/virtio-backend",
                                                            "name": "virtio-9p"},
                    {"path": WIRE, "name": "virtio-net"}]
        if command == "qom-get":
            if not mac_known:
                return None
            return "52:54:00:12:34:56" if args["path"] == MGMT else "52:54:00:5e:00:01"
        if command == "x-query-virtio-status":
            return {"name": "virtio-net", "broken": broken, "guest-features": EVENT_IDX}
        if command == "x-query-virtio-queue-status":
            return tx if args["queue"] == 1 else {"last-avail-idx": 5, "used-idx": 5, "inuse": 0}
        if command == "x-query-virtio-queue-element":
            return {"avail": {"flags": 0, "idx": avail_idx, "ring": 3}, "used": {"flags": 0,
                                                                               "idx": 0}}
        if command == "human-monitor-command":  # xp /1hx ADDR, as QEMU 7.2's HMP prints it
            address = int(args["command-line"].split()[-1], 16)
            return f"{address:016x}: {(memory or {})[address]:#06x}\r\n"
        raise AssertionError(command)

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn, conn.makefile("rw") as stream:
                stream.write(json.dumps({"QMP": {"version": {}}}) + "\n")
                stream.flush()
                for line in stream:
                    message = json.loads(line)
                    result = answer(message["execute"], message.get("arguments", {}))
                    reply = ({"error": {"desc": "no such property"}} if result is None
                             else {"return": result})
                    stream.write(json.dumps(reply) + "\n")
                    stream.flush()

    threading.Thread(target=serve, daemon=True).start()
    return server


@pytest.mark.parametrize("tx, avail, broken, says", [
    ({"last-avail-idx": 100, "used-idx": 100, "inuse": 0}, 130, False, "not taken 30 buffers"),
    ({"last-avail-idx": 65530, "used-idx": 65530, "inuse": 0}, 4, False, "not taken 10 buffers"),
    ({"last-avail-idx": 100, "used-idx": 100, "inuse": 0}, 100, False, "guest missed"),
    ({"last-avail-idx": 100, "used-idx": 99, "inuse": 1}, 100, False, "in flight"),
    ({"last-avail-idx": 100, "used-idx": 100, "inuse": 0}, 130, True, "device broken"),
])
def test_the_wire_nics_queues_say_which_side_lost_the_stalled_queue(tmp_path, tx, avail,
                                                                    broken, says):
    sock = str(tmp_path / "qmp.sock")
    server = _fake_qmp(sock, tx, avail, broken)
    try:
        view = nic_view(sock, "52:54:00:5e:00:01")
    finally:
        server.close()
    assert view["path"] == WIRE and view["mac"] == "52:54:00:5e:00:01"  # not the management NIC
    assert says in view["reading"]
    assert view["tx"] == tx and view["status"]["broken"] is broken


def test_without_the_mac_every_virtio_nic_is_read_and_without_qmp_nothing_breaks(tmp_path):
    sock = str(tmp_path / "qmp.sock")
    server = _fake_qmp(sock, {"last-avail-idx": 1, "used-idx": 1, "inuse": 0}, 1, mac_known=False)
    try:
        view = nic_view(sock, "52:54:00:5e:00:01")
    finally:
        server.close()
    assert view["mac"] is None and [c["path"] for c in view["candidates"]] == [MGMT, WIRE]
    gone = nic_view(str(tmp_path / "no.sock"), "52:54:00:5e:00:01")
    assert "QMP failed" in gone["reading"] and "error" in gone
    assert reading({}) == "unknown (no queue status)"


def test_a_stall_keeps_qemus_view_of_the_vms_wire_queues(tmp_path):
    sock = str(tmp_path / "qmp.sock")
    server = _fake_qmp(sock, {"last-avail-idx": 100, "used-idx": 100, "inuse": 0}, 164)
    consoles = [WiredConsole("s1-lab", str(LAB), ("wire",), qmp_socket=sock,
                             macs=("52:54:00:5e:00:01",))]
    try:
        files = stall_evidence("s1-lab", consoles, [])
    finally:
        server.close()
    views = json.loads(files["wire-stall-s1-lab-queues.json"])
    assert "not taken 64 buffers" in views["52:54:00:5e:00:01"]["reading"]
    assert "NETDEV WATCHDOG" in files["wire-stall-s1-lab-console.txt"]


RING = {"vring-num": 256, "vring-used": 0x6000, "vring-avail": 0x5000}


@pytest.mark.parametrize("avail_event, says", [
    (6375, "avail_event 6375 lies within them: a kick was due and QEMU did not act on it"),
    (6400, "avail_event 6400 lies within them"),
    (6300, "avail_event 6300 lies outside them (6375..6613): QEMU never re-armed it"),
])
def test_a_lost_kick_says_whether_qemu_armed_its_event_index(tmp_path, avail_event, says):
    """The 2026-11-30 stalls (benchmarks/wire_stall.md section 5): 238 buffers never read;
    QEMU's avail_event, after the used ring's 256 elements, says which side lost the kick."""
    sock = str(tmp_path / "qmp.sock")
    tx = {"last-avail-idx": 6375, "used-idx": 6375, "inuse": 0, **RING}
    memory = {0x6000 + 4 + 8 * 256: avail_event, 0x5000 + 4 + 2 * 256: 6374}
    server = _fake_qmp(sock, tx, 6613, memory=memory)
    try:
        view = nic_view(sock, "52:54:00:5e:00:01")
    finally:
        server.close()
    assert view["tx_events"] == {"avail_event": avail_event, "used_event": 6374}
    assert "not taken 238 buffers" in view["reading"] and says in view["reading"]

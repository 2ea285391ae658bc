"""QEMU's machine protocol (QMP) for the one thing a lab changes in a running VM: disk rates.

A lab's links are scaled to what its VMs carry only after they have booted
(:func:`harness.lab.placement.fit_to_ceiling`); its disks must keep their ratio to
the links (:class:`harness.topology.topology.DataDisk`), so their caps are set then,
with ``block_set_io_throttle``. QMP speaks JSON lines over the VM's Unix socket
(``-qmp unix:PATH,server=on,wait=off``): a greeting, ``qmp_capabilities``, then
commands; asynchronous events may arrive between replies and are skipped.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from ..errors import HarnessError


class QmpError(HarnessError):
    """QEMU refused a QMP command, or its socket did not answer."""


def _reply(stream) -> dict:
    while True:
        line = stream.readline()
        if not line:
            raise QmpError("QEMU closed its QMP socket", "did the VM exit? see its console log")
        message = json.loads(line)
        if "event" not in message:
            return message


def qmp_commands(path: str, commands: list[tuple[str, dict[str, Any]]],
                 timeout: float = 10.0) -> list[Any]:
    """Run ``commands`` (name, arguments) in order on the QMP socket ``path``; their returns."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            stream = sock.makefile("rw", encoding="utf-8", newline="\n")
            if "QMP" not in _reply(stream):
                raise QmpError(f"{path} is not a QMP socket (no greeting)")
            out = []
            for name, arguments in [("qmp_capabilities", {}), *commands]:
                stream.write(json.dumps({"execute": name, "arguments": arguments}) + "\n")
                stream.flush()
                reply = _reply(stream)
                if "error" in reply:
                    raise QmpError(f"QEMU refused {name}: {reply['error'].get('desc', reply)}")
                out.append(reply.get("return"))
            return out[1:]
    except (OSError, ValueError) as exc:
        raise QmpError(f"QMP socket {path}: {exc}", "did the VM exit? see its console log") \
            from None


def throttle_arguments(device_id: str, read_bytes_s: int, write_bytes_s: int) -> dict:
    """``block_set_io_throttle`` for one device: byte rates capped (0 = uncapped), no IOPS cap.

    ``id`` names the guest device; for a ``virtio-blk-pci`` that is the virtio device
    inside the PCI proxy (the proxy itself has no block backend), by its QOM path."""
    return {"id": f"/machine/peripheral/{device_id}/virtio-backend",
            "bps": 0, "bps_rd": int(read_bytes_s), "bps_wr": int(write_bytes_s),
            "iops": 0, "iops_rd": 0, "iops_wr": 0}


def set_disk_rates(qmp_socket: str, rates: dict[str, tuple[float | None, float | None]]) -> None:
    """Cap each device (QEMU id -> (read, write) MB/s, None uncapped) in one QMP session."""
    qmp_commands(qmp_socket, [
        ("block_set_io_throttle",
         throttle_arguments(device, int((read or 0) * 1e6), int((write or 0) * 1e6)))
        for device, (read, write) in rates.items()])

"""What a run keeps when a wire of its lab stalled (:mod:`.txstall` finds the stall): the stalled
VM's console, what its QEMU wrote, and QEMU's view of its wire NICs' queues (:mod:`.queues`),
as raw files beside the run; and, when a run in a VM lab failed otherwise, every VM's console
(a tool that timed out may have met a stall too short for the watchdog to report).
Read before the VM stops; one job, apart from the watch."""

from __future__ import annotations

import json

from .queues import nic_view


def _tail(path: str, limit: int = 256 << 10) -> str | None:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def stall_evidence(vm: str, consoles, entries) -> dict[str, str]:
    """Raw files for a run whose wire stalled in ``vm``: its console, what its QEMU wrote
    (found by the journal ``entries`` of its process) and QEMU's view of its wire NICs'
    queues (:mod:`.queues`). All go with the VM; together they tell a device QEMU declared
    broken (``virtio_error``: its reason, then no queue of the NIC is served again), buffers
    QEMU never took, and completions the guest missed (benchmarks/wire_stall.md)."""
    out = {}
    for console in consoles:
        if console.vm != vm:
            continue
        text = _tail(console.console_log)
        if text:
            out[f"wire-stall-{vm}-console.txt"] = text
        if console.qmp_socket and console.macs:
            views = {mac: nic_view(console.qmp_socket, mac) for mac in console.macs}
            out[f"wire-stall-{vm}-queues.json"] = json.dumps(views, indent=1, sort_keys=True)
    for entry in entries:
        data = entry.data or {}
        if f"harness-{vm}," in str(data.get("command", "")) and data.get("log"):
            text = _tail(data["log"])
            if text is not None:
                out[f"wire-stall-{vm}-qemu.txt"] = text or "(QEMU wrote nothing)\n"
    return out


def failure_consoles(consoles) -> dict[str, str]:
    """Raw files for a run in a VM lab that failed without a stall: each VM's console."""
    out = {}
    for console in consoles:
        text = _tail(console.console_log)
        if text:
            out[f"failed-{console.vm}-console.txt"] = text
    return out

"""QEMU's own view of a wire NIC's virtqueues, over QMP: which side lost a stalled TX queue.

A guest's TX watchdog (:mod:`.txstall`) only says the queue stayed full. QEMU 7.2's
``x-query-virtio-status`` (``broken``), ``x-query-virtio-queue-status`` (``last-avail-idx``,
``used-idx``, ``inuse``) and ``x-query-virtio-queue-element`` (the guest's ``avail.idx``) of
the TX queue (queue 1 of pair 0) tell three cases apart (benchmarks/wire_stall.md):

1. the device is broken: ``virtio_error()`` named a reason on QEMU's stderr, no queue of
   the NIC is served again, only a device reset helps;
2. buffers the guest made available that QEMU never took: the device side stopped
   (a lost kick, or a send parked for good in the net queue);
3. every buffer taken and returned: the guest missed the completion (its interrupt or its
   TX NAPI); the guest's ``ip link set down/up`` re-polls it.

Case 2 has two sides, told apart by the split ring's event words, read from guest memory
(HMP ``xp``; QMP shows neither): QEMU's ``avail_event`` (after the used ring) says from
which avail index on the guest must kick. If the buffers QEMU never took crossed it, a kick
was due and QEMU did not act on it; if not, QEMU never re-armed it and the guest had no
reason to kick.
"""

from __future__ import annotations

import re

from .qmp import QmpError, qmp_commands

_QUERIES = (("status", "x-query-virtio-status", {}),
            ("rx", "x-query-virtio-queue-status", {"queue": 0}),
            ("tx", "x-query-virtio-queue-status", {"queue": 1}),
            ("tx_head", "x-query-virtio-queue-element", {"queue": 1}))


def reading(view: dict) -> str:
    """Which of the three cases a device's :func:`device_view` shows."""
    status, tx, head = view.get("status", {}), view.get("tx", {}), view.get("tx_head", {})
    if status.get("broken"):
        return "device broken (virtio_error; reason on QEMU's stderr): only a device reset helps"
    last, used = tx.get("last-avail-idx"), tx.get("used-idx")
    avail = (head.get("avail") or {}).get("idx") if isinstance(head, dict) else None
    if last is None:
        return "unknown (no queue status)"
    if avail is not None and (avail - last) % 65536:
        waiting = (avail - last) % 65536
        said = (f"QEMU has not taken {waiting} buffers the guest made available "
                "(device side stopped: a lost kick, or a send parked for good)")
        event = (view.get("tx_events") or {}).get("avail_event")
        if event is None or "EVENT_IDX" not in str(status.get("guest-features")):
            return said
        if (event - last) % 65536 < waiting:
            return (f"{said}; QEMU's avail_event {event} lies within them: a kick was due "
                    "and QEMU did not act on it")
        return (f"{said}; QEMU's avail_event {event} lies outside them ({last}..{avail}): "
                "QEMU never re-armed it, the guest had no reason to kick")
    if used == last and not tx.get("inuse"):
        return "QEMU took and returned every buffer: the guest missed the completion"
    return "QEMU holds buffers in flight (inuse > 0): a send parked in the net queue"


def _word(hmp_text: str) -> int:
    """The 16-bit word HMP ``xp /1hx`` printed (``ADDRESS: 0xWORD``)."""
    found = re.search(r":\s*0x([0-9a-fA-F]+)", hmp_text or "")
    if not found:
        raise QmpError(f"HMP xp said {hmp_text!r}")
    return int(found.group(1), 16)


def event_words(qmp_socket: str, queue: dict) -> dict:
    """A split ring's two event-index words from guest memory: ``avail_event`` (QEMU's,
    after the used ring's ``num`` elements) and ``used_event`` (the guest's, after the avail
    ring's); ``queue`` is an ``x-query-virtio-queue-status`` answer."""
    num, used, avail = (queue.get(k) for k in ("vring-num", "vring-used", "vring-avail"))
    if not (num and used and avail):
        return {"error": "no ring addresses in the queue status"}
    reads = [("human-monitor-command", {"command-line": f"xp /1hx {address:#x}"})
             for address in (used + 4 + 8 * num, avail + 4 + 2 * num)]
    try:  # one QMP session for both words
        avail_event, used_event = (_word(text) for text in qmp_commands(qmp_socket, reads))
        return {"avail_event": avail_event, "used_event": used_event}
    except QmpError as exc:
        return {"error": exc.message}


def device_view(qmp_socket: str, path: str) -> dict:
    """Status and the queues of pair 0 of the virtio device at QOM ``path``, with its
    :func:`reading`; a query QEMU refused is kept as its error."""
    out: dict = {"path": path}
    for key, command, args in _QUERIES:
        try:
            (out[key],) = qmp_commands(qmp_socket, [(command, {"path": path, **args})])
        except QmpError as exc:
            out[key] = {"error": exc.message}
    out["tx_events"] = event_words(qmp_socket, out["tx"])
    out["reading"] = reading(out)
    return out


def nic_view(qmp_socket: str, mac: str) -> dict:
    """:func:`device_view` of the virtio-net device with ``mac``; of every virtio-net device
    (``candidates``) when QOM does not tell which one has it."""
    try:
        (devices,) = qmp_commands(qmp_socket, [("x-query-virtio", {})])
        nets = [d["path"] for d in devices if d.get("name") == "virtio-net"]
        macs = {}
        for path in nets:
            try:
                (macs[path],) = qmp_commands(qmp_socket, [("qom-get", {"path": path,
                                                                      "property": "mac"})])
            except QmpError:
                macs[path] = None
        mine = [path for path in nets if macs[path] == mac]
        if mine:
            return {"mac": mac, **device_view(qmp_socket, mine[0])}
        return {"mac": None, "reading": f"no virtio-net device with MAC {mac}: see candidates",
                "candidates": [{"mac": macs[p], **device_view(qmp_socket, p)} for p in nets]}
    except QmpError as exc:
        return {"error": exc.message, "reading": "unknown (QMP failed)"}

"""How QEMU builds a lab's VM wire: the netdev that carries its frames, and the NIC's options.

The default, ``dgram``, is what every measurement so far used: each frame one UDP datagram
between two loopback ports, no backpressure (a frame the receiving QEMU does not read in
time is dropped by the host's socket buffer). The others exist to study the wire's TX
stall (``benchmarks/wire_stall.py``, findings in docs/measurements.md); each changes what a
run measures, so a study that would use one by default says so in a registration change:

* ``stream``: the frames over one TCP connection on 127.0.0.1 (4-byte length, then the
  frame; QEMU turns Nagle off). One VM's QEMU listens (``listen``), the other connects to
  it. Lossless, with backpressure: when the peer QEMU reads too slowly, the sender's
  virtio-net holds the guest's TX queue (its async path) instead of dropping frames. QEMU
  7.2's client connects *once* (``reconnect`` came in 8.0): :func:`servers_not_listening`
  lets the client's QEMU start only once the server listens, and a server that restarts
  leaves the wire down (the lab's verification then fails).
* ``event_idx=off`` (either backend): the virtio NIC without ``VIRTIO_RING_F_EVENT_IDX``,
  so guest and device suppress notifications with the ring flags instead of the event
  indexes; more interrupts and kicks per frame (guest CPU, under TCG).

``HARNESS_VM_WIRE`` (e.g. ``stream`` or ``dgram,event_idx=off``) sets the kind of every
wire of a lab's VMs; the boot record (``BootRecord.wire``) and the journalled QEMU
command line say which one a run had.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import SpecError

WIRE_ENV = "HARNESS_VM_WIRE"
BACKENDS = ("dgram", "stream")
_SWITCH = {"on": True, "off": False}


@dataclass(frozen=True)
class WireKind:
    backend: str = "dgram"
    event_idx: bool = True  # False: the NIC gets event_idx=off

    def validate(self) -> None:
        if self.backend not in BACKENDS:
            raise SpecError(f"VM wire backend {self.backend!r} is not one of {BACKENDS}",
                            f"set {WIRE_ENV} to e.g. 'dgram' (the default), 'stream' or "
                            "'dgram,event_idx=off'")

    def describe(self) -> str:
        """The text :meth:`parse` reads back: ``dgram``, ``stream,event_idx=off``, ..."""
        return self.backend + ("" if self.event_idx else ",event_idx=off")

    @classmethod
    def parse(cls, text: str) -> WireKind:
        words = [w.strip() for w in text.strip().lower().split(",") if w.strip()]
        if not words:
            return cls()
        options = {}
        for word in words[1:]:
            key, _, value = word.partition("=")
            if key != "event_idx" or value not in _SWITCH:
                raise SpecError(f"VM wire option {word!r} is not understood",
                                "the one NIC option is event_idx=on|off, e.g. "
                                "'stream,event_idx=off'")
            options[key] = _SWITCH[value]
        kind = cls(words[0], **options)
        kind.validate()
        return kind


def wire_kind_from_env(environ=None) -> WireKind:
    """The kind ``HARNESS_VM_WIRE`` asks for; the default when it is unset or empty."""
    return WireKind.parse((os.environ if environ is None else environ).get(WIRE_ENV, ""))


def netdev_arg(index: int, wire) -> str:
    """``-netdev`` of ``wire`` (a :class:`harness.vm.machine.Wire`), named ``wire<index>``."""
    if wire.kind.backend == "stream":
        if wire.listen:
            return (f"stream,id=wire{index},server=on,addr.type=inet,addr.host=127.0.0.1,"
                    f"addr.port={wire.local_port}")
        return (f"stream,id=wire{index},server=off,addr.type=inet,addr.host=127.0.0.1,"
                f"addr.port={wire.remote_port}")
    return (f"dgram,id=wire{index},local.type=inet,local.host=127.0.0.1,"
            f"local.port={wire.local_port},remote.type=inet,"
            f"remote.host=127.0.0.1,remote.port={wire.remote_port}")


def device_arg(index: int, wire) -> str:
    """``-device`` of ``wire``'s NIC: found by its MAC in the guest."""
    return (f"virtio-net-pci,netdev=wire{index},mac={wire.mac},romfile="
            + ("" if wire.kind.event_idx else ",event_idx=off"))


def _listening_ports(proc_net_tcp: str) -> set[int]:
    """TCP ports in LISTEN (state 0A) on 127.0.0.1 or any address, from ``/proc/net/tcp``."""
    ports = set()
    try:
        with open(proc_net_tcp) as fh:
            lines = fh.readlines()[1:]
    except FileNotFoundError:
        return ports
    for line in lines:
        fields = line.split()
        if len(fields) > 3 and fields[3] == "0A":
            address, _, port = fields[1].partition(":")
            if address in ("0100007F", "00000000"):
                ports.add(int(port, 16))
    return ports


def servers_not_listening(wires, proc_net_tcp: str = "/proc/net/tcp") -> list[int]:
    """Ports of the ``stream`` wires among ``wires`` that this VM connects to and that no
    QEMU listens on yet (empty: the VM may start)."""
    wanted = [w.remote_port for w in wires if w.kind.backend == "stream" and not w.listen]
    if not wanted:
        return []
    up = _listening_ports(proc_net_tcp)
    return [port for port in wanted if port not in up]

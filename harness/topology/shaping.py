"""How a link's rate, delay, loss and queue limit become qdiscs on each egress.

The plan is data (archived with the run) so every backend realises exactly
the same thing:

* rate only:            htb root 1: -> class 1:1 (rate, ceil, burst)
* rate + queue limit:   ... -> pfifo/bfifo 10: under 1:1 (the bottleneck buffer)
* rate + delay/loss:    ... -> netem 10: under 1:1 (delay line after the shaper)
* delay/loss, no rate:  netem root

A link with ``shaper="serialise"`` gets tbf root 1: instead of htb (children
the same, under 1:1): see :data:`PEAK_EXCESS` for why.

A link with ``shaper="netem"`` gets one netem root 10: carrying the rate, the delay and
the loss, its limit the queue (packets, the delay line included). netem schedules each
frame's departure at ``max(arrival + delay, the previous frame's departure) + size / rate``
on the kernel's clock: a FIFO wire with its propagation delay, exactly. A token bucket
(htb, tbf) meters the rate by timers instead and banks at most its bucket while a timer
is late; in a TCG VM, whose vCPUs and QEMU threads share the host's cores with the
other VM's, a backlogged htb with a 32 KB bucket (3.2 ms at S2's 82 Mbit/s) carried
0.93-0.955 of its rate while TCP held 2-4 BDPs in flight and a standing queue of
70-240 ms (S2's WAN, 2026-11-29; docs/studies/s2.md). netem's scheduled departures
come due during such a stall and leave when the machine runs again: the link loses
no time, and since no bucket fills while the link is idle, nothing leaves faster
than the rate after idle either.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .topology import Link

# htb needs a bucket of at least ~1 ms worth of bytes at the shaped rate, or
# it falls short of the rate (PLATFORM.md: burst 1600 B gave 80 of 100 Mbit/s).
BURST_SECONDS = 0.002
MIN_BURST_BYTES = 32 * 1024

# "serialise": tbf with a peak rate just above the rate and a peak bucket of two frames.
# htb's bucket (>= 32 KB) refills while a direction is idle, e.g. during the other
# direction's turn in a ping-pong, so a message up to the bucket leaves at once: S0's
# 100 Mbit/s links read ~190 Mbit/s for a 16 KB ping-pong (size / half round trip), which
# no wire can carry. With the peak bucket PEAK_FRAMES frames deep, frames leave at the
# wire's pace once those have gone. Measured on S0's lab (100 Mbit/s, offloads off, this
# 2-core host, 2026-11-26): a one-frame peak bucket streamed only 80 Mbit/s, because each
# frame's timer fires ~30 us late and a one-frame bucket cannot bank the lost time; two
# frames streamed 95.7 Mbit/s (the payload rate, 100 x 1448/1514 = 95.6) and a 16 KB
# ping-pong read 112 Mbit/s (htb: ~190): the first two frames of a message leave at once,
# which the physical bound of a ping-pong allows for (harness.studies.s0.validity). tbf
# wants the peak rate strictly above the rate; 0.1 % above is far below the 2 % slack of
# the physical bounds. The queue holds 1000 frames, the kernel's txqueuelen default
# (what htb's default leaf, pfifo_fast, holds).
PEAK_EXCESS = 0.001
PEAK_FRAMES = 2
QUEUE_FRAMES = 1000
ETHERNET_HEADER = 14  # tbf counts the frame (skb->len) without preamble or FCS


@dataclass(frozen=True)
class EgressPlan:
    """Qdiscs for one direction of a link (applied on the sending interface)."""

    rate_bit: int | None
    burst_bytes: int | None
    delay_us: int
    loss_pct: float
    fifo: str | None  # "pfifo" | "bfifo" | None
    fifo_limit: int | None
    netem_limit: int | None
    # Subtracted from the netem delay: the host's own latency on the link, measured
    # when the lab is built (see Lab.calibrate_delays), so the link's RTT is as asked.
    delay_trim_us: int = 0
    kind: str = "htb"  # root shaper: "htb", "tbf" for a serialising link, "netem" (its own rate)
    peak_bit: int | None = None  # tbf: peak rate (bit/s)
    minburst_bytes: int | None = None  # tbf: the peak bucket (PEAK_FRAMES frames)
    limit_bytes: int | None = None  # tbf: its queue

    @property
    def netem_delay_us(self) -> int:
        return max(0, self.delay_us - self.delay_trim_us)

    @property
    def empty(self) -> bool:
        return self.rate_bit is None and not self.delay_us and not self.loss_pct

    @property
    def netem(self) -> bool:
        return bool(self.delay_us or self.loss_pct) or self.kind == "netem"

    def to_dict(self) -> dict:
        return asdict(self)

    def queue_record(self) -> dict | None:
        """The bottleneck queue of a shaped, delayed egress in full frames (MTU 1500), the
        smallest a bulk flow sends: netem's limit holds the one-way delay line and the queue
        behind the shaper, so the queue is the limit less the frames on the line; in BDPs of
        the link's round trip (twice this delay). The classic rule for one TCP flow to keep a
        link busy through a loss is a queue of at least one BDP. None: no rate or no delay."""
        if self.rate_bit is None or not self.delay_us or self.netem_limit is None:
            return None
        frame = 1500 + ETHERNET_HEADER
        rate = self.rate_bit / 8
        on_line = rate * self.delay_us / 1e6 / frame
        queue = self.netem_limit - on_line  # a fifo is not realised beside netem (tc_commands)
        bdp = rate * 2 * self.delay_us / 1e6
        return {"limit_packets": self.netem_limit, "delay_line_frames": round(on_line, 1),
                "queue_bytes": round(queue * frame), "bdp_bytes": round(bdp),
                "queue_bdps": round(queue * frame / bdp, 2), "rule": "at least one BDP"}

    def tc_commands(self, dev: str) -> list[list[str]]:
        """The same plan as `tc` argument lists (for hosts reached by commands)."""
        cmds: list[list[str]] = []
        parent = ["root"]
        if self.kind == "netem":
            return [self._netem_command("add", dev, ["root"])]
        if self.rate_bit is not None and self.kind == "tbf":
            cmds.append(["qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf",
                         "rate", f"{self.rate_bit}bit", "burst", f"{self.burst_bytes}b",
                         "peakrate", f"{self.peak_bit}bit",
                         "minburst", f"{self.minburst_bytes}b", "limit", f"{self.limit_bytes}b"])
            parent = ["parent", "1:1"]
        elif self.rate_bit is not None:
            cmds.append(["qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1"])
            cmds.append(["class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                         "rate", f"{self.rate_bit}bit", "ceil", f"{self.rate_bit}bit",
                         "burst", f"{self.burst_bytes}b", "cburst", f"{self.burst_bytes}b"])
            parent = ["parent", "1:1"]
        if self.netem:
            cmds.append(self._netem_command("add", dev, parent))
        elif self.fifo:
            cmds.append(["qdisc", "add", "dev", dev, *parent, "handle", "10:", self.fifo,
                         "limit", str(self.fifo_limit)])
        return cmds


    def netem_change_command(self, dev: str) -> list[str]:
        """`tc` arguments that set this plan's netem (e.g. after a delay trim) in place."""
        parent = ["parent", "1:1"] if self.rate_bit is not None and self.kind != "netem" else ["root"]
        return self._netem_command("change", dev, parent)

    def _netem_command(self, verb: str, dev: str, parent: list[str]) -> list[str]:
        netem = ["qdisc", verb, "dev", dev, *parent, "handle", "10:", "netem"]
        if self.delay_us:
            netem += ["delay", f"{self.netem_delay_us}us"]
        if self.loss_pct:
            netem += ["loss", f"{self.loss_pct}%"]
        if self.kind == "netem" and self.rate_bit is not None:
            netem += ["rate", f"{self.rate_bit}bit"]
        return netem + ["limit", str(self.netem_limit)]


def plan_egress(link: Link) -> EgressPlan:
    rate_bit = int(link.rate_mbit * 1e6) if link.rate_mbit is not None else None
    wire = rate_bit is not None and link.shaper == "netem"
    burst = None
    if rate_bit is not None and not wire:
        burst = max(MIN_BURST_BYTES, int(rate_bit / 8 * BURST_SECONDS))
    fifo, fifo_limit = None, None
    if link.queue_packets is not None:
        fifo, fifo_limit = "pfifo", link.queue_packets
    elif link.queue_bytes is not None:
        fifo, fifo_limit = "bfifo", link.queue_bytes
    netem_limit = None
    if link.delay_ms or link.loss_pct or wire:
        if link.queue_packets is not None and wire:
            # netem's limit holds the frames on the delay line too: the queue comes on top
            netem_limit = link.queue_packets + math.ceil(
                rate_bit / 8 * link.delay_ms / 1000 / (link.mtu + ETHERNET_HEADER))
        elif link.queue_packets is not None:
            netem_limit = link.queue_packets
        else:
            # The delay line must hold a bandwidth-delay product of packets, twice over.
            bdp_packets = 0
            if rate_bit is not None:
                bdp_packets = math.ceil(rate_bit / 8 * link.delay_ms / 1000 / link.mtu)
            netem_limit = max(1000, 2 * bdp_packets)
    serialise = rate_bit is not None and link.shaper == "serialise"
    frame = link.mtu + ETHERNET_HEADER
    return EgressPlan(rate_bit, burst, int(round(link.delay_ms * 1000)), link.loss_pct,
                      None if wire else fifo, None if wire else fifo_limit, netem_limit,
                      kind="netem" if wire else "tbf" if serialise else "htb",
                      peak_bit=int(rate_bit * (1 + PEAK_EXCESS)) if serialise else None,
                      minburst_bytes=PEAK_FRAMES * frame if serialise else None,
                      limit_bytes=QUEUE_FRAMES * frame if serialise else None)

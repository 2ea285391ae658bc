"""Physical bounds a measured point must respect before it may count for a claim.

A referee throws out a point that could not have happened: a TCP goodput above
what its wire can carry, a CPU share above 100 % per thread, a fan-in point in
which no round completed. Such a point is *invalid*: it is shown with its
numbers and the bound it broke, and no claim is ever decided by it
(:func:`harness.claims.judge` turns any invalid point under an estimate into the
outcome ``invalid``).

The wire's payload rate: a shaper (htb, tbf) counts each Ethernet frame without
preamble and FCS, 1514 bytes for a 1500-byte MTU, while TCP with timestamps
carries 1448 payload bytes in it (20 B IP, 20 B TCP, 12 B timestamp option).
So a TCP flow over a link shaped to R Mbit/s can carry at most
R x 1448 / 1514 = 0.956 R of goodput.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ETHERNET_HEADER = 14  # bytes a Linux shaper counts beyond the IP packet (no preamble, no FCS)
IP_TCP_HEADERS = 40  # IPv4 20 + TCP 20
TCP_TIMESTAMPS = 12  # the timestamp option Linux sends by default (with its padding)
#: How far above a bound a measured rate may read before it counts as impossible: a rate
#: is bytes over a time read by the tool's own clock, and iperf3's and the shaper's clocks
#: differ by their sampling (intervals of 0.1-1 s whose ends are not the first and last
#: byte's). Fixed once for all studies, before any outcome, never tuned per claim.
SLACK = 0.02


@dataclass(frozen=True)
class Invalid:
    """One physically impossible point: where, what, the value, the bound it broke, and why."""

    point: str
    quantity: str
    value: float
    bound: float
    unit: str
    why: str
    breaks: str = ">"  # how the value stands to the bound: "> bound" (too high), "< bound"

    def text(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        return (f"{self.point}: {self.quantity} {_num(self.value)}{unit} {self.breaks} "
                f"{_num(self.bound)}{unit} ({self.why})")


def _num(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else str(x)


def payload_rate_mbit(rate_mbit: float, mtu: int = 1500, timestamps: bool = True) -> float:
    """The TCP goodput a link shaped to ``rate_mbit`` can carry at ``mtu`` (module docstring)."""
    payload = mtu - IP_TCP_HEADERS - (TCP_TIMESTAMPS if timestamps else 0)
    return rate_mbit * payload / (mtu + ETHERNET_HEADER)


def check_rate(point: str, value_mbit: float, wire_mbit: float, mtu: int = 1500,
               slack: float = SLACK, quantity: str = "goodput",
               allowance_mbit: float = 0.0, why: str = "") -> Invalid | None:
    """Invalid when ``value_mbit`` exceeds the wire's payload rate by more than ``slack``.

    ``allowance_mbit`` adds what a study derives for its own traffic on top (e.g. a
    ping-pong whose first frame leaves before the shaper has counted it), with ``why``.
    """
    bound = payload_rate_mbit(wire_mbit, mtu) + allowance_mbit
    if not math.isfinite(value_mbit) or value_mbit <= bound * (1 + slack):
        return None
    because = (f"a {wire_mbit:g} Mbit/s wire carries {payload_rate_mbit(wire_mbit, mtu):.4g} "
               f"Mbit/s of TCP payload at MTU {mtu}")
    if allowance_mbit:
        because += f", plus {allowance_mbit:.3g} Mbit/s: {why}" if why else \
            f", plus {allowance_mbit:.3g} Mbit/s"
    return Invalid(point, quantity, value_mbit, bound, "Mbit/s",
                   f"{because}; {slack:.0%} slack for the clocks")


def check_share(point: str, share_pct: float, threads: int = 1,
                quantity: str = "CPU share") -> Invalid | None:
    """Invalid when a CPU share exceeds 100 % per thread (or CPU) it was measured over."""
    bound = 100.0 * threads
    if not math.isfinite(share_pct) or share_pct <= bound:
        return None
    return Invalid(point, quantity, share_pct, bound, "%",
                   f"{threads} thread{'s' if threads != 1 else ''} cannot use more than "
                   f"{bound:g} % of a CPU")


def check_rounds(point: str, rounds_completed: float) -> Invalid | None:
    """Invalid when a fan-in point completed no round: it has no rate to judge."""
    if rounds_completed >= 1:
        return None
    return Invalid(point, "completed rounds", float(rounds_completed), 1.0, "",
                   "a fan-in point needs at least one completed round", "<")

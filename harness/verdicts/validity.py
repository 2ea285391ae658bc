"""Physical bounds a measured point must respect before it may count for a claim.

A referee throws out a point that could not have happened: a TCP goodput above
what its wire can carry, a CPU share above 100 % per thread, a fan-in point in
which no round completed. Such a point is *invalid*: it is shown with its
numbers and the bound it broke, and no claim is ever decided by it
(:func:`harness.verdicts.claims.judge` turns any invalid point under an estimate into the
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
#: How far above its path's measured bulk capacity (a bulk transfer of its own over the same
#: path in the same run) a point may read before it counts as impossible: the clocks' SLACK
#: and 1 % for the bulk transfer's own start (slow start and its first batch), which the
#: capacity counts and a message of a warmed-up connection does not. Declared once for all
#: studies, before any outcome, never tuned per claim.
CAPACITY_ALLOWANCE = 0.03
#: How coarsely Linux counts a running thread's CPU time and the scheduler's clock read
#: beside it: /proc/PID/schedstat and se.exec_start advance one scheduler tick at a time
#: while the thread runs (steps of 3.99-4.02 ms measured on this host, a HZ=250 kernel). A
#: share read from two such readings can pass 100 % by two ticks per interval; 10 ms is the
#: tick of a 100 Hz kernel, the coarsest Linux builds use, so no real share is ever refused.
CPU_COUNTER_TICK_S = 0.010

#: The validity checks a registered claim may name (its ``checks``), each with what it refuses.
CHECKS = {
    "wire-rate": "a rate above what its wire carries: TCP's payload (check_rate) or RoCE's "
                 "(s1_validity.check_verbs_rate)",
    "cpu-share": "a CPU share above 100 % per thread or CPU it was measured over (check_share)",
    "path-capacity": "a rate above its path's bulk capacity measured in the same run, plus "
                     "CAPACITY_ALLOWANCE (check_capacity)",
    "rounds-completed": "a fan-in point in which no round completed (check_rounds)",
    "apparatus-ran": "a point whose apparatus failed: its tool could not start or connect, "
                     "crashed, was interrupted or printed what cannot be parsed (check_apparatus); "
                     "a failure of the system under test is a result (harness.verdicts.failures)",
    "tool-completed": "a point its tool did not complete: no rate or no latency "
                      "(s1_validity.failed_bandwidth, failed_latency)",
    "disk-rate": "a disk or file-system rate above its disk's cap (s2_validity.point_checks)",
}


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


def check_capacity(point: str, value_mbit: float, capacity_mbit: float | None, path: str,
                   quantity: str = "rate",
                   allowance: float = CAPACITY_ALLOWANCE) -> Invalid | None:
    """Invalid when ``value_mbit`` exceeds what a bulk transfer over the same ``path`` carried
    in the same run (``capacity_mbit``) by more than ``allowance``. No capacity measured: no
    check (the caller says so)."""
    if capacity_mbit is None or not math.isfinite(capacity_mbit) or capacity_mbit <= 0:
        return None
    bound = capacity_mbit * (1 + allowance)
    if not math.isfinite(value_mbit) or value_mbit <= bound:
        return None
    return Invalid(point, quantity, value_mbit, bound, "Mbit/s",
                   f"a bulk transfer over {path} in this run carried {capacity_mbit:.4g} Mbit/s; "
                   f"+{allowance:.0%} declared allowance")


def counter_resolution_pct(intervals: int, wall_s: float) -> float:
    """How far above 100 % per thread a share summed over ``intervals`` readings of CPU
    counters and clock (``wall_s`` in all) may read: two ticks per interval
    (:data:`CPU_COUNTER_TICK_S`), in percentage points."""
    if wall_s <= 0 or not math.isfinite(wall_s):
        return 0.0
    return 100.0 * 2 * CPU_COUNTER_TICK_S * intervals / wall_s


def check_share(point: str, share_pct: float, threads: int = 1,
                quantity: str = "CPU share", resolution_pct: float = 0.0) -> Invalid | None:
    """Invalid when a CPU share exceeds 100 % per thread (or CPU) it was measured over, by
    more than the counters' ``resolution_pct`` (:func:`counter_resolution_pct`)."""
    bound = 100.0 * threads + resolution_pct
    if not math.isfinite(share_pct) or share_pct <= bound:
        return None
    why = (f"{threads} thread{'s' if threads != 1 else ''} cannot use more than "
           f"{100.0 * threads:g} % of a CPU")
    if resolution_pct:
        why += f", plus {resolution_pct:.2g} pp for the counters' tick"
    return Invalid(point, quantity, share_pct, bound, "%", why)


def check_rounds(point: str, rounds_completed: float) -> Invalid | None:
    """Invalid when a fan-in point completed no round: it has no rate to judge."""
    if rounds_completed >= 1:
        return None
    return Invalid(point, "completed rounds", float(rounds_completed), 1.0, "",
                   "a fan-in point needs at least one completed round", "<")


def check_apparatus(point: str, failure: str | None, message: str = "") -> Invalid | None:
    """Invalid when the apparatus failed at ``point`` (``failure == "apparatus"``, as the tool's
    output classifies it, e.g. :func:`harness.fanin.spec.failure_kind`); a failure of the system
    under test (``"protocol"``) or none is not."""
    if failure != "apparatus":
        return None
    return Invalid(point, "apparatus failures", 1.0, 0.0, "",
                   "the measuring tool failed, not the system under test"
                   + (f": {message}" if message else ""), ">")

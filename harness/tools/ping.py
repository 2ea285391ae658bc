"""ping as a measurement: the command line and the parser of its replies.

Its own module because both the lab (delay calibration) and the link
verification use it, and the verification also needs the lab: keeping ping
here lets ``harness.lab.lab`` not import ``harness.lab.verify`` (no import cycle).
"""

from __future__ import annotations

import re
import statistics

from ..nodes import Node

PING_COUNT = 10


def ping_argv(source: str, target: str, count: int) -> list[str]:
    """``count`` timed replies plus one (the first pays for ARP resolution), 50 ms apart."""
    return ["ping", "-n", "-c", str(count + 1), "-i", "0.05", "-W", "5", "-I", source, target]


def ping_command(source: str, target: str, count: int) -> str:
    return " ".join(ping_argv(source, target, count))


def parse_ping_ms(text: str, drop_first: bool = True) -> list[float]:
    """Reply times from ping's output; the first reply (ARP resolution) dropped if asked."""
    replies = [(int(seq), float(ms)) for seq, ms in
               re.findall(r"icmp_seq=(\d+) .*?time=([\d.]+) ms", text)]
    return [ms for seq, ms in replies if not (drop_first and seq == 1)]


def ping_rtt_ms(node: Node, target: str, source: str, count: int = PING_COUNT) -> float | None:
    """Median RTT of ``count`` pings from ``node``, after one warm-up reply (which pays for ARP)."""
    res = node.run(ping_command(source, target, count), check=False, timeout=30 + count)
    times = parse_ping_ms(res.stdout)
    return statistics.median(times) if times else None

"""Measure that each shaped link does what its spec says.

Rate: one iperf3 stream saturates the link while the byte counter of the
sender's shaping class (htb 1:1) is sampled over the steady part of the test.
That is the link-layer rate exactly as the shaper meters it (every segment of
a GSO burst with its own TCP/IP and Ethernet headers; no preamble or FCS), and
is compared with the configured rate. The interface counter is not used: it
counts a GSO burst's headers once and so reads ~4% low. The TCP goodput is
recorded beside it.
RTT: ping over the idle link, compared with twice the one-way delay.
"""

from __future__ import annotations

import re
import shlex
import statistics
from dataclasses import asdict, dataclass

from .journal import Journal
from .lab import Lab
from .nodes import Node
from .tools.iperf3 import iperf3_client_argv, iperf3_server, parse_iperf3_json

RATE_TOLERANCE = 0.97  # achieved link-layer rate / configured rate
RTT_TOLERANCE = 0.05  # relative
RTT_SLACK_MS = 0.3  # absolute: veth + scheduling on an idle link
VERIFY_PORT = 5299
SAMPLE_INTERVAL = 0.1


def steady_rate_bps(samples: list[tuple[int, float]]) -> float:
    """Rate over the busy stretch of a byte-counter series, without its ramp-up and tail.

    The busy stretch is the longest run of intervals above half the peak
    interval rate; its first and last interval are dropped.
    """
    rates = [(b2 - b1) * 8 / (t2 - t1) for (b1, t1), (b2, t2) in zip(samples, samples[1:])]
    if not rates:
        return 0.0
    busy = [r > 0.5 * max(rates) for r in rates]
    best = (0, 0)
    start = None
    for i, flag in enumerate(busy + [False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    first, last = best
    if last - first > 2:
        first, last = first + 1, last - 1
    (b1, t1), (b2, t2) = samples[first], samples[last]
    return (b2 - b1) * 8 / (t2 - t1)


@dataclass
class LinkCheck:
    link: str
    direction: str
    configured_mbit: float | None
    link_layer_mbit: float | None
    goodput_mbit: float | None
    rate_ratio: float | None
    configured_one_way_delay_ms: float
    expected_rtt_ms: float | None
    rtt_ms: float | None
    rate_ok: bool | None
    rtt_ok: bool | None

    @property
    def ok(self) -> bool:
        return self.rate_ok is not False and self.rtt_ok is not False

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def ping_rtt_ms(node: Node, target: str, source: str, count: int = 10) -> float | None:
    """Median RTT of ``count`` pings, after one warm-up ping (which pays for ARP)."""
    res = node.run(f"ping -n -c 1 -W 5 -I {source} {target} >/dev/null 2>&1; "
                   f"ping -n -c {count} -i 0.05 -W 5 -I {source} {target}",
                   check=False, timeout=30 + count)
    times = [float(t) for t in re.findall(r"time=([\d.]+) ms", res.stdout)]
    return statistics.median(times) if times else None


SAMPLER = """
out=$(mktemp) && trap 'rm -f "$out"' EXIT
{client} > "$out" 2>&1 &
pid=$!
while kill -0 $pid 2>/dev/null; do
  printf 'SAMPLE %s ' "$(date +%s.%N)"
  tc -s class show dev {dev} | awk '$1 == "class" {{ c = ($3 == "{classid}") }} c && $1 == "Sent" {{ print $2; exit }}'
  sleep {interval}
done
wait $pid; status=$?
echo "CLIENT-OUTPUT"
cat "$out"
exit $status
"""


def run_sampled(node: Node, client_argv: list[str], dev: str, seconds: float,
                classid: str = "1:1") -> tuple[list[tuple[int, float]], str]:
    """Run an iperf3 client on ``node`` while sampling the shaping class's byte counter there.

    Sampling runs on the node itself (one command), so a slow transport (SSH
    into an emulated VM) does not thin out the samples.
    """
    script = SAMPLER.format(client=shlex.join(client_argv), dev=shlex.quote(dev),
                            classid=classid, interval=SAMPLE_INTERVAL)
    res = node.run(script, timeout=seconds + 60)
    head, _, output = res.stdout.partition("CLIENT-OUTPUT\n")
    samples = []
    for line in head.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "SAMPLE":
            samples.append((int(parts[2]), float(parts[1])))
    return samples, output


def measure_direction(journal: Journal, lab: Lab, link, forward: bool,
                      seconds: float) -> LinkCheck:
    src, dst = (link.a, link.b) if forward else (link.b, link.a)
    src_node, dst_node = lab.node(src.node), lab.node(dst.node)
    configured = link.rate_mbit
    link_mbit = goodput = ratio = None
    if link.shaped:
        argv = iperf3_client_argv(dst.ip, VERIFY_PORT, seconds, 1, None, src.ip, False)
        with iperf3_server(journal, dst_node, dst.ip, VERIFY_PORT):
            samples, output = run_sampled(src_node, argv, src.ifname, seconds)
        result = parse_iperf3_json(output, 1)
        link_mbit = steady_rate_bps(samples) / 1e6
        goodput = result.received_bps / 1e6
        ratio = link_mbit / configured
    expected = 2 * link.delay_ms if link.delay_ms else None
    rtt = ping_rtt_ms(src_node, dst.ip, src.ip)
    rtt_ok = None
    if expected is not None and rtt is not None:
        rtt_ok = abs(rtt - expected) <= expected * RTT_TOLERANCE + RTT_SLACK_MS
    elif expected is not None:
        rtt_ok = False
    return LinkCheck(
        link=link.name,
        direction=f"{src.node}->{dst.node}",
        configured_mbit=configured,
        link_layer_mbit=link_mbit,
        goodput_mbit=goodput,
        rate_ratio=ratio,
        configured_one_way_delay_ms=link.delay_ms,
        expected_rtt_ms=expected,
        rtt_ms=rtt,
        rate_ok=None if ratio is None else ratio >= RATE_TOLERANCE,
        rtt_ok=rtt_ok,
    )


def verify_lab(journal: Journal, lab: Lab, seconds: int = 2,
               both_directions: bool = True) -> list[LinkCheck]:
    """Measure every link of ``lab`` (rate where shaped, RTT always)."""
    checks = []
    for link in lab.topology.links:
        for forward in (True, False) if both_directions else (True,):
            checks.append(measure_direction(journal, lab, link, forward, seconds))
    return checks


def summarise(checks: list[LinkCheck]) -> str:
    lines = []
    for c in checks:
        rate = (f"{c.link_layer_mbit:7.1f}/{c.configured_mbit:g} Mbit/s ({c.rate_ratio:.1%})"
                if c.configured_mbit else "unshaped")
        rtt = f"RTT {c.rtt_ms:.3f} ms" if c.rtt_ms is not None else "RTT n/a"
        if c.expected_rtt_ms:
            rtt += f" (expected {c.expected_rtt_ms:g})"
        lines.append(f"{'ok  ' if c.ok else 'FAIL'} {c.direction:18s} {rate}  {rtt}")
    return "\n".join(lines)

"""Verify the real paths between a user's machines: their RTT and what they carry.

On an inventory's machines the harness shapes nothing: there is no configured rate to
compare with, so nothing is judged against one. What the study's numbers stand on is
measured and recorded instead (run.json ``link_verification``, and beside each topology
link in ``testbed.links``, next to ``shaped_by_harness: false``):

- RTT: ping from every interface of every machine to every interface of every other
  machine (the first reply pays for ARP and is dropped; the median of the rest);
- rate: one iperf3 TCP stream for ``seconds`` over each path that answered the ping and
  that the study's topology uses (two interfaces on one link, or on links to one router
  that the user's network provides: :meth:`harness.run.testbed.InventoryTestbed.facing`), in
  each direction, one test at a time (each saturates its path), the server a journalled
  process on the receiving machine, the client a tracked tool. The goodput is TCP's, as
  the receiver counted it. A machine without iperf3 gets its paths' RTT only, and the
  record says why. Every pair of interfaces instead cost S0's four machines (six
  interfaces) over 10 minutes at load 14: its test ran out of time.

A path that does not answer is recorded (``rtt_ms`` None, ``rtt_ok`` False): the user's
network need not join every pair of interfaces, and the study's own checks say whether it
needs that path. S4's two machines (4 paths, 1 s each) took ~12 s here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import HarnessError
from ..journal.journal import Journal
from ..lab.verify import LinkCheck
from ..nodes import Node
from ..tools.iperf3 import iperf3_client, iperf3_server
from ..tools.ping import ping_rtt_ms

#: The verification's iperf3 port on the receiving machine (the lab's VERIFY_PORT + 1: a
#: machine may hold a lab's verification server too)
PORT = 5300


@dataclass(frozen=True)
class Path:
    """From one machine's interface to another machine's interface (real addresses)."""

    src: str
    src_device: str
    src_ip: str
    dst: str
    dst_device: str
    dst_ip: str

    @property
    def label(self) -> str:
        return f"{self.src}:{self.src_device}->{self.dst}:{self.dst_device}"


def paths(interfaces: dict[str, list[tuple[str, str]]]) -> list[Path]:
    """Every ordered pair of interfaces on different machines; ``interfaces``: machine ->
    [(device, ip)]."""
    return [Path(src, sd, sip, dst, dd, dip)
            for src, ends in interfaces.items() for sd, sip in ends
            for dst, far in interfaces.items() if dst != src for dd, dip in far]


def verify_machines(journal: Journal, nodes: dict[str, Node],
                    interfaces: dict[str, list[tuple[str, str]]], seconds: int,
                    rate_paths: set[tuple[str, str]] | None = None) -> list[LinkCheck]:
    """RTT of every path, then the goodput of each that answered and is in ``rate_paths``
    (("machine:device", "machine:device"); None: every path) (see the module doc)."""
    found = paths(interfaces)
    rtts = {p: ping_rtt_ms(nodes[p.src], p.dst_ip, p.src_ip, count=3) for p in found}
    iperf = {name: node.has_command("iperf3") for name, node in nodes.items()}
    checks = []
    for p in found:
        goodput, outputs, note = None, [], ""
        src, _, dst = p.label.partition("->")
        if rtts[p] is None:
            note = "no answer to ping: no rate test"
        elif rate_paths is not None and (src, dst) not in rate_paths:
            note = "no rate test: the study's topology does not join these interfaces"
        elif not (iperf[p.src] and iperf[p.dst]):
            note = "no rate test: iperf3 is not installed on both machines"
        else:
            try:
                with iperf3_server(journal, nodes[p.dst], p.dst_ip, PORT, timeout=30):
                    result = iperf3_client(nodes[p.src], p.dst_ip, PORT, seconds=seconds,
                                           bind=p.src_ip)
                goodput = result.received_mbps
                outputs.append(str(result.raw))
            except HarnessError as exc:
                note = f"rate test failed: {exc.message}"
        checks.append(LinkCheck(
            link=p.label, direction=f"{p.src}->{p.dst}", configured_mbit=None,
            link_layer_mbit=None, goodput_mbit=goodput, rate_ratio=None,
            configured_one_way_delay_ms=0.0, expected_rtt_ms=None, rtt_ms=rtts[p],
            rate_ok=None, rtt_ok=rtts[p] is not None, note=note, seconds=seconds,
            outputs=outputs))
    return checks

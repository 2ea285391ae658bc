"""Whether a lab's wire serialises a message at its rate, measured per run by a probe.

A real 100 Mbit/s Ethernet puts a message's frames on the wire one after the other, each
taking its frame time, so a message of ``n`` bytes needs at least its wire bytes (payload
plus 66 bytes of headers per frame) x 8 / R to cross the slowest link. A lab's shaper is
a rate limiter, not a wire: a token bucket lets a message's first frames leave at once,
so a small message crosses at the speed of the veth underneath (PLATFORM.md: a "100 Mbit"
tbf without a peak rate read 188 Mbit/s for a 4 KB ping-pong). Whether the lab serialises
is therefore measured, never read from the shaper's settings:

:func:`probe_path` runs a ping-pong of every size over one path of the lab (its client and
server already placed) and :func:`judge` compares each size's fastest round trip, as a rate
(size / half round trip, NetPIPE's definition), with the most a path of ``links``
serialising links of that rate carries (:func:`path_mbit`): every frame crosses the slowest link in its frame
time, and each store-and-forward hop after the first (the paper's front nodes are PCs that
route) adds the last frame's time. A size whose measured rate is above that bound by more
than :data:`SLACK` is one the lab does not serialise. The result (:class:`WireProbe`) goes
into run.json (``wire_probe``), where :mod:`harness.verdicts.gates` (``serialising_wire``)
reads it.

Why the fastest round trip: a loaded host only slows a round trip, so the median of a
probe on a busy machine can sit below the bound while the wire serialises nothing (seen at
load 12-22: a 1 B median of 20 us against the path's 16); one round trip faster than the
path allows proves that the lab does not serialise that size.

Why the hops count: a host's own latency (5-7 us for a 1 B half round trip here) is about
one frame time of a 100 Mbit/s wire (5.4 us at 1 B), so one link's bound alone would pass a
lab that serialises nothing at 1 B; three links take 16 us. The bound has no host stack
time in it, so a lab that fails it is certainly faster than the path it emulates.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

#: How far above the wire's bound a size's ping-pong rate may read and still count as
#: serialised: the ping-pong's clock (perf_counter around each round trip) and the probe's
#: median over a short budget; the same 2 % as :data:`harness.verdicts.validity.SLACK`. Fixed
#: once, before any outcome, never tuned per claim or run.
SLACK = 0.02
HEADERS = 52  # IP 20, TCP 20, timestamps 12: an MTU's bytes that carry no TCP payload
OVERHEAD = 14 + HEADERS  # Ethernet header (what a Linux shaper counts) + HEADERS, per frame


def frames(size: int, mtu: int = 1500) -> int:
    """Frames a ``size``-byte message sent alone takes at ``mtu`` (full frames + the rest)."""
    return max(1, math.ceil(size / (mtu - HEADERS)))


def wire_bytes(size: int, mtu: int = 1500) -> int:
    """Bytes a wire (and a Linux shaper) carries for a ``size``-byte message sent alone."""
    return size + frames(size, mtu) * OVERHEAD


def wire_mbit(size: int, rate_mbit: float, mtu: int = 1500) -> float:
    """The highest size / one-way time a serialising wire of ``rate_mbit`` allows: the whole
    message's frames must cross one link of that rate."""
    return size * rate_mbit / wire_bytes(size, mtu)


def last_frame_bytes(size: int, mtu: int = 1500) -> int:
    """Bytes of a ``size``-byte message's last frame on the wire."""
    return size - (frames(size, mtu) - 1) * (mtu - HEADERS) + OVERHEAD


def path_mbit(size: int, rate_mbit: float, mtu: int = 1500, links: int = 1) -> float:
    """The highest size / one-way time a path of ``links`` store-and-forward links of
    ``rate_mbit`` allows: all frames cross one link, and every further hop adds the last
    frame's time (the frames before it are pipelined)."""
    bits = 8 * (wire_bytes(size, mtu) + (links - 1) * last_frame_bytes(size, mtu))
    return size * 8 * rate_mbit / bits


@dataclass(frozen=True)
class SizeProbe:
    """One size of the probe: the measured ping-pong and what a serialising wire allows."""

    size: int
    half_rtt_us: float  # the fastest of the probe's round trips, halved
    pingpong_mbit: float  # size / half_rtt_us
    wire_mbit: float  # the most the probe's path of serialising links carries at this size
    serialises: bool
    round_trips: int = 0
    median_half_rtt_us: float | None = None

    def text(self, slack: float = SLACK) -> str:
        return size_text(self.size, self.pingpong_mbit, self.wire_mbit, slack, self.serialises)


def size_text(size: int, pingpong_mbit: float, wire_mbit: float, slack: float,
              serialises: bool) -> str:
    """One probed size against the bound the probe applied, said one way everywhere (the run's
    notes and the gate alike): "1024 B 187.9 Mbit/s > 95.8 (93.9 + 2 %)"."""
    verb = "<=" if serialises else ">"
    bound = wire_mbit * (1 + slack)
    places = 1  # one decimal, more where the rate and its bound would read alike (the S0 referee
    while places < 6 and f"{pingpong_mbit:.{places}f}" == f"{bound:.{places}f}":  # of 2026-11-29:
        places += 1  # "1 B 0.5 Mbit/s > 0.5 (0.5 + 2 %)" read as equality)
    return (f"{size} B {pingpong_mbit:.{places}f} Mbit/s {verb} {bound:.{places}f} "
            f"({wire_mbit:.{places}f} + {slack:.0%})").replace("%)", " %)")


@dataclass(frozen=True)
class WireProbe:
    """The probe of one run: the path, its rate and MTU, and every size's verdict."""

    path: str
    rate_mbit: float | None
    mtu: int
    slack: float = SLACK
    sizes: tuple[SizeProbe, ...] = field(default_factory=tuple)
    note: str = ""
    links: int = 1  # shaped links the probe's path crosses, each a store-and-forward hop

    def serialised(self) -> set[int]:
        return {p.size for p in self.sizes if p.serialises}

    def to_dict(self) -> dict:
        record = asdict(self)
        record["sizes"] = [asdict(p) for p in self.sizes]
        return record

    @classmethod
    def from_dict(cls, record: dict) -> WireProbe:
        sizes = tuple(SizeProbe(**p) for p in record.get("sizes") or ())
        return cls(record.get("path", "?"), record.get("rate_mbit"), int(record.get("mtu", 1500)),
                   float(record.get("slack", SLACK)), sizes, record.get("note", ""),
                   int(record.get("links", 1)))


def judge(path: str, points: list[dict], rate_mbit: float | None, mtu: int = 1500,
          links: int = 1) -> WireProbe:
    """The probe's verdict from ping-pong ``points`` (harness.tools.pingpong's, one per size)
    over a path of ``links`` links of ``rate_mbit``.

    On unshaped links (``rate_mbit`` None or 0) there is no rate to serialise at: no size
    serialises, and the note says why."""
    if not rate_mbit:
        return WireProbe(path, None, mtu, note="unshaped links: no wire rate to serialise at",
                         links=links)
    out = []
    for point in points:
        size, lat = int(point["size"]), point["latency"]
        half = float(lat.get("min_us", lat["median_us"]))
        measured = size * 8 / half if half > 0 else math.inf
        bound = path_mbit(size, rate_mbit, mtu, links)
        out.append(SizeProbe(size, half, measured, bound, measured <= bound * (1 + SLACK),
                             int(lat.get("n", 0)), lat.get("median_us")))
    return WireProbe(path, float(rate_mbit), mtu, SLACK, tuple(sorted(out, key=lambda p: p.size)),
                     links=links)


def probe_path(journal, node, name: str, host: str, port: int, sizes, rate_mbit: float | None,
               mtu: int, budget_s: float, links: int, seed: int = 0) -> WireProbe:
    """Ping-pong every size of ``sizes`` from ``node`` to the server at ``host:port`` (one
    connection, no streaming) over ``links`` links, and :func:`judge` it."""
    from ..tools import pingpong

    result = pingpong.client(journal, node, {name: (host, port)}, list(sizes), budget_s, 0.0,
                             stream=False, seed=seed)
    return judge(f"{name} ({node.name} -> {host}:{port})", result["targets"][name]["points"],
                 rate_mbit, mtu, links)


def describe(probe: WireProbe) -> str:
    """One line: where the wire serialises and where it does not, with the measured figures."""
    if probe.rate_mbit is None:
        return f"probe on {probe.path}: {probe.note}"
    yes = [p for p in probe.sizes if p.serialises]
    no = [p for p in probe.sizes if not p.serialises]
    parts = [f"probe on {probe.path}, {probe.links} links of {probe.rate_mbit:g} Mbit/s, "
             f"MTU {probe.mtu}"]
    if yes:
        parts.append("serialises " + ", ".join(p.text(probe.slack) for p in yes))
    if no:
        parts.append("does not serialise " + ", ".join(p.text(probe.slack) for p in no))
    return "; ".join(parts)

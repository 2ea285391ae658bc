"""S0's physical bounds: which measured points no 100 Mbit/s wire could have produced.

Two rates are read per (repetition, method, size) point, and each has its bound:

* **streaming** (one-way, back-to-back messages): at most the wire's TCP payload
  rate, R x 1448/1514 (:func:`harness.verdicts.validity.payload_rate_mbit`), with the
  common 2 % slack.
* **ping-pong** (size / half round trip, NetPIPE's definition): a message of
  ``n`` frames must cross the slowest link, where the serialising shaper
  (:mod:`harness.topology.shaping`, ``serialise``) lets its first
  :data:`~harness.topology.shaping.PEAK_FRAMES` frames leave at once (its peak bucket) and
  paces the rest at the peak rate P = R (1 + PEAK_EXCESS). So the one-way time is
  at least (wire bytes - bucket) x 8 / P, and the rate at most
  ``size x 8 x P / ((wire bytes - bucket) x 8)``. Wire bytes: the payload plus
  66 bytes per frame (14 Ethernet + 20 IP + 20 TCP + 12 timestamps), with 1448
  payload bytes per full frame. A message that fits in the bucket (<= 2 frames,
  <= 2896 B) has no wire bound here: the shaper lets it through at once (on a
  real wire it would still take a frame time per hop; the lab cannot show that):
  :func:`unbounded_pingpong` lists such points apart for the report, against one hop of
  a real wire.
  Measured on the lab (2026-11-26): 16 KB read 112 Mbit/s against this bound's
  115.9 (x 1.02 slack: 118.2); with htb's 32 KB burst it read ~190.

A point above its bound is shown as :class:`harness.verdicts.validity.Invalid`, and every
claim resting on it is judged ``invalid`` (:func:`harness.verdicts.claims.judge`).
"""

from __future__ import annotations

import math

import pandas as pd

from ...topology.shaping import PEAK_EXCESS, PEAK_FRAMES
from ...verdicts.validity import Invalid, check_rate, payload_rate_mbit
from .common import size_label

MTU = 1500  # the topology's default (harness.topology.topology.Link); a run's own: run_mtu
ETHERNET = 14  # bytes a shaper counts per frame beyond the MTU
HEADERS = 52  # IP 20, TCP 20, timestamps 12: an MTU's bytes that carry no payload
FRAME = MTU + ETHERNET  # bytes a shaper counts per full frame
PAYLOAD = MTU - HEADERS  # TCP payload bytes per full frame
OVERHEAD = ETHERNET + HEADERS  # 66 bytes of headers per frame


def wire_bytes(size: int, mtu: int = MTU) -> int:
    """Bytes the shaper counts for a ``size``-byte message sent alone (full frames + the rest)."""
    frames = max(1, math.ceil(size / (mtu - HEADERS)))
    return size + frames * OVERHEAD


def paced(size: int, mtu: int = MTU) -> bool:
    """Whether the serialising shaper paces a ``size``-byte message sent alone: only when it
    takes more than :data:`~harness.topology.shaping.PEAK_FRAMES` frames' payload at ``mtu`` (more than
    :func:`largest_unpaced` bytes). A smaller message fits the peak bucket and crosses the lab
    at veth speed: the reference 20261127T092615Z-efd65a read up to 338 Mbit/s at 512 B and a
    7.0 us direct half round trip at 1 B (median), where one hop of a real 100 Mbit/s wire
    allows 89 Mbit/s and 5.4 us (its predecessor f2ea50, in git history: 317 Mbit/s, 7 us).
    Latency and ping-pong claims count only paced sizes (s0/registration.toml)."""
    return wire_bytes(size, mtu) > PEAK_FRAMES * (mtu + ETHERNET)


def largest_unpaced(mtu: int = MTU) -> int:
    """The largest message the shaper does not pace at ``mtu``: 2896 B at 1500."""
    return PEAK_FRAMES * (mtu - HEADERS)


def run_mtu(meta: dict | None) -> int:
    """The run's MTU: the smallest of its lab's links (run.json's testbed topology), else the
    topology's default, :data:`MTU`."""
    links = (((meta or {}).get("testbed") or {}).get("topology") or {}).get("links") or []
    mtus = [int(link["mtu"]) for link in links if link.get("mtu")]
    return min(mtus) if mtus else MTU


def pingpong_bound_mbit(size: int, rate_mbit: float, mtu: int = MTU) -> float | None:
    """The highest size / half round trip a serialised wire of ``rate_mbit`` allows; None when
    the message fits in the shaper's peak bucket (module docstring, :func:`paced`)."""
    if not paced(size, mtu):
        return None
    return size * rate_mbit * (1 + PEAK_EXCESS) / (wire_bytes(size, mtu)
                                                   - PEAK_FRAMES * (mtu + ETHERNET))


def invalid_points(frame: pd.DataFrame, rate_mbit: float | None,
                   mtu: int = MTU) -> list[Invalid]:
    """Every point of the sweep above its wire's bound (none on unshaped links)."""
    if not rate_mbit:
        return []
    out = []
    for row in frame.itertuples():
        where = f"repetition {row.repetition}, {row.method}, {int(row.size)} B"
        stream = getattr(row, "stream_mbit", None)
        if stream is not None and pd.notna(stream):
            out.append(check_rate(where, float(stream), rate_mbit, mtu,
                                  quantity="streaming rate"))
        bound = pingpong_bound_mbit(int(row.size), rate_mbit, mtu)
        pp = getattr(row, "pingpong_mbit", None)
        if bound is not None and pp is not None and pd.notna(pp):
            out.append(check_rate(
                where, float(pp), rate_mbit, mtu, quantity="ping-pong rate (size / half RTT)",
                allowance_mbit=bound - payload_rate_mbit(rate_mbit, mtu),
                why=f"the shaper's first {PEAK_FRAMES} frames of a message leave at once"))
    return [p for p in out if p is not None]


def one_hop_mbit(size: int, rate_mbit: float, mtu: int = MTU) -> float:
    """The highest size / one-way time one store-and-forward hop of a real ``rate_mbit`` wire
    allows: the whole message's frames must cross it, ``wire_bytes(size) x 8 / rate``."""
    return size * rate_mbit / wire_bytes(size, mtu)


def unbounded_pingpong(frame: pd.DataFrame, rate_mbit: float | None,
                       mtu: int = MTU) -> pd.DataFrame:
    """The ping-pong points this lab cannot bound, per method and size, beside what one hop of
    a real wire of the same rate would allow and how many points read above that.

    A message of at most :data:`~harness.topology.shaping.PEAK_FRAMES` frames fits the serialising
    shaper's peak bucket and crosses the lab at veth speed (module docstring), so
    :func:`invalid_points` has no bound for it and never calls it invalid. On the paper's
    100 Mbit/s Ethernet the same message would take a frame time per hop: the reference run
    20261127T092615Z-efd65a has 1080 such points of 1890, 412 of them above one hop, up to 338
    Mbit/s at 512 B where one hop allows 89 (its predecessor 20261126T164838Z-f2ea50, in git
    history: 184-222 Mbit/s at 1-2 KB, where one hop allows 94). The report shows these points
    apart so that no reader takes them for checked ones; since 2026-11-27 no claim counts them.
    """
    cols = ["method", "size", "points", "pingpong_max_mbit", "one_real_hop_mbit",
            "above_one_hop"]
    if not rate_mbit or "pingpong_mbit" not in frame:
        return pd.DataFrame(columns=cols)
    free = frame[[not paced(int(s), mtu) for s in frame["size"]]]
    free = free[free.pingpong_mbit.notna()]
    hop = pd.Series([one_hop_mbit(int(s), rate_mbit, mtu) for s in free["size"]],
                    index=free.index)
    free = free.assign(one_real_hop_mbit=hop, above_one_hop=free.pingpong_mbit > hop)
    out = free.groupby(["method", "size"]).agg(
        points=("pingpong_mbit", "size"), pingpong_max_mbit=("pingpong_mbit", "max"),
        one_real_hop_mbit=("one_real_hop_mbit", "first"),
        above_one_hop=("above_one_hop", "sum")).reset_index()
    return out[cols]


def unbounded_note(frame: pd.DataFrame, rate_mbit: float | None, methods,
                   sizes: tuple[int, int], mtu: int = MTU) -> str:
    """For a claim's verdict: how many of the ping-pong points it rests on (its methods, sizes
    lo..hi) this lab cannot bound, and how many of those beat one hop of a real wire ('' when
    none). Its outcome stands; the note says what it stands on."""
    free = unbounded_pingpong(frame, rate_mbit, mtu)
    lo, hi = sizes
    part = free[free.method.isin(methods) & free["size"].between(lo, hi)]
    if part.empty:
        return ""
    return (f"{int(part.points.sum())} of its ping-pong points (<= {PEAK_FRAMES} frames) have "
            "no bound in this lab (the shaper passes them at once); "
            f"{int(part.above_one_hop.sum())} read faster than one hop of a real "
            f"{rate_mbit:g} Mbit/s wire allows")


def unpaced_sizes(frame: pd.DataFrame, sizes: tuple[int, int], mtu: int = MTU) -> list[int]:
    """The measured sizes lo..hi the shaper does not pace at ``mtu`` (:func:`paced`)."""
    lo, hi = sizes
    return sorted(int(s) for s in frame["size"].unique() if lo <= s <= hi and not paced(int(s), mtu))


def unpaced_note(frame: pd.DataFrame, rate_mbit: float | None, methods,
                 sizes: tuple[int, int], mtu: int = MTU) -> str:
    """What a latency or ping-pong claim leaves out because the lab does not pace it: the
    sizes, and how many of the claim's points (its methods) they hold and beat one hop of a
    real wire of the run's rate ('' when every size of lo..hi is paced)."""
    left = unpaced_sizes(frame, sizes, mtu)
    if not left:
        return ""
    part = frame[frame.method.isin(methods) & frame["size"].isin(left)]
    text = (f"sizes {', '.join(map(str, left))} B are not paced in this lab (<= {PEAK_FRAMES} "
            f"frames, <= {largest_unpaced(mtu)} B at MTU {mtu}: they pass the shaper's peak "
            f"bucket at once): {len(part)} points of its methods")
    if rate_mbit and "pingpong_mbit" in part:
        pp = part.dropna(subset=["pingpong_mbit"])
        above = sum(float(r.pingpong_mbit) > one_hop_mbit(int(r.size), rate_mbit, mtu)
                    for r in pp.itertuples())
        text += f", {above} faster than one hop of a real {rate_mbit:g} Mbit/s wire allows"
    return text


def paced_only(x, mtu: int):
    """The rows of a (repetition, size)-indexed series or frame whose size the lab paces (G1 of
    issue 23, :func:`paced`): latency and ping-pong claims count only these."""
    sizes = x.index.get_level_values("size")
    return x[[paced(int(s), mtu) for s in sizes]]


def none_paced_note(frame: pd.DataFrame, rate, methods, sizes: tuple[int, int], mtu: int) -> str:
    """The reason a claim with no paced size in its range is not testable here."""
    lo, hi = sizes
    left = unpaced_note(frame, rate, methods, sizes, mtu)
    if not left:
        return f"the run measured no size of {size_label(lo)}-{size_label(hi)}"
    return (f"no size of {size_label(lo)}-{size_label(hi)} is paced in this lab, so none can "
            "show a wire's serialisation: " + left)


def among(points: list[Invalid], methods, sizes: tuple[int, int], quantity: str = "") -> list[
        Invalid]:
    """The invalid points a claim rests on: its methods, its sizes lo..hi, its quantity."""
    lo, hi = sizes
    out = []
    for p in points:
        _rep, method, size = (part.strip() for part in p.point.split(","))
        if method in methods and lo <= int(size.split()[0]) <= hi and \
                (not quantity or p.quantity.startswith(quantity)):
            out.append(p)
    return out

"""S0's physical bounds and its serialising wire, both measured in the run itself.

Two facts the run measures decide what a point may say (issue 33 items 4 and 5):

* **Which sizes the wire serialises** (run.json ``wire_probe``, :mod:`harness.lab.serialisation`):
  before the sweep a ping-pong of every size crosses the direct path, and a size whose rate
  (size / half round trip) beats what three store-and-forward links of the rate carry is one
  the lab cannot show. The serialising shaper (:mod:`harness.topology.shaping`, ``serialise``)
  lets a message's first two frames leave at once, so small messages cross at veth speed:
  measured on one 100 Mbit/s link (2026-11-29, docs/studies/s0.md) 1 KB read 210 Mbit/s,
  16 KB 112, 64 KB 99, 1 MB 95 against 94-96 that a wire carries. Latency and ping-pong
  claims count every size of their registered range (one set in every run); the gate
  ``serialising_wire`` (every size must serialise) makes a claim with any size the wire does
  not serialise *not testable here*, with the figures (:func:`unserialised_note`).
  Streaming is a bulk transfer: the shaper's rate bounds it at every size.
* **Each path's capacity** (run.json ``path_capacity``): per method three bulk transfers of
  1 MB messages of its own over the same relays, the fastest. A ping-pong point above its
  path's capacity plus :data:`harness.verdicts.validity.CAPACITY_ALLOWANCE` is invalid
  (:func:`invalid_points`), and so is every claim resting on it at a size it counts.
  Streaming is checked against the wire's TCP payload rate (the configured rate x 1448/1514,
  2 % slack). No bound here is derived from the shaper's settings (its peak bucket, its peak
  rate).

A run without the probe or the capacities (one archived before 2026-11-29) serialises no
size and has no capacity bound: its latency and ping-pong claims are not testable, and the
report says the capacity was not measured.
"""

from __future__ import annotations

import pandas as pd

from ...lab.serialisation import WireProbe, path_mbit, wire_bytes, wire_mbit
from ...verdicts.validity import Invalid, check_capacity, check_rate

__all__ = ["MTU", "among", "capacities", "invalid_points", "run_mtu",
           "serialised_sizes", "unserialised_note", "unserialised_pingpong",
           "unserialised_sizes", "wire_bytes", "wire_mbit", "wire_probe"]

MTU = 1500  # the topology's default (harness.topology.topology.Link); a run's own: run_mtu
CAPACITY_SIZE = 1 << 20  # the bulk transfer's message size: the sweep's largest


def run_mtu(meta: dict | None) -> int:
    """The run's MTU: the smallest of its lab's links (run.json's testbed topology), else the
    topology's default, :data:`MTU`."""
    links = (((meta or {}).get("testbed") or {}).get("topology") or {}).get("links") or []
    mtus = [int(link["mtu"]) for link in links if link.get("mtu")]
    return min(mtus) if mtus else MTU


def wire_probe(meta: dict | None) -> WireProbe | None:
    """The run's wire probe (run.json ``wire_probe``), None when it recorded none."""
    record = (meta or {}).get("wire_probe")
    return WireProbe.from_dict(record) if record else None


def serialised_sizes(meta: dict | None) -> frozenset[int]:
    """The sizes the run's probe shows the wire serialising (none without a probe)."""
    probe = wire_probe(meta)
    return frozenset(probe.serialised()) if probe else frozenset()


def capacities(meta: dict | None) -> dict[str, float]:
    """Each method's bulk capacity in Mbit/s (run.json ``path_capacity``)."""
    record = ((meta or {}).get("path_capacity") or {}).get("paths") or {}
    return {method: float(p["mbit"]) for method, p in record.items() if p.get("mbit")}


def invalid_points(frame: pd.DataFrame, rate_mbit: float | None, mtu: int = MTU,
                   capacity: dict[str, float] | None = None) -> list[Invalid]:
    """Every point of the sweep above a bound: streaming above the wire's payload rate (shaped
    links only), ping-pong above its path's measured ``capacity`` (a ping-pong idles between
    messages, so it can never outrun a bulk transfer over the same path). Streaming is not held
    to the capacity: both are bulk transfers, and a loaded moment lowers either."""
    capacity = capacity or {}
    out = []
    for row in frame.itertuples():
        where = f"repetition {row.repetition}, {row.method}, {int(row.size)} B"
        path = f"{row.method} (1 MB messages, the fastest of its transfers)"
        stream = getattr(row, "stream_mbit", None)
        if stream is not None and pd.notna(stream) and rate_mbit:
            out.append(check_rate(where, float(stream), rate_mbit, mtu,
                                  quantity="streaming rate"))
        pp = getattr(row, "pingpong_mbit", None)
        if pp is not None and pd.notna(pp):
            out.append(check_capacity(where, float(pp), capacity.get(row.method), path,
                                      quantity="ping-pong rate (size / half RTT)"))
    return [p for p in out if p is not None]


def unserialised_sizes(frame: pd.DataFrame, sizes: tuple[int, int],
                       serialised: frozenset[int]) -> list[int]:
    """The measured sizes lo..hi the probe does not show serialised."""
    lo, hi = sizes
    return sorted(int(s) for s in frame["size"].unique()
                  if lo <= s <= hi and int(s) not in serialised)


def unserialised_note(frame: pd.DataFrame, meta: dict | None, methods,
                      sizes: tuple[int, int]) -> str:
    """The sizes of a latency or ping-pong claim the wire does not serialise, with the probe's
    figures, and how many of the claim's points they hold ('' when the probe shows every size of
    lo..hi serialised)."""
    left = unserialised_sizes(frame, sizes, serialised_sizes(meta))
    if not left:
        return ""
    part = frame[frame.method.isin(methods) & frame["size"].isin(left)]
    probe = wire_probe(meta)
    if probe is None:
        why = "the run recorded no wire probe"
    elif probe.rate_mbit is None:
        why = probe.note
    else:
        measured = {p.size: p for p in probe.sizes}
        figures = [measured[s].text(probe.slack) for s in left if s in measured]
        why = ("the probe measured a faster ping-pong than a serialising wire carries: "
               + ", ".join(figures) if figures else "the probe did not measure them")
    return (f"sizes {', '.join(map(str, left))} B are not serialised in this lab ({why}): "
            f"{len(part)} points of its methods, counted like every size of the claim (the gate "
            "serialising_wire says whether it is judged)")


def unserialised_pingpong(frame: pd.DataFrame, meta: dict | None,
                          rate_mbit: float | None) -> pd.DataFrame:
    """The ping-pong points at sizes the probe does not show serialised, per method and size,
    beside what a path of serialising links of the run's rate allows (the probe's path:
    :func:`harness.lab.serialisation.path_mbit`) and how many read above it: the
    report shows them apart, so that no reader takes them for counted ones."""
    cols = ["method", "size", "points", "pingpong_max_mbit", "wire_mbit", "above_wire"]
    if not rate_mbit or "pingpong_mbit" not in frame:
        return pd.DataFrame(columns=cols)
    serialised = serialised_sizes(meta)
    mtu = run_mtu(meta)
    probe = wire_probe(meta)
    links = probe.links if probe else 3  # the direct path's three links
    free = frame[[int(s) not in serialised for s in frame["size"]]]
    free = free[free.pingpong_mbit.notna()]
    bound = pd.Series([path_mbit(int(s), rate_mbit, mtu, links) for s in free["size"]],
                      index=free.index, dtype=float)
    free = free.assign(wire_mbit=bound, above_wire=free.pingpong_mbit > bound)
    out = free.groupby(["method", "size"]).agg(
        points=("pingpong_mbit", "size"), pingpong_max_mbit=("pingpong_mbit", "max"),
        wire_mbit=("wire_mbit", "first"), above_wire=("above_wire", "sum")).reset_index()
    return out[cols]


def among(points: list[Invalid], methods, sizes: tuple[int, int], quantity: str = "",
          counted: frozenset[int] | None = None) -> list[Invalid]:
    """The invalid points a claim rests on: its methods, its sizes lo..hi (only those in
    ``counted`` when given: the sizes it counts), its quantity."""
    lo, hi = sizes
    out = []
    for p in points:
        _rep, method, size = (part.strip() for part in p.point.split(","))
        value = int(size.split()[0])
        if method in methods and lo <= value <= hi and \
                (counted is None or value in counted) and \
                (not quantity or p.quantity.startswith(quantity)):
            out.append(p)
    return out

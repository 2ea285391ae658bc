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
  path's capacity plus :data:`harness.verdicts.validity.CAPACITY_ALLOWANCE` is faster than the
  paper's wire carries. Whether it is *impossible* depends on the lab's own wire, per point
  (:func:`checked_points`):

  - at a size the probe shows the lab's wire serialising, the point beat what that very wire
    carries: *invalid*, and so is every claim resting on it at a size it counts;
  - at a size the probe shows the lab's wire NOT serialising (its shaper lets a message's first
    two frames leave at once), the point is what this lab does: possible here, outside the
    paper's regime. It is *invalid* only when it also beats what its path carries with no
    shaper at all (the run's relay benchmark, table ``bench``: iperf3 over the same kind of
    path unshaped, the fastest repetition, + the allowance), which no wire of this lab can;
    otherwise the claims resting on it are *not testable here*, their estimates shown as
    measured anyway (the S0 referee of 2026-11-29: the 680 such points of the fourth reference were
    the shaper's documented two-frame bypass, "possible in this lab and impossible only on
    the paper's wire").

  Streaming is checked against the wire's TCP payload rate (the configured rate x 1448/1514,
  2 % slack): the shaper bounds a bulk transfer at every size. No bound here is derived from
  the shaper's settings (its peak bucket, its peak rate).

A run without the probe or the capacities (one archived before 2026-11-29) serialises no
size and has no capacity bound: its latency and ping-pong claims are not testable, and the
report says the capacity was not measured.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from ...lab.serialisation import WireProbe, path_mbit, wire_bytes, wire_mbit
from ...verdicts.validity import Invalid, check_capacity, check_rate

__all__ = ["MTU", "UNSHAPED_PATHS", "among", "capacities", "checked_points", "invalid_points", "run_mtu",
           "serialised_sizes", "unserialised_note", "unserialised_pingpong",
           "unserialised_sizes", "unshaped_capacities", "wire_bytes", "wire_mbit", "wire_probe"]

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


#: the relay benchmark's path (table ``bench``) that carries each method's traffic unshaped: the
#: sweep's two proxies are srdmux (one shared connection between the fronts)
UNSHAPED_PATHS = {"direct": "direct", "proxies": "proxies_srdmux", "nat_srd": "nat_srd"}


def unshaped_capacities(bench: pd.DataFrame | None) -> dict[str, float]:
    """Each method's path unshaped, in Mbit/s: the fastest iperf3 repetition of its path in the run's
    relay benchmark (:data:`UNSHAPED_PATHS`); a method whose path it did not measure is absent."""
    if bench is None or bench.empty or not {"path", "iperf_mbit"} <= set(bench):
        return {}
    rows = bench[bench.repetition > 0] if "repetition" in bench else bench
    best = pd.to_numeric(rows["iperf_mbit"], errors="coerce").groupby(rows["path"]).max().dropna()
    return {method: float(best[path]) for method, path in UNSHAPED_PATHS.items() if path in best}


def checked_points(frame: pd.DataFrame, rate_mbit: float | None, mtu: int = MTU,
                   capacity: dict[str, float] | None = None,
                   serialised: frozenset[int] = frozenset(),
                   unshaped: dict[str, float] | None = None) -> tuple[list[Invalid], list[Invalid]]:
    """The sweep's points above a bound, per point, as (invalid, outside the paper's regime).

    *Invalid*: streaming above the wire's payload rate (shaped links only); ping-pong above its
    path's measured ``capacity`` at a size the lab's wire serialises (``serialised``: the wire
    probe's), or above what its path carries ``unshaped`` at any size. A ping-pong idles between
    messages, so it can never outrun a bulk transfer over the same path and wire. *Outside the
    regime*: ping-pong above its path's capacity at a size the lab's wire does not serialise and
    within what the path carries unshaped (or with no unshaped figure to show it impossible):
    the lab's shaper made it, the paper's wire could not (module docstring). Streaming is not
    held to the capacity: both are bulk transfers, and a loaded moment lowers either."""
    capacity, unshaped = capacity or {}, unshaped or {}
    invalid, outside = [], []
    for row in frame.itertuples():
        where = f"repetition {row.repetition}, {row.method}, {int(row.size)} B"
        path = f"{row.method} (1 MB messages, the fastest of its transfers)"
        stream = getattr(row, "stream_mbit", None)
        if stream is not None and pd.notna(stream) and rate_mbit:
            invalid.append(check_rate(where, float(stream), rate_mbit, mtu, quantity="streaming rate"))
        pp = getattr(row, "pingpong_mbit", None)
        if pp is None or pd.isna(pp):
            continue
        quantity = "ping-pong rate (size / half RTT)"
        shaped = check_capacity(where, float(pp), capacity.get(row.method), path, quantity=quantity)
        if shaped is None:
            continue
        if int(row.size) in serialised:
            invalid.append(replace(shaped, why=f"{shaped.why}; the wire probe shows this lab's wire "
                                   f"serialising {int(row.size)} B"))
            continue
        free = unshaped.get(row.method)
        beyond = check_capacity(where, float(pp), free, f"{UNSHAPED_PATHS[row.method]} with no shaper "
                                "(the run's relay benchmark, the fastest repetition)", quantity=quantity)
        if beyond is not None:
            invalid.append(beyond)
            continue
        within = (f"within the {free:.0f} Mbit/s its path carries unshaped" if free is not None
                  else "no unshaped capacity of its path was measured to show it impossible")
        outside.append(replace(shaped, why=f"{shaped.why}; the wire probe does not show this lab's "
                               f"wire serialising {int(row.size)} B and the point is {within}: "
                               "possible here, outside the paper's regime"))
    return [p for p in invalid if p is not None], outside


def invalid_points(frame: pd.DataFrame, rate_mbit: float | None, mtu: int = MTU,
                   capacity: dict[str, float] | None = None,
                   serialised: frozenset[int] = frozenset(),
                   unshaped: dict[str, float] | None = None) -> list[Invalid]:
    """The impossible points of :func:`checked_points` (the report's list of invalid points)."""
    return checked_points(frame, rate_mbit, mtu, capacity, serialised, unshaped)[0]


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

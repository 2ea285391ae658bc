"""S1's failed and impossible points (:mod:`harness.verdicts.validity`), named so a claim shows them.

Two kinds were seen in archived S1 runs and decided claims unseen:

- a bandwidth row of 0 Mbit/s (or none): the point carried nothing, a failure, not
  a slow measurement. Left out of a geometric mean it vanished without a word; here
  it is an :class:`~harness.verdicts.validity.Invalid` point that makes the bandwidth claim
  resting on it ``invalid``.
- a CPU share above 100 % for the one-threaded perftest client (117 % and 102 % in
  the reference of 2026-11-25): the share is the process's CPU over its whole life,
  net of a 5-iteration floor, divided by the wall time of its round trips only, so
  set-up CPU the floor did not take off (QP set-up under TCG varies from run to
  run, more under load) lands in a shorter interval. No process can use more than
  its thread; :func:`harness.verdicts.validity.check_share` marks it. Since 2026-11-27 the
  share is the thread's CPU over the wall time of the measured exchange alone (both
  read at its start and end, :mod:`harness.tools.perftest`), which cannot exceed
  100 % by more than the counters' resolution (two scheduler ticks per interval:
  a busy loop read 100.76 % over 0.4 s, CI of 2026-11-27); the check stays as the gate
  a point must pass, with that resolution allowed.

And, when the wire is shaped (``wire_mbit``), a bandwidth point faster than the payload its
wire carries (issue 24). Each stack's bound is its own framing's: TCP's is
:func:`harness.verdicts.validity.payload_rate_mbit` (1448 B in a 1514-byte frame at MTU 1500: 0.956
of the rate), checked with :func:`harness.verdicts.validity.check_rate`; RoCE v2 carries one path-MTU
packet of payload (1024 B at a 1500-byte netdev MTU, 4096 B at 9000) in a frame of 58 more
bytes the shaper counts (Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4; send/recv over RC adds
no other header): 1024/1082 = 0.946 of the rate, checked by :func:`check_verbs_rate` with the
same clock slack (:data:`harness.verdicts.validity.SLACK`).
"""

from __future__ import annotations

import math

import pandas as pd

from ...verdicts.validity import (
    SLACK,
    Invalid,
    check_rate,
    check_share,
    counter_resolution_pct,
    payload_rate_mbit,
)

#: perftest's latency clients are single-threaded (one QP, one CQ, one thread).
CLIENT_THREADS = 1
#: Bytes of a RoCE v2 frame a Linux shaper counts beyond the payload: Ethernet 14 (no
#: preamble, no FCS), IPv4 20, UDP 8, the base transport header 12, the invariant CRC 4.
ROCE_FRAME_OVERHEAD = 14 + 20 + 8 + 12 + 4
#: The methods whose bandwidth is RoCE's (every other bandwidth row is TCP's).
VERBS_FAMILY = "verbs"


def roce_active_mtu(netdev_mtu: int) -> int:
    """RoCE's path MTU over a netdev: the largest IB MTU (256..4096) that fits with its
    headers (1500 gives 1024, 9000 gives 4096: ``ibv_devinfo``'s active_mtu here)."""
    fits = [m for m in (4096, 2048, 1024, 512, 256) if m + 20 + 8 + 12 + 4 <= netdev_mtu]
    return fits[0] if fits else 256


def roce_payload_mbit(wire_mbit: float, active_mtu: int) -> float:
    """The send/recv payload a wire shaped to ``wire_mbit`` carries over RoCE v2 whose path MTU
    is ``active_mtu`` (full packets: the measured sizes are multiples of it, or one packet)."""
    return wire_mbit * active_mtu / (active_mtu + ROCE_FRAME_OVERHEAD)


def check_verbs_rate(point: str, value_mbit: float, wire_mbit: float, active_mtu: int,
                     slack: float = SLACK, allowance_mbit: float = 0.0,
                     why: str = "") -> Invalid | None:
    """Invalid when a verbs bandwidth exceeds what RoCE v2 carries over the wire (plus
    ``allowance_mbit``, see :func:`bucket_allowance_mbit`) by more than the clocks' ``slack``:
    the rule of :func:`harness.verdicts.validity.check_rate`, RoCE's framing in place of TCP's."""
    payload = roce_payload_mbit(wire_mbit, active_mtu)
    bound = payload + allowance_mbit
    if not math.isfinite(value_mbit) or value_mbit <= bound * (1 + slack):
        return None
    extra = f", plus {allowance_mbit:.3g} Mbit/s: {why}" if allowance_mbit else ""
    return Invalid(point, "verbs goodput", value_mbit, bound, "Mbit/s",
                   f"a {wire_mbit:.4g} Mbit/s wire carries {payload:.4g} Mbit/s of RoCE v2 "
                   f"payload ({active_mtu} B per {active_mtu + ROCE_FRAME_OVERHEAD}-byte "
                   f"frame){extra}; {slack:.0%} slack for the clocks")


def bucket_allowance_mbit(burst_bytes: int, seconds: float) -> float:
    """What a shaper's full bucket adds to a point lasting ``seconds``: htb lets ``burst``
    bytes through at line speed before its rate holds, so a point carries at most
    rate x seconds + burst. Measured 2026-11-27 on a wire shaped to 11.1 Mbit/s (htb burst
    32 KiB): the harness's 0.03 s streaming points read 13.9-16.3 Mbit/s against a TCP
    payload bound of 10.6 (the bucket allows up to 8.7 more), and qperf's 1 s tcp_bw at
    64 B 10.86 (0.26 more allowed). Unknown duration: no allowance."""
    if not burst_bytes or not seconds or not math.isfinite(seconds) or seconds <= 0:
        return 0.0
    return burst_bytes * 8 / seconds / 1e6


def point_seconds(row, qperf_seconds: float) -> float:
    """How long a bandwidth row's transfer lasted: its bytes over its rate (perftest's
    messages, the streaming tool's messages), or qperf's fixed duration."""
    rate = float(row.bw_mbit)
    if getattr(row, "method", "") == "tcp-qperf":
        return float(qperf_seconds or 0.0)
    messages = getattr(row, "stream_messages", None)
    if messages is None or not math.isfinite(float(messages)):
        messages = getattr(row, "iterations", None)
    if messages is None or not math.isfinite(float(messages)) or rate <= 0:
        return 0.0
    return float(messages) * float(row.size) * 8 / (rate * 1e6)


def payload_bound_mbit(family: str, wire_mbit: float, mtu: int, active_mtu: int) -> float:
    """What the wire carries for a stack: RoCE's payload rate for verbs, TCP's otherwise."""
    if family == VERBS_FAMILY:
        return roce_payload_mbit(wire_mbit, active_mtu)
    return payload_rate_mbit(wire_mbit, mtu)


def faster_than_wire(frame: pd.DataFrame, methods: tuple[str, ...], sizes: list[int],
                     wire_mbit: float, mtu: int, active_mtu: int, burst_bytes: int = 0,
                     qperf_seconds: float = 0.0) -> list[Invalid]:
    """Each bandwidth row of ``methods`` at ``sizes`` faster than its stack's payload bound
    on a wire shaped to ``wire_mbit`` plus what the shaper's bucket (``burst_bytes``) adds
    over the point's duration (none when the wire is unshaped: 0)."""
    if not wire_mbit or "bw_mbit" not in frame or frame.empty:
        return []
    sub = frame[frame.method.isin(methods) & frame["size"].isin(sizes) & frame.bw_mbit.notna()]
    out = []
    for row in sub.itertuples():
        point = f"repetition {row.repetition}, {row.method} at {int(row.size)} B"
        seconds = point_seconds(row, qperf_seconds)
        allowance = bucket_allowance_mbit(burst_bytes, seconds)
        why = f"the shaper's {burst_bytes} B bucket over the point's {seconds:.3g} s"
        if row.family == VERBS_FAMILY:
            bad = check_verbs_rate(point, float(row.bw_mbit), wire_mbit, active_mtu,
                                   allowance_mbit=allowance, why=why)
        else:
            bad = check_rate(point, float(row.bw_mbit), wire_mbit, mtu,
                             allowance_mbit=allowance, why=why)
        if bad is not None:
            out.append(bad)
    return out


def failed_bandwidth(frame: pd.DataFrame, methods: tuple[str, ...],
                     sizes: list[int]) -> list[Invalid]:
    """Each row of ``methods`` at ``sizes`` whose bandwidth is missing or not above 0."""
    if "bw_mbit" not in frame or frame.empty:
        return []
    sub = frame[frame.method.isin(methods) & frame["size"].isin(sizes)]
    out = []
    for row in sub.itertuples():
        value = row.bw_mbit
        value = math.nan if value is None else float(value)
        if math.isfinite(value) and value > 0:
            continue
        out.append(Invalid(f"repetition {row.repetition}, {row.method} at {int(row.size)} B",
                           "bandwidth", value, 0.0, "Mbit/s",
                           "a point that carried nothing failed: it has no rate to compare",
                           breaks="<=" if math.isfinite(value) else "not >"))
    return out


def failed_latency(frame: pd.DataFrame, methods: tuple[str, ...],
                   sizes: list[int]) -> list[Invalid]:
    """Each row of ``methods`` at ``sizes`` whose mean latency is missing or not above 0 (a
    round trip takes time: such a row is a failed point, e.g. perftest's ``inf`` when its
    clock arithmetic fails under TCG). Rows carry their CPU level when they have one."""
    if "latency_mean_us" not in frame or frame.empty:
        return []
    sub = frame[frame.method.isin(methods) & frame["size"].isin(sizes)]
    out = []
    for row in sub.to_dict("records"):
        value = row["latency_mean_us"]
        value = math.nan if value is None else float(value)
        if math.isfinite(value) and value > 0:
            continue
        level = f", {int(row['cpus'])} CPU" if row.get("cpus") is not None else ""
        out.append(Invalid(f"repetition {row['repetition']}{level}, {row['method']} at "
                           f"{int(row['size'])} B", "mean half round trip", value, 0.0, "us",
                           "a round trip takes time: a missing or non-positive latency is a "
                           "failed point", breaks="<=" if math.isfinite(value) else "not >"))
    return out


def impossible_shares(share: pd.DataFrame, readings: pd.DataFrame | None = None
                      ) -> list[Invalid]:
    """Each (repetition, method) CPU share (a fraction) above 100 % of the client's thread,
    beyond the resolution of its ``readings`` (same shape: ``(intervals, wall_s)`` pairs, as
    :func:`harness.studies.s1.analysis.cpu_readings` gives; none: no resolution allowed)."""
    out = []
    for rep, row in share.iterrows():
        for method, value in row.items():
            resolution = 0.0
            if readings is not None:
                intervals, wall_s = readings.loc[rep, method]
                resolution = counter_resolution_pct(int(intervals), float(wall_s))
            bad = check_share(f"repetition {rep}, {method} client", 100 * float(value),
                              threads=CLIENT_THREADS, quantity="CPU share (client process)",
                              resolution_pct=resolution)
            if bad is not None:
                out.append(bad)
    return out

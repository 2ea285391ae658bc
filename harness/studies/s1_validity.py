"""S1's failed and impossible points (:mod:`harness.validity`), named so a claim shows them.

Two kinds were seen in archived S1 runs and decided claims unseen:

- a bandwidth row of 0 Mbit/s (or none): the point carried nothing, a failure, not
  a slow measurement. Left out of a geometric mean it vanished without a word; here
  it is an :class:`~harness.validity.Invalid` point that makes the bandwidth claim
  resting on it ``invalid``.
- a CPU share above 100 % for the one-threaded perftest client (117 % and 102 % in
  the reference of 2026-11-25): the share is the process's CPU over its whole life,
  net of a 5-iteration floor, divided by the wall time of its round trips only, so
  set-up CPU the floor did not take off (QP set-up under TCG varies from run to
  run, more under load) lands in a shorter interval. No process can use more than
  its thread; :func:`harness.validity.check_share` marks it. Since 2026-11-27 the
  share is the thread's CPU over the wall time of the measured exchange alone (both
  read at its start and end, :mod:`harness.tools.perftest`), which cannot exceed
  100 % by more than the counters' resolution (two scheduler ticks per interval:
  a busy loop read 100.76 % over 0.4 s, CI of 2026-11-27); the check stays as the gate
  a point must pass, with that resolution allowed.
"""

from __future__ import annotations

import math

import pandas as pd

from ..validity import Invalid, check_share, counter_resolution_pct

#: perftest's latency clients are single-threaded (one QP, one CQ, one thread).
CLIENT_THREADS = 1


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


def impossible_shares(share: pd.DataFrame, readings: pd.DataFrame | None = None
                      ) -> list[Invalid]:
    """Each (repetition, method) CPU share (a fraction) above 100 % of the client's thread,
    beyond the resolution of its ``readings`` (same shape: ``(intervals, wall_s)`` pairs, as
    :func:`harness.studies.s1_analysis.cpu_readings` gives; none: no resolution allowed)."""
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

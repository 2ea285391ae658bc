"""S1's tools' outputs as the study's tidy rows: perftest's latency and bandwidth reports, qperf's
sweep, the ping-pong tool's points (msgcount's rows come from :meth:`CountResult.row`).

One row per size: latency as half a round trip (us), bandwidth in decimal Mbit/s, the
client's CPU over its measured exchange where the tool reports it.
"""

from __future__ import annotations

import math

from ...tools import perftest, qperf


def _finite(value: float) -> float | None:
    """perftest prints inf/-nan when its clock arithmetic fails (seen under TCG): missing."""
    return value if math.isfinite(value) else None



def _cpu(report: perftest.PerftestReport) -> float | None:
    if report.cpu_user_s is None:
        return None
    return (report.cpu_user_s or 0) + (report.cpu_system_s or 0)



def latency_rows(reports: list[perftest.PerftestReport]) -> list[dict]:
    """perftest latency reports as rows: median half round trip, CPU per round trip.

    The CPU is the client's over its measured exchange only (``phase_cpu_s``: read at the
    results header and at the result row, :mod:`harness.tools.perftest`), over that
    exchange's wall time (``phase_wall_s``). Until 2026-11-27 it was the process's
    whole-life CPU net of a 5-iteration run's, over the round trips' time: set-up CPU the
    floor did not take off gave one thread 103-120 % in the reference of 2026-11-26.
    """
    rows = []
    for report in reports:
        for row in report.rows:
            cpu = _cpu(report)
            phase_cpu, phase_wall = report.phase_cpu_s, report.phase_wall_s
            rows.append({"size": row.size, "latency_us": _finite(row.t_typical_us),
                         "latency_mean_us": _finite(row.t_avg_us),
                         "latency_p99_us": _finite(row.t_p99_us),
                         "iterations": row.iterations, "cpu_s": cpu,
                         "cpu_phase_s": phase_cpu, "wall_phase_s": phase_wall,
                         # CPU per round trip (one round trip is two half round trips)
                         "cpu_us_per_rt": None if phase_cpu is None
                         else 1e6 * phase_cpu / row.iterations,
                         "wall_us_per_rt": _finite(2 * row.t_avg_us)})
    return rows



def bandwidth_rows(reports: list[perftest.PerftestReport]) -> list[dict]:
    rows = []
    for report in reports:
        for row in report.rows:
            cpu = (report.cpu_user_s or 0) + (report.cpu_system_s or 0) \
                if report.cpu_user_s is not None else None
            rows.append({"size": row.size, "bw_mbit": row.bw_avg_mbit_s,
                         "bw_peak_mbit": row.bw_peak_mib_s * (1 << 20) * 8 / 1e6,
                         "msg_rate_mpps": row.msg_rate_mpps, "iterations": row.iterations,
                         "cpu_s": cpu})
    return rows



def qperf_rows(by_size: dict[int, list[qperf.QperfResult]], lat: str = "tcp_lat",
               bw: str = "tcp_bw") -> list[dict]:
    """qperf's ``lat`` and ``bw`` tests per size as rows (tcp_lat and tcp_bw, or rc_lat and
    rc_bw): mean half round trip (qperf reports no median), streaming Mbit/s."""
    rows = []
    for size, results in by_size.items():
        got = {r.test: r for r in results}
        latency = got[lat].latency_us if lat in got else None
        rows.append({"size": size, "latency_us": latency, "latency_mean_us": latency,
                     "latency_p99_us": None, "iterations": None,
                     "bw_mbit": got[bw].bw_mbit_s if bw in got else None})
    return rows



def tcp_rows(result: dict) -> list[dict]:
    """The ping-pong tool's output as rows: median half round trip, streaming Mbit/s."""
    (target,) = result["targets"].values()
    rows = []
    for point in target["points"]:
        lat, stream = point["latency"], point.get("stream") or {}
        rows.append({"size": point["size"], "latency_us": lat["median_us"],
                     "latency_mean_us": lat["mean_us"], "latency_p99_us": None,
                     "iterations": lat["n"], "bw_mbit": stream.get("mbit"),
                     "pingpong_mbit": lat.get("pingpong_mbit"),
                     "stream_messages": stream.get("messages")})
    return rows

"""S2's physical bounds per point (:mod:`harness.verdicts.validity`): each point against its wire and
its disk, before any claim may rest on it.

- WAN points (iperf3, and fio across the WAN) against the scaled line's TCP goodput at the
  point's MTU, with validity's 2 % for the clocks. A WAN write of 16.9 Mbit/s on an 11.4
  Mbit/s line (the parallel FS's data crossing the LAN, fixed 2026-11-25) is caught here.
- LAN points against the LAN wire's measured ceiling, which is itself a goodput: one 3 s
  iperf3 before the run, under a host load that changes 2-3x during a run (this machine's
  wire carried 35..116 Mbit/s in runs of 2026-11-25/26), so ``LAN_SLACK`` is 50 %: wide,
  but a point over the other wire or from a cache reads several times the wire.
- Disk and file-system points against their disk's cap. QEMU's throttle is a leaky bucket
  that admits a request whenever the bucket holds less than a tenth of a second of the
  rate, then charges it whole: a point can run ahead of the cap by about one request
  (``REQUEST_BYTES``, the guest's largest) plus 0.1 s of the rate, over its bytes. That
  is the slack (plus 2 %), derived, not tuned: a 1 MiB file read at 17.2 MB/s against a
  1.31 MB/s cap (2026-11-26) is exactly such a point and stays invalid.
"""

from __future__ import annotations

import math

import pandas as pd

from ...verdicts.validity import SLACK, Invalid, check_rate

LAN_SLACK = 0.5
REQUEST_BYTES = 2 << 20  # virtio-blk's largest request here (max_sectors_kb 1280) rounded up
THROTTLE_BURST_S = 0.1  # QEMU's bucket: a tenth of a second of the rate when no max is set


def disk_slack(cap_mbyte_s: float, moved_bytes: float) -> float:
    """How far above its cap a point of ``moved_bytes`` may read (module docstring)."""
    if not moved_bytes or not math.isfinite(moved_bytes):
        return math.inf
    return (REQUEST_BYTES + THROTTLE_BURST_S * cap_mbyte_s * 1e6) / moved_bytes + SLACK


def _name(row) -> str:
    parts = [str(row.get("kind"))]
    for key in ("fs", "path", "tuning", "rw"):
        value = row.get(key)
        if isinstance(value, str):
            parts.append(value)
    for key, unit in (("clients", " tasks"), ("block_kib", " KiB"), ("window_kib", " KiB w"),
                      ("mtu", " MTU"), ("repetition", "")):
        value = row.get(key)
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            parts.append(f"rep {int(value)}" if key == "repetition" else f"{int(value)}{unit}")
    return " ".join(parts)


def point_checks(frame: pd.DataFrame, meta: dict) -> dict:
    """Row index -> the :class:`Invalid` it is (None: possible) for every row of ``frame``."""
    params = meta.get("parameters", {})
    placement = meta.get("placement", {})
    factor = (placement.get("scaling") or {}).get("factor", 1.0)
    line = params.get("wan_rate_mbit", 1000.0) * factor
    mtus = params.get("mtus") or (1500,)
    wan_mtu = min(mtus) if mtus else 1500
    ceiling = (placement.get("wire_ceilings_mbit") or {}).get("client:lan--server:lan")
    disks = (placement.get("disks") or {}).get("server", {})
    out: dict = {}
    for index, row in frame.iterrows():
        row = row.to_dict()
        out[index] = _check(row, line, wan_mtu, ceiling, disks)
    return out


def _check(row: dict, line: float, wan_mtu: int, lan_ceiling, disks: dict) -> Invalid | None:
    kind, path = row.get("kind"), row.get("path")
    name = _name(row)
    mbyte = row.get("mbyte_s")
    rate = row.get("mbit_s") if kind in ("window", "flows", "mtu") else \
        (mbyte * 8 if isinstance(mbyte, float) and math.isfinite(mbyte) else None)
    if rate is None or not math.isfinite(rate):
        return None
    if path == "wan":
        mtu = int(row["mtu"]) if kind == "mtu" else wan_mtu
        found = check_rate(name, rate, line, mtu=mtu,
                           quantity="goodput" if kind != "fs" else "fio MB/s x 8")
        if found:
            return found
    if path == "lan" and lan_ceiling and rate > lan_ceiling * (1 + LAN_SLACK):
        return Invalid(name, "fio MB/s x 8", rate, lan_ceiling, "Mbit/s",
                       f"the LAN wire's measured ceiling; {LAN_SLACK:.0%} slack for the host "
                       "load's changes")
    if kind in ("disk", "fs") and row.get("rw") in ("read", "write"):
        disk = disks.get(row.get("fs"))
        cap = (disk or {}).get(f"{row['rw']}_mbyte_s")
        if cap:
            slack = disk_slack(cap, row.get("bytes") or 0)
            if mbyte > cap * (1 + slack):
                return Invalid(name, f"{row['rw']} MB/s", mbyte, cap, "MB/s",
                               f"the {row.get('fs')} disk's {row['rw']} cap (QEMU's throttle); "
                               f"{slack:.0%} slack: one request and 0.1 s of the cap over the "
                               "point's bytes, plus 2 % for the clocks")
    return None

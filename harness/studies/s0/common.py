"""S0's shared names: its three methods and their labels, the byte units its claims and tables
are written in, how a size is printed (``4 KB``) and how a verdict's note is joined.

Apart so that S0's helper modules -- the lab (:mod:`.design`), the registration
(:mod:`.registration`), the bounds (:mod:`.validity`), the estimates (:mod:`.estimates`),
the tables (:mod:`.analysis`), the distance verdict (:mod:`.distance_verdict`) -- take them
from one module they all import, and none from another's.
"""

from __future__ import annotations

#: the relay benchmark's paths (harness.studies.s0.bench), in the order tables and figures show
#: them: kernel forwarding, NAT + a relay on fb, a relay on each front (socat, srd), and the
#: sweep's own two proxies (srdmux, one shared connection)
BENCH_PATHS = ("direct", "nat_socat", "nat_srd", "proxies_socat", "proxies_srd", "proxies_srdmux")
METHODS = ("direct", "proxies", "nat_srd")
LABELS = {"direct": "1) direct", "proxies": "2) two proxies", "nat_srd": "3) NAT + SRD"}
KB = 1024
MB = 1 << 20


def size_label(size: int) -> str:
    size = int(size)
    if size >= 1 << 20:
        return f"{size >> 20} MB"
    if size >= KB:
        return f"{size // KB} KB"
    return f"{size} B"


def join_notes(*parts: str) -> str:
    """A verdict's note from its parts, the empty ones left out, joined by "; "."""
    return "; ".join(p for p in parts if p)

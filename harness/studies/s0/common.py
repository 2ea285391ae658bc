"""S0's shared names: its three methods and their labels, the byte units its claims and tables
are written in, how a size is printed (``4 KB``), how a verdict's note is joined, and how
Table 1's relays per flow follow from the connections counted.

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


def relay_counts(terminated_at_fa: int, terminated_at_fb: int, flows: int) -> dict:
    """How many user-space relays each of ``flows`` flows crosses, and how many TCP connections
    end in one per flow, from the connections a method's relays terminated while the flows were
    open: fa's relay terminates one connection per flow (the proxies' entry), fb's one per flow
    (srd) or one for all (the proxies' shared connection, 1 for 4 flows). The second counted
    the first's name until 2026-11-29 (1.25 "relays" per flow for two proxies at 4 flows)."""
    return {"user_space_relays_per_flow": int(terminated_at_fa >= flows > 0) + int(terminated_at_fb > 0),
            "relay_connection_ends_per_flow": (terminated_at_fa + terminated_at_fb) / flows}

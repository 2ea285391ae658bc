"""S1's registration, read from its file (``s1/registration.toml``: the paper's claims, the
design fixed before data, every change made after archived runs existed), and the numbers
and names the analysis uses beside it.
"""

from __future__ import annotations

from pathlib import Path

from ...verdicts.claims import Claim
from ...verdicts.registration import Registration
from ...verdicts.registration_file import load

#: the study's registration file, beside this module (S1.registration_file)
REGISTRATION_FILE = "registration.toml"

# The paper's numbers, read from its text (section 3, Fig. 2 and Fig. 4).
PAPER = {"mvia_4b_us": 42.0, "tcp_4b_us": 58.0, "clan_4b_us": 10.0}
SMALL_MAX = 1024  # "small messages": one Ethernet frame at MTU 1500 (powers of two <= 1460 B)
BW_SMALL_MAX = 512  # the paper: "512바이트 이하" (512 bytes and below)
LARGE_MIN = 8192  # "large messages": several frames even at MTU 9000
#: "Both stacks run into the wire" (bw_large's regime): each stack's large-message goodput at
#: least this share of the payload its framing carries over the shaped wire. At 90 % the wire
#: is busy nine tenths of the time, so it, not the host, sets the rate; below that the host's
#: per-message cost does and a ratio compares CPUs. Fixed from those words on 2026-11-27,
#: before any run with a shaped wire existed.
WIRE_BOUND_FRACTION = 0.9
#: The bandwidth claims' TCP (since 2026-11-27): msgcount, a C program sending the same count
#: of messages as ib_send_bw's -n, timed the same way; Nagle on, as qperf before it.
BW_TCP = "tcp-count"
#: "irregular" needs a curve, not two interior points (issue 34 item 5): the Nagle claim is
#: judged on at least this many sizes at or below SMALL_MAX (fewer: not decided)
MIN_NAGLE_SIZES = 8
#: messages per bandwidth point a bandwidth claim needs to be decided (issue 34 item 6); the
#: quick profile sends fewer and its report says the bandwidth claims are not decided
MIN_BW_MESSAGES = 10_000

LABELS = {
    "verbs-send": "verbs send/recv (Soft-RoCE, polling)",
    "verbs-write": "verbs RDMA write (Soft-RoCE, polling)",
    "verbs-send-events": "verbs send/recv (Soft-RoCE, events)",
    "verbs-send-bw": "verbs send/recv (Soft-RoCE)",
    "verbs-send-bw-events": "verbs send/recv (Soft-RoCE, events)",
    "verbs-qperf": "verbs RC send/recv, qperf rc_lat/rc_bw (Soft-RoCE, RDMA CM)",
    "verbs-write-bw": "verbs RDMA write (Soft-RoCE)",
    "tcp-nodelay": "TCP, TCP_NODELAY",
    "tcp-nagle": "TCP, Nagle on",
    "tcp-qperf": "TCP, qperf (C; Nagle on)",
    "tcp-count": "TCP, msgcount (C; Nagle on; ib_send_bw's count)",
    "tcp-count-nodelay": "TCP, msgcount (C; TCP_NODELAY; ib_send_bw's count)",
}
HARDWARE = ("needs a hardware RDMA device (InfiniBand, RoCE or iWARP NIC), which plays cLAN's "
            "part; this lab has Soft-RoCE between two emulated machines only. On machines from "
            "an inventory with such a NIC the same notebook measures it")


def registered() -> Registration:
    """S1's registration (:data:`REGISTRATION_FILE`)."""
    return load(Path(__file__).with_name(REGISTRATION_FILE))


def claim(claim_id: str) -> Claim:
    """The registered claim ``claim_id`` (:meth:`harness.verdicts.registration.Registration.claim`)."""
    return registered().claim(claim_id)

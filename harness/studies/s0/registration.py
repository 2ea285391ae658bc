"""S0's registration, read from its file (``s0/registration.toml``: the paper's claims, our
targets, the design they rest on, its changes), and the design's numbers the code uses.

The numbers below are the ones the registration's design states (its "sizes per claim",
"distance sweep" and "regime checks"); a unit test holds them equal.
"""

from __future__ import annotations

from pathlib import Path

from ...verdicts.registration import Registration
from ...verdicts.registration_file import load
from .common import KB, MB

#: the study's registration file, beside this module (S0.registration_file)
REGISTRATION_FILE = "registration.toml"

LATENCY_SIZES = (1, KB)  # latency claims: messages up to 1 KB (not bandwidth-bound here)
SMALL_SIZES = (KB, 32 * KB)  # '1~32KB의 작은 메시지'
LARGE_SIZES = (128 * KB, MB)  # '128KB~1MB의 큰 메시지'
ALL_SIZES = (1, MB)
# "적절한 크기의 메시지" (a message of appropriate size, 000:111): the paper names no size. The
# only range of its results whose stated gain reaches "about 25 %" is 1-32 KB ("18~27%";
# 128 KB-1 MB: "6~16%"), and of that range the one size fixed here is its largest, 32 KB: the
# one whose ping-pong a serialising lab comes nearest to a wire's (registration.toml's design
# "appropriate size"). Fixed by change #13 (2026-11-29T00:39Z), AFTER the single-run references
# f2ea50 and efd65a had been read, before any pooled reference, by a rule that reads no measured
# gain: not "before data". Never the best of several noisy sizes.
APPROPRIATE_SIZE = 32 * KB
DIRECT_LINK_FLOOR = 0.9  # of the payload rate: the links, not the CPU, limit direct streaming
FAR_DELAYS_MS = (0.0, 2.0, 10.0)  # the swept front-to-front one-way delays; the claim at the last
FAR_REACHED = 0.9  # the sweep's direct path must show >= 90 % of the largest delay, one way

METRICS = ("stream", "pingpong")  # both bandwidth definitions: the paper does not say which


def registered() -> Registration:
    """S0's registration (:data:`REGISTRATION_FILE`)."""
    return load(Path(__file__).with_name(REGISTRATION_FILE))


def claim(claim_id: str):
    """The registered claim ``claim_id`` (:meth:`harness.verdicts.registration.Registration.claim`)."""
    return registered().claim(claim_id)

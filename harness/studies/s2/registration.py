"""S2's registration, read from its file (``s2/registration.toml``: the paper's claims with
quote, seed line, quantity, regime, region and the rule that made it, the design fixed
before data, every change made after archived runs existed; docs/explanation/verdicts.md),
and the physical constants the analysis uses beside it. Judged by
:mod:`harness.studies.s2.analysis`.
"""

from __future__ import annotations

from pathlib import Path

from ...verdicts.claims import Claim
from ...verdicts.registration import Registration
from ...verdicts.registration_file import load

#: the study's registration file, beside this module (S2.registration_file)
REGISTRATION_FILE = "registration.toml"

GOODPUT_PER_WIRE = 1448 / 1514  # TCP payload per Ethernet frame at MTU 1500 (timestamps on)
GOODPUT_9000 = 8948 / 9014  # ... at MTU 9000
ERA_PAPER_MBIT = 160.74  # the paper's usable bandwidth before tuning (Fig. 2-1, section 2)


def registered() -> Registration:
    """S2's registration (:data:`REGISTRATION_FILE`)."""
    return load(Path(__file__).with_name(REGISTRATION_FILE))


def claim(claim_id: str) -> Claim:
    """The registered claim ``claim_id`` (:meth:`harness.verdicts.registration.Registration.claim`)."""
    return registered().claim(claim_id)

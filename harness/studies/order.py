"""The order in which a repetition measures the compared methods: randomised, recorded.

Within each repetition every compared method (protocol, transport, relay path)
is measured back to back in an order drawn from a seeded generator, so a slow
drift of the machine or of the emulator (a TCG VM warming up, another job
starting) falls on all methods alike instead of on whichever always ran last.
Differences are then paired per repetition. The seed is recorded in run.json,
and each row of the results says at which position it was measured.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


class MeasuringOrder:
    """A seeded shuffle; seed 0 asks for a fresh seed, which :attr:`seed` then holds."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed or secrets.randbits(31) or 1
        self._rng = random.Random(self.seed)

    def shuffle(self, items: Sequence[T]) -> list[T]:
        out = list(items)
        self._rng.shuffle(out)
        return out

    def draw_seed(self) -> int:
        """A seed for a measuring tool's own shuffle (e.g. the ping-pong client's)."""
        return self._rng.randrange(1, 2**31)

    def record(self, design: str) -> dict:
        """What run.json keeps: the seed, and in words what was shuffled and how often."""
        return {"seed": self.seed, "design": design}

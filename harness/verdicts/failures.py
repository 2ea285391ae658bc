"""Failures of the system under test are results: the rules a claim registers to count them.

*invalid* means the apparatus failed (:mod:`harness.verdicts.validity`): a tool crashed or
could not start, a counter read what cannot be, a link check failed. A failure of the
system under test -- a TIPC link that resets under incast and aborts its connections, a
round that never completes before its timeout -- is what the protocol did; a paper's
"collapse" may be exactly that. Marking it invalid would leave such a claim undecidable
forever, so it is counted instead, by a rule registered before data (issue 33 item 6):

- :func:`zero_goodput`: a measured round that did not complete delivered nothing; a point's
  goodput is the mean over all the rounds it asked for, each round that did not complete
  at 0. (The generator stops at its first failed round, so every round after it did not
  complete either.)
- :func:`floored_ratio`: a ratio of two such goodputs on a log scale meets zero; it is held
  within ``[RATIO_FLOOR, 1 / RATIO_FLOOR]`` (0.01-100x): a protocol that delivered nothing
  then reads 0.01x of its reference, far beyond any registered region, so it decides a
  claim as zero would, and the interval stays finite. A ratio where both delivered nothing
  has no value and is left out, said so beside the estimate.
- :func:`failed_round_share`: the share of the asked rounds that did not complete, the
  figure a report shows beside the goodput.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

#: the least and (inverted) the largest ratio a log-scale estimate reads (module docstring)
RATIO_FLOOR = 0.01


def zero_goodput(mean_of_completed: float, completed: int, asked: int) -> float:
    """A point's goodput when only ``completed`` of its ``asked`` rounds completed, at a mean
    of ``mean_of_completed`` over those: every other round counts 0."""
    if asked <= 0:
        raise ValueError(f"a point that asked for {asked} rounds has no goodput")
    if completed <= 0:
        return 0.0
    if not math.isfinite(mean_of_completed):
        return math.nan
    return mean_of_completed * min(completed, asked) / asked


def failed_round_share(completed: int, asked: int) -> float:
    """The share of ``asked`` rounds that did not complete."""
    if asked <= 0:
        raise ValueError(f"a point that asked for {asked} rounds has no failed-round share")
    return 1.0 - min(max(completed, 0), asked) / asked


def floored_ratio(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    """``numerator / denominator`` held within [RATIO_FLOOR, 1 / RATIO_FLOOR]; NaN where both
    are 0 (neither delivered anything: no ratio) or either is missing."""
    both_zero = (numerator == 0) & (denominator == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = numerator / denominator
    ratio = ratio.clip(lower=RATIO_FLOOR, upper=1 / RATIO_FLOOR)
    return ratio.mask(both_zero)

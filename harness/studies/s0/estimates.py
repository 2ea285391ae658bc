"""S0's per-repetition estimates: the paired samples each claim's interval is made of.

Every claim's quantity is computed per repetition, and the repetitions are its samples
(s0/registration.toml, design "sample"): a ratio of two methods paired per repetition and size
(:func:`per_repetition`), then over the claim's sizes either the geometric mean
(:func:`geomean_per_repetition`, every claim but one) or, for "about 25 % with an
appropriately sized message" (000:111), the largest ratio among the sizes
(:func:`best_size_gain`, design "appropriate size"). :mod:`.analysis` judges the claims on
these; which sizes may count at all is :mod:`.validity`'s (:func:`.validity.paced_only`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .common import size_label


def per_repetition(frame: pd.DataFrame, value: str) -> pd.DataFrame:
    """One column per method, one row per (repetition, size): the paired samples."""
    return frame.pivot_table(index=["repetition", "size"], columns="method", values=value)


def geomean_per_repetition(series: pd.Series, lo: int, hi: int) -> pd.Series:
    """Per repetition: the geometric mean over sizes lo..hi of a per-(repetition, size) ratio."""
    sizes = series.index.get_level_values("size")
    part = series[(sizes >= lo) & (sizes <= hi)]
    return np.exp(np.log(part).groupby(level="repetition").mean())


def best_size_gain(gain: pd.Series, lo: int, hi: int) -> tuple[pd.Series, pd.Series]:
    """Per repetition: the largest ratio among the sizes lo..hi, and the size it was at.

    The paper's "with an appropriately sized message" (000:111) read literally: the best
    size. A maximum of several noisy ratios is biased upward; the registration says so.
    """
    sizes = gain.index.get_level_values("size")
    part = gain[(sizes >= lo) & (sizes <= hi)].dropna()
    part = part[part > 0]
    if part.empty:
        return part, part
    by_rep = part.groupby(level="repetition")
    at = by_rep.idxmax().map(lambda key: key[1])
    return by_rep.max(), at


def best_size_note(at: pd.Series) -> str:
    """For the verdict: at which size each repetition's best ratio was (:func:`best_size_gain`)."""
    counts = at.value_counts().sort_index()
    return "best size per repetition: " + ", ".join(
        f"{size_label(size)} in {n}" for size, n in counts.items())

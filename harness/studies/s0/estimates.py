"""S0's per-repetition estimates: the paired samples each claim's interval is made of.

Every claim's quantity is computed per repetition, and the repetitions are its samples
(s0/registration.toml, design "sample"): a ratio of two methods paired per repetition and size
(:func:`per_repetition`), then the geometric mean over the claim's sizes
(:func:`geomean_per_repetition`; "about 25 % with an appropriately sized message", 000:111,
has one size, design "appropriate size", fixed by a rule that reads no measured gain after the
references f2ea50 and efd65a had been read (change #13); never the per-repetition best of
several noisy sizes). :mod:`.analysis` judges the claims on these, on every size of a
claim's registered range; whether the wire serialised them is the gate serialising_wire's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...verdicts.gates.reachable import ceiling
from .common import size_label


def per_repetition(frame: pd.DataFrame, value: str) -> pd.DataFrame:
    """One column per method, one row per (repetition, size): the paired samples."""
    return frame.pivot_table(index=["repetition", "size"], columns="method", values=value)


def geomean_per_repetition(series: pd.Series, lo: int, hi: int) -> pd.Series:
    """Per repetition: the geometric mean over sizes lo..hi of a per-(repetition, size) ratio."""
    sizes = series.index.get_level_values("size")
    part = series[(sizes >= lo) & (sizes <= hi)]
    return np.exp(np.log(part).groupby(level="repetition").mean())


def ceiling_note(frame: pd.DataFrame, metric: str, sizes: tuple[int, int]) -> str:
    """A NAT + SRD over two proxies gain's ceiling in this run, for its note: direct over two
    proxies over the claim's sizes, the gain NAT + SRD would show were it as fast as direct -- "at
    most +X % here" where the links, not the relays, set every path's rate (the seventh review:
    +2.5 to +3.6 % streaming against regions from +5.5 %); computed as the gate ``reachable``
    computes it (:func:`harness.verdicts.gates.reachable.ceiling`), from the run's own points."""
    lo, hi = sizes
    where = size_label(lo) if lo == hi else f"{size_label(lo)}-{size_label(hi)}"
    est = ceiling(frame, f"{metric}_mbit", "direct", "proxies", lo, hi)
    if isinstance(est, str):
        return f"the ceiling here (direct over two proxies at {where}) is unknown: {est}"
    return (f"at most {est.value:+.1f} % here: the gain if NAT + SRD were as fast as direct "
            f"(direct over two proxies, {'streaming' if metric == 'stream' else 'ping-pong'} at {where}: "
            f"{est.text()})")

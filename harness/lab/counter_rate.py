"""The rate a link's shaper carried, fitted from its byte counter read during a bulk test.

The link verification (:mod:`harness.lab.verify`) reads the shaping qdisc's byte counter every
~0.1 s (each read stamped between two clock reads), and the rate is the slope of bytes over
time across the test's busy stretch: its ramp-up and tail left out.
"""

from __future__ import annotations

import statistics


def parse_samples(text: str) -> list[tuple[int, float]]:
    """(bytes, time) counter samples, each stamped at the midpoint of its clock bracket."""
    out = []
    for line in text.splitlines():
        words = line.split()
        if len(words) == 4 and words[0] == "SAMPLE":
            _, t1, t2, sent = words
            out.append((int(sent), (float(t1) + float(t2)) / 2))
    return out


def steady_rate_bps(samples: list[tuple[int, float]]) -> float:
    """Rate over the busy stretch of a byte-counter series, without its ramp-up and tail.

    The busy stretch is the longest sequence of intervals above 80 % of the typical
    (upper-half median) interval rate; its first and last interval are dropped, and the rate is the
    least-squares slope of bytes over time across it.
    """
    return slope_bps(busy_stretch(samples))


def busy_stretch(samples: list[tuple[int, float]],
                 keep_first: bool = False) -> list[tuple[int, float]]:
    """The samples of :func:`steady_rate_bps`'s busy stretch; ``keep_first``: its first
    interval kept (the series starts past the ramp already: :func:`~harness.lab.rate_plan.
    past_ramp`), only the tail's dropped."""
    rates = [(b2 - b1) * 8 / (t2 - t1) for (b1, t1), (b2, t2) in zip(samples, samples[1:])
             if t2 > t1]
    if not rates:
        return []
    # "busy": near the typical interval rate, so a half-idle interval at either end
    # (the client starting or winding down between two reads) stays out
    typical = statistics.median(sorted(rates)[len(rates) // 2:])
    busy = [r > 0.8 * typical for r in rates]
    best = (0, 0)
    start = None
    for i, flag in enumerate(busy + [False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    first, last = best
    if last - first > 2:
        first, last = first + (not keep_first), last - 1
    return samples[first:last + 1]


def slope_bps(stretch: list[tuple[int, float]]) -> float:
    """The least-squares slope of bytes over time, in bit/s, across every sample of the
    stretch, not just its two ends: each sample's time is uncertain by half its clock bracket
    (a slow `tc` under emulation). 0 for fewer than two distinct times."""
    if len(stretch) < 2:
        return 0.0
    mean_t = sum(t for _, t in stretch) / len(stretch)
    mean_b = sum(b for b, _ in stretch) / len(stretch)
    var = sum((t - mean_t) ** 2 for _, t in stretch)
    if var <= 0:
        return 0.0
    return 8 * sum((t - mean_t) * (b - mean_b) for b, t in stretch) / var

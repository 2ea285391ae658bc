"""The project's one convention for a claim's region: an equivalence margin on the ratio scale.

A paper prints "about 25 %", "+5 %", "2.1x", "460 Mbit/s". Reading a region from the printed
digits (24..26 %, 4..6 %) asks for a precision no other lab can reach: with the repetition
spread these studies measure, an interval narrow enough to fit inside such a region needs
thousands of repetitions (``harness claims power``), so the claim could only ever be "not
reproduced" or "inconclusive". Instead every figure a paper states is read with one margin,
registered before data and the same for every study:

- **equivalent to a figure** (``equivalent_to``): the paper's figure times or divided by
  :data:`FACTOR` (1.1), on the ratio scale of the quantity: a ratio (``x``) itself, a gain or
  loss in % as the ratio ``1 + g/100``, a positive magnitude (Mbit/s, us, a share of a line)
  as itself. A range the paper gives ("6-16 % higher") widens each end by the same factor.
  The margin is symmetric in log, so a claim and its inverse ("28 % lower" and "1.39x
  higher") get the same region. Its source: the relative bounds performance-regression
  practice attaches to a reference figure, -10 %/+10 % being the common choice (ReFrame's
  reference tuples, ``(value, -0.1, 0.1, unit)``), made symmetric on the ratio scale.
- **the paper's direction** (``direction``): a stated gain must show at least half its stated
  size (half on the log scale: the square root of the ratio), a stated loss likewise, so that
  "+5 %" is never reproduced by no gain at all. Without it a gain smaller than the margin
  would be "reproduced" by a flat curve (1.05 / 1.1 is below 1). This part is a rule of
  ours, not borrowed: an effect a paper reports is reproduced only if ours is of the same
  sign and at least half as large.
- **a stated change read on its own scale** (``scale = "change"``): a gain or loss in % whose
  margin is applied to the change itself, its size times or divided by :data:`FACTOR` with its
  sign kept ("18-27 % higher": 16.36..29.7 %; "28 % lower": -30.8..-25.45 %). The ratio scale's
  region for a small change reaches far below the paper's figure: 1.18 / 1.1 is +7.3 % and the
  half-the-gain floor +8.6 % for "18-27 %", +2.96 % for "6-16 %", so a gain below the paper's
  whole range read as reproducing it (the fifth S0 review of 2026-11-29: ping-pong's +13.3 % and
  +4.4 %). On the change scale the same relative margin is the -10 %/+10 % of the figure the
  paper printed, so the region never admits a change of under 1/1.1 of the smallest stated one,
  and never no change; a range crossing zero or a change of 0 has no size to widen (use
  ``gain``). It takes no ``direction`` (the sign of the figure is its direction) and no
  one-sided bound.
- **a difference the paper names without a number** (``differs_from`` with a
  ``direction``: "falls", "scales", "larger"): beyond the same margin, since a difference
  inside it counts as no difference.
- **a bound the paper states as a benefit** (``at_most`` / ``at_least``: "can reduce ... to
  half", "at least twice as fast"): one-sided, the figure times (at most) or divided by (at
  least) the same :data:`FACTOR`; doing better than the paper's figure is not a miss of it
  (the S0 referee of 2026-11-29 on 000:28's "halved": an equivalence region counted a
  reduction to 0.45 as failing a claim that promises at least a halving).
- **what the physics allows** (``cap_low``/``cap_high`` with ``cap_why``): a region never
  reaches beyond what the wire or the disk can carry.

Word-only claims ("very low", "half or less", "irregular") and our own targets and lab
checks keep a region written out with its rule (``low``/``high``/``rule``): the convention is
for figures and named differences, and a region that does not follow it says why in its rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: the equivalence margin: a figure times or divided by this, on the ratio scale
FACTOR = 1.1
BASIS = ("the project's equivalence margin (harness.verdicts.margins, docs/explanation/verdicts.md): "
         f"the paper's figure times or divided by {FACTOR:g} on the ratio scale, the -10 %/+10 % "
         "relative bounds of performance-regression references (e.g. ReFrame's reference tuples) "
         "made symmetric in log")

#: the same margin where it is applied to a stated change itself (``scale = "change"``)
BASIS_CHANGE = ("the project's equivalence margin (harness.verdicts.margins, docs/explanation/verdicts.md) "
                f"on the stated change itself: its size times or divided by {FACTOR:g}, the -10 %/+10 % "
                "relative bounds of performance-regression references (e.g. ReFrame's reference tuples) "
                "of the figure the paper printed")

#: how a figure is put on the ratio scale: a ratio or magnitude as itself, a gain in % as 1 + g/100;
#: ``change``: a gain or loss in % widened on its own scale (its size times or divided by FACTOR)
SCALES = ("ratio", "gain", "change")
#: the paper's direction: a gain (ratio above 1), a loss (below 1), or either
DIRECTIONS = ("either", "above", "below")
#: a one-sided bound the paper states as a benefit: none, at most, at least
LIMITS = ("", "at_most", "at_least")


class MarginError(ValueError):
    """A margin specification that the convention does not allow (the message says which field)."""


@dataclass(frozen=True)
class Margin:
    """A region made by the convention (module docstring), kept with the region it made.

    ``figure`` is the paper's figure on the claim's own scale (a pair for a range), or, for a
    named difference, the value it differs from (``differs``); ``scale`` says how the claim's
    unit maps to a ratio (``gain``: a change in %).
    """

    figure: tuple[float, float]
    scale: str = "ratio"
    direction: str = "either"
    differs: bool = False
    #: "at_most" / "at_least": a one-sided bound the paper states as a benefit ("" otherwise)
    limit: str = ""
    cap_low: float = -math.inf
    cap_high: float = math.inf
    cap_why: str = ""

    def __post_init__(self) -> None:
        low, high = self.figure
        if self.scale not in SCALES:
            raise MarginError(f"scale {self.scale!r} is not one of {', '.join(SCALES)}")
        if self.direction not in DIRECTIONS:
            raise MarginError(f"direction {self.direction!r} is not one of {', '.join(DIRECTIONS)}")
        if low > high:
            raise MarginError(f"the range {low:g}..{high:g} runs backwards")
        if self.scale == "change":
            self._check_change()
        elif self._ratio(low) <= 0:
            raise MarginError(f"{low:g} is not on a ratio scale (a ratio or magnitude must be above 0, "
                              "a gain above -100 %)")
        if self.differs and (self.direction == "either" or low != high):
            raise MarginError("a named difference (differs_from) needs one value and a direction "
                              "(above or below)")
        if self.limit not in LIMITS:
            raise MarginError(f"limit {self.limit!r} is not one of {', '.join(repr(x) for x in LIMITS)}")
        if self.limit and (self.differs or low != high or self.direction != "either"):
            raise MarginError("a one-sided bound (at_most, at_least) takes one value and no direction "
                              "or differs_from")
        if (self.cap_low > -math.inf or self.cap_high < math.inf) and not self.cap_why:
            raise MarginError("a cap needs cap_why: what the wire or disk allows, and why")

    def _check_change(self) -> None:
        low, high = self.figure
        if low <= 0 <= high:
            raise MarginError(f"a change of {low:g}..{high:g} % includes no change: the change scale "
                              "widens a stated gain or loss by its size; use scale gain")
        if self.direction != "either" or self.limit or self.differs:
            raise MarginError("a change read on its own scale (scale change) takes no direction (its "
                              "sign is its direction), no at_most/at_least and no differs_from")
        if low <= -100:
            raise MarginError(f"a loss of {low:g} % is more than the whole")

    # -- the arithmetic --------------------------------------------------------------------
    def _ratio(self, x: float) -> float:
        return 1 + x / 100 if self.scale == "gain" else x

    def _back(self, r: float) -> float:
        return (r - 1) * 100 if self.scale == "gain" else r

    @property
    def _one(self) -> float:
        """A ratio of 1 on the claim's scale: no change."""
        return self._back(1.0)

    def _change_bounds(self) -> tuple[float, float]:
        """The change scale: each end's size times or divided by FACTOR, its sign kept; a loss never
        below -100 %."""
        low, high = self.figure
        if low > 0:
            return low / FACTOR, high * FACTOR
        return max(low * FACTOR, -100.0), high / FACTOR

    def bounds(self) -> tuple[float, float]:
        low, high = (self._ratio(x) for x in self.figure)
        if self.scale == "change":
            lo, hi = self._change_bounds()
        elif self.limit:
            lo, hi = (-math.inf, high * FACTOR) if self.limit == "at_most" else (low / FACTOR, math.inf)
        elif self.differs:
            lo, hi = (low * FACTOR, math.inf) if self.direction == "above" else (-math.inf, low / FACTOR)
        else:
            lo, hi = low / FACTOR, high * FACTOR
            if self.direction == "above":  # at least half the stated gain (log scale)
                lo = max(lo, math.sqrt(low) if low > 1 else 1.0)
            elif self.direction == "below":  # at least half the stated loss
                hi = min(hi, math.sqrt(high) if high < 1 else 1.0)
        if self.scale != "change":
            lo = self._back(lo) if math.isfinite(lo) else lo
            hi = self._back(hi) if math.isfinite(hi) else hi
        lo, hi = max(lo, self.cap_low), min(hi, self.cap_high)
        lo, hi = _tidy(lo), _tidy(hi)
        if lo > hi:
            raise MarginError(f"the caps leave nothing of the region ({lo:g} above {hi:g}): the figure "
                              "lies beyond what the physics allows; register it as not reachable")
        return lo, hi

    def _half(self) -> float | None:
        """The bound "at least half the stated effect" puts, on the claim's scale (None: no direction)."""
        low, high = (self._ratio(x) for x in self.figure)
        if self.direction == "above":
            return _tidy(self._back(math.sqrt(low) if low > 1 else 1.0))
        if self.direction == "below":
            return _tidy(self._back(math.sqrt(high) if high < 1 else 1.0))
        return None

    def rule(self, unit: str = "") -> str:
        """The rule that made the region, in words, for the registration and the report."""
        u = unit if unit in ("%", "x") else f" {unit}" if unit else ""
        low, high = self.figure
        figure = f"{low:g}{u}" if low == high else f"{low:g}..{high:g}{u}"
        lo, hi = self.bounds()
        if self.scale == "change":
            words = (f"a change of {figure} read on its own scale: its size times or divided by "
                     f"{FACTOR:g}, its sign kept (the margin on the change itself, not on the ratio "
                     "1 + g/100, whose region for a small change reaches far below the stated one)")
        elif self.limit:
            words = (f"{self.limit.replace('_', ' ')} {figure}, within a factor {FACTOR:g} (a "
                     "benefit the paper states: doing better is not a miss)")
        elif self.differs:
            words = (f"differs from {figure} {'upwards' if self.direction == 'above' else 'downwards'} by "
                     f"more than the margin, a factor {FACTOR:g}")
        else:
            words = f"equivalent to {figure} within a factor {FACTOR:g}"
            half = self._half()
            if half is not None and (lo == half or hi == half):
                words += (f", and at least half the stated {'gain' if self.direction == 'above' else 'loss'} "
                          "(on the log scale) so that no change never reproduces it")
        if self.cap_why and (lo == _tidy(self.cap_low) or hi == _tidy(self.cap_high)):
            words += f", capped by what the physics allows ({self.cap_why})"
        span = (f"<= {_num(hi)}" if lo == -math.inf else f">= {_num(lo)}" if hi == math.inf
                else f"{_num(lo)}..{_num(hi)}")
        basis = BASIS if self.scale != "change" else BASIS_CHANGE
        return f"{words}: {span}{u}; {basis}"

    def registration(self) -> dict:
        out = {"convention": f"equivalence x/÷ {FACTOR:g}", "scale": self.scale,
               "direction": self.direction}
        key = self.limit or ("differs_from" if self.differs else "equivalent_to")
        out[key] = (
            self.figure[0] if self.figure[0] == self.figure[1] else list(self.figure))
        if self.cap_why:
            out.update({"cap_low": None if math.isinf(self.cap_low) else self.cap_low,
                        "cap_high": None if math.isinf(self.cap_high) else self.cap_high,
                        "cap_why": self.cap_why})
        return out


def _tidy(x: float) -> float:
    """No float dust in a digested bound (1.05 x 1.1 is 1.1550000000000002)."""
    return round(x, 9) if math.isfinite(x) else x


def _num(x: float) -> str:
    return f"{x:.4g}"

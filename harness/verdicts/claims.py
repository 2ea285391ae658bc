"""The paper's claims beside our measurements, each judged by its interval.

A :class:`Claim` is what the paper says (or, with ``source=TARGET``, an
engineering target of ours, never shown as the paper's), with an acceptance
:class:`Region` whose bounds come from the project's equivalence margin
(:mod:`harness.verdicts.margins`) or, for word-only claims and our own targets, a
rule written beside it. :func:`judge` compares our
:class:`~harness.verdicts.intervals.Estimate` with the region:

- **reproduced**: the whole 95 % interval lies inside the region;
- **not reproduced**: the whole interval lies outside it;
- **inconclusive**: it straddles a bound (or there is one sample, hence no
  interval); the verdict says roughly how many samples would decide it;
- **not testable here**: the lab cannot produce the quantity, or not in the
  paper's regime, with the measured reason;
- **shown**: a *reading* (``source=READING``): a figure the run measures outside the
  paper's regime, presented with its interval and judged against nothing (it has no region);
- **invalid**: the estimate rests on a point that is physically impossible
  (faster than its wire, a CPU share above 100 % per thread) or failed (a fan-in
  point with no completed round: :mod:`harness.verdicts.validity`); the point's numbers
  are the reason, and no such point ever decides a claim. Impossible means impossible
  in *this lab*: a point beyond the paper's regime that the lab's own apparatus makes
  possible (S0's small ping-pongs faster than a serialising wire, on a wire the run's
  probe shows not serialising them) makes the claim *not testable here*, its estimate
  shown as measured anyway (:func:`judge`'s ``outside``).
- **withdrawn**: a registered change withdrew the claim (``dropped``, e.g. for reading more
  into the paper than its sentence says): kept in the registration, never judged
  (:mod:`harness.verdicts.withdrawal`).

The tolerance never decides: a point estimate inside the region with an
interval that leaves it is inconclusive, not reproduced.

A claim is *registered* before data (:mod:`harness.verdicts.registration`): a paper's
claim carries the paper's sentence verbatim (``quote``) with the seed file's
line (``seed_line``, e.g. ``"004:66"``), the ``quantity`` we measure, the paper's
``regime`` a point must be in to count, and its region with the rule that made
it (:attr:`Region.why`). Claims that are not the paper's -- our engineering
targets (``source=TARGET``) and checks of the lab (``source=LAB``) -- need no
sentence, are never called reproduced (they are *met* or *not met*) and are
counted apart. A *reading* (``source=READING``) is neither: a quantity the run measures where
the paper's regime does not hold (S0's relays limiting on an unshaped host), registered with its
quantity and the regime it is measured in, but with no region, so nothing decides it; its row
shows the estimate and interval and the outcome *shown*.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from .intervals import BOUND_DIGITS, POOLED_METHOD, T_BELOW, Estimate, distinct, t975
from .invalid_points import invalid_note
from .margins import Margin
from .validity import Invalid

Z975 = 1.96  # the normal quantile a bootstrap interval of many units approaches

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_TESTABLE = "not testable here"
INVALID = "invalid"  # rests on a physically impossible point (harness.verdicts.validity)
MET = "met"  # a target's or a lab check's "reproduced"
NOT_MET = "not met"
SHOWN = "shown"  # a reading's outcome: measured and presented, judged against nothing
#: a claim a registered change withdrew (``dropped``): its record kept, never judged (.withdrawal)
WITHDRAWN = "withdrawn"
OUTCOMES = (REPRODUCED, NOT_REPRODUCED, MET, NOT_MET, SHOWN, INCONCLUSIVE, NOT_TESTABLE, INVALID, WITHDRAWN)

PAPER = "paper"
TARGET = "target"  # an engineering target of ours, not a claim of the paper
LAB = "lab"  # a check that the lab is what the study needs (both paths used, ...), not the paper's
#: a figure measured outside the paper's regime, shown with its interval and judged against nothing
READING = "reading"
SOURCES = (PAPER, TARGET, LAB, READING)

IMPRACTICAL = 100  # more than this many times the samples we have: say so, not "run more"

COLUMNS = ["claim_id", "source", "claim", "paper", "region", "region_why", "ours", "value", "low", "high",
           "unit", "n", "units", "interval", "outcome", "reason", "more_needed", "note",
           "quote", "seed_line", "quantity", "regime", "invalid", "gates"]


@dataclass(frozen=True)
class Region:
    """Values that count as the claim holding, with why these bounds (the paper's precision)."""

    low: float = -math.inf
    high: float = math.inf
    why: str = ""
    #: the convention that made the bounds (harness.verdicts.margins), if one did
    margin: Margin | None = None

    @classmethod
    def by_margin(cls, margin: Margin, unit: str = "") -> Region:
        """The region the project's equivalence convention gives (:mod:`harness.verdicts.margins`)."""
        low, high = margin.bounds()
        return cls(low, high, margin.rule(unit), margin)

    @classmethod
    def about(cls, value: float, step: float, quote: str) -> Region:
        """A value the paper states approximately: one unit of its last stated digit either way.

        "about 2.1x" is given to a tenth and hedged, so 2.0..2.2 all read as "about
        2.1x"; it is not "2.10x".
        """
        return cls(value - step, value + step,
                   f"the paper: {quote}; stated to {step:g} and hedged 'about': "
                   f"{value:g} ± {step:g}")

    @classmethod
    def stated(cls, value: float, step: float, quote: str) -> Region:
        """A value the paper states plainly: exact to half a unit of its last stated digit."""
        return cls(value - step / 2, value + step / 2,
                   f"the paper: {quote}; stated to {step:g}: {value:g} ± {step / 2:g}")

    @classmethod
    def between(cls, low: float, high: float, why: str) -> Region:
        return cls(low, high, why)

    @classmethod
    def below(cls, high: float, why: str) -> Region:
        return cls(-math.inf, high, why)

    @classmethod
    def above(cls, low: float, why: str) -> Region:
        return cls(low, math.inf, why)

    @property
    def unbounded(self) -> bool:
        """No bound on either side: a reading's (nothing is judged against it)."""
        return math.isinf(self.low) and math.isinf(self.high)

    def text(self, unit: str = "") -> str:
        if self.unbounded:
            return "-"
        u = "" if unit in ("", "x", "%") else f" {unit}"
        sfx = unit if unit in ("x", "%") else ""
        if math.isinf(self.low):
            return f"<= {self.high:.4g}{sfx}{u}"
        if math.isinf(self.high):
            return f">= {self.low:.4g}{sfx}{u}"
        return f"{self.low:.4g}..{self.high:.4g}{sfx}{u}"

    def holds_all(self, low: float, high: float) -> bool:
        return self.low <= low and high <= self.high

    def misses_all(self, low: float, high: float) -> bool:
        return high < self.low or low > self.high


@dataclass(frozen=True)
class Claim:
    """One statement to test, registered before data (see the module's docstring).

    ``text`` is its short name in tables, ``paper`` the paper's value as stated; for
    a paper's claim ``quote`` is its sentence verbatim (a substring of line
    ``seed_line`` of the seed file, checked by a test), ``quantity`` what we measure
    and how, ``regime`` where a point must lie to count.
    """

    id: str
    text: str
    paper: str
    region: Region
    unit: str = ""
    source: str = PAPER
    quote: str = ""
    seed_line: str = ""  # "SEED:LINE" (e.g. "004:66"); several as "003:120,121"
    quantity: str = ""
    regime: str = ""
    #: the regime gates (harness.verdicts.gates.registry.Gate) the lab must pass for the claim to be judged
    gates: tuple = ()
    #: the validity checks its points must pass, by name (harness.verdicts.validity.CHECKS): read from
    #: the registration file, archived and digested with it
    checks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"claim {self.id}: source {self.source!r} is not one of {SOURCES}")
        if self.source == READING and not self.region.unbounded:
            raise ValueError(f"claim {self.id}: a reading is judged against nothing: it takes no "
                             "region")

    @property
    def is_paper(self) -> bool:
        return self.source == PAPER

    def registration(self) -> dict:
        """What is fixed before data, as archived (:mod:`harness.verdicts.registration`)."""
        r = self.region
        return {"id": self.id, "source": self.source, "claim": self.text, "paper": self.paper,
                "quote": self.quote, "seed_line": self.seed_line, "quantity": self.quantity,
                "regime": self.regime, "unit": self.unit,
                "region": {"low": None if math.isinf(r.low) else r.low,
                           "high": None if math.isinf(r.high) else r.high,
                           "text": r.text(self.unit), "rule": r.why,
                           **({"margin": r.margin.registration()} if r.margin else {})},
                **({"gates": [g.registration() for g in self.gates]} if self.gates else {}),
                **({"checks": list(self.checks)} if self.checks else {})}


@dataclass(frozen=True)
class Verdict:
    """A claim judged: our estimate, the outcome, and why."""

    claim: Claim
    estimate: Estimate | None
    outcome: str
    reason: str
    more_needed: int | None = None  # about this many samples in all would decide it
    note: str = ""  # context: what differs from the paper's setting, with its number
    invalid: tuple = ()  # the invalid points it rests on (impossible or failed; harness.verdicts.validity.Invalid)

    def row(self) -> dict:
        c, e = self.claim, self.estimate
        return {
            "claim_id": c.id, "source": c.source, "claim": c.text, "paper": c.paper,
            "region": c.region.text(c.unit), "region_why": c.region.why,
            "ours": e.text((c.region.low, c.region.high)) if e else "-",
            "value": e.value if e else math.nan,
            "low": e.low if e and e.low is not None else math.nan,
            "high": e.high if e and e.high is not None else math.nan,
            "unit": c.unit, "n": e.n if e else 0, "units": e.units if e else "",
            "interval": e.method if e else "", "outcome": self.outcome, "reason": self.reason,
            "more_needed": self.more_needed, "note": self.note,
            "quote": c.quote, "seed_line": c.seed_line, "quantity": c.quantity,
            "regime": c.regime, "invalid": "; ".join(p.text() for p in self.invalid),
            "gates": "",  # filled from the run's facts by harness.verdicts.gates.registry.apply
        }


def _critical(n: int, t_interval: bool) -> float:
    """The factor between a mean's standard error and its interval's half-width at n units."""
    if t_interval and n < T_BELOW:
        return t975(n - 1)
    return Z975


def samples_to_decide(estimate: Estimate, region: Region) -> int | None:
    """About how many samples would shrink the interval off the bound it straddles.

    The half-width of a mean's interval is a critical value times sd / sqrt(n): it
    falls like 1/sqrt(n), and faster while a Student t interval's critical value
    (12.7 at 2 units, 2.26 at 10, 2.05 at 29) falls towards the normal 1.96. For an
    estimate pooled from runs (``units`` "runs") the samples counted are runs. The side of the
    interval that crosses a bound must shrink to the distance between the estimate
    and that bound. None when the estimate sits on the bound (no n decides it).
    """
    if not estimate.has_interval:
        return None
    on = estimate.on_scale  # a ratio's interval was made on logs: distances are measured there
    v, lo, hi = on(estimate.value), on(estimate.low), on(estimate.high)
    needs = []
    for raw_bound in (region.low, region.high):
        if math.isinf(raw_bound) or not estimate.low <= raw_bound <= estimate.high:
            continue
        bound = on(raw_bound)
        if not math.isfinite(bound):
            continue
        half = (hi - v) if bound > v else (v - lo)
        distance = abs(v - bound)
        if distance == 0 or half <= 0:
            return None
        needs.append(half / distance)
    if not needs:
        return None
    # Inside, every crossed bound must be cleared. Outside, only the bound between
    # the estimate and the region decides, and it is the nearer one: the largest need
    # (a wide interval may also cross the far bound, which would need fewer samples).
    shrink = max(needs)  # the half-width must fall by this factor
    n = estimate.n
    t_interval = "Student t" in estimate.method
    spread = _critical(n, t_interval) / math.sqrt(n)  # half-width per unit of sd now
    for m in range(n + 1, T_BELOW):  # where the t critical value still moves
        if _critical(m, t_interval) / math.sqrt(m) * shrink <= spread:
            return m
    return max(n + 1, math.ceil(n * (shrink * Z975 / _critical(n, t_interval)) ** 2))


def judge(claim: Claim, estimate: Estimate | None, note: str = "",
          invalid: Sequence[Invalid] = (), outside: Sequence[Invalid] = ()) -> Verdict:
    """The outcome decided by the interval (see the module's docstring).

    ``invalid``: the invalid points (impossible or failed) among those the estimate rests on;
    any one makes the outcome :data:`INVALID`, with their numbers as the reason.
    ``outside``: points beyond a bound of the paper's regime that the lab itself can produce (S0:
    a ping-pong faster than the paper's serialising wire at a size the run's wire probe shows
    this lab's wire not serialising); checked per point by the study. Any one, with no invalid
    point, makes the claim :data:`NOT_TESTABLE` -- a regime failure of the lab, not an
    impossibility -- its estimate kept and shown as measured anyway.
    """
    invalid = tuple(p for p in invalid if p is not None)
    if invalid:
        return Verdict(claim, estimate, INVALID,
                       "rests on invalid points (physically impossible, or failed): "
                       + _some(invalid), None, note, invalid)
    outside = tuple(p for p in outside if p is not None)
    if outside:
        shown = estimate.text() if estimate is not None and math.isfinite(estimate.value) else "-"
        return Verdict(claim, estimate, NOT_TESTABLE,
                       f"rests on {len(outside)} point{'s' if len(outside) != 1 else ''} outside the "
                       "paper's regime, possible in this lab (not invalid), e.g. " + _some(outside, 1)
                       + f"; measured anyway: {shown}", None, note)
    if estimate is None or not math.isfinite(estimate.value):
        return Verdict(claim, None, NOT_TESTABLE, "no measurement of this quantity in the run",
                       note=note)
    region = claim.region
    if claim.source == READING:
        return Verdict(claim, estimate, SHOWN,
                       "a reading outside the paper's regime: shown with its interval, judged "
                       "against nothing" + ("" if estimate.has_interval else
                                            f" (one {estimate.units[:-1]}: no interval)"),
                       None, note)
    if not estimate.has_interval:
        return Verdict(claim, estimate, INCONCLUSIVE,
                       f"one {estimate.units[:-1]}: no interval; at least 2 are needed "
                       "(profile=verdict)", None, note)
    lo, hi = estimate.low, estimate.high
    held, missed = (REPRODUCED, NOT_REPRODUCED) if claim.is_paper else (MET, NOT_MET)
    close = near_bounds(estimate, region)
    if region.holds_all(lo, hi):
        return Verdict(claim, estimate, held,
                       f"the interval lies inside {region.text(claim.unit)}{close}", None, note)
    if region.misses_all(lo, hi):
        return Verdict(claim, estimate, missed,
                       f"the interval lies outside {region.text(claim.unit)}{close}", None, note)
    more = samples_to_decide(estimate, region)
    if more is None:
        hint = "the estimate sits on the bound: no number of samples decides it"
    elif more > IMPRACTICAL * estimate.n:
        hint = (f"the estimate is too close to the bound: about {more} {estimate.units} "
                "would be needed")
    else:
        hint = f"about {more} {estimate.units} would decide it"
    return Verdict(claim, estimate, INCONCLUSIVE,
                   f"the interval straddles {region.text(claim.unit)}{close}; {hint}", more, note)


def near_bounds(estimate: Estimate, region: Region) -> str:
    """Each end of the interval that reads like a bound of the region at the region's printed
    digits, with both to as many digits as tell them apart (" (its upper end 0.45438 against the
    bound 0.45455)"); "" when none does. A near miss and a near hit stay visible."""
    parts = []
    for name, end in (("lower", estimate.low), ("upper", estimate.high)):
        for bound in (region.low, region.high):
            if end is None or not math.isfinite(bound) or end == bound:
                continue
            if f"{end:.{BOUND_DIGITS}g}" == f"{bound:.{BOUND_DIGITS}g}":
                n = distinct(end, bound, BOUND_DIGITS + 1)
                parts.append(f"its {name} end {end:.{n}g} against the bound {bound:.{n}g}")
    return f" ({'; '.join(parts)})" if parts else ""


def _some(points: tuple[Invalid, ...], first: int = 3) -> str:
    """The first points' texts and how many more."""
    return ("; ".join(p.text() for p in points[:first])
            + (f"; and {len(points) - first} more" if len(points) > first else ""))


def not_testable(claim: Claim, reason: str, note: str = "") -> Verdict:
    return Verdict(claim, None, NOT_TESTABLE, reason, note=note)


def table(verdicts: list[Verdict]) -> pd.DataFrame:
    """The archived form: one row per claim, :data:`COLUMNS` in order."""
    frame = pd.DataFrame([v.row() for v in verdicts], columns=COLUMNS)
    frame["more_needed"] = frame["more_needed"].astype("Int64")
    return frame


def show(frame: pd.DataFrame, source: str | None = None) -> pd.DataFrame:
    """The columns a reader wants, for a report: claim, paper, region, ours, outcome, reason."""
    if source is not None:
        frame = frame[_sources(frame) == source]
    cols = ["claim", "paper", "seed_line", "regime", "region", "ours", "outcome", "reason", "note"]
    shown = frame[[c for c in cols if c in frame]].reset_index(drop=True)
    return shown.rename(columns={"seed_line": "seed:line"})


def _sources(frame: pd.DataFrame) -> pd.Series:
    return frame["source"] if "source" in frame else pd.Series(PAPER, index=frame.index)


def summary(frame: pd.DataFrame, source: str = PAPER) -> str:
    """'3 reproduced, 1 not reproduced, 2 inconclusive' for the paper's claims of a run
    (``source=TARGET`` or ``LAB``: '2 met, 1 not met' for ours, counted apart; ``READING``:
    '3 shown')."""
    counts = frame[_sources(frame) == source].outcome.value_counts()
    none = {PAPER: "no claims", READING: "no readings"}.get(source, f"no {source} checks")
    return ", ".join(f"{int(counts[o])} {o}" for o in OUTCOMES if o in counts) or none


def summaries(frame: pd.DataFrame) -> str:
    """The paper's claims' counts, then ours apart: '3 reproduced, 1 inconclusive; targets:
    2 met; lab checks: 1 met; readings: 3 shown'."""
    parts = [summary(frame)]
    for source, name in ((TARGET, "targets"), (LAB, "lab checks"), (READING, "readings")):
        if (_sources(frame) == source).any():
            parts.append(f"{name}: {summary(frame, source)}")
    return "; ".join(parts)


#: the titles of the sections that show rows which are not the paper's claims, in order
OURS_TITLES = ((TARGET, "Our engineering targets (not claims of the paper: met or not met):"),
               (LAB, "Checks of the lab (not claims of the paper: met or not met):"),
               (READING, "Readings outside the paper's regime (not claims of the paper, no region: "
                         "shown with their intervals, judged against nothing):"))

def runs_note(frame: pd.DataFrame) -> str:
    """What the intervals of a claims table can show about runs, in words.

    A table of one run (no estimate counted in runs) says that it is one run and what that
    cannot show: the variation between runs. A pooled table (``harness claims pool``) says
    how many runs its intervals stand on.
    """
    methods = frame.get("interval", pd.Series(dtype=object)).astype(str)
    pooled = methods.str.contains(POOLED_METHOD, regex=False)  # not S0's relay benchmark "runs"
    if pooled.any():
        n = frame.loc[pooled, "n"]
        return (f"**Pooled from runs.** Each interval has the run as its unit (up to {int(n.max())} "
                "runs): it includes the variation between runs (each its own lab build, and VM boot "
                "where its lab has VMs) "
                "as far as that many runs can show it.")
    return ("**One run.** Every interval here holds the variation between this run's repetitions "
            "only. It cannot show how much another run of the same registration -- its own lab "
            "build, VM boot and the machine's state on its day -- would differ, and successive "
            "runs have differed by more than their intervals (issue 33). A verdict reference "
            "pools at least three runs: `harness claims pool RUN RUN RUN`.")


def gates_note(frame: pd.DataFrame) -> str:
    """Each claim's regime gates with the figures the run measured (harness.verdicts.gates), or ""
    when no claim of the study registers one."""
    if "gates" not in frame:
        return ""
    rows = [(row.claim, row.gates) for row in frame.drop_duplicates("claim").itertuples()
            if isinstance(row.gates, str) and row.gates]
    if not rows:
        return ""
    return ("**Regime gates** (checked on what this run measured and recorded; a claim with a "
            "failed gate is *not testable here*):\n\n"
            + "\n".join(f"* {claim}: {gates}" for claim, gates in rows))


def display(frame: pd.DataFrame, profile: str = "", registration=None) -> None:
    """A notebook's claims section: the paper's claims, invalid points, then ours apart.

    ``registration`` (the study's :class:`~harness.verdicts.registration.Registration`): under the
    paper's claims, the claims decided under a rule its changes marked ``after_outcomes = true``
    (:mod:`harness.verdicts.disclosure`)."""
    from IPython.display import Markdown
    from IPython.display import display as show_in_notebook

    from .disclosure import note

    lines = [f"**Verdicts on the paper's claims:** {summary(frame)}."]
    if profile == "quick":
        lines.append("The quick profile's verdicts are *indicative*: few repetitions give wide "
                     "intervals. `profile=verdict` measures enough to decide most claims.")
    methods = sorted({m for m in frame.interval if m})
    if methods:
        lines.append("Intervals: " + "; ".join(methods) + ".")
    lines.append(runs_note(frame))
    show_in_notebook(Markdown("\n\n".join(lines)))
    show_in_notebook(show(frame, PAPER))
    late = note(registration, zip(frame.claim_id, frame.claim)) if registration is not None else ""
    if late:
        show_in_notebook(Markdown(late))
    show_in_notebook(Markdown(invalid_note(frame)))
    for source, title in OURS_TITLES:
        ours = show(frame, source)
        if not ours.empty:
            show_in_notebook(Markdown(f"**{title}**"))
            show_in_notebook(ours.drop(columns=["seed:line"], errors="ignore"))
    if "quote" in frame:
        paper = frame[_sources(frame) == PAPER].drop_duplicates("claim")
        quoted = [f"* {row.claim} ({row.seed_line}): \u201c{row.quote}\u201d"
                  for row in paper.itertuples() if isinstance(row.quote, str) and row.quote]
        if quoted:
            show_in_notebook(Markdown("**The paper's words** (seed file : line):\n\n"
                                      + "\n".join(quoted)))
    gated = gates_note(frame)
    if gated:
        show_in_notebook(Markdown(gated))
    if "region_why" in frame:
        show_in_notebook(Markdown("**Why each region is what it is:**\n\n" + "\n".join(
            f"* {row.claim}: {row.region} -- {row.region_why}"
            for row in frame.drop_duplicates("claim").itertuples() if row.region_why)))

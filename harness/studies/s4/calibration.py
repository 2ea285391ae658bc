"""The sender's CPU limit anchored to the paper's single stream: the registered rule.

The paper limits its sender's CPU (004:66) and gives its peaks at 10 streams with the gains
from 1 to 10, so its one stream carried TCP 438 and MPTCP 805 Mbit/s (460/1.05, 934/1.16:
derived, the paper prints no one-stream figure; :data:`~.design.PAPER_ONE_STREAM`). Which cgroup
limit makes *this* machine's sender do the same cannot be known before measuring it, and it
moves with the machine (one MPTCP stream at 0.01 CPUs: 378 Mbit/s in one reference, 456-491 on
another day). So each run calibrates
first: one stream of each transport at every candidate limit (:mod:`.measure`; seven from 0.005
to 0.02 CPUs, each 5 times in the verdict profile, since the change of 2026-11-29T23:33Z: :mod:`.design`
says why), then
:func:`choose_limit` picks the limit by the rule registered before data
(registration.toml, ``[design.calibration]``):

- per candidate and transport, the median one-stream goodput over the calibration's
  repetitions, and its distance from the paper's one stream on the ratio scale, the factor
  max(g / paper, paper / g) (1: equal; 1.1: 10 % above or 1/1.1 below);
- a candidate's distance is the worse of its two transports' (one limit for both, as the
  paper's sender had one);
- the anchored limit is the candidate with the smallest distance (a tie: the larger limit,
  the sender less starved).

The claims at the anchored limit are then measured on fresh points, never on the
calibration's: the choice selects a setting, not an estimate. If even the nearest candidate
is farther than the project's equivalence margin (:data:`~.design.CALIBRATION_FACTOR`, x/÷ 1.1)
from the paper in one transport, the sender is not where the paper's was, and those claims
are *not testable here* with the calibration's figures (:func:`outside_tolerance`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import HarnessError
from .design import CALIBRATION_FACTOR, DERIVED, PAPER_ONE_STREAM

TRANSPORTS = ("tcp", "mptcp")
RULE = ("per candidate limit and transport the median one-stream goodput over the calibration's "
        "repetitions; a candidate's distance is the worse of its two transports' factor max(median / "
        "paper, paper / median) from the paper's one stream; the anchored limit is the candidate with "
        "the smallest distance, a tie going to the larger limit (one limit for both transports, as the "
        "paper's sender had one)")


@dataclass(frozen=True)
class Anchor:
    """The calibration's outcome: the chosen limit and every candidate's figures."""

    cpus: float
    distance: float  # the chosen limit's worse factor from the paper's one stream (>= 1)
    candidates: pd.DataFrame  # one row per candidate limit (:func:`per_limit`)
    tolerance: float = CALIBRATION_FACTOR

    @property
    def within_tolerance(self) -> bool:
        return self.distance <= self.tolerance

    def text(self) -> str:
        row = self.candidates.set_index("sender_cpus").loc[self.cpus]
        return (f"{self.cpus:g} CPUs: the calibration's one stream TCP {row.tcp_mbit:.0f} "
                f"({row.tcp_off_pct:+.1f} %), "
                f"MPTCP {row.mptcp_mbit:.0f} Mbit/s ({row.mptcp_off_pct:+.1f} %) against "
                f"{PAPER_ONE_STREAM['tcp']:.0f} / {PAPER_ONE_STREAM['mptcp']:.0f} ({DERIVED})")

    def record(self) -> dict:
        """What run.json keeps (the points are the ``calibration`` table)."""
        return {"chosen_cpus": self.cpus, "distance": round(self.distance, 4),
                "tolerance": self.tolerance, "within_tolerance": self.within_tolerance,
                "paper_one_stream_mbit": {t: round(v, 1) for t, v in PAPER_ONE_STREAM.items()},
                "rule": RULE, "chosen": self.text(),
                "candidates": [{k: (None if pd.isna(v) else v) for k, v in row.items()}
                               for row in self.candidates.round(
                                   {c: 2 for c in self.candidates if c != "sender_cpus"}  # limits exact
                               ).to_dict(orient="records")]}


def per_limit(points: pd.DataFrame) -> pd.DataFrame:
    """Per candidate limit: each transport's median one-stream goodput, how far it is from the
    paper's in per cent (signed, for reading), and the candidate's distance: the worse of the
    two transports' factors max(g / paper, paper / g)."""
    medians = points.groupby(["sender_cpus", "transport"]).goodput_mbit.median().unstack()
    out = pd.DataFrame({"sender_cpus": medians.index.astype(float)})
    for transport in TRANSPORTS:
        got = medians[transport].to_numpy() if transport in medians else [float("nan")] * len(out)
        out[f"{transport}_mbit"] = got
        out[f"{transport}_off_pct"] = 100 * (out[f"{transport}_mbit"] / PAPER_ONE_STREAM[transport] - 1)
    factors = [np.exp(np.abs(np.log(out[f"{t}_mbit"] / PAPER_ONE_STREAM[t]))) for t in TRANSPORTS]
    out["distance"] = pd.concat(factors, axis=1).max(axis=1, skipna=False)
    return out.reset_index(drop=True)


def choose_limit(points: pd.DataFrame) -> Anchor:
    """The anchored limit by the registered rule (module docstring) from the calibration's
    one-stream ``points`` (columns sender_cpus, transport, goodput_mbit; one row a point)."""
    table = per_limit(points)
    eligible = table.dropna(subset=["distance"])
    if eligible.empty:
        raise HarnessError("the calibration measured no candidate limit in both transports, "
                           "so no limit can be anchored to the paper's single stream")
    best = eligible.sort_values(["distance", "sender_cpus"], ascending=[True, False]).iloc[0]
    table["chosen"] = table.sender_cpus == best.sender_cpus
    return Anchor(float(best.sender_cpus), float(best.distance), table)


def outside_tolerance(calibration: pd.DataFrame | None, transport: str | None = None) -> str:
    """Why the anchored limit does not put the sender where the paper's was ('' when it does),
    from the archived calibration points (one run's, or several runs' pooled: each row carries
    its run's choice and distance). ``transport``: judge that transport's one stream at the
    chosen limit only (its claims' regime; change of 2026-11-29T08:27Z), else both."""
    if calibration is None or calibration.empty or "anchor_distance" not in calibration:
        return "the run archived no calibration of the sender's CPU limit"
    chosen = calibration[calibration.sender_cpus == calibration.anchored_cpus]
    if transport is None:
        worst = float(calibration.anchor_distance.max())
    else:
        own = chosen[chosen.transport == transport]
        if own.empty:
            return f"the calibration measured no {transport.upper()} stream at the chosen limit"
        paper = PAPER_ONE_STREAM[transport]
        worst = max(float(max(m / paper, paper / m)) if m > 0 else float("inf")
                    for m in own.groupby("anchored_cpus").goodput_mbit.median())
    if worst <= CALIBRATION_FACTOR:
        return ""
    figures = "; ".join(
        f"{cpus:g} CPUs: " + ", ".join(f"{t.upper()} {g:.0f}" for t, g in
                                       group.groupby("transport").goodput_mbit.median().items())
        for cpus, group in chosen.groupby("anchored_cpus"))
    which = f"{transport.upper()}'s" if transport else "both transports'"
    return (f"no calibrated limit brought one stream within x/÷ {CALIBRATION_FACTOR:g} of the "
            f"paper's in {which} (nearest: {figures} Mbit/s against TCP "
            f"{PAPER_ONE_STREAM['tcp']:.0f}, MPTCP {PAPER_ONE_STREAM['mptcp']:.0f} ({DERIVED}); a factor "
            f"{worst:.3f} off): the sender is not limited as the paper's was")

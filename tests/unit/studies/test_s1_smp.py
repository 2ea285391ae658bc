"""S1's SMP claim (001:52) on synthetic runs: latency at 2 online CPUs against 1, paired per
repetition; a missing level is not testable, a failed point invalid, and every other claim
reads the 1-CPU rows alone (the paper's uniprocessor machines, 001:44)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from harness.studies.s1 import analysis as s1_analysis
from harness.studies.s1 import figures as s1_figures
from harness.verdicts.claims import INVALID, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED

from .test_s1 import outcomes, synthetic

SMP = "s1.smp_latency_larger"


def with_levels(frame: pd.DataFrame, smp: float = 1.2, polling: float | None = None,
                noise: float = 0.02, methods=("verbs-send", "verbs-send-events", "tcp-qperf"),
                seed: int = 9) -> pd.DataFrame:
    """``frame`` as the 1-CPU level, plus a 2-CPU level of ``methods`` whose mean latency is
    the 1-CPU one times ``smp`` (polling's times ``polling``, when given) with some noise."""
    rng = np.random.default_rng(seed)
    one = frame.assign(cpus=1)
    two = one[one.method.isin(methods)].copy()
    factor = np.where(two.method == "verbs-send", polling or smp, smp)
    two["latency_mean_us"] = two.latency_mean_us * factor * np.exp(
        rng.normal(0, noise, len(two)))
    two["latency_us"] = two.latency_us * factor
    two["bw_mbit"] = np.nan
    two["cpus"] = 2
    return pd.concat([one, two], ignore_index=True)


def verdict(frame):
    table = s1_analysis.claims(frame).set_index("claim_id")
    return table.loc[SMP]


def test_two_cpus_slower_is_reproduced_and_faster_is_not():
    slower = verdict(with_levels(synthetic(), smp=1.25))
    assert slower.outcome == REPRODUCED and 1.2 < slower.value < 1.3
    assert "each stack alone" in slower.note and "cross-check" in slower.note
    faster = verdict(with_levels(synthetic(), smp=0.8))
    assert faster.outcome == NOT_REPRODUCED and 0.75 < faster.value < 0.85


def test_polling_is_a_cross_check_only():
    # polling pathologically slower on one CPU (ratio 0.3) leaves the judged stacks' verdict
    row = verdict(with_levels(synthetic(), smp=1.25, polling=0.3))
    assert row.outcome == REPRODUCED and 1.2 < row.value < 1.3
    assert "0.30x" in row.note


def test_the_other_claims_read_the_one_cpu_rows_alone():
    """Issue 34 item 1: every latency, bandwidth and polling claim is judged at one CPU per
    machine, the paper's UP kernel (001:44); the 2-CPU level serves the SMP claim only."""
    base = outcomes(synthetic(), meta=None)
    # a 2-CPU level 100x faster would wreck every latency claim if it were mixed in
    both = outcomes(with_levels(synthetic(), smp=0.01), meta=None)
    assert {k: v for k, v in both.items() if k != SMP} == \
        {k: v for k, v in base.items() if k != SMP}
    assert both[SMP] == NOT_REPRODUCED


def test_a_missing_level_or_stack_is_not_testable_naming_why():
    legacy = verdict(synthetic().drop(columns="cpus"))  # a run from before the factor
    assert legacy.outcome == NOT_TESTABLE and "1-CPU level was not measured" in legacy.reason
    one_only = verdict(synthetic())  # VMs of 1 vCPU: the host had too few cores for 2 each
    assert one_only.outcome == NOT_TESTABLE and "2-CPU level was not measured" in one_only.reason
    assert "too few cores" in one_only.reason
    no_events = verdict(with_levels(synthetic(), methods=("verbs-send", "tcp-qperf")))
    assert no_events.outcome == NOT_TESTABLE
    assert "events" in no_events.reason and "both CPU levels" in no_events.reason


def test_a_failed_latency_point_makes_the_claim_invalid_and_is_named():
    frame = with_levels(synthetic(), smp=1.25)
    hit = (frame.cpus == 2) & (frame.method == "tcp-qperf") & (frame["size"] == 64) \
        & (frame.repetition == 2)
    frame.loc[hit, "latency_mean_us"] = math.nan
    row = verdict(frame)
    assert row.outcome == INVALID
    assert "repetition 2, 2 CPU, tcp-qperf at 64 B" in row.invalid


def test_the_smp_table_and_figure_show_both_levels():
    frame = with_levels(synthetic(reps=2), smp=2.0, noise=0.0)
    table = s1_analysis.smp_table(frame)
    assert set(table.method) == {s1_analysis.LABELS[m] for m in
                                 ("verbs-send", "verbs-send-events", "tcp-qperf")}
    events = table[table.method == s1_analysis.LABELS["verbs-send-events"]].set_index("size")
    assert abs(events.loc[4, "ratio_2_over_1"] - 2.0) < 1e-9
    assert events.loc[4, "latency_2cpu_us"] > events.loc[4, "latency_1cpu_us"]
    assert table.judged.sum() == 2 * 17
    assert s1_figures.figure_smp(frame).axes

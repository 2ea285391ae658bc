"""S4 verdicts follow the numbers: built from small hand-made result tables."""

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from harness.studies.base import RunData
from harness.studies.s4 import calibration as calib
from harness.studies.s4 import figures
from harness.studies.s4 import registration as analysis
from harness.studies.s4.design import ANCHORED, CALIBRATION_CPUS, PROFILES, SENDER_CPUS, limit_label
from harness.studies.s4.study import S4
from harness.verdicts.claims import INVALID, LAB, PAPER

SEEDS = Path(__file__).resolve().parents[4] / "shared" / "seeds"
LIMITED = 0.015  # the anchored limit of these tables (the calibration's choice)


def frame(tcp: dict[int, float], mptcp: dict[int, float], cpus: float = LIMITED,
          path2_share: float = 0.5, joins: int = 2, repetition: int = 1,
          limit: str | None = None, throttled: dict[str, float] | None = None) -> pd.DataFrame:
    """One repetition's iperf3 rows; ``limit`` the label (default: no limit at 0 CPUs, else
    the anchored limit); at a limit, each transport's sender throttled in ``throttled`` of its CFS
    periods (default 0.9: held at its limit), as results.csv counts them (cpu.stat, per point)."""
    rows = []
    label = limit or ("nolimit" if not cpus else ANCHORED)
    share_of = {"tcp": 0.9, "mptcp": 0.9, **(throttled or {})}
    for transport, points in (("tcp", tcp), ("mptcp", mptcp)):
        for streams, goodput in points.items():
            total = 1_000_000
            share = path2_share if transport == "mptcp" else 0.0
            rows.append({"tool": "iperf3", "transport": transport, "streams": streams,
                         "sender_cpus": cpus, "limit": label, "repetition": repetition,
                         "goodput_mbit": goodput,
                         "path1_tx_bytes": int(total * (1 - share)),
                         "path2_tx_bytes": int(total * share),
                         "mp_capable_syn_ack_rx": 1 if transport == "mptcp" else 0,
                         "mp_join_syn_ack_rx": joins if transport == "mptcp" else 0,
                         "mp_fallback": 0, "tool_s": 4.0, "wall_s": 4.1,
                         "cpu_periods": 40.0 if cpus else None,
                         "cpu_throttled_periods": 40.0 * share_of[transport] if cpus else None})
    return pd.DataFrame(rows)


WOBBLE = (-1, 1, -0.5, 0.5, 0, 0.2, -0.2, 0.8, -0.8, 0.1)


def repeated(tcp: dict[int, float], mptcp: dict[int, float], noise: float, reps: int = 6,
             **kw) -> pd.DataFrame:
    """``reps`` repetitions, each point off by a known +-noise pattern (relative)."""
    wobble = [1 + noise * w for w in WOBBLE[:reps]]
    return pd.concat([frame({k: v * f for k, v in tcp.items()},
                            {k: v * f for k, v in mptcp.items()}, repetition=i + 1, **kw)
                      for i, f in enumerate(wobble)], ignore_index=True)


def both_limits(limited: tuple[dict, dict], unlimited: tuple[dict, dict], noise: float = 0.0002,
                reps: int = 6, **kw) -> pd.DataFrame:
    return pd.concat([repeated(*limited, noise, reps, cpus=LIMITED, **kw),
                      repeated(*unlimited, noise, reps, cpus=0.0, **kw)], ignore_index=True)


def calibration(one: dict[float, tuple[float, float]], repetitions: int = 1) -> pd.DataFrame:
    """A calibration table as a run archives it: one-stream points per candidate limit
    (cpus -> (TCP, MPTCP) Mbit/s), each row with the run's choice and its distance."""
    rows = [{"tool": "iperf3", "transport": transport, "streams": 1, "sender_cpus": cpus,
             "limit": limit_label(cpus), "repetition": rep, "goodput_mbit": goodput}
            for rep in range(1, repetitions + 1) for cpus, pair in one.items()
            for transport, goodput in zip(("tcp", "mptcp"), pair)]
    points = pd.DataFrame(rows)
    anchor = calib.choose_limit(points)
    return points.assign(anchored_cpus=anchor.cpus, anchor_distance=anchor.distance)


#: a calibration whose nearest candidate (0.015) is 1-4 % from the paper's one stream
IN_MARGIN = calibration({0.01: (430, 470), 0.0125: (437, 670), LIMITED: (445, 820),
                         0.02: (468, 900)})


def claims(data: pd.DataFrame, calibration: pd.DataFrame | None = IN_MARGIN, **kw) -> pd.DataFrame:
    return analysis.claims(data, calibration=calibration, **kw)


def verdicts(claims: pd.DataFrame) -> pd.DataFrame:
    return claims.set_index("claim_id")


PAPER_LIKE = ({1: 438, 10: 460}, {1: 805, 10: 934})
FILLS = ({1: 478, 10: 478}, {1: 940, 10: 945})


def test_paper_like_numbers_at_the_anchored_limit_are_reproduced():
    v = verdicts(claims(both_limits(PAPER_LIKE, FILLS)))
    for claim in ("tcp_peak", "mptcp_peak", "tcp_gain_1_10", "mptcp_gain_1_10"):
        assert v.loc[f"s4.{claim}@anchored", "outcome"] == "reproduced", claim
        assert "0.015 CPUs" in v.loc[f"s4.{claim}@anchored", "note"], claim
    assert v.loc["s4.mptcp_over_tcp", "outcome"] == "met"  # 945 / 478 at no limit
    assert v.loc["s4.mptcp_both_paths", "outcome"] == "met"


def test_peaks_and_gains_alike_need_a_sender_whose_one_stream_is_below_the_papers_peak():
    """Change of 2026-11-29T08:27Z (referee of the pooled reference 53e6aa): without a limit
    one stream fills its path (478 / 940), so neither the gain from 1 to 10 streams nor the
    peak at 10 streams can show the paper's CPU-limited sender climbing to its peak: both are
    not testable here, with the 1-stream figures (the peaks were 'reproduced' from 00:45Z to
    08:27Z, measuring only what the wire carries)."""
    v = verdicts(claims(both_limits(PAPER_LIKE, FILLS)))
    for transport in ("tcp", "mptcp"):
        for kind in ("peak", "gain_1_10"):
            row = v.loc[f"s4.{transport}_{kind}@nolimit"]
            assert row.outcome == "not testable here", (transport, kind)
            assert "already reaches the paper's peak" in row.reason and "1-stream goodput" in row.reason
    assert "measured anyway: 478 Mbit/s" in v.loc["s4.tcp_peak@nolimit", "reason"]
    # the same at the anchored limit: a TCP stream that reaches 460 alone
    v = verdicts(claims(repeated({1: 470, 10: 474}, {1: 805, 10: 934}, 0.0002)))
    assert v.loc["s4.tcp_peak@anchored", "outcome"] == "not testable here"
    assert v.loc["s4.tcp_gain_1_10@anchored", "outcome"] == "not testable here"
    assert v.loc["s4.mptcp_peak@anchored", "outcome"] == "reproduced"  # 805 alone: below 934
    # a peak without its 1-stream points cannot show that one stream stays below the peak
    v = verdicts(claims(repeated({10: 478}, {10: 940}, 0.0002, cpus=0.0)))
    assert "needs 1 stream at" in v.loc["s4.tcp_peak@nolimit", "reason"]
    assert "needs 1 and 10 streams" in v.loc["s4.tcp_gain_1_10@nolimit", "reason"]


def test_the_calibration_chooses_the_limit_nearest_the_papers_single_stream():
    """Issue 35 item 9, the registered rule: per candidate the median over repetitions, the
    worse transport's factor from TCP 438 / MPTCP 805, the smallest such factor wins."""
    assert pytest.approx({"tcp": 460 / 1.05, "mptcp": 934 / 1.16}) == calib.PAPER_ONE_STREAM
    points = calibration({0.01: (438, 470),     # TCP exact, MPTCP 1.71x below: starved
                          0.015: (470, 820),    # TCP 7.3 % above, MPTCP 1.8 % above
                          0.02: (478, 930)}).drop(columns=["anchored_cpus", "anchor_distance"])
    # one outlier repetition at 0.01 (MPTCP 800) moves its median nowhere near: medians, not means
    outlier = points[points.sender_cpus == 0.01].assign(repetition=2)
    outlier.loc[outlier.transport == "mptcp", "goodput_mbit"] = 800.0
    third = points[points.sender_cpus == 0.01].assign(repetition=3)
    anchor = calib.choose_limit(pd.concat([points, outlier, third]))
    assert anchor.cpus == 0.015
    assert anchor.distance == pytest.approx(470 / (460 / 1.05))
    assert anchor.within_tolerance and anchor.tolerance == 1.1
    table = anchor.candidates.set_index("sender_cpus")
    assert table.loc[0.01, "mptcp_mbit"] == 470 and table.loc[0.01, "distance"] > 1.7
    assert list(table.chosen) == [False, True, False]
    # below the paper counts as much as above (the ratio scale): 805/1.05 against 805*1.05
    mirror = calibration({0.01: (438, 805 / 1.05), 0.02: (438, 805 * 1.05)})
    assert mirror.anchored_cpus.iloc[0] == 0.02  # a tie: the larger limit
    record = anchor.record()
    assert record["chosen_cpus"] == 0.015 and record["rule"] == calib.RULE
    assert "470" in record["chosen"] and len(record["candidates"]) == 3
    # the limits are archived exact (0.015 rounded to two places would read as 0.01 or 0.02)
    assert [c["sender_cpus"] for c in record["candidates"]] == [0.01, 0.015, 0.02]


def test_claims_at_the_anchored_limit_rest_on_the_rows_the_calibration_chose():
    """The anchored claims are judged on the rows labelled anchored, at whatever CPUs the run
    chose; rows at a fixed limit (0.01 CPUs, the old registration's) decide none of them."""
    fixed = repeated({1: 300, 10: 250}, {1: 380, 10: 220}, 0.001, cpus=0.01, limit="cpu0.01")
    assert set(fixed.limit) == {"cpu0.01"}
    data = pd.concat([fixed, repeated(*PAPER_LIKE, 0.001, cpus=0.0175)], ignore_index=True)
    v = verdicts(claims(data))
    assert v.loc["s4.mptcp_peak@anchored", "outcome"] == "reproduced"
    assert "0.0175 CPUs" in v.loc["s4.mptcp_peak@anchored", "note"]
    only_fixed = verdicts(claims(fixed))
    assert "needs 10 streams at the sender's CPU limit anchored" in \
        only_fixed.loc["s4.mptcp_peak@anchored", "reason"]


def test_an_anchor_outside_the_margin_leaves_the_anchored_claims_not_testable():
    """Even the nearest candidate 1.3x below the paper's MPTCP stream: the sender is not where
    the paper's was, whatever the claims' own points say; the no-limit claims are untouched."""
    far = calibration({0.01: (430, 470), 0.02: (470, 620)})
    assert far.anchor_distance.iloc[0] > 1.1
    v = verdicts(claims(both_limits(PAPER_LIKE, FILLS), calibration=far))
    for claim in ("mptcp_peak", "mptcp_gain_1_10"):
        row = v.loc[f"s4.{claim}@anchored"]
        assert row.outcome == "not testable here", claim
        assert "within x/÷ 1.1" in row.reason and "MPTCP 620" in row.reason, row.reason
        assert "in MPTCP's" in row.reason and "measured anyway" in row.reason  # deciding nothing
    # TCP's claims are gated on TCP's own stream (change of 08:27Z): 470 is 1.07x of 438
    for claim in ("tcp_peak", "tcp_gain_1_10"):
        assert v.loc[f"s4.{claim}@anchored", "outcome"] == "reproduced", claim
    assert v.loc["s4.tcp_peak@nolimit", "outcome"] == "not testable here"  # one stream: 478
    none = verdicts(claims(both_limits(PAPER_LIKE, FILLS), calibration=None))
    assert "archived no calibration" in none.loc["s4.mptcp_gain_1_10@anchored", "reason"]


def test_the_claims_own_one_stream_points_must_be_where_the_papers_sender_was():
    """Change of 2026-11-29 (referee review of the pooled reference fbf94a): a calibration in
    the margin chose the limit, but on the claim points one MPTCP stream read 454 Mbit/s, a
    factor 1.77 from the paper's 805: the anchored claims are not testable, with that median;
    the no-limit claims are untouched."""
    v = verdicts(claims(both_limits(({1: 438, 10: 449}, {1: 454, 10: 307}), FILLS)))
    for claim in ("mptcp_peak", "mptcp_gain_1_10"):
        row = v.loc[f"s4.{claim}@anchored"]
        assert row.outcome == "not testable here", claim
        assert "on the claims' own points" in row.reason and "one MPTCP stream 454 Mbit/s" in row.reason
        assert "a factor 1.77" in row.reason and "one TCP stream" not in row.reason  # TCP is in
    for claim in ("tcp_peak", "tcp_gain_1_10"):  # TCP's own stream is where the paper's was
        assert "on the claims' own points" not in v.loc[f"s4.{claim}@anchored", "reason"], claim
    assert v.loc["s4.mptcp_peak@nolimit", "outcome"] == "not testable here"  # one stream: 940
    assert analysis.anchor_on_the_points(both_limits(PAPER_LIKE, FILLS).pipe(analysis.with_limits),
                                         ANCHORED) == ""


def test_pooled_calibrations_are_held_to_the_margin_run_by_run():
    """Pooled runs each chose their own limit: every run's distance must be within the margin."""
    other = calibration({0.01: (430, 470), 0.02: (470, 620)}).assign(repetition=1001)
    pooled = pd.concat([IN_MARGIN, other], ignore_index=True)
    assert calib.outside_tolerance(IN_MARGIN) == ""
    assert "0.02 CPUs" in calib.outside_tolerance(pooled)


def test_flat_streams_without_a_limit_are_not_testable_never_not_reproduced():
    # the old verdict: -0.0 % "not reproduced" where one stream fills its path (478 of 478)
    v = verdicts(claims(repeated(*FILLS, 0.001, cpus=0.0)))
    assert v.loc["s4.tcp_gain_1_10@nolimit", "outcome"] == "not testable here"
    assert "478" in v.loc["s4.tcp_gain_1_10@nolimit", "reason"]
    assert "NOT" not in "".join(v.outcome).upper().replace("NOT TESTABLE", "")
    # the limit the run did not measure is named, not judged
    assert "needs 1 and 10 streams" in v.loc["s4.tcp_gain_1_10@anchored", "reason"]


def test_flat_streams_in_the_paper_regime_are_not_reproduced():
    # one MPTCP stream at 760: within x/÷ 1.1 of the paper's 805 on the claims' own points
    v = verdicts(claims(repeated({1: 440, 10: 441}, {1: 760, 10: 750}, 0.001)))
    assert v.loc["s4.tcp_gain_1_10@anchored", "outcome"] == "not reproduced"
    assert v.loc["s4.mptcp_gain_1_10@anchored", "outcome"] == "not reproduced"
    assert v.loc["s4.mptcp_peak@anchored", "outcome"] == "not reproduced"  # 750, far from 934


def test_a_point_faster_than_its_wire_makes_its_claims_invalid_with_its_numbers():
    data = repeated(*PAPER_LIKE, 0.0002, reps=3)
    data.loc[(data.transport == "mptcp") & (data.streams == 10) & (data.repetition == 2),
             "goodput_mbit"] = 1023.0  # a 1 Gbit/s link carries 956.4 Mbit/s of payload
    v = verdicts(claims(data))
    for claim in ("s4.mptcp_peak@anchored", "s4.mptcp_gain_1_10@anchored", "s4.mptcp_both_paths"):
        row = v.loc[claim]
        assert row.outcome == INVALID, claim
        assert "1023" in row.reason and "956.4" in row.reason and "repetition 2" in row.invalid
        assert row.ours != "-"  # the estimate is still shown
    assert v.loc["s4.tcp_peak@anchored", "outcome"] == "reproduced"  # TCP's points are fine
    bad = analysis.invalid_rows(data[data.tool == "iperf3"], 500, 1000)
    assert [b.value for b in bad] == [1023.0]


def test_the_peak_is_judged_at_ten_streams_never_at_the_best_of_the_sweep():
    # the best mean (950 at 5 streams) would fall in the region; 10 streams (800) does not
    v = verdicts(claims(repeated({1: 438, 10: 460}, {1: 760, 5: 950, 10: 800}, 0.001)))
    row = v.loc["s4.mptcp_peak@anchored"]
    assert row.outcome == "not reproduced" and 795 < row.value < 805


def test_peak_regions_come_from_the_margin_capped_by_the_wire():
    reg = analysis.registered()
    tcp, mp = reg.claim("s4.tcp_peak@anchored"), reg.claim("s4.mptcp_peak@anchored")
    assert tcp.region.low == pytest.approx(460 / 1.1)  # the equivalence margin (issue 33 item 2)
    assert tcp.region.high == pytest.approx(500 * 1448 / 1514 * 1.02)  # what one path carries
    assert mp.region.low == pytest.approx(934 / 1.1)
    assert mp.region.high == pytest.approx(1000 * 1448 / 1514 * 1.02)
    assert "capped by what the physics allows" in tcp.region.why


def test_one_repetition_is_inconclusive_where_in_regime():
    v = verdicts(claims(frame(*PAPER_LIKE)))
    assert v.loc["s4.tcp_peak@anchored", "outcome"] == "inconclusive"
    assert "no interval" in v.loc["s4.tcp_peak@anchored", "reason"]


def test_other_link_rates_are_outside_the_paper_regime():
    v = verdicts(claims(repeated(*PAPER_LIKE, 0.001), path_rate_mbit=100, server_rate_mbit=200))
    assert "100/200 Mbit/s" in v.loc["s4.tcp_gain_1_10@anchored", "reason"]


def test_lab_checks_are_met_or_not_met_and_apart_from_the_paper():
    v = verdicts(claims(repeated({10: 478}, {10: 480}, 0.001, cpus=0.0, path2_share=0.0,
                                 joins=0)))
    assert v.loc["s4.mptcp_over_tcp", "outcome"] == "not met"
    assert v.loc["s4.mptcp_both_paths", "outcome"] == "not met"
    assert set(v[v.source == LAB].index) == {"s4.mptcp_over_tcp", "s4.mptcp_both_paths"}


def test_registration_quotes_are_the_papers_words_and_the_design_matches_the_profiles():
    reg = S4().registration()
    paper = [c for c in reg.claims if c.source == PAPER]
    assert len(paper) == 5 * len(SENDER_CPUS)  # two peaks, two gains and their contrast per limit
    assert all(c.quote and c.seed_line == "004:66" and c.quantity and c.regime for c in paper)
    assert reg.design["repetitions"] == {k: p["repetitions"] for k, p in PROFILES.items()}
    assert reg.design["factors"]["streams"] == {k: list(p["streams"]) for k, p in PROFILES.items()}
    assert reg.design["factors"]["sender_cpus"] == list(SENDER_CPUS)
    # the calibration is registered as the code runs it (candidates, repetitions, rule)
    registered = reg.design["calibration"]
    assert registered["candidates"] == list(CALIBRATION_CPUS)
    assert registered["repetitions"] == {k: p["calibration_repetitions"] for k, p in PROFILES.items()}
    assert registered["rule"] == calib.RULE
    assert registered["paper_one_stream_mbit"] == {
        t: pytest.approx(v, abs=0.05) for t, v in calib.PAPER_ONE_STREAM.items()}
    renaming = [c for c in reg.changes if c.renamed]
    assert renaming and renaming[-1].renamed["s4.mptcp_gain_1_10@cpu0.01"] == \
        "s4.mptcp_gain_1_10@anchored"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\dZ", renaming[-1].date)
    # every paper claim names a registered limit (the analysis judges it there)
    labels = {c.id.split("@")[1] for c in paper}
    assert labels == {limit_label(c) for c in SENDER_CPUS}
    # the lab's aggregation check: 2x within the verified rate tolerance either way
    from harness.lab.verify import RATE_TOLERANCE

    both = reg.claim("s4.mptcp_over_tcp").region
    assert (both.low, both.high) == (2 * RATE_TOLERANCE, 2 / RATE_TOLERANCE)
    assert reg.changes
    seed = next(iter(SEEDS.glob("004_*.txt")), None)
    if seed is None:
        pytest.skip(f"no seed file under {SEEDS}")
    line = re.sub(r"\s+", " ", seed.read_text(encoding="utf-8").splitlines()[65])
    for c in reg.claims:
        if c.quote:
            assert re.sub(r"\s+", " ", c.quote) in line, c.id


def test_summary_spread_and_overhead():
    f = pd.concat([frame({1: 470}, {1: 930}), frame({1: 480}, {1: 940})])
    s = figures.summary(f)
    row = s[(s.transport == "tcp") & (s.streams == 1)].iloc[0]
    assert row.goodput_mbit == 475 and row.n == 2 and round(row.sd_mbit, 2) == 7.07
    ov = figures.overhead(f)
    assert abs(ov.harness_share.iloc[0] - 0.1 / 4.1) < 1e-9


def test_figure_marks_invalid_points():
    data = repeated(*PAPER_LIKE, 0.0002, reps=2)
    data.loc[data.index[-1], "goodput_mbit"] = 1023.0
    fig = figures.figure(data)
    labels = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert any(label.startswith("invalid (1)") for label in labels)
    assert any("paper TCP" in label for label in labels)


def test_the_reports_invalid_table_checks_every_point_not_only_the_claims():
    data = repeated({1: 438, 4: 450, 10: 460}, {1: 805, 4: 900, 10: 934}, 0.0002, reps=2)
    assert figures.invalid_table(data).empty
    four = data.index[(data.transport == "mptcp") & (data.streams == 4)][0]  # under no claim
    data.loc[four, "goodput_mbit"] = 1023.0
    first_tcp = data[data.transport == "tcp"].iloc[[0]]
    data = pd.concat([data, first_tcp.assign(tool="gridftp", goodput_mbit=490.0)])
    bad = figures.invalid_table(data)
    assert sorted(zip(bad.value, bad.bound.round(1))) == [(490.0, 478.2), (1023.0, 956.4)]
    assert bad.point.str.contains("mptcp 4 streams").any() and \
        bad.point.str.startswith("gridftp tcp").any()


def test_a_regime_the_interval_cannot_show_is_said_so_not_called_filled():
    # one stream at 455 +- 3 % over two repetitions: its t interval reaches 460
    v = verdicts(claims(repeated({1: 455, 10: 460}, {1: 805, 10: 934}, 0.03, reps=2)))
    reason = v.loc["s4.tcp_gain_1_10@anchored", "reason"]
    assert v.loc["s4.tcp_gain_1_10@anchored", "outcome"] == "not testable here"
    assert reason.startswith("not shown that one tcp stream stays below") and "455" in reason


# -- the paper's contrast (004:66: TCP about +5 % *whereas* MPTCP about +16 %) -----------------

CONTRAST = "s4.gain_contrast_1_10@anchored"


def test_the_contrast_decides_what_the_two_overlapping_gain_regions_cannot():
    """Referee of the pooled reference 53e6aa (its claim 8): the gains' regions overlap
    (+2.47..+15.5 %, +7.7..+27.6 %), so +10 % in both reproduces both gains while erasing the
    paper's point that MPTCP gains more; the contrast, (1 + MPTCP gain) / (1 + TCP gain) in
    1.051..1.215x, says 'not reproduced' there and 'reproduced' for the paper's own numbers."""
    same = verdicts(claims(repeated({1: 418, 10: 460}, {1: 849, 10: 934}, 0.0002)))
    assert same.loc["s4.tcp_gain_1_10@anchored", "outcome"] == "reproduced"
    assert same.loc["s4.mptcp_gain_1_10@anchored", "outcome"] == "reproduced"
    row = same.loc[CONTRAST]
    assert row.outcome == "not reproduced" and row.value == pytest.approx(1.0, abs=0.002)
    assert row.unit == "x" and "1.051..1.215x" in row.region
    paper = verdicts(claims(both_limits(PAPER_LIKE, FILLS))).loc[CONTRAST]
    assert paper.outcome == "reproduced"
    assert paper.value == pytest.approx((934 / 805) / (460 / 438), rel=1e-3)
    assert "0.015 CPUs" in paper.note and "paired per repetition" in paper.note
    reg = analysis.registered().claim(CONTRAST)
    assert (reg.region.low, reg.region.high) == pytest.approx((math.sqrt(1.16 / 1.05), 1.16 / 1.05 * 1.1))
    assert reg.source == PAPER and "반면" in reg.quote


def test_the_contrast_pairs_the_four_points_of_each_repetition():
    """A repetition's drift (every point of it 5 % slower or faster) cancels in its own ratio of
    ratios: the interval collapses onto the paper's 1.105; one repetition whose MPTCP 10-stream
    point alone is off moves the estimate by that repetition only, and a repetition that lacks a
    point is left out, not mixed with another's."""
    drift = verdicts(claims(repeated(*PAPER_LIKE, 0.05, reps=6))).loc[CONTRAST]
    assert drift.low == pytest.approx(drift.high) == pytest.approx(drift.value)
    data = repeated(*PAPER_LIKE, 0.05, reps=6)
    off = (data.transport == "mptcp") & (data.streams == 10) & (data.repetition == 3)
    data.loc[off, "goodput_mbit"] *= 0.9
    moved = verdicts(claims(data)).loc[CONTRAST]
    expected = (1.16 / 1.05) * 0.9 ** (1 / 6)
    assert moved.value == pytest.approx(expected, rel=1e-3) and moved.low < moved.value < moved.high
    lacking = data[~((data.transport == "tcp") & (data.streams == 1) & (data.repetition == 2))]
    assert verdicts(claims(lacking)).loc[CONTRAST, "n"] == 5


def test_the_contrast_counts_only_where_both_gains_count():
    """TCP's one stream at its paper peak (470 >= 460) leaves the TCP gain outside its regime, so
    the contrast too, saying which gain and why, the estimate beside it; an MPTCP stream far
    from the paper's on the claim points does the same from the other side."""
    tcp_full = verdicts(claims(repeated({1: 470, 10: 474}, {1: 805, 10: 934}, 0.0002))).loc[CONTRAST]
    assert tcp_full.outcome == "not testable here"
    assert tcp_full.reason.startswith("the TCP gain does not count: one tcp stream already reaches")
    assert "MPTCP gain does not count" not in tcp_full.reason and "measured anyway: 1.1" in tcp_full.reason
    starved = verdicts(claims(both_limits(({1: 438, 10: 449}, {1: 454, 10: 307}), FILLS))).loc[CONTRAST]
    assert starved.outcome == "not testable here"
    assert "the MPTCP gain does not count: on the claims' own points" in starved.reason
    assert "the TCP gain does not count" not in starved.reason
    nolimit = verdicts(claims(both_limits(PAPER_LIKE, FILLS))).loc["s4.gain_contrast_1_10@nolimit"]
    assert nolimit.outcome == "not testable here" and nolimit.reason.count("does not count") == 2
    missing = verdicts(claims(repeated({10: 460}, {1: 805, 10: 934}, 0.0002))).loc[CONTRAST]
    assert "no TCP 1-stream point" in missing.reason


def test_a_point_faster_than_its_wire_makes_the_contrast_invalid():
    data = repeated(*PAPER_LIKE, 0.0002, reps=3)
    data.loc[(data.transport == "tcp") & (data.streams == 1) & (data.repetition == 2),
             "goodput_mbit"] = 490.0  # one 500 Mbit/s path carries 478.2 Mbit/s of payload
    row = verdicts(claims(data)).loc[CONTRAST]
    assert row.outcome == INVALID and "490" in row.reason and "478.2" in row.reason


def test_the_paper_one_stream_figures_say_they_are_derived():
    """Referee 2026-11-29 ('Unclear to a reader'): the paper prints neither 438 nor 805."""
    reason = verdicts(claims(repeated({1: 470, 10: 474}, {1: 805, 10: 934}, 0.0002))).loc[
        "s4.tcp_gain_1_10@anchored", "reason"]
    assert "438 Mbit/s (460/1.05, derived: the paper prints no one-stream figure)" in reason
    anchor = calib.choose_limit(IN_MARGIN.drop(columns=["anchored_cpus", "anchor_distance"]))
    assert "the calibration's one stream TCP" in anchor.text() and "derived" in anchor.text()


def run_data(data: pd.DataFrame, controllers: dict | None) -> RunData:
    meta = {"parameters": {"path_rate_mbit": 500.0, "server_rate_mbit": 1000.0}}
    if controllers is not None:
        meta["controllers"] = controllers
    return RunData(Path("."), meta, {"results": data, "calibration": IN_MARGIN})


def test_the_claims_coupling_can_move_are_not_testable_without_the_papers_coupled_controller():
    """Issue 35 item 11, the referee's gate: upstream MPTCP runs CUBIC per subflow, uncoupled,
    where the paper's ran the coupled BALIA. The MPTCP gains and the contrast (which coupling can
    move by the contrast's own size) are not testable here, saying so, their estimates beside;
    the TCP claims and the lab checks (which it cannot move) are judged as before; the anchored
    MPTCP peak is gated not on it but on the paper's stack (the third review)."""
    upstream = {"tcp": "cubic", "mptcp": "upstream Linux MPTCP v1, kernel path manager, scheduler "
                "default, cubic per subflow, uncoupled (coupled controllers in this kernel: none)",
                "reported_by_iperf3": {"tcp": ["cubic"], "mptcp": ["cubic"]},
                "client_kernel": {"net.ipv4.tcp_available_congestion_control": "reno bbr cubic"}}
    data = both_limits(PAPER_LIKE, FILLS)
    v = verdicts(S4().claims(run_data(data, upstream)))
    for claim in ("s4.mptcp_gain_1_10@anchored", CONTRAST):
        row = v.loc[claim]
        assert row.outcome == "not testable here", claim
        assert "the paper's coupled controller (BALIA) is not available in this kernel" in row.reason
        assert "measured anyway:" in row.reason and "congestion_control: FAILED" in row.gates
    for claim in ("s4.tcp_gain_1_10@anchored", "s4.tcp_peak@anchored"):
        assert v.loc[claim, "outcome"] == "reproduced", claim
    # the anchored MPTCP peak is not gated on the controller, but on the paper's stack (third review)
    assert "congestion_control" not in v.loc["s4.mptcp_peak@anchored", "gates"]
    assert "stack: FAILED" in v.loc["s4.mptcp_peak@anchored", "gates"]
    assert v.loc["s4.mptcp_over_tcp", "outcome"] == "met"
    # a kernel whose MPTCP points ran BALIA passes the controller gate; the stack gate still fails
    balia = {**upstream, "reported_by_iperf3": {"tcp": ["cubic"], "mptcp": ["balia"]},
             "client_kernel": {"net.ipv4.tcp_available_congestion_control": "reno cubic balia"}}
    judged = verdicts(S4().claims(run_data(data, balia)))
    for claim in (CONTRAST, "s4.mptcp_gain_1_10@anchored"):
        assert "congestion_control: passed" in judged.loc[claim, "gates"], claim
        assert "stack failed" in judged.loc[claim, "reason"] and "congestion_control failed" \
            not in judged.loc[claim, "reason"], claim
    assert verdicts(S4().claims(run_data(both_limits(FILLS, PAPER_LIKE), balia))).loc[
        "s4.gain_contrast_1_10@nolimit", "outcome"] == "reproduced"
    # a run that recorded no controllers passes no gate by omission
    unknown = verdicts(S4().claims(run_data(data, None)))
    assert "recorded no congestion controls" in unknown.loc[CONTRAST, "reason"]


def test_runs_pool_the_contrast_on_its_ratio_scale_the_run_as_the_unit():
    """`harness claims pool` pools each claim from the runs' own estimates: the contrast, an
    'x' made as a geometric mean, pools as the geometric mean of the runs' (a t interval over
    2 runs), and where the controller gate fails in every run it stays not testable, the
    pooled estimate beside it."""
    from harness.verdicts.pool import Member, pooled_table

    balia = {"reported_by_iperf3": {"tcp": ["cubic"], "mptcp": ["balia"]},
             "client_kernel": {"net.ipv4.tcp_available_congestion_control": "reno cubic balia"}}
    slower = ({1: 438, 10: 460}, {1: 805, 10: 900})  # run b: MPTCP's 10 streams 900, not 934
    # no limit, where the stack gate of the anchored claims (third review) does not apply
    runs = [both_limits(FILLS, PAPER_LIKE), both_limits(FILLS, slower)]
    contrast = "s4.gain_contrast_1_10@nolimit"
    members = [Member(Path(f"/runs/{i}"), {"run_id": f"run{i}"}, "sha256:x") for i in "ab"]
    for controllers in (balia, {**balia, "reported_by_iperf3": {"mptcp": ["cubic"]}}):
        own = [S4().claims(run_data(data, controllers)) for data in runs]
        pooled = pooled_table(S4(), members, own).set_index("claim_id").loc[contrast]
        values = [float(t.set_index("claim_id").loc[contrast, "value"]) for t in own]
        assert pooled.value == pytest.approx(math.sqrt(values[0] * values[1]))
        assert pooled.n == 2 and pooled.units == "runs"
        if controllers is balia:
            assert pooled.outcome == "inconclusive"  # 1.105x and 1.064x: two runs, a wide t interval
            assert pooled.low < 1.051 < 1.215 < pooled.high and "Student t interval over 2 runs" in pooled.interval
        else:
            assert pooled.outcome == "not testable here"
            assert "not testable in any of the 2 runs" in pooled.reason and "BALIA" in pooled.reason


def test_claims_show_prints_each_claims_gates_with_their_parameters(capsys):
    """A referee reads the registration with `harness claims show`: the controller gate of the
    MPTCP gains and the contrast is printed beside their regime, the peaks have none at no
    limit; at the anchored limit every claim has cpu_throttled and the MPTCP ones stack."""
    from harness.cli import main as cli_main

    assert cli_main(["claims", "show", "s4"]) == 0
    out = capsys.readouterr().out
    blocks = {b.split(":")[0].split("] ")[-1]: b for b in out.split("\n\n") if b.startswith("[")}
    gate = "    gates: congestion_control (controller balia, transport mptcp, what coupled controller)"
    for cid in ("s4.mptcp_gain_1_10@anchored", CONTRAST, "s4.gain_contrast_1_10@nolimit"):
        assert gate in blocks[cid], cid
    assert "gates:" not in blocks["s4.mptcp_peak@nolimit"]
    assert "gates: cpu_throttled (" in blocks["s4.mptcp_peak@anchored"]
    assert "; stack (paper MPTCP v0.95 (004:60" in blocks["s4.mptcp_peak@anchored"]
    assert "stack (" not in blocks["s4.tcp_peak@anchored"]


UPSTREAM = {"tcp": "cubic", "mptcp": "upstream Linux MPTCP v1, kernel path manager, scheduler default, cubic "
            "per subflow, uncoupled (coupled controllers in this kernel: none)",
            "reported_by_iperf3": {"tcp": ["cubic"], "mptcp": ["cubic"]},
            "client_kernel": {"net.ipv4.tcp_available_congestion_control": "reno bbr cubic",
                              "net.mptcp.enabled": "1", "net.mptcp.mptcp_enabled": None}}


def test_the_anchored_claims_need_a_sender_held_at_its_cpu_limit():
    """The third referee (problem 2): at the anchored limit one TCP stream was throttled in 10-15 %
    of its CFS periods, bound by its path, not by its CPU as the paper's sender (004:66). Every
    anchored claim is gated on the sender throttled in more than half of its periods at 1 and at
    10 streams (cpu_throttled); a TCP sender throttled in 12 % leaves the TCP claims and the
    contrast not testable, naming the shares, the estimate beside; the no-limit claims are not
    gated on it; the MPTCP peak passes it (and fails only the stack gate)."""
    data = both_limits(PAPER_LIKE, FILLS, throttled={"tcp": 0.12})
    v = verdicts(S4().claims(run_data(data, UPSTREAM)))
    for claim in ("s4.tcp_peak@anchored", "s4.tcp_gain_1_10@anchored", CONTRAST):
        row = v.loc[claim]
        assert row.outcome == "not testable here", claim
        assert "cpu_throttled failed (the sender throttled in TCP 1 stream 12 % (" in row.reason, claim
        assert "not more at TCP 1 stream, TCP 10 streams" in row.reason and "measured anyway:" in row.reason
    assert "cpu_throttled: passed" in v.loc["s4.mptcp_peak@anchored", "gates"]
    assert "MPTCP 10 streams 90 % (216 of 240 periods, 6 points" in v.loc["s4.mptcp_peak@anchored", "gates"]
    for claim in ("s4.tcp_peak@nolimit", "s4.mptcp_gain_1_10@nolimit"):
        assert "cpu_throttled" not in v.loc[claim, "gates"], claim
    held = verdicts(S4().claims(run_data(both_limits(PAPER_LIKE, FILLS), UPSTREAM)))
    assert held.loc["s4.tcp_peak@anchored", "outcome"] == "reproduced"


def test_the_anchored_mptcp_claims_are_gated_on_the_papers_stack_as_the_seed_states_it():
    """The third referee (problem 3, claims 4 and 8): at the anchored limit ten MPTCP streams
    (throttled in 100 % of their periods) carried about half of one; a CPU-bound figure is the
    stack's, MPTCP v0.95 and iperf in the paper (004:60, 004:66), upstream v1 and iperf3 here. The
    gate's words are the seed's: no iperf version, since the seed gives none."""
    reg = S4().registration()
    for cid in ("s4.mptcp_peak@anchored", "s4.mptcp_gain_1_10@anchored", CONTRAST):
        (stack,) = [g for g in reg.claim(cid).gates if g.name == "stack"]
        assert stack.params["sysctl"] == "net.mptcp.mptcp_enabled" and stack.params["tool"] == "iperf"
        assert "004:60" in stack.params["paper"] and "the seed gives no iperf version" in stack.params["paper"]
    assert not [g for c in reg.claims if "@nolimit" in c.id or c.id.startswith("s4.tcp")
                for g in c.gates if g.name == "stack"]
    v = verdicts(S4().claims(run_data(both_limits(PAPER_LIKE, FILLS), UPSTREAM)))
    row = v.loc["s4.mptcp_peak@anchored"]  # reproduced by its numbers, not testable by its stack
    assert row.outcome == "not testable here" and "stack failed (the paper's stack: MPTCP v0.95" in row.reason
    assert "measured with iperf3" in row.reason and "(differs in its implementation and tool)" in row.reason
    root = Path(__file__).resolve().parents[3]
    texts = [(root / "harness/studies/s4/registration.toml").read_text(encoding="utf-8"),
             (root / "notebooks/s4_mptcp.ipynb").read_text(encoding="utf-8"),
             (root / "docs/studies/s4.md").read_text(encoding="utf-8")]
    quoted = "'iperf 2, a thread per stream'"  # the review's words, quoted in change #14's reason
    assert not [t for t in texts if "iperf 2" in t.replace(quoted, "")]
    seed = next(iter(SEEDS.glob("004_*.txt")), None)
    if seed is None:
        pytest.skip(f"no seed file under {SEEDS}")
    lines = seed.read_text(encoding="utf-8").splitlines()
    assert "Mptcp (v0.95)" in lines[59]
    assert "net.mptcp.mptcp_enabled" in lines[65] and "`iperf`의 “-P” 옵션" in lines[65]


def test_the_changes_made_after_outcomes_record_what_they_replaced():
    """The third referee (problem 1): the 'before outcomes' columns were empty. Change #5's regions
    (by the printed digits and the wire) and #12's gates (none on the MPTCP gains) are recorded,
    the anchored claims' under their ids of today though #5 names them @cpu0.01; the new gates'
    changes record the gates they replaced; every change of today has its UTC time."""
    from harness.verdicts.before_outcomes import as_before

    reg = S4().registration()
    gain = as_before(reg, "s4.tcp_gain_1_10@anchored")
    assert (gain.claim.region.low, gain.claim.region.high) == (4.0, 6.0)
    assert reg.changes.index(gain.region_from) == 4  # change #5
    peak = as_before(reg, "s4.mptcp_peak@nolimit").claim.region
    assert (peak.low, peak.high) == pytest.approx((911.5931307793924, 975.5350066050198))
    mptcp = as_before(reg, "s4.mptcp_gain_1_10@anchored")
    assert mptcp.claim.gates == () and reg.changes.index(mptcp.gates_from) == 11  # change #12
    assert as_before(reg, "s4.tcp_peak@anchored").claim.gates == ()
    new = reg.changes[12:]
    assert len(new) == 5 and all(c.after_outcomes is True for c in new)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\dZ", c.date) for c in new)
    assert "e1142e" in new[0].why and "15, 12 and 10 %" in new[0].why

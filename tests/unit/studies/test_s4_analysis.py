"""S4 verdicts follow the numbers: built from small hand-made result tables."""

import pandas as pd

from harness.studies import s4_analysis as analysis


def frame(tcp: dict[int, float], mptcp: dict[int, float], path2_share: float = 0.5,
          joins: int = 2, repetition: int = 1) -> pd.DataFrame:
    rows = []
    for transport, points in (("tcp", tcp), ("mptcp", mptcp)):
        for streams, goodput in points.items():
            total = 1_000_000
            share = path2_share if transport == "mptcp" else 0.0
            rows.append({"tool": "iperf3", "transport": transport, "streams": streams,
                         "repetition": repetition, "goodput_mbit": goodput,
                         "path1_tx_bytes": int(total * (1 - share)),
                         "path2_tx_bytes": int(total * share),
                         "mp_capable_syn_ack_rx": 1 if transport == "mptcp" else 0,
                         "mp_join_syn_ack_rx": joins if transport == "mptcp" else 0,
                         "mp_fallback": 0, "tool_s": 4.0, "wall_s": 4.1})
    return pd.DataFrame(rows)


def repeated(tcp: dict[int, float], mptcp: dict[int, float], noise: float, reps: int = 6,
             **kw) -> pd.DataFrame:
    """``reps`` repetitions, each point off by a known +-noise pattern (relative)."""
    wobble = [1 + noise * w for w in (-1, 1, -0.5, 0.5, 0, 0.2, -0.2, 0.8, -0.8, 0.1)[:reps]]
    return pd.concat([frame({k: v * f for k, v in tcp.items()},
                            {k: v * f for k, v in mptcp.items()}, repetition=i + 1, **kw)
                      for i, f in enumerate(wobble)], ignore_index=True)


def outcomes(claims: pd.DataFrame) -> dict[str, str]:
    return dict(zip(claims.claim_id, claims.outcome))


def test_paper_like_numbers_are_reproduced():
    v = outcomes(analysis.claims(repeated({1: 438, 10: 460}, {1: 805, 10: 934}, 0.0002)))
    assert v == {"s4.tcp_peak": "reproduced", "s4.mptcp_peak": "reproduced",
                 "s4.mptcp_over_tcp": "reproduced", "s4.tcp_gain_1_10": "reproduced",
                 "s4.mptcp_gain_1_10": "reproduced", "s4.mptcp_both_paths": "reproduced"}


def test_flat_streams_and_one_path_are_not_reproduced():
    v = outcomes(analysis.claims(repeated({1: 478, 10: 478}, {1: 480, 10: 481}, 0.001,
                                          path2_share=0.0, joins=0)))
    assert v["s4.mptcp_gain_1_10"] == "not reproduced"
    assert v["s4.tcp_peak"] == "not reproduced"
    assert v["s4.mptcp_over_tcp"] == "not reproduced"
    assert v["s4.mptcp_both_paths"] == "not reproduced"


def test_noisy_repetitions_leave_a_close_claim_inconclusive_and_say_how_many_more():
    # TCP peak about 462 with +-3 % noise over 3 repetitions: its interval covers 455..465 and more
    claims = analysis.claims(repeated({1: 440, 10: 462}, {1: 805, 10: 934}, 0.03, reps=3))
    row = claims.set_index("claim_id").loc["s4.tcp_peak"]
    assert row.outcome == "inconclusive" and row.n == 3
    assert row.low < 455 and row.high > 465 and "would decide" in row.reason


def test_one_repetition_is_inconclusive_everywhere_except_what_cannot_be_tested():
    claims = analysis.claims(frame({1: 478}, {1: 940}))
    v = outcomes(claims)
    assert v["s4.tcp_peak"] == "inconclusive"
    assert v["s4.tcp_gain_1_10"] == "not testable here"  # one stream count only
    assert claims.set_index("claim_id").loc["s4.mptcp_both_paths", "source"] == "target"


def test_summary_spread_and_overhead():
    f = pd.concat([frame({1: 470}, {1: 930}), frame({1: 480}, {1: 940})])
    s = analysis.summary(f)
    row = s[(s.transport == "tcp") & (s.streams == 1)].iloc[0]
    assert row.goodput_mbit == 475 and row.n == 2 and round(row.sd_mbit, 2) == 7.07
    ov = analysis.overhead(f)
    assert abs(ov.harness_share.iloc[0] - 0.1 / 4.1) < 1e-9

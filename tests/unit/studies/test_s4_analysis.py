"""S4 verdicts follow the numbers: built from small hand-made result tables."""

import pandas as pd

from harness.studies import s4_analysis as analysis


def frame(tcp: dict[int, float], mptcp: dict[int, float], path2_share: float = 0.5,
          joins: int = 2) -> pd.DataFrame:
    rows = []
    for transport, points in (("tcp", tcp), ("mptcp", mptcp)):
        for streams, goodput in points.items():
            total = 1_000_000
            share = path2_share if transport == "mptcp" else 0.0
            rows.append({"tool": "iperf3", "transport": transport, "streams": streams,
                         "repetition": 1, "goodput_mbit": goodput,
                         "path1_tx_bytes": int(total * (1 - share)),
                         "path2_tx_bytes": int(total * share),
                         "mp_capable_syn_ack_rx": 1 if transport == "mptcp" else 0,
                         "mp_join_syn_ack_rx": joins if transport == "mptcp" else 0,
                         "mp_fallback": 0, "tool_s": 4.0, "wall_s": 4.1})
    return pd.DataFrame(rows)


def verdicts(claims: pd.DataFrame) -> dict[str, str]:
    return {row.claim: row.verdict.split(" (")[0] for row in claims.itertuples()}


def test_paper_like_numbers_are_reproduced():
    v = verdicts(analysis.claims(frame({1: 438, 10: 460}, {1: 805, 10: 934})))
    assert v["TCP peak throughput (iperf3)"] == "reproduced"
    assert v["MPTCP peak throughput (iperf3)"] == "reproduced"
    assert v["MPTCP aggregates both paths: MPTCP/TCP >= 1.8 (iperf3)"] == "reproduced"
    assert v["TCP gain from 1 to 10 streams (iperf3)"] == "reproduced"
    assert v["MPTCP gain from 1 to 10 streams (iperf3)"] == "reproduced"
    assert v["MPTCP used both paths (iperf3, from counters)"] == "reproduced"


def test_flat_streams_and_one_path_are_not():
    v = verdicts(analysis.claims(frame({1: 478, 10: 478}, {1: 480, 10: 481}, path2_share=0.0,
                                       joins=0)))
    assert v["MPTCP gain from 1 to 10 streams (iperf3)"] == "not reproduced"
    assert v["MPTCP aggregates both paths: MPTCP/TCP >= 1.8 (iperf3)"] == "not reproduced"
    assert v["MPTCP used both paths (iperf3, from counters)"] == "not reproduced"


def test_summary_spread_and_overhead():
    f = pd.concat([frame({1: 470}, {1: 930}), frame({1: 480}, {1: 940})])
    s = analysis.summary(f)
    row = s[(s.transport == "tcp") & (s.streams == 1)].iloc[0]
    assert row.goodput_mbit == 475 and row.n == 2 and round(row.sd_mbit, 2) == 7.07
    ov = analysis.overhead(f)
    assert abs(ov.harness_share.iloc[0] - 0.1 / 4.1) < 1e-9

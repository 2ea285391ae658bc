"""The report's link verification table: judged directions in full, plain ones folded."""

import pytest

from harness.verify import verification_table


def _plain(i, rtt, ok=True):
    return dict(link=f"m{i:02d}:eth0--switch:m{i:02d}", direction=f"m{i:02d}->switch",
                configured_mbit=None, expected_rtt_ms=None, rtt_ms=rtt, ok=ok)


def test_plain_links_fold_into_one_row_and_shaped_ones_stay():
    shaped = dict(link="reducer:eth0--switch:red", direction="switch->reducer",
                  configured_mbit=85.2, link_layer_mbit=84.5, rate_ratio=0.991,
                  expected_rtt_ms=None, rtt_ms=1.01, ok=True)
    table = verification_table([shaped] + [_plain(i, 0.2 + i / 100) for i in range(1, 49)])
    assert len(table) == 2
    assert table.rate_ratio[0] == 0.991 and table.rtt_max_ms[0] == 1.01
    folded = table.iloc[1]
    assert folded.link == "48 plain directions"
    assert folded.direction == "m01->switch .. m48->switch"
    assert folded.rtt_ms == pytest.approx(0.445)  # median of 0.21 .. 0.68
    assert folded.rtt_max_ms == pytest.approx(0.68) and folded.ok


def test_a_failed_plain_link_fails_the_folded_row():
    table = verification_table([_plain(1, 0.3), _plain(2, None, ok=False)])
    assert table.ok.tolist() == [False] and table.rtt_ms[0] == 0.3

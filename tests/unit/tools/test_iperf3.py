"""iperf3 wrapper: durations and results without a summary."""

import pytest

from harness.errors import SpecError


def test_iperf3_durations_must_be_whole_seconds():
    from harness.tools.iperf3 import iperf3_client_argv

    argv = iperf3_client_argv("198.18.0.2", 5201, 3, 2, "cubic", None, True)
    assert argv[:2] == ["mptcpize", "run"] and argv[argv.index("-t") + 1] == "3"
    for bad in (0.5, 1.5, 0):
        with pytest.raises(SpecError, match="whole number"):
            iperf3_client_argv("198.18.0.2", 5201, bad, 1, None, None, False)
    with pytest.raises(SpecError, match="stream count"):
        iperf3_client_argv("198.18.0.2", 5201, 1, 0, None, None, False)


def test_iperf3_json_without_a_summary_is_an_error():
    from harness.errors import HarnessError
    from harness.tools.iperf3 import parse_iperf3_json

    busy = '{"start": {}, "intervals": [], "end": {}, "error": "the server is busy running a test. try again later"}'
    with pytest.raises(HarnessError, match="server is busy"):
        parse_iperf3_json(busy, 1)
    with pytest.raises(HarnessError, match="no end-of-test summary"):
        parse_iperf3_json('{"end": {}}', 1)

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


GOOD = ('{"start": {"test_start": {"num_streams": 1}}, "intervals": [], "end": {'
        '"sum_sent": {"bits_per_second": 9.5e8, "seconds": 2, "bytes": 237500000, '
        '"retransmits": 3}, "sum_received": {"bits_per_second": 9.4e8, "seconds": 2, '
        '"bytes": 235000000}}}')
CLOSED = '{"start": {}, "intervals": [], "end": {}, "error": "control socket has closed unexpectedly"}'
REFUSED = '{"start": {}, "intervals": [], "end": {}, "error": "unable to connect to server: Connection refused"}'


class ScriptedNode:
    """A node whose iperf3 prints the given outputs, one per run (exit 1 unless a summary)."""

    name = "client"

    def __init__(self, *outputs):
        self.outputs, self.runs = list(outputs), 0

    def run(self, cmd, **kwargs):
        from harness.nodes.result import Result

        out = self.outputs[min(self.runs, len(self.outputs) - 1)]
        self.runs += 1
        return Result(self.name, cmd, out, "", 0 if "sum_sent" in out else 1, 2.1)


def test_a_test_cut_by_the_server_is_run_again_and_counted(monkeypatch):
    from harness.tools import iperf3

    monkeypatch.setattr(iperf3.time, "sleep", lambda s: None)
    node = ScriptedNode(CLOSED, GOOD)
    result = iperf3.iperf3_client(node, "198.18.0.2", seconds=2)
    assert node.runs == 2 and result.attempts == 2
    assert result.retried == ["control socket has closed unexpectedly"]
    assert result.received_bps == 9.4e8


def test_a_server_that_keeps_cutting_tests_or_refuses_them_is_an_error(monkeypatch):
    from harness.errors import HarnessError
    from harness.tools import iperf3

    monkeypatch.setattr(iperf3.time, "sleep", lambda s: None)
    node = ScriptedNode(CLOSED)
    with pytest.raises(HarnessError, match="control socket has closed"):
        iperf3.iperf3_client(node, "198.18.0.2", seconds=2)
    assert node.runs == iperf3.BUSY_RETRIES
    refused = ScriptedNode(REFUSED, GOOD)  # not transient: never run again
    with pytest.raises(HarnessError, match="Connection refused"):
        iperf3.iperf3_client(refused, "198.18.0.2", seconds=2)
    assert refused.runs == 1

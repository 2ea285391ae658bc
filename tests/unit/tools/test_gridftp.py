"""GridFTP wrapper: input validation, capability errors and output parsing (no root)."""

from __future__ import annotations

from datetime import datetime

import pytest
from conftest import CommandOnlyNode

from harness.errors import CapabilityMissing, SpecError
from harness.journal.journal import Journal
from harness.tools import gridftp
from harness.tools.gridftp import (
    client_command,
    gridftp_server,
    gridftp_transfer,
    parse_transfer_stats,
    parse_verbose_perf,
    server_command,
)


class FakeNode(CommandOnlyNode):
    """Answers shell commands from a table; records every command it was asked to run."""

    def __init__(self, answers: dict[str, tuple[int, str]] | None = None):
        self.name = "fake"
        self.answers = answers or {}
        self.commands: list[str] = []

    def describe(self) -> dict:
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        for needle, (status, out) in self.answers.items():
            if needle in cmd:
                return status, out, ""
        return 1, "", "not found"



@pytest.mark.parametrize(
    "size, streams, port",
    [
        (1000, 0, 2811),
        (1000, 65, 2811),
        (1000, -1, 2811),
        (1000, 2.0, 2811),
        (1000, True, 2811),
        (0, 1, 2811),
        (-5, 1, 2811),
        (10.5, 1, 2811),
        (1000, 1, 0),
        (1000, 1, 70000),
    ],
)
def test_invalid_transfer_is_rejected_before_anything_runs(size, streams, port):
    node = FakeNode()
    with pytest.raises(SpecError):
        gridftp_transfer(node, "198.18.0.2", port, size, streams)
    assert node.commands == []


def test_stream_limits_are_inclusive():
    gridftp.validate_transfer(1, 1, 1)
    gridftp.validate_transfer(10**12, gridftp.MAX_STREAMS, 65535)


def test_server_rejects_bad_address_and_port_before_anything_runs(tmp_path):
    node, journal = FakeNode(), Journal(tmp_path / "j.jsonl")
    with pytest.raises(SpecError), gridftp_server(journal, node, "server.example", 2811):
        pass
    with pytest.raises(SpecError), gridftp_server(journal, node, "198.18.0.2", 0):
        pass
    assert node.commands == [] and journal.entries() == []


def test_missing_client_names_the_debian_package():
    with pytest.raises(CapabilityMissing) as excinfo:
        gridftp_transfer(FakeNode(), "198.18.0.2", 2811, 1000, 2)
    assert "globus-url-copy" in str(excinfo.value)
    assert "apt-get install globus-gass-copy-progs" in str(excinfo.value)


def test_missing_server_names_the_debian_package(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    with (
        pytest.raises(CapabilityMissing) as excinfo,
        gridftp_server(journal, FakeNode(), "198.18.0.2", 2811),
    ):
        pass
    assert "globus-gridftp-server-progs" in str(excinfo.value)
    assert journal.entries() == []


def test_missing_mptcpize_names_the_debian_package():
    node = FakeNode({"globus-url-copy": (0, "/usr/bin/globus-url-copy\n")})
    with pytest.raises(CapabilityMissing, match="apt-get install mptcpize"):
        gridftp_transfer(node, "198.18.0.2", 2811, 1000, 2, mptcp=True)


def test_mptcp_disabled_in_namespace_is_reported():
    node = FakeNode(
        {
            "globus-url-copy": (0, "/usr/bin/globus-url-copy\n"),
            "mptcpize": (0, "/usr/bin/mptcpize\n"),
            "/proc/sys/net/mptcp/enabled": (0, "0\n"),
        }
    )
    with pytest.raises(CapabilityMissing, match="net.mptcp.enabled=1"):
        gridftp_transfer(node, "198.18.0.2", 2811, 1000, 2, mptcp=True)


def test_commands():
    assert client_command("/usr/bin/globus-url-copy", "198.18.0.2", 2811, 5000, 4) == [
        "env",
        "GLOBUS_USAGE_OPTOUT=1",
        "/usr/bin/globus-url-copy",
        "-vb",
        "-fast",
        "-p",
        "4",
        "-len",
        "5000",
        "file:///dev/zero",
        "ftp://198.18.0.2:2811/dev/null",
    ]
    assert client_command("g", "fd00::2", 2811, 1, 1)[-1] == "ftp://[fd00::2]:2811/dev/null"
    cmd = server_command("/usr/sbin/globus-gridftp-server", "198.18.0.2", 2812, "/tmp/x.log")
    assert cmd[cmd.index("-p") + 1] == "2812"
    assert cmd[cmd.index("-data-interface") + 1] == "198.18.0.2"
    assert cmd[cmd.index("-l") + 1] == "/tmp/x.log"
    assert "-aa" in cmd and "-control-interface" not in cmd


VB_OUTPUT = (
    "Source: file:///dev/\nDest:   ftp://198.18.0.2:2811/dev/\n  zero  ->  null\n\n"
    "     60000000 bytes        22.89 MB/sec avg        22.89 MB/sec inst\r\n"
)


def test_parse_verbose_perf_takes_the_last_line_in_mib():
    two = (
        VB_OUTPUT.replace("\r\n", "\r")
        + "    100000000 bytes  20.00 MB/sec avg  19.00 MB/sec inst\r\n"
    )
    assert parse_verbose_perf(two) == (100000000, pytest.approx(20 * 2**20 * 8 / 1e6))
    nbytes, mbit = parse_verbose_perf(VB_OUTPUT)
    assert nbytes == 60000000 and mbit == pytest.approx(192.0, abs=0.1)
    assert parse_verbose_perf("Source: file:///dev/\n  zero  ->  null\n") is None


SERVER_LOG = """\
[367] Sat Nov 21 23:54:41 2026 :: Server started in daemon mode.
[390] Sat Nov 21 23:54:44 2026 :: User anonymous successfully authorized.
[390] Sat Nov 21 23:54:44 2026 :: Transfer stats: DATE=20261121235444.981903 HOST=vm \
PROG=globus-gridftp-server NL.EVNT=FTP_INFO START=20261121235444.947925 USER=anonymous \
FILE=/dev/null BUFFER=69120 BLOCK=262144 NBYTES=100000000 VOLUME=/ STREAMS=4 STRIPES=1 \
DEST=[198.18.0.1] TYPE=ESTO CODE=226 TASKID=none retrans=0,0,0,0
[414] Sat Nov 21 23:54:57 2026 :: Transfer stats: DATE=20261121235457.416960 HOST=vm \
PROG=globus-gridftp-server NL.EVNT=FTP_INFO START=20261121235453.235465 USER=anonymous \
FILE=/dev/null BUFFER=69120 BLOCK=262144 NBYTES=100000000 VOLUME=/ STREAMS=1 STRIPES=1 \
DEST=[198.18.0.1] TYPE=ESTO CODE=226 TASKID=none retrans=0
"""


def test_parse_transfer_stats():
    first, second = parse_transfer_stats(SERVER_LOG)
    assert (first.pid, first.nbytes, first.streams, first.code) == (390, 100000000, 4, 226)
    assert first.dest == "198.18.0.1" and first.file == "/dev/null"
    assert first.start == datetime(2026, 11, 21, 23, 54, 44, 947925)
    assert first.seconds == pytest.approx(0.033978)
    assert second.streams == 1
    assert second.mbit_per_s == pytest.approx(100000000 * 8 / 4.181495 / 1e6)
    assert parse_transfer_stats("[1] x :: Server started in daemon mode.\n") == []


def test_daemon_pid_from_log():
    match = gridftp._DAEMON_PID_RE.search(SERVER_LOG)
    assert match and match.group(1) == "367"


def test_transfer_result_throughput():
    result = gridftp.GridFTPTransfer(4, 100_000_000, 4.0, "tcp", "cmd", "")
    assert result.mbit_per_s == pytest.approx(200.0)

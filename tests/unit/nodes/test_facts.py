"""Shared facts: /proc/PID/stat, TCP listeners (ss), /proc/net/netstat -- parsers and shell."""

from __future__ import annotations

import os
import subprocess

import pytest

from harness.nodes.facts import (
    netstat_group,
    parse_listening,
    parse_netstat,
    wait_listening_command,
)
from harness.nodes.procfs import (
    PROC_STAT_SH,
    cpu_ticks,
    parse_stat,
    parse_stats,
    process_start_ticks,
    read_stat,
    stat_command,
)

# A real line, with a command name that holds a space and a ")" (legal in comm).
STAT = ("32348 (my prog) x) S 32341 32341 31079 0 -1 4194304 100 0 0 0 17 4 2 1 20 0 1 0 74260"
        " 3133440 380 18446744073709551615 94856188579840 94856188599721 140731027372560"
        " 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0")
ZOMBIE = "7 (sh) Z 1 7 7 0 -1 4194560 0 0 0 0 3 2 0 0 20 0 1 0 512 0 0 0"

NETSTAT = """TcpExt: SyncookiesSent SyncookiesRecv MPCapableSYNRX
TcpExt: 0 7 99
IpExt: InNoRoutes InTruncatedPkts InOctets
IpExt: 0 0 6155446644
MPTcpExt: MPCapableSYNRX MPCapableSYNTX MPCapableACKRX
MPTcpExt: 5 0 5
"""

SS = """LISTEN 0      100    127.0.0.1:56073 0.0.0.0:* users:(("python",pid=30894,fd=39))
LISTEN 0      4096   [::]:5201 [::]:*
LISTEN 0      128    198.18.0.2%eth0:8080 0.0.0.0:*
garbage
"""


def test_stat_fields_are_counted_after_the_last_parenthesis():
    stat = parse_stat(STAT)
    assert (stat.pid, stat.state, stat.ppid, stat.pgid) == (32348, "S", 32341, 32341)
    assert (stat.utime, stat.stime, stat.cpu_ticks, stat.start_ticks) == (17, 4, 21, 74260)
    assert (stat.cutime, stat.cstime) == (2, 1)
    assert not stat.ended and parse_stat(ZOMBIE).ended
    with pytest.raises(ValueError):
        parse_stat("no such line")


def test_cpu_ticks_sum_skips_what_is_not_a_stat_line():
    assert [s.pid for s in parse_stats(STAT + "\n\n" + ZOMBIE + "\ncat: gone\n")] == [32348, 7]
    assert cpu_ticks(STAT + "\n" + ZOMBIE + "\n") == 21 + 5
    assert cpu_ticks("") == 0
    assert stat_command([1, 22]) == "cat /proc/1/stat /proc/22/stat 2>/dev/null"
    assert stat_command([]) == "true 2>/dev/null"


def test_this_process_as_python_and_as_shell_see_it():
    me = read_stat(os.getpid())
    assert me is not None and me.pid == os.getpid() and me.state == "R"
    assert process_start_ticks(os.getpid()) == me.start_ticks
    script = PROC_STAT_SH + 'set -- a b\nproc_stat "$P" && echo "$proc_state $proc_start $1"'
    out = subprocess.run(["sh", "-c", script], env={"P": str(os.getpid()), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True).stdout
    state, start, caller_arg = out.split()
    assert int(start) == me.start_ticks and caller_arg == "a"  # caller's $1 untouched
    gone = subprocess.run(["sh", "-c", PROC_STAT_SH + "proc_stat 999999999 || echo gone"],
                          capture_output=True, text=True).stdout
    assert gone == "gone\n"


def test_netstat_groups_by_name_even_when_names_repeat_across_groups():
    groups = parse_netstat(NETSTAT)
    assert groups["TcpExt"]["MPCapableSYNRX"] == 99  # not MPTcpExt's
    assert netstat_group(NETSTAT, "MPTcpExt") == {"MPCapableSYNRX": 5, "MPCapableSYNTX": 0,
                                                  "MPCapableACKRX": 5}
    assert netstat_group(NETSTAT, "IpExt")["InOctets"] == 6155446644
    assert netstat_group("TcpExt: A\nTcpExt: 1\n", "MPTcpExt") == {}


def test_listening_ports_from_ss():
    ports = parse_listening(SS)
    assert set(ports) == {56073, 5201, 8080}
    assert "pid=30894" in ports[56073]
    assert "for i in $(seq 20); do ss -Hltn 'sport = :5201' | grep -q . && exit 0;" in \
        wait_listening_command(5201, 1.0)

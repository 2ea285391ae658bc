"""perftest's verbs benchmarks (``ib_send_lat``, ``ib_write_lat``, ``ib_send_bw``,
``ib_write_bw``): command lines for both ends, and their reports as tidy rows.

Results come from the table perftest prints on stdout, archived as it is.
Its ``--out_json`` file is not used as the source, for two reasons found in
Debian 12's perftest (package 4.5+0.17, ``-V`` says 6.06): the file it writes
is not JSON (``MsgSize: 2,``, ``Link_type: Ethernet,``: keys and strings
unquoted, trailing commas: the format strings in its binaries; later releases
quote them), and perftest's source opens it with O_TRUNC for every report, so
after an ``-a`` sweep it would hold the last size only. ``json_file`` still
asks for it (one size per invocation), e.g. to archive beside stdout;
:func:`parse_json_report` reads both dialects.

perftest wants the same options at both ends; :class:`PerftestRun` holds them
once. Each end runs under ``prlimit --memlock=unlimited``
(:func:`harness.config.rdma.with_memlock`: registered memory is locked memory),
and inside a shell that prints, after the tool exits, the CPU time the tool
used (its ``cutime``/``cstime`` in ``/proc/$$/stat``): busy polling against
sleeping on completion events (``-e``) is a claim about CPU time, so it is
measured per process rather than inferred.

That whole-life CPU includes start, QP set-up and exit (~1 s under TCG, more than
300 round trips): divided by the round trips' time it gave one-threaded clients
103-120 % (S1's reference of 2026-11-26). So the shell also reads the tool's CPU
time (``/proc/PID/schedstat``, ns) and the clock when the tool prints its results
header -- perftest prints it after set-up and the last handshake, just before the
measured loop (``send_lat.c``) -- and again at its first result row, the loop
over (``@phase``, :attr:`PerftestReport.phase_cpu_s`). The tool's stdout is
line-buffered for that (``stdbuf -oL``; a pipe is otherwise block-buffered and
both lines would arrive at exit). The interval is read on the scheduler's clock, the
one the CPU time is counted on (the reading shell's ``se.exec_start``): inside a TCG
guest that clock and the wall clock (``date``) disagreed -- an events client read
36-124 % of one thread against ``date`` (S1 quick run, 2026-11-27). CPU over one
interval of the same clock cannot exceed 1 for one thread by more than the counters'
resolution: both advance one scheduler tick at a time while their task runs, so a share
may read up to two ticks over (a busy loop read 1.0076 over 0.4 s, 0.28 at host load 5
when it had 28 % of a core; a sleeper 0): :func:`harness.verdicts.validity.counter_resolution_pct`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from ..config.rdma import with_memlock
from ..errors import HarnessError, SpecError
from ..journal.journal import Journal
from ..nodes import Node
from ..nodes.facts import wait_listening
from .registry import Tool

IB_SEND_LAT = Tool("ib_send_lat", "ib_send_lat --version", "perftest")
IB_WRITE_LAT = Tool("ib_write_lat", "ib_write_lat --version", "perftest")
IB_SEND_BW = Tool("ib_send_bw", "ib_send_bw --version", "perftest")
IB_WRITE_BW = Tool("ib_write_bw", "ib_write_bw --version", "perftest")
LATENCY_TOOLS = ("ib_send_lat", "ib_write_lat")
BANDWIDTH_TOOLS = ("ib_send_bw", "ib_write_bw")
# RDMA write completes at the writer only: the write tools have no -e (their --help has none).
EVENT_TOOLS = ("ib_send_lat", "ib_send_bw")
CONNECTIONS = ("RC", "UC", "UD")
MAX_SIZE = 1 << 23  # -a sweeps 2 .. 2^23
MIN_ITERATIONS = 5  # "-n ... at least 5"
DEFAULT_PORT = 18515
# Runs "$@" line-buffered (stdbuf -oL) and passes its output through; reads the tool's
# CPU time (/proc/PID/schedstat, ns) and the scheduler's clock (the reading shell's own
# se.exec_start in /proc/self/sched, ms) when the tool prints its results header ("#bytes
# ...": set-up is over, the measured exchange starts) and again at its first result row (the
# exchange is over), and prints "@phase CPU0 T0 CPU1 T1"; then, after the tool exits, the CPU
# the whole process used, as ticks: "@cpu USER SYSTEM HZ".
# se.exec_start is when the scheduler last accounted the shell (it was scheduled in, or a tick
# came), so it is read before and after the CPU time (function cpu_and_clock): equal, the CPU time was read
# in the same slice, less than a tick after that clock; unequal, the shell was preempted or
# ticked in between, and the pair is read again (up to 50 times; then the earlier clock at the
# header and the later one at the row, which can only lengthen the interval). Until 2026-11-27
# the clock was read once, after the CPU time: a reader preempted in between at the header
# took its clock late and shortened the interval -- 102.6 % of one thread for a polling client
# over 5.5 s in CI at load ~5 (2026-11-27).
# The reading shell pins itself to one CPU first (taskset, its first allowed CPU): the
# scheduler's clock is per CPU, and CPUs' clocks need not agree -- on this project's host
# CPU 1's read 404 ms behind CPU 0's (2026-11-27), so a reader that moved between its two
# readings measured a 0.4 s exchange as 0.81 s, or as negative. Without taskset it reads
# unpinned (and such a machine's shares may be off by that skew).
_CPU_WRAPPER = (
    '{ stdbuf -oL "$@" & echo "@pid $!"; wait $!; echo "@exit $?"; } | { '
    'k=$(sed -n "s/^Cpus_allowed_list:[[:space:]]*\\([0-9]*\\).*/\\1/p" /proc/self/status); '
    'taskset -pc "$k" "$(sh -c \'echo $PPID\')" >/dev/null 2>&1; p=; s=1; a=; b=; '
    'cpu_and_clock() { n=0; while :; do { read -r _; read -r _; read -r _ _ t; } < /proc/self/sched; '
    'read -r c _ 2>/dev/null < /proc/$p/schedstat || return 1; '
    '{ read -r _; read -r _; read -r _ _ u; } < /proc/self/sched; '
    '[ "$t" = "$u" ] && { v="$c $t"; return 0; }; n=$((n+1)); '
    'if [ $n -ge 50 ]; then [ "$1" = end ] && t=$u; v="$c $t"; return 0; fi; done; }; '
    'while IFS= read -r l; do case $l in "@pid "*) p=${l#@pid };; "@exit "*) s=${l#@exit };; '
    '*) printf "%s\\n" "$l"; w=${l#"${l%%[! ]*}"}; '
    'if [ -z "$a" ]; then case $w in "#bytes"*) cpu_and_clock start && a=$v;; esac; '
    'elif [ -z "$b" ]; then case $w in [0-9]*) cpu_and_clock end && b=$v;; esac; fi;; '
    'esac; done; '
    '[ -n "$b" ] && echo "@phase $a $b"; exit $s; }; '
    's=$?; echo "@cpu $(cut -d")" -f2- /proc/$$/stat | cut -d" " -f15,16) $(getconf CLK_TCK)"; '
    'exit $s')


@dataclass(frozen=True)
class PerftestRun:
    """One perftest invocation, the same at both ends (the client adds the server's address).

    ``size`` None sweeps every power of two with ``-a`` (2 B .. 8 MiB); a size
    runs that size alone (``-s``): a study's sizes, bounded time per size.
    """

    tool: str
    size: int | None = None
    iterations: int = 1000
    events: bool = False  # -e: sleep on completion events instead of polling the CQ
    device: str | None = None  # -d, e.g. rxe0 (default: the first device found)
    ib_port: int = 1  # -i
    gid_index: int | None = None  # -x: RoCE over IPv4 (ibverbs.VerbsPort.ipv4_gid_index)
    port: int = DEFAULT_PORT  # -p: TCP port for the exchange of QP numbers
    connection: str = "RC"  # -c
    mtu: int | None = None  # -m: the port's active MTU if None

    def check(self) -> None:
        """Refuse what the tool would refuse, before anything starts (SpecError)."""
        if self.tool not in LATENCY_TOOLS + BANDWIDTH_TOOLS:
            raise SpecError(f"unknown perftest tool {self.tool!r}",
                            f"use one of {', '.join(LATENCY_TOOLS + BANDWIDTH_TOOLS)}")
        if self.events and self.tool not in EVENT_TOOLS:
            raise SpecError(f"{self.tool} has no completion events (-e)",
                            "RDMA write completes at the writer only: compare polling and "
                            f"events with {' or '.join(EVENT_TOOLS)}")
        if self.size is not None and not 1 <= self.size <= MAX_SIZE:
            raise SpecError(f"perftest message size {self.size} is out of range",
                            f"use 1..{MAX_SIZE} bytes, or None for the -a sweep")
        if self.iterations < MIN_ITERATIONS:
            raise SpecError(f"perftest needs at least {MIN_ITERATIONS} iterations, "
                            f"got {self.iterations}")
        if self.connection not in CONNECTIONS:
            raise SpecError(f"connection type {self.connection!r} is not supported",
                            f"use one of {CONNECTIONS}")
        if self.mtu is not None and self.mtu not in (256, 512, 1024, 2048, 4096):
            raise SpecError(f"RDMA MTU {self.mtu} is not valid", "use 256, 512, 1024, 2048 "
                            "or 4096 (or None: the port's active MTU)")
        if not 1 <= self.port <= 65535 or self.ib_port < 1 or (self.gid_index or 0) < 0:
            raise SpecError(f"perftest port {self.port}, device port {self.ib_port} or GID "
                            f"index {self.gid_index} is out of range")

    def options(self, json_file: str | None = None) -> list[str]:
        """The options both ends get. ``-F``: no CPU-frequency warning (a VM's is meaningless)."""
        self.check()
        argv = [self.tool, "-F", "-n", str(self.iterations), "-p", str(self.port),
                "-c", self.connection, "-i", str(self.ib_port)]
        argv += ["-a"] if self.size is None else ["-s", str(self.size)]
        if self.events:
            argv.append("-e")
        if self.device:
            argv += ["-d", self.device]
        if self.gid_index is not None:
            argv += ["-x", str(self.gid_index)]
        if self.mtu:
            argv += ["-m", str(self.mtu)]
        if json_file:
            if self.size is None:
                raise SpecError("perftest's JSON file keeps the last size of an -a sweep only",
                                "give one size per invocation with a JSON file")
            argv += ["--out_json", f"--out_json_file={json_file}"]
        return argv

    def server_argv(self, json_file: str | None = None) -> list[str]:
        return _measured(with_memlock(self.options(json_file)))

    def client_argv(self, server: str, json_file: str | None = None) -> list[str]:
        return _measured(with_memlock([*self.options(json_file), server]))


def _measured(argv: list[str]) -> list[str]:
    return ["sh", "-c", _CPU_WRAPPER, "perftest", *argv]


@dataclass(frozen=True)
class LatencyRow:
    """One size of a latency test: half round trips (send/recv or write ping-pong), in us."""

    size: int
    iterations: int
    t_min_us: float
    t_max_us: float
    t_typical_us: float  # the median
    t_avg_us: float
    t_stdev_us: float
    t_p99_us: float
    t_p999_us: float

    @property
    def measured(self) -> bool:
        """False unless the median and the mean are finite times above zero.

        A row of zeros is a time no exchange can take; inf or -nan is perftest's clock
        arithmetic failing (seen under TCG). Either is no measurement, and the sweep
        measures that size again. (A -nan standard deviation alone is kept: the times are.)
        """
        return all(math.isfinite(t) and t > 0 for t in (self.t_typical_us, self.t_avg_us))


@dataclass(frozen=True)
class BandwidthRow:
    """One size of a bandwidth test. perftest's "MB/sec" is MiB/s (it divides by 2^20)."""

    size: int
    iterations: int
    bw_peak_mib_s: float
    bw_avg_mib_s: float
    msg_rate_mpps: float
    bw_step_mib_s: float = 0.01  # the printed average's last digit: 0.01 MB/sec (or Gb/sec)

    @property
    def measured(self) -> bool:
        """False for perftest's row of zeros (peak, average and rate all 0: seen under TCG at
        64 B, after a first attempt that failed, at both ends): a figure of no exchange."""
        return self.bw_avg_mib_s > 0 or self.msg_rate_mpps > 0

    @property
    def bw_avg_mbit_s(self) -> float:
        """Average bandwidth in decimal Mbit/s, the unit of the TCP tools.

        perftest prints the average with two decimals of its unit and the message rate with
        six of Mpps; both come from the same iterations and time (average = rate x size).
        Small messages under TCG are printed as "0.01" or "0.00" MB/sec (4 B at 1,482 msg/s
        is 0.0057 MiB/s), a value of 0 that is no measurement; their rate has four significant
        digits. The figure read is whichever of the two is the more precise.
        """
        from_average = self.bw_avg_mib_s * (1 << 20) * 8 / 1e6
        from_rate = self.msg_rate_mpps * self.size * 8
        if self.msg_rate_mpps <= 0:
            return from_average
        # half a unit of the last printed digit, relative to the value printed
        average_error = (self.bw_step_mib_s / 2 / self.bw_avg_mib_s if self.bw_avg_mib_s > 0
                         else float("inf"))
        rate_error = 0.0000005 / self.msg_rate_mpps
        return from_rate if rate_error < average_error else from_average


@dataclass
class PerftestReport:
    """A perftest report: its rows, the settings it printed (device, MTU, link...), CPU used."""

    tool: str
    rows: list[LatencyRow | BandwidthRow]
    info: dict[str, str] = field(default_factory=dict)
    cpu_user_s: float | None = None
    cpu_system_s: float | None = None
    raw: str = field(default="", repr=False)
    # the measured exchange alone (results header to first row): the tool's CPU time
    # (/proc/PID/schedstat) and the wall time between the two readings, in seconds
    phase_cpu_s: float | None = None
    phase_wall_s: float | None = None

    @property
    def events(self) -> bool:
        return "events" in self.info

    def tidy(self) -> list[dict]:
        """One dict per size, with the run's context: ready for a DataFrame."""
        context = {"tool": self.tool, "events": self.events,
                   "device": self.info.get("device", ""), "mtu": self.info.get("mtu", ""),
                   "link_type": self.info.get("link_type", "")}
        return [{**context, **asdict(row)} for row in self.rows]


# perftest prints "-nan" for a standard deviation it could not compute (seen under TCG with
# a spread of 200 us .. 107 ms): a number too, read as NaN
_NUMBER = re.compile(r"^-?(\d+(\.\d+)?|nan|inf)$", re.IGNORECASE)
_INFO = re.compile(r"^\s*([A-Za-z][A-Za-z0-9*. -]*?)\s*:\s*(\S.*?)\s*$")


def _info_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def parse_output(tool: str, text: str) -> PerftestReport:
    """A report from perftest's stdout (either end); HarnessError if it has no results table."""
    info: dict[str, str] = {}
    rows: list = []
    header = ""
    cpu = phase = None
    rules = 0  # the settings are printed between the first two rules of dashes
    for line in text.splitlines():
        words = line.split()
        rules += line.startswith("-----")
        if line.startswith("@cpu") and len(words) == 4 and all(w.isdigit() for w in words[1:]):
            cpu = [int(w) for w in words[1:]]
        elif line.startswith("@phase") and len(words) == 5 and all(
                re.fullmatch(r"\d+(\.\d+)?", w) for w in words[1:]):
            phase = [float(w) for w in words[1:]]
        elif "#bytes" in line:
            header = line
            if "[cycles]" in header:
                raise HarnessError(f"{tool} reported cycles (-C): times in us are needed")
        elif header and words and all(_NUMBER.match(w) for w in words):
            rows.append(_row(tool, header, words))
        elif rules == 1 and "Test with events" in line:
            info["events"] = line.strip()
        elif rules == 1:
            for part in re.split(r"\t+", line):
                match = _INFO.match(part)
                if match:
                    info[_info_key(match.group(1))] = match.group(2).removesuffix("[B]")
    if not rows:
        tail = "\n".join(text.strip().splitlines()[-5:])
        raise HarnessError(f"{tool} printed no results table: {tail or '(no output)'}",
                           "is the RDMA device up (`rdma link show`, `ibv_devinfo`) and the same "
                           "options given to both ends?")
    report = PerftestReport(tool, rows, info, raw=text)
    if cpu:
        report.cpu_user_s, report.cpu_system_s = cpu[0] / cpu[2], cpu[1] / cpu[2]
    if phase and phase[3] > phase[1]:  # CPU in ns, the scheduler's clock in ms
        report.phase_cpu_s = (phase[2] - phase[0]) / 1e9
        report.phase_wall_s = (phase[3] - phase[1]) / 1e3
    return report


def _row(tool: str, header: str, words: list[str]) -> LatencyRow | BandwidthRow:
    size, iterations, values = int(words[0]), int(words[1]), [float(w) for w in words[2:]]
    if "t_min" in header and len(values) >= 7:
        return LatencyRow(size, iterations, *values[:7])
    if "BW peak" in header and len(values) >= 3:
        factor = 1e9 / 8 / (1 << 20) if "[Gb/sec]" in header else 1.0
        return BandwidthRow(size, iterations, values[0] * factor, values[1] * factor, values[2],
                            0.01 * factor)
    raise HarnessError(f"{tool}: a results table this parser does not know: {header.strip()!r}",
                       "run latency tests without -D (duration mode prints averages only)")


def parse_json_report(text: str) -> dict:
    """perftest's ``--out_json`` file as a flat dict: quoted (newer releases) or not (6.06).

    Each ``key: value`` line becomes an item (sections such as ``results`` are
    flattened); numbers become floats.
    """
    out: dict = {}
    for line in text.splitlines():
        key, sep, value = line.strip().rstrip(",").partition(":")
        value = value.strip().strip('"')
        if not sep or not value or value == "{":
            continue
        key = key.strip().strip('"')
        out[key] = float(value) if _NUMBER.match(value) else value
    return out


@contextmanager
def server(journal: Journal, node: Node, run: PerftestRun, timeout: float = 15.0
           ) -> Iterator[object]:
    """A perftest server on ``node`` for the block: it serves one client, then exits.

    Yields the process: its output (:func:`parse_output`) is the server's report.
    """
    with journal.process(node, run.server_argv()) as proc:
        if not wait_listening(node, run.port, timeout) or proc.poll() is not None:
            raise HarnessError(f"{run.tool} server on {node.name} did not listen on port "
                               f"{run.port}: {proc.output().strip()[-400:]}",
                               "is the RDMA device there (`ibv_devinfo`), the port free?")
        yield proc


def client(node: Node, run: PerftestRun, server_host: str, timeout: float = 300.0
           ) -> PerftestReport:
    """Run the client end against ``server_host`` and return its report (the measured one)."""
    res = node.run(run.client_argv(server_host), timeout=timeout, check=False, track=True)
    if not res.ok:
        raise HarnessError(f"{run.tool} client on {node.name} failed (exit {res.exit_status}): "
                           f"{(res.stderr or res.stdout).strip()[-600:]}",
                           "see the server's output too; are both ends using the same options?")
    report = parse_output(run.tool, res.stdout)
    report.raw = res.stdout + (f"\n[stderr]\n{res.stderr}" if res.stderr.strip() else "")
    return report

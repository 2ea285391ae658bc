"""Globus GridFTP transfers between two nodes, over TCP or MPTCP (study S4).

Why these choices (each was tried on this machine, Debian 12, GridFTP server
13.24 from ``globus-gridftp-server-progs``, ``globus-url-copy`` from
``globus-gass-copy-progs``):

Server, anonymous and without GSI certificates, in the server namespace::

    [mptcpize run] globus-gridftp-server -aa -anonymous-user nobody -p 2811 \\
        -data-interface 198.18.0.2 -rp W/dev/null -c /dev/null \\
        -d ERROR,WARN,INFO,TRANSFER -log-module stdio:buffer=0 -l /tmp/LOG

* ``-aa`` allows clear-text anonymous logins ("anonymous"/"ftp"); a server
  started as root also needs ``-anonymous-user`` (the session setuids to it).
  No certificates, no ``/etc/grid-security`` setup.
* Default mode is ``-daemon`` in the foreground: it stays attached, listens,
  and for each client re-executes itself with ``-inetd`` as a child. Those
  children stay in the daemon's process group, so stopping the group (what
  :meth:`Journal.process` does, by the pid it started) also ends sessions
  that are mid-transfer. ``-debug``/``-no-fork`` are not used: a non-forking
  root server exits after its first connection. ``-S`` (detach) is avoided:
  it would leave our process group.
* ``-control-interface ADDR`` does NOT work in a lab namespace: after binding
  the server reverse-resolves its address (getnameinfo without
  NI_NUMERICHOST); DNS is unreachable there (ENETUNREACH, no packet leaves),
  glibc answers EAI_AGAIN and the server quits with "Temporary failure in name
  resolution". So the control channel listens on all addresses of the server
  node (a namespace we own), and ``-data-interface ADDR`` makes PASV advertise
  the lab address numerically. The log's "Couldn't resolve hostname from
  remote IP" warnings for each session are the same harmless lookup.
* ``-rp W/dev/null`` lets anonymous users write only to /dev/null (nothing
  else is readable or writable); ``-c /dev/null`` keeps /etc/gridftp.conf out.
* ``-log-module stdio:buffer=0`` disables the 64 KiB/5 s log buffering, so
  "Server started in daemon mode." (our readiness signal) and the per-transfer
  "Transfer stats:" lines (NBYTES, STREAMS, START/DATE) appear at once.
  ``-l FILE`` is needed because the ``-inetd`` children do not log to stderr.
* Stop: SIGTERM to the process group we started (by its pid, via the journal).

Client, the SENDER (it uploads, as in S4 where the sender's CPU is limited)::

    [mptcpize run] globus-url-copy -vb -fast -p N -len BYTES \\
        file:///dev/zero ftp://198.18.0.2:2811/dev/null

* ``-fast`` selects MODE E (extended block mode), needed for parallel
  streams; ``-p N`` opens N data connections. Seen with ``ss -tn`` in the
  server namespace: N established sockets on the PASV port plus the control
  connection on 2811.
* ``-len BYTES`` turns /dev/zero into a fixed-size source (an ESTO partial
  store on the server); memory to memory, no disk on either side.
* Throughput is our own wall clock around the client command (login, PASV,
  data, close) -- ``GridFTPTransfer.seconds``. ``-vb`` prints one final
  ``"N bytes  X MB/sec avg  Y MB/sec inst"`` line for transfers of about a
  second or more (MB = 2**20 bytes; nothing for sub-second transfers), kept as
  ``reported_*``. The server's "Transfer stats" line gives the receiver's view
  (:meth:`GridFTPServer.transfers`).

MPTCP: ``mptcpize run`` (LD_PRELOAD) turns the programs' TCP sockets into
MPTCP sockets; it must wrap BOTH ends, otherwise the connection falls back to
plain TCP. Proof in the server namespace: ``ss -tnM`` lists ``mptcp ESTAB``
sockets, and /proc/net/netstat ``MPTcpExtMPCapableSYNRX`` grows by 1 + N per
transfer (control + data connections) -- see :func:`mptcp_counters`.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from ipaddress import ip_address

from ..errors import CapabilityMissing, NodeError, SpecError
from ..journal.journal import Journal
from ..nodes.base import Node, Process, command_text
from ..nodes.facts import is_listening, netstat
from ..nodes.local import in_cgroup
from .registry import Tool

GLOBUS_URL_COPY = Tool("globus-url-copy", "globus-url-copy -version", "globus-gass-copy-progs")
GRIDFTP_SERVER = Tool("globus-gridftp-server", "globus-gridftp-server -version",
                      "globus-gridftp-server-progs")

MAX_STREAMS = 64
DEFAULT_PORT = 2811
SERVER_PACKAGE = "globus-gridftp-server-progs"
CLIENT_PACKAGE = "globus-gass-copy-progs"
MPTCPIZE_PACKAGE = "mptcpize"

_READY_LINE = "Server started in daemon mode"
_PERF_RE = re.compile(r"(\d+) bytes\s+([\d.]+) MB/sec avg\s+([\d.]+) MB/sec inst")
_STATS_RE = re.compile(r"^\[(\d+)\] .*?Transfer stats: (.*)$", re.MULTILINE)
_DAEMON_PID_RE = re.compile(r"^\[(\d+)\] .*" + re.escape(_READY_LINE), re.MULTILINE)
_STATS_TIME = "%Y%m%d%H%M%S.%f"


# -- results ---------------------------------------------------------------------


@dataclass(frozen=True)
class GridFTPTransfer:
    """One client upload, as the client (the sender) saw it."""

    streams: int
    bytes: int
    seconds: float  # wall clock of the whole client command, measured by us
    transport: str  # "tcp" | "mptcp"
    command: str
    output: str  # globus-url-copy stdout + stderr
    reported_bytes: int | None = None  # from the -vb line, if one was printed
    reported_mbit_per_s: float | None = None

    @property
    def mbit_per_s(self) -> float:
        return self.bytes * 8 / self.seconds / 1e6


@dataclass(frozen=True)
class ServerTransferStats:
    """One "Transfer stats:" line of the server log (the receiver's view)."""

    pid: int  # the session process that served it
    nbytes: int
    streams: int
    start: datetime
    end: datetime
    code: int  # FTP reply code, 226 = success
    file: str
    dest: str  # the client's address, as the server saw it
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    @property
    def mbit_per_s(self) -> float:
        return self.nbytes * 8 / self.seconds / 1e6 if self.seconds > 0 else float("inf")


@dataclass
class GridFTPServer:
    """A running server (yielded by :func:`gridftp_server`)."""

    node: Node
    address: str
    port: int
    mptcp: bool
    log_path: str
    process: Process
    command: str

    @property
    def transport(self) -> str:
        return "mptcp" if self.mptcp else "tcp"

    def log(self) -> str:
        return self.node.run(["cat", self.log_path], check=False, timeout=10).stdout

    def transfers(self) -> list[ServerTransferStats]:
        return parse_transfer_stats(self.log())

    @property
    def daemon_pid(self) -> int | None:
        """Pid of the listening daemon (the sessions are its children)."""
        match = _DAEMON_PID_RE.search(self.log())
        return int(match.group(1)) if match else None


# -- parsing (pure, unit-tested) -------------------------------------------------------


def parse_verbose_perf(output: str) -> tuple[int, float] | None:
    """Last ``-vb`` progress line as (bytes, average Mbit/s), or None if none was printed."""
    matches = _PERF_RE.findall(output)
    if not matches:
        return None
    nbytes, avg_mib, _inst = matches[-1]
    return int(nbytes), float(avg_mib) * 2**20 * 8 / 1e6


def parse_transfer_stats(log: str) -> list[ServerTransferStats]:
    """Every "Transfer stats:" line of a server log, oldest first."""
    stats = []
    for match in _STATS_RE.finditer(log):
        fields = dict(token.split("=", 1) for token in match.group(2).split() if "=" in token)
        stats.append(
            ServerTransferStats(
                pid=int(match.group(1)),
                nbytes=int(fields["NBYTES"]),
                streams=int(fields.get("STREAMS", "1")),
                start=datetime.strptime(fields["START"], _STATS_TIME),
                end=datetime.strptime(fields["DATE"], _STATS_TIME),
                code=int(fields.get("CODE", "0")),
                file=fields.get("FILE", ""),
                dest=fields.get("DEST", "").strip("[]"),
                fields=fields,
            )
        )
    return stats


# -- validation and capabilities ----------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_transfer(size_bytes: int, streams: int, port: int) -> None:
    if not _is_int(streams) or not 1 <= streams <= MAX_STREAMS:
        raise SpecError(
            f"GridFTP parallel streams must be an integer 1..{MAX_STREAMS}, got {streams!r}",
            "set streams (globus-url-copy -p) to a value in that range",
        )
    if not _is_int(size_bytes) or size_bytes <= 0:
        raise SpecError(
            f"GridFTP transfer size must be a positive number of bytes, got {size_bytes!r}",
            "give size_bytes as an int > 0 (e.g. 100_000_000)",
        )
    validate_port(port)


def validate_port(port: int) -> None:
    if not _is_int(port) or not 1 <= port <= 65535:
        raise SpecError(f"GridFTP port must be 1..65535, got {port!r}", "pick a free TCP port")


def validate_address(address: str) -> None:
    try:
        ip_address(address)
    except ValueError:
        raise SpecError(
            f"GridFTP server address must be a numeric IP address, got {address!r}",
            "use the lab address of the server node (names need DNS, which labs lack)",
        ) from None


def find_program(node: Node, program: str, package: str) -> str:
    """Absolute path of ``program`` on ``node`` (also in /usr/sbin when PATH lacks it)."""
    result = node.run(
        f"command -v {program} || for d in /usr/sbin /usr/bin /sbin; do"
        f" test -x $d/{program} && echo $d/{program} && break; done",
        check=False,
        timeout=10,
    )
    path = result.stdout.strip().splitlines()
    if not path:
        raise CapabilityMissing(
            f"{program} is not installed on {node.name}",
            f"apt-get install {package}",
        )
    return path[0]


def mptcp_wrapper(node: Node) -> list[str]:
    """``[mptcpize, run]`` after checking that MPTCP is usable in the node's namespace."""
    mptcpize = find_program(node, "mptcpize", MPTCPIZE_PACKAGE)
    enabled = node.run(["cat", "/proc/sys/net/mptcp/enabled"], check=False, timeout=10)
    if not enabled.ok:
        raise CapabilityMissing(
            f"the kernel of {node.name} has no MPTCP (/proc/sys/net/mptcp missing)",
            "use a kernel with CONFIG_MPTCP=y (upstream >= 5.6)",
        )
    if enabled.stdout.strip() != "1":
        raise CapabilityMissing(
            f"MPTCP is disabled in the network namespace of {node.name}",
            "sysctl -w net.mptcp.enabled=1 inside that namespace",
        )
    return [mptcpize, "run"]


def mptcp_counters(node: Node) -> dict[str, int]:
    """MPTcpExt* counters of the node's network namespace (no nstat history file)."""
    return netstat(node, "MPTcpExt")


def _url(address: str, port: int, path: str) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"ftp://{host}:{port}{path}"


# -- server ------------------------------------------------------------------------------------


def server_command(program: str, address: str, port: int, log_path: str) -> list[str]:
    return [
        program,
        "-aa", "-anonymous-user", "nobody",
        "-p", str(port),
        "-data-interface", address,
        "-rp", "W/dev/null",
        "-c", "/dev/null",
        "-d", "ERROR,WARN,INFO,TRANSFER",
        "-log-module", "stdio:buffer=0",
        "-l", log_path,
        # Older servers report usage statistics over UDP unless told not to
        # (13.x ignores the flag: it no longer collects). Never from a lab.
        "-disable-usage-stats",
    ]  # fmt: skip


def _wait_ready(server: GridFTPServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        status = server.process.poll()
        if status is not None:
            raise NodeError(
                f"globus-gridftp-server on {server.node.name} exited with status {status}"
                f" before accepting connections on port {server.port}:\n"
                f"{_tail(server.log() + server.process.output())}",
                "is the port already in use in that namespace? the log above says why",
            )
        if _READY_LINE in server.log() and is_listening(server.node, server.port):
            return
        if time.monotonic() >= deadline:
            raise NodeError(
                f"globus-gridftp-server on {server.node.name} did not listen on port"
                f" {server.port} within {timeout:g}s:\n"
                f"{_tail(server.log() + server.process.output())}",
                "see the log above; a slow machine may need a larger ready_timeout",
            )
        time.sleep(0.05)


def _tail(text: str, lines: int = 15) -> str:
    kept = text.strip().splitlines()[-lines:]
    return "    " + "\n    ".join(kept) if kept else "    (no output)"


@contextmanager
def gridftp_server(
    journal: Journal,
    node: Node,
    address: str,
    port: int = DEFAULT_PORT,
    mptcp: bool = False,
    *,
    ready_timeout: float = 15.0,
) -> Iterator[GridFTPServer]:
    """Run an anonymous GridFTP server on ``node`` until the block ends.

    ``address`` must be assigned to ``node``; clients reach the server there
    and data connections go to it. The server and its log file are recorded
    in ``journal`` before they exist, so a crash still leaves them undoable.
    """
    validate_address(address)
    validate_port(port)
    program = find_program(node, "globus-gridftp-server", SERVER_PACKAGE)
    wrapper = mptcp_wrapper(node) if mptcp else []
    if not node.run(["ip", "-o", "addr", "show", "to", address], timeout=10).stdout.strip():
        raise SpecError(
            f"address {address} is not assigned to any interface of {node.name}",
            "pass the server node's own lab address",
        )
    log_path = f"/tmp/harness-gridftp-{uuid.uuid4().hex}.log"
    log_entry = journal.record("file", node.machine, path=log_path)
    try:
        cmd = [*wrapper, *server_command(program, address, port, log_path)]
        with journal.process(node, cmd) as proc:
            server = GridFTPServer(node, address, port, mptcp, log_path, proc, command_text(cmd))
            _wait_ready(server, ready_timeout)
            yield server
    finally:
        journal.undo(log_entry)


# -- client ------------------------------------------------------------------------------------


def client_command(
    program: str, server_address: str, port: int, size_bytes: int, streams: int
) -> list[str]:
    return [
        # the client libraries honour this opt-out of Globus usage statistics
        "env", "GLOBUS_USAGE_OPTOUT=1",
        program, "-vb", "-fast", "-p", str(streams), "-len", str(size_bytes),
        "file:///dev/zero", _url(server_address, port, "/dev/null"),
    ]  # fmt: skip


def gridftp_transfer(
    node: Node,
    server_address: str,
    port: int,
    size_bytes: int,
    streams: int,
    mptcp: bool = False,
    timeout: float = 300.0,
    cgroup: str | None = None,
) -> GridFTPTransfer:
    """Upload ``size_bytes`` of zeros from ``node`` to the server over ``streams`` connections.

    The client is the sender. ``mptcp`` wraps the client in ``mptcpize run``;
    the server must be wrapped too (``gridftp_server(..., mptcp=True)``).
    ``cgroup`` starts the client inside that cgroup (a CPU limit on the sender).
    """
    validate_transfer(size_bytes, streams, port)
    validate_address(server_address)
    program = find_program(node, "globus-url-copy", CLIENT_PACKAGE)
    wrapper = mptcp_wrapper(node) if mptcp else []
    cmd = [*wrapper, *client_command(program, server_address, port, size_bytes, streams)]
    result = node.run(
        in_cgroup(command_text(cmd), cgroup),
        timeout=timeout,
        track=True,
        hint=f"is a GridFTP server running at {server_address}:{port}"
        f"{' under mptcpize' if mptcp else ''} and reachable from {node.name}?",
    )
    output = result.stdout + result.stderr
    perf = parse_verbose_perf(output)
    return GridFTPTransfer(
        streams=streams,
        bytes=size_bytes,
        seconds=result.duration,
        transport="mptcp" if mptcp else "tcp",
        command=result.command,
        output=output,
        reported_bytes=perf[0] if perf else None,
        reported_mbit_per_s=perf[1] if perf else None,
    )

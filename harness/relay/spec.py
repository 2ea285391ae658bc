"""What a relay should do, checked before anything is started.

The daemon checks its arguments too, but a mistake found here costs no
compile, no process and no half-built lab, and the error can say which field
of the study's parameters is wrong.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ..errors import SpecError

# RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens.
_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")

MAX_PIPE_SIZE = 1 << 30
#: srd's TCP_NOTSENT_LOWAT (its default too): 0 leaves the kernel's, as every peer relay does.
#: srd 1.1-1.2 capped it at 128 KiB; why that ended: srd.c and benchmarks/relay_bench.py's notes
NOTSENT_LOWAT = 0
#: srd's --idle-timeout (its default too): a stream that moved nothing this long is closed.
#: Above the longest iperf3 test the harness runs (S0's bench_seconds <= 600), whose control
#: connection stays silent while the test runs.
IDLE_TIMEOUT = 900.0
#: srd's --max-per-peer (its default too): streams one client address may hold at once, so a
#: flood of silent connections from one address leaves room for the study's streams. Far above
#: what a study opens from one address (S0: at most 64 flows, all through fa's NAT).
MAX_PER_PEER = 256


@dataclass(frozen=True)
class HostPort:
    """A host (name or IP address) and a TCP port."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def check_port(port: object, what: str) -> int:
    """A TCP port as int in 1..65535 (bools and strings of digits are not ports here)."""
    if isinstance(port, bool) or not isinstance(port, int):
        raise SpecError(
            f"{what}: port must be an integer, got {port!r}",
            "give the port as a number in 1..65535, e.g. 5201",
        )
    if not 1 <= port <= 65535:
        raise SpecError(
            f"{what}: port {port} is outside 1..65535",
            "TCP ports are 1..65535; port 0 (let the kernel pick) is not supported for a relay",
        )
    return port


def check_host(host: object, what: str, *, numeric: bool) -> str:
    """An IP address literal, or (unless ``numeric``) a syntactically valid host name."""
    if not isinstance(host, str) or not host:
        raise SpecError(f"{what}: host is empty", "write HOST:PORT, e.g. 198.18.1.2:5201")
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if numeric:
        raise SpecError(
            f"{what}: {host!r} is not an IP address",
            "the relay listens on a numeric address: 0.0.0.0, ::, or one of the node's own"
            " addresses",
        )
    name = host.removesuffix(".")
    if len(name) > 253 or not all(_LABEL.match(label) for label in name.split(".")):
        raise SpecError(
            f"{what}: {host!r} is neither an IP address nor a valid host name",
            "use an IPv4 address, an IPv6 address in brackets ([fd00::2]:5201) or a DNS name",
        )
    return host


def parse_host_port(text: object, what: str, *, numeric: bool = False) -> HostPort:
    """Parse ``host:port`` or ``[ipv6]:port`` (the forms the daemon accepts)."""
    if not isinstance(text, str):
        raise SpecError(f"{what}: expected 'HOST:PORT', got {text!r}", "e.g. 198.18.1.2:5201")
    if text.startswith("["):
        host, sep, port_text = text[1:].partition("]:")
        if not sep:
            raise SpecError(f"{what}: expected [IPv6]:PORT, got {text!r}", "e.g. [fd00::2]:5201")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise SpecError(
                f"{what}: {host!r} inside brackets is not an IPv6 address", "e.g. [fd00::2]:5201"
            ) from None
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise SpecError(
                f"{what}: expected 'HOST:PORT', got {text!r} (no ':')", "e.g. 198.18.1.2:5201"
            )
        if ":" in host:
            raise SpecError(
                f"{what}: IPv6 addresses need brackets, got {text!r}", "e.g. [fd00::2]:5201"
            )
        check_host(host, what, numeric=numeric)
    if not port_text.isascii() or not port_text.isdigit():
        raise SpecError(
            f"{what}: port must be a number in 1..65535, got {port_text!r}",
            "write HOST:PORT, e.g. 198.18.1.2:5201",
        )
    return HostPort(host, check_port(int(port_text), what))


@dataclass(frozen=True)
class RelaySpec:
    """One relay: accept on ``listen``, relay every stream to ``target``.

    ``pipe_size`` bounds the bytes in flight inside the relay per direction and
    stream (the kernel rounds it to a power-of-two number of pages and caps it at
    fs.pipe-max-size for unprivileged users). ``drain`` is how long open streams
    may go on after SIGTERM before they are cut. ``notsent_lowat`` caps the bytes
    waiting unsent in each of the relay's sockets (TCP_NOTSENT_LOWAT; 0, the default,
    leaves the kernel's: a cap makes srd transmit in its own context what the kernel
    otherwise sends from ACK processing, :data:`NOTSENT_LOWAT`). ``idle_timeout`` closes a stream
    that moved nothing that long and ``max_per_peer`` caps the streams of one client
    address (see :data:`IDLE_TIMEOUT`, :data:`MAX_PER_PEER`): silent connections cannot
    shut the study's streams out.
    """

    listen: HostPort
    target: HostPort
    pipe_size: int = 1 << 20
    connect_timeout: float = 5.0
    max_streams: int = 1024
    drain: float = 0.0
    notsent_lowat: int = NOTSENT_LOWAT
    idle_timeout: float = IDLE_TIMEOUT
    max_per_peer: int = MAX_PER_PEER
    log_path: str | None = None

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def parse(cls, listen: str, target: str, **options) -> RelaySpec:
        """Build from 'ADDR:PORT' and 'HOST:PORT' texts (as a user would write them)."""
        return cls(
            parse_host_port(listen, "relay listen address", numeric=True),
            parse_host_port(target, "relay target"),
            **options,
        )

    def validate(self) -> None:
        if not isinstance(self.listen, HostPort) or not isinstance(self.target, HostPort):
            raise SpecError(
                "relay listen and target must be HostPort(host, port) values",
                "use RelaySpec.parse('0.0.0.0:5201', '198.18.1.2:5201')",
            )
        check_host(self.listen.host, "relay listen address", numeric=True)
        check_port(self.listen.port, "relay listen address")
        check_host(self.target.host, "relay target", numeric=False)
        check_port(self.target.port, "relay target")
        _check_number(self.pipe_size, "pipe_size", 4096, MAX_PIPE_SIZE, integer=True)
        _check_number(self.connect_timeout, "connect_timeout", 0.001, 86400)
        _check_number(self.max_streams, "max_streams", 1, 1_000_000, integer=True)
        _check_number(self.drain, "drain", 0, 86400)
        _check_number(self.notsent_lowat, "notsent_lowat", 0, MAX_PIPE_SIZE, integer=True)
        _check_number(self.idle_timeout, "idle_timeout", 0.001, 86400)
        _check_number(self.max_per_peer, "max_per_peer", 1, 1_000_000, integer=True)
        if self.log_path is not None and (not isinstance(self.log_path, str) or not self.log_path):
            raise SpecError(f"relay log_path must be a path, got {self.log_path!r}",
                            "leave it None to log to the process output")

    def argv(self, binary: str) -> list[str]:
        """The daemon's command line."""
        args = [
            binary,
            "--listen", str(self.listen),
            "--target", str(self.target),
            "--pipe-size", str(self.pipe_size),
            "--connect-timeout", f"{self.connect_timeout:g}",
            "--max-streams", str(self.max_streams),
            "--drain", f"{self.drain:g}",
            "--notsent-lowat", str(self.notsent_lowat),
            "--idle-timeout", f"{self.idle_timeout:g}",
            "--max-per-peer", str(self.max_per_peer),
        ]
        if self.log_path:
            args += ["--log", self.log_path]
        return args


def _check_number(value: object, name: str, low: float, high: float, *, integer: bool = False):
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise SpecError(
            f"relay {name} must be {'an integer' if integer else 'a number'}, got {value!r}",
            f"give {name} as a number in {low:g}..{high:g}",
        )
    if not low <= value <= high:
        raise SpecError(f"relay {name}={value!r} is outside {low:g}..{high:g}",
                        f"choose {name} within {low:g}..{high:g}")

"""What one fan-in run should do, checked before anything is started; and its output parsed.

The C program checks its arguments too, but a mistake found here costs no
compile, no process and no half-built lab, and the message can name the
study parameter at fault.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import asdict, dataclass, field

from ..errors import SpecError

PROTOCOLS = ("tcp", "sctp", "tipc")
#: The kernel feature (harness.lab.probe name) each protocol needs; TCP needs none.
FEATURES = {"tcp": None, "sctp": "sctp", "tipc": "tipc"}
#: TIPC service type of the mappers; instance i is mapper i (types < 64 are reserved).
TIPC_SERVICE_TYPE = 18700
MIN_SIZE = 16  # the 16-byte header the reducer checks
MAX_SIZE = 1 << 20
REQUEST_BYTES = 16


def check_proto(proto: object) -> str:
    if proto not in PROTOCOLS:
        raise SpecError(f"unknown protocol {proto!r}", f"use one of {', '.join(PROTOCOLS)}")
    return str(proto)


def _int(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecError(f"fan-in {name}={value!r} must be an integer in {low}..{high}")
    return value


def mapper_address(proto: str, ip: str, port: int, index: int) -> str:
    """The address mapper ``index`` listens on and the reducer connects to.

    TCP/SCTP: ``IP:PORT`` of the mapper's lab interface. TIPC: the service
    address ``TYPE:INSTANCE`` with instance = index, published cluster-wide;
    TIPC itself finds the node behind it (no IP involved).
    """
    check_proto(proto)
    if proto == "tipc":
        return f"{TIPC_SERVICE_TYPE}:{_int(index, 'mapper index', 0, 2**32 - 1)}"
    _int(port, "port", 1, 65535)
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


@dataclass(frozen=True)
class SocketOptions:
    """Identical for every protocol (the C program sets what each protocol has).

    sndbuf/rcvbuf: SO_SNDBUF/SO_RCVBUF in bytes, 0 = kernel default (the
    effective values are read back and recorded). cc: TCP congestion control
    per socket (TCP_CONGESTION), "" = the kernel's default.
    """

    sndbuf: int = 0
    rcvbuf: int = 0
    cc: str = ""

    def validate(self, proto: str) -> None:
        _int(self.sndbuf, "sndbuf", 0, 1 << 30)
        _int(self.rcvbuf, "rcvbuf", 0, 1 << 30)
        if self.cc and proto != "tcp":
            raise SpecError(f"a congestion control ({self.cc}) applies to TCP only, not {proto}")
        if self.cc and (not self.cc.isascii() or not self.cc.replace("_", "").isalnum()
                        or len(self.cc) > 15):
            raise SpecError(f"congestion control name {self.cc!r} is not valid",
                            "e.g. cubic, reno, bbr (see net.ipv4.tcp_available_congestion_control)")

    def args(self) -> list[str]:
        out = ["--sndbuf", str(self.sndbuf), "--rcvbuf", str(self.rcvbuf)]
        return out + (["--cc", self.cc] if self.cc else [])


@dataclass(frozen=True)
class ReduceSpec:
    """One reducer: ``rounds`` measured rounds (after ``warmup``) of ``size`` bytes per mapper.

    period_us: 0 = rounds back to back (transfer-rate experiment); else rounds
    start every period_us on a CLOCK_MONOTONIC grid (CPU experiment).
    """

    proto: str
    size: int
    rounds: int
    warmup: int = 0
    period_us: int = 0
    sockets: SocketOptions = field(default_factory=SocketOptions)
    cpu_sample_ms: int = 0
    connect_timeout_s: float = 30.0
    round_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        check_proto(self.proto)
        _int(self.size, "size", MIN_SIZE, MAX_SIZE)
        _int(self.rounds, "rounds", 1, 10_000_000)
        _int(self.warmup, "warmup", 0, 1_000_000)
        _int(self.period_us, "period_us", 0, 3_600_000_000)
        _int(self.cpu_sample_ms, "cpu_sample_ms", 0, 3_600_000)
        self.sockets.validate(self.proto)
        for name in ("connect_timeout_s", "round_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not 0.001 <= value <= 86400:
                raise SpecError(f"fan-in {name}={value!r} must be a number in 0.001..86400")

    def argv(self, binary: str, targets: list[str]) -> list[str]:
        if not targets:
            raise SpecError("a fan-in round needs at least one mapper")
        return [binary, "reduce", "--proto", self.proto, "--targets", ",".join(targets),
                "--size", str(self.size), "--rounds", str(self.rounds),
                "--warmup", str(self.warmup), "--period-us", str(self.period_us),
                "--cpu-sample-ms", str(self.cpu_sample_ms), *self.sockets.args(),
                "--connect-timeout", f"{self.connect_timeout_s:g}",
                "--round-timeout", f"{self.round_timeout_s:g}"]

    def time_bound_s(self) -> float:
        """An upper bound on the reducer's duration: every round may take its timeout."""
        rounds = self.rounds + self.warmup
        return self.connect_timeout_s + rounds * (self.period_us / 1e6 + self.round_timeout_s) + 60

    def to_dict(self) -> dict:
        return asdict(self)


def serve_argv(binary: str, proto: str, listen: str, sockets: SocketOptions) -> list[str]:
    check_proto(proto)
    sockets.validate(proto)
    return [binary, "serve", "--proto", proto, "--listen", listen, *sockets.args()]


#: What a reducer reports when the protocol under test fails during its rounds (fanin.c's
#: worker messages): a request that could not be sent or a partition that did not arrive
#: (connection reset or closed -- a TIPC link reset aborts its connections --, or the round
#: timeout). Such a point is a result of the protocol, counted by the claim's registered rule
#: (:mod:`harness.verdicts.failures`). Anything else that stops the generator -- it could not
#: connect or open a socket, could not start, was interrupted, printed what cannot be parsed,
#: or received bytes that are not the partition it asked for -- is the apparatus's failure.
PROTOCOL_FAILURES = (re.compile(r"^target \d+: sending request: "),
                     re.compile(r"^target \d+: reading \d+ bytes: "))
PROTOCOL, APPARATUS = "protocol", "apparatus"


def failure_kind(errors: list[str], started: bool, interrupted: bool = False) -> str | None:
    """Whose failure stopped a reducer: None (none did), PROTOCOL or APPARATUS (above)."""
    if not errors and started and not interrupted:
        return None
    if not started or interrupted or not errors:
        return APPARATUS
    return PROTOCOL if all(any(p.match(e) for p in PROTOCOL_FAILURES) for e in errors) \
        else APPARATUS


@dataclass
class FaninOutput:
    """The parsed JSON lines of one reducer process."""

    start: dict | None
    rounds: list[dict]
    cpu: list[dict]
    summary: dict | None
    errors: list[str]

    @property
    def ok(self) -> bool:
        return bool(self.summary and self.summary.get("ok")) and not self.errors

    def measured(self) -> list[dict]:
        return [r for r in self.rounds if not r["warmup"]]

    def failure(self, exit_status: int = 0) -> str | None:
        """None when every asked round completed, else whose failure stopped it
        (:func:`failure_kind`): a clean exit without a full summary is the apparatus's."""
        summary = self.summary or {}
        if self.ok and exit_status == 0:
            return None
        return failure_kind(self.errors, self.start is not None,
                            bool(summary.get("interrupted")) or exit_status not in (0, 3))


def parse_output(text: str) -> FaninOutput:
    start, summary = None, None
    rounds, cpu, errors = [], [], []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            errors.append(f"unparsable output line: {line[:200]}")
            continue
        kind = event.get("event")
        if kind == "start":
            start = event
        elif kind == "round":
            rounds.append(event)
        elif kind == "cpu":
            cpu.append(event)
        elif kind == "summary":
            summary = event
        elif kind == "error":
            errors.append(event.get("message", ""))
    return FaninOutput(start, rounds, cpu, summary, errors)


def events(text: str, name: str) -> list[dict]:
    """All events called ``name`` in a mapper log (listening, exit, error)."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if event.get("event") == name:
                found.append(event)
    return found


def shell(argv: list[str]) -> str:
    return shlex.join(argv)

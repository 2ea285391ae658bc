"""What msgcount is asked to do (checked before anything runs) and what it printed."""

from __future__ import annotations

import ipaddress
import json
import math
from dataclasses import dataclass

from ..errors import HarnessError, SpecError

MAX_SIZE = 1 << 20  # msgcount.c MAX_SIZE
MAX_COUNT = 1_000_000  # msgcount.c MAX_COUNT
MAX_SIZES = 64  # msgcount.c MAX_SIZES


def check_endpoint(address: str, port: int) -> None:
    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        raise SpecError(f"msgcount address {address!r} is not an IPv4 address",
                        "give the server's IPv4 address on the measured wire") from None
    if not 1 <= port <= 65535:
        raise SpecError(f"msgcount port {port} is out of range", "use 1..65535")


@dataclass(frozen=True)
class CountRun:
    """One client invocation: ``count`` messages at each size, one connection per size, in
    the order given; Nagle's algorithm on unless ``nodelay``."""

    count: int
    sizes: tuple[int, ...]
    nodelay: bool = False

    def check(self) -> None:
        if not 1 <= self.count <= MAX_COUNT:
            raise SpecError(f"msgcount message count {self.count} is out of range",
                            f"use 1..{MAX_COUNT}")
        if not 1 <= len(self.sizes) <= MAX_SIZES:
            raise SpecError(f"msgcount takes 1..{MAX_SIZES} sizes, not {len(self.sizes)}")
        bad = [s for s in self.sizes if not 1 <= s <= MAX_SIZE]
        if bad:
            raise SpecError(f"msgcount message sizes {bad} are out of range",
                            f"use 1..{MAX_SIZE} bytes")

    def client_argv(self, binary: str, address: str, port: int) -> list[str]:
        self.check()
        check_endpoint(address, port)
        argv = [binary, "send", address, str(port), str(self.count),
                ",".join(str(s) for s in self.sizes)]
        return argv + (["nodelay"] if self.nodelay else [])

    def timeout_s(self, floor_mbit: float = 0.01) -> float:
        """Generous: each size at ``floor_mbit`` (a wire this slow is broken), plus set-up."""
        data = sum(self.count * s * 8 / (floor_mbit * 1e6) for s in self.sizes)
        return 60 + 10 * len(self.sizes) + min(data, 3600)


def serve_argv(binary: str, address: str, port: int) -> list[str]:
    check_endpoint(address, port)
    return [binary, "serve", address, str(port)]


@dataclass(frozen=True)
class CountResult:
    """One size's outcome: Mbit/s of COUNT x SIZE bytes over the first write to the
    receiver's acknowledgement, or the error that stopped it (``mbit`` None)."""

    size: int
    count: int | None = None
    nodelay: bool | None = None
    ns: int | None = None
    mbit: float | None = None
    writes: int | None = None
    cpu_s: float | None = None
    error: str | None = None

    def row(self) -> dict:
        return {"size": self.size, "bw_mbit": self.mbit, "iterations": self.count,
                "seconds": None if self.ns is None else self.ns / 1e9,
                "writes": self.writes, "cpu_s": self.cpu_s, "error": self.error}


def _result(line: str) -> CountResult:
    try:
        got = json.loads(line)
    except ValueError:
        raise HarnessError(f"msgcount printed a line that is not JSON: {line[:200]!r}") from None
    if not isinstance(got, dict) or not isinstance(got.get("size"), int):
        raise HarnessError(f"msgcount printed a line without a size: {line[:200]!r}")
    if "error" in got:
        return CountResult(got["size"], error=str(got["error"]))
    fields = ("count", "ns", "bytes", "writes", "cpu_user_us", "cpu_sys_us")
    if not all(isinstance(got.get(k), int) and got[k] >= 0 for k in fields) or got["ns"] < 1:
        raise HarnessError(f"msgcount printed a result missing {fields}: {line[:200]!r}")
    if got["bytes"] != got["size"] * got["count"]:
        raise HarnessError(f"msgcount's bytes {got['bytes']} are not size x count at "
                           f"{got['size']} B x {got['count']}")
    mbit = got["bytes"] * 8 / got["ns"] * 1e3  # recomputed from the integers it printed
    if not math.isfinite(mbit):
        raise HarnessError(f"msgcount's rate is not finite: {line[:200]!r}")
    return CountResult(got["size"], got["count"], bool(got.get("nodelay")), got["ns"], mbit,
                       got["writes"], (got["cpu_user_us"] + got["cpu_sys_us"]) / 1e6)


def parse_output(text: str, sizes: tuple[int, ...] = ()) -> list[CountResult]:
    """Every size's result, in the order printed. Given ``sizes`` (the run's), a size the
    program never reached (it stopped, or was stopped) is a failed result of its own,
    never left out."""
    results = [_result(line) for line in text.splitlines() if line.strip()]
    seen = [r.size for r in results]
    if sizes and seen != list(sizes)[:len(seen)]:
        raise HarnessError(f"msgcount reported sizes {seen}, not the order asked {list(sizes)}")
    missing = list(sizes)[len(results):]
    return results + [CountResult(s, error="not measured: the client stopped before it")
                      for s in missing]

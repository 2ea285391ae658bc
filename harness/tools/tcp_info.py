"""The TCP window a transfer reached, read from its sockets (``ss -ti``) while it runs.

A buffer setting is what a study asks for; the window is what the kernel made of it. Linux
advertises only part of a receive buffer as window (``tcp_win_from_space``): before 6.6 the
share is ``1 - 2^-tcp_adv_win_scale`` (scale 1, the default since 2.6.20: half; the paper's
2.6.9 defaulted to 2: three quarters), from 6.6 on a per-socket ``scaling_ratio`` measured
from the packets (starting at half). So a window claim is checked on the socket itself.

:func:`sampled` wraps a shell command so that ``ss -tinH`` samples the connections to a
destination every ``interval`` seconds while the command runs, printed after the command's
own output behind :data:`MARK` (one command, one round trip: into an emulated VM each costs
~0.5 s). :func:`parse_samples` reads them; :func:`window_reached` sums what the data
connections reached:

- ``snd_wnd`` (the receiver's advertised window as the sender sees it, tcp_info's
  ``tcpi_snd_wnd``, Linux 5.4 on): the window the receiver's buffers allowed;
- ``cwnd`` x ``mss``: the sender's congestion window;
- ``unacked`` x ``mss``: the bytes actually in flight.

It is read on the *sending* side of the connections (the receiving side of Linux 6.1 shows
no advertised window). A connection that carried under 1 % of the busiest one's bytes is a
control connection (iperf3's) and is left out.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

MARK = "=== harness tcp_info samples ==="
TIME_MARK = "@ "
_FIELD = re.compile(r"\b(snd_wnd|cwnd|mss|unacked|bytes_sent|bytes_acked):(\d+)")
_ADDRESS = re.compile(r"^\S+\s+\d+\s+\d+\s+(\S+)\s+(\S+)")
CONTROL_SHARE = 0.01


def ss_command(destination: str, port: int) -> str:
    """``ss`` listing the TCP connections to ``destination:port`` with their tcp_info."""
    return shlex.join(["ss", "-tinH", "dst", f"{destination}:{int(port)}"])


def sampled(command: str, sampler: str, interval: float, limit: int) -> str:
    """``command`` with ``sampler`` run every ``interval`` s beside it (at most ``limit``
    times), the samples printed after its output behind :data:`MARK`; the exit status is
    the command's (run by a shell of its own, so its ``exit`` or ``$$`` are its own). The
    sampler is the outer shell's own child, stopped by its process id; its file (mktemp) is
    removed on exit, also when the command is interrupted."""
    if interval <= 0 or limit < 1:
        raise ValueError(f"sampling every {interval} s, {limit} times: give a positive "
                         "interval and at least one sample")
    loop = (f"i=0; while [ $i -lt {int(limit)} ]; do echo \"{TIME_MARK}$(date +%s.%N)\"; "
            f"{sampler}; sleep {interval:g}; i=$((i+1)); done")
    return (f"s=$(mktemp) || exit 1; trap 'rm -f \"$s\"' EXIT; trap 'exit 143' HUP INT TERM; "
            f"( {loop} ) >\"$s\" 2>&1 & p=$!; sh -c {shlex.quote(command)}; rc=$?; "
            f"kill $p 2>/dev/null; wait $p 2>/dev/null; echo {shlex.quote(MARK)}; "
            f"cat \"$s\"; exit $rc")


def split(stdout: str) -> tuple[str, str]:
    """(the command's output, the samples) of a :func:`sampled` command's stdout."""
    head, found, tail = stdout.rpartition(MARK)
    return (head, tail) if found else (stdout, "")


@dataclass
class Sample:
    """One ``ss`` listing: its time and, per connection (local -> peer), its counters."""

    time: float
    sockets: dict[str, dict[str, int]] = field(default_factory=dict)


def parse_samples(text: str) -> list[Sample]:
    samples: list[Sample] = []
    key = None
    for line in text.splitlines():
        if line.startswith(TIME_MARK):
            try:
                samples.append(Sample(float(line[len(TIME_MARK):])))
            except ValueError:
                continue
            key = None
            continue
        if not samples:
            continue
        address = _ADDRESS.match(line)
        if address:
            key = f"{address.group(1)}->{address.group(2)}"
            samples[-1].sockets.setdefault(key, {})
        fields = dict((name, int(value)) for name, value in _FIELD.findall(line))
        if fields and key is not None:
            samples[-1].sockets[key].update(fields)
    return samples


@dataclass(frozen=True)
class WindowReached:
    """What the data connections of a transfer reached, summed over them (bytes)."""

    samples: int  # listings with at least one data connection
    connections: int
    snd_wnd_max: int | None  # the largest advertised window seen (summed per listing)
    cwnd_max: int | None  # the largest congestion window, cwnd x mss
    inflight_max: int | None  # the most bytes in flight, unacked x mss

    def record(self, bdp_bytes: float) -> dict:
        """Columns of a results row: the figures and the advertised window in BDPs."""
        window = self.snd_wnd_max
        return {"ss_samples": self.samples, "ss_connections": self.connections,
                "snd_wnd_max": window, "cwnd_max": self.cwnd_max,
                "inflight_max": self.inflight_max,
                "window_bdps": window / bdp_bytes if window and bdp_bytes else float("nan")}


def window_reached(samples: list[Sample]) -> WindowReached:
    """The data connections' windows (module docstring): per listing the sum over them,
    then the largest listing."""
    sent: dict[str, int] = {}
    for sample in samples:
        for key, fields in sample.sockets.items():
            sent[key] = max(sent.get(key, 0), fields.get("bytes_sent", 0))
    busiest = max(sent.values(), default=0)
    data = {k for k, v in sent.items() if busiest and v >= CONTROL_SHARE * busiest}
    sums: dict[str, list[int]] = {"snd_wnd": [], "cwnd": [], "inflight": []}
    counted = 0
    for sample in samples:
        mine = [f for k, f in sample.sockets.items() if k in data]
        if not mine:
            continue
        counted += 1
        if all("snd_wnd" in f for f in mine):
            sums["snd_wnd"].append(sum(f["snd_wnd"] for f in mine))
        if all("cwnd" in f and "mss" in f for f in mine):
            sums["cwnd"].append(sum(f["cwnd"] * f["mss"] for f in mine))
        if all("mss" in f for f in mine):
            sums["inflight"].append(sum(f.get("unacked", 0) * f["mss"] for f in mine))
    return WindowReached(counted, len(data), max(sums["snd_wnd"], default=None),
                         max(sums["cwnd"], default=None), max(sums["inflight"], default=None))

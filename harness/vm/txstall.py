"""A VM wire's stalled transmit queue, read from the guest's console log.

QEMU's virtio-net can stop taking a guest's transmitted frames for good (a known QEMU
bug: gitlab.com/qemu-project/qemu/-/issues/1365; coreos/fedora-coreos-tracker#1463). The
guest kernel's watchdog then prints, every ~5 s, on the serial console the harness keeps
(``console.log`` in the boot directory, :mod:`harness.vm.guest`)::

    [ 1334.841534] virtio_net virtio4 wire: NETDEV WATCHDOG: CPU: 0: transmit queue 0 timed out 5004 ms
    [ 1334.845200] virtio_net virtio4 wire: TX timeout on queue: 0, sq: output.0, ...

Seen in an S1 verdict run (2026-11-29): from uptime 1334 s to the end, the lab VM's wire
carried nothing, and the perftest client retried until its deadline (~19 min). Such a run
measures QEMU, not the system under test. :func:`find_tx_stall` reads when the stall began
and how long it lasted; the session (:mod:`harness.run.session`) looks when a measurement
fails, and names the stall in its one error and in run.json.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import asdict, dataclass, field

#: A wire whose TX queue has been stuck this long is lost: a command waiting on it is stopped
#: at once (:meth:`harness.vm.boot.VMNode._while_waiting`). The guest's watchdog reports at
#: 5 s; a healthy TCG wire, even at host load 7, never held a frame that long.
WIRE_STALL_FATAL_S = 30.0

_WATCHDOG_RE = re.compile(r"^\[\s*(?P<uptime>[0-9]+\.[0-9]+)\]\s+\S+\s+\S+\s+(?P<ifname>\S+):\s+"
                          r"NETDEV WATCHDOG:.*transmit queue (?P<queue>\d+) timed out "
                          r"(?P<ms>\d+) ms")
_TX_TIMEOUT_RE = re.compile(r"^\[\s*(?P<uptime>[0-9]+\.[0-9]+)\]\s+\S+\s+\S+\s+(?P<ifname>\S+):\s+"
                            r"TX timeout on queue: (?P<queue>\d+),.*?(?P<us>\d+) usecs ago")


@dataclass(frozen=True)
class TxStall:
    """One stall of a guest interface's transmit queue, as its console tells it.

    ``began_uptime_s``: guest uptime when the queue stopped (the first report's uptime less
    the time it says the queue had been stuck); ``last_report_uptime_s``: the last report's
    uptime; ``lasted_s``: how long the queue had been stuck at that last report (a lower
    bound when the stall never ended); ``reports``: watchdog / TX timeout lines read."""

    ifname: str
    queue: int
    began_uptime_s: float
    first_report_uptime_s: float
    last_report_uptime_s: float
    lasted_s: float
    reports: int

    def to_dict(self) -> dict:
        return asdict(self)


def _reports(text: str, ifname: str) -> list[tuple[float, int, float]]:
    """(uptime, queue, seconds stuck) of every watchdog or TX timeout line of ``ifname``."""
    out = []
    for line in text.replace("\r", "").splitlines():
        match = _WATCHDOG_RE.match(line) or _TX_TIMEOUT_RE.match(line)
        if match is None or match["ifname"] != ifname:
            continue
        stuck = int(match["ms"]) / 1e3 if "ms" in match.groupdict() else int(match["us"]) / 1e6
        out.append((float(match["uptime"]), int(match["queue"]), stuck))
    return out


def _groups(reports: list[tuple[float, int, float]]) -> list[list[tuple[float, int, float]]]:
    """``reports`` cut into stalls, in order; a queue whose stuck time falls back (the
    watchdog's count restarts) starts a new stall. A report joins the last stall or starts
    one by that stall's last report alone, so the last stall's reports are all it takes to
    go on (what :class:`_ConsoleTail` keeps)."""
    groups: list[list[tuple[float, int, float]]] = []
    for report in reports:
        current = groups[-1] if groups else None
        if current and current[-1][1] == report[1] and report[2] >= current[-1][2] - 1.0:
            current.append(report)
        else:
            groups.append([report])
    return groups


def _stall(ifname: str, group: list[tuple[float, int, float]]) -> TxStall:
    return TxStall(ifname=ifname, queue=group[0][1],
                   began_uptime_s=round(group[0][0] - group[0][2], 3),
                   first_report_uptime_s=group[0][0], last_report_uptime_s=group[-1][0],
                   lasted_s=round(max(stuck for _u, _q, stuck in group), 3),
                   reports=len(group))


def find_tx_stalls(text: str, ifname: str) -> list[TxStall]:
    """Every TX stall of ``ifname`` in a console's ``text``, in order; a queue whose stuck
    time falls back (the watchdog's count restarts) starts a new stall."""
    return [_stall(ifname, group) for group in _groups(_reports(text, ifname))]


def find_tx_stall(text: str, ifname: str) -> TxStall | None:
    """The last TX stall of ``ifname`` in a console's ``text``, or None when it has none."""
    stalls = find_tx_stalls(text, ifname)
    return stalls[-1] if stalls else None


def read_tx_stall(console_log: str, ifname: str) -> TxStall | None:
    """:func:`find_tx_stall` of a console log file; None when the file is not there (the VM
    is gone, its boot directory removed)."""
    try:
        with open(console_log, encoding="utf-8", errors="replace") as fh:
            return find_tx_stall(fh.read(), ifname)
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class WiredConsole:
    """A lab VM's console log and the names of its wire interfaces in the guest; its QMP
    socket and its wire NICs' MACs, for QEMU's view of a stalled queue (:mod:`.queues`)."""

    vm: str
    console_log: str
    ifnames: tuple[str, ...]
    qmp_socket: str = ""
    macs: tuple[str, ...] = ()


def _text(data: bytes) -> str:
    """``data`` as :func:`open`'s text mode reads it (UTF-8, bad bytes replaced, universal
    newlines), so that a console read a piece at a time says what the whole file says."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


@dataclass
class _ConsoleTail:
    """A console log read a piece at a time: each :meth:`read` takes only the bytes written
    since the last one. :class:`WireWatch` reads every 5 s while a command waits; read
    whole each time, a long run's console would be read again and again for nothing.

    The last line lacks its newline while the guest is still writing it: its bytes are kept
    (``partial``) until the newline comes, and counted meanwhile as they stand, as a read of
    the whole file would count them. A file that shrank, or another file at the same path
    (a new inode), is read from its start again; a file that is gone has said nothing."""

    console: WiredConsole
    identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the file read so far
    offset: int = 0  # bytes read so far
    partial: bytes = b""  # the last line's bytes, until its newline comes
    reports: dict[str, list] = field(default_factory=dict)  # ifname -> its last stall's reports

    def read(self) -> bool:
        """Take in what the console says since the last read; False when it is not there."""
        try:
            with open(self.console.console_log, "rb") as fh:
                st = os.fstat(fh.fileno())
                if (st.st_dev, st.st_ino) != self.identity or st.st_size < self.offset:
                    self._restart((st.st_dev, st.st_ino))
                fh.seek(self.offset)
                new = fh.read()
        except FileNotFoundError:  # the VM is gone, its boot directory removed
            self._restart(None)
            return False
        self.offset += len(new)
        data = self.partial + new
        cut = data.rfind(b"\n") + 1
        self.partial = data[cut:]
        if cut:
            text = _text(data[:cut])
            for ifname in self.console.ifnames:
                groups = _groups(self.reports.get(ifname, []) + _reports(text, ifname))
                self.reports[ifname] = groups[-1] if groups else []
        return True

    def _restart(self, identity: tuple[int, int] | None) -> None:
        self.identity, self.offset, self.partial, self.reports = identity, 0, b"", {}

    def stall(self, ifname: str) -> TxStall | None:
        """The last stall of ``ifname`` in what was read, the unfinished last line too."""
        reports = self.reports.get(ifname, [])
        if self.partial:
            reports = reports + _reports(_text(self.partial), ifname)
        groups = _groups(reports)
        return _stall(ifname, groups[-1]) if groups else None


def _first_stalled(tails: list[_ConsoleTail], at_least_s: float) -> tuple[str, TxStall] | None:
    for tail in tails:
        if not tail.read():
            continue
        for ifname in tail.console.ifnames:
            stall = tail.stall(ifname)
            if stall is not None and stall.lasted_s >= at_least_s:
                return tail.console.vm, stall
    return None


def stalled_wire(consoles: list[WiredConsole],
                 at_least_s: float = 0.0) -> tuple[str, TxStall] | None:
    """(VM name, stall) of the first wire of ``consoles`` whose TX queue stalled (its last
    stall stuck ``at_least_s`` or longer), or None. Each console is read once, whole, for
    all of its wires."""
    return _first_stalled([_ConsoleTail(console) for console in consoles], at_least_s)


@dataclass
class WireWatch:
    """The wires of one lab, shared by its VM nodes: :meth:`fired` tells the first of them
    to wait on a command while a wire is lost, once; the run then unwinds (its teardown's
    commands run on undisturbed). Each check reads only what the consoles said since the
    last one (:class:`_ConsoleTail`); the VMs' commands may wait at the same time (a group
    run's threads), so one check runs at a time."""

    consoles: tuple[WiredConsole, ...]
    at_least_s: float = WIRE_STALL_FATAL_S
    found: tuple[str, TxStall] | None = None
    _tails: list[_ConsoleTail] = field(default_factory=list, init=False, repr=False,
                                       compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False,
                                  compare=False)

    def __post_init__(self) -> None:
        self._tails = [_ConsoleTail(console) for console in self.consoles]

    def fired(self) -> tuple[str, TxStall] | None:
        """(VM name, stall) the first time a wire has stalled ``at_least_s``; else None."""
        with self._lock:
            if self.found is not None:
                return None
            self.found = _first_stalled(self._tails, self.at_least_s)
            return self.found

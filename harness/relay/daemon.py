"""Start the relay daemon on a node, tracked by the journal, and know when it listens.

``start_relay`` validates the spec, compiles the daemon if needed, starts it
through ``journal.start`` (so a crash of the harness still leaves a journal entry
that stops it), and waits for its ``event=listening`` line: after that the port
accepts connections. If the daemon exits first (port in use, bad address), its
own error message is raised as :class:`RelayStartError`.

Stopping sends SIGTERM to the daemon alone, not to the wrapping shells, so its
real exit status (0 on a clean shutdown) reaches the caller.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import HarnessError
from ..journal.journal import Journal
from ..nodes.base import Node, Process
from ..nodes.procfs import PROC_STAT_SH, parse_stat
from .build import build_on
from .events import RelayEvent, error_lines, parse_events
from .spec import RelaySpec

READY_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


class RelayStartError(HarnessError):
    """The daemon exited, or never listened, when it was started."""


@dataclass
class RelayHandle:
    """A running relay. ``events()`` reads its log; ``stop()`` ends it and returns its status."""

    spec: RelaySpec
    node: Node
    journal: Journal
    process: Process
    pid: int
    start_ticks: int
    binary: str
    exit_status: int | None = None
    final_output: str | None = field(default=None, repr=False)

    @property
    def listen(self) -> str:
        return str(self.spec.listen)

    def running(self) -> bool:
        return self.exit_status is None and self.process.poll() is None

    def output(self) -> str:
        """The daemon's stderr (start/exit lines, errors; all events when no log_path)."""
        if self.final_output is not None:
            return self.final_output
        return self.process.output()

    def log_text(self) -> str:
        """All event lines: the log file if the spec names one, else the process output."""
        if self.spec.log_path:
            result = self.node.run(["cat", self.spec.log_path], check=False, timeout=30)
            return result.stdout
        return self.output()

    def events(self, name: str | None = None) -> list[RelayEvent]:
        found = parse_events(self.log_text())
        return [e for e in found if name is None or e.name == name]

    def rss_bytes(self) -> int:
        """Resident set size of the daemon now (VmRSS)."""
        status = self.node.read_text(f"/proc/{self.pid}/status")
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise HarnessError(f"no VmRSS for relay pid {self.pid}", "is the relay still running?")

    def signal(self, name: str = "TERM") -> bool:
        """Send a signal to the daemon itself if it is still the process we started."""
        # Compare start time (field 22 of /proc/PID/stat) so a reused PID is never signalled.
        check = (
            f"{PROC_STAT_SH}proc_stat {self.pid} && [ \"$proc_start\" = {self.start_ticks} ]"
            f" || exit 1\nkill -{shlex.quote(name)} {self.pid}"
        )
        return self.node.run(check, check=False, timeout=30).ok

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM the daemon, wait for it, return its exit status (0 = clean). Safe to repeat.

        If it does not exit within ``timeout`` the journal kills its process
        group and the status is None.
        """
        if self.final_output is not None:
            return self.exit_status
        status: int | None = None
        try:
            if self.process.poll() is None:
                self.signal("TERM")
            try:
                status = self.process.wait(timeout)
            except HarnessError:
                status = None
        finally:
            self.final_output = self.process.output()
            self.journal.stop(self.process)
            self.exit_status = status
        return status


def _listening(output: str) -> RelayEvent | None:
    for event in parse_events(output):
        if event.name == "listening":
            return event
    return None


def start_relay(
    journal: Journal, node: Node, spec: RelaySpec, *, ready_timeout: float = READY_TIMEOUT
) -> RelayHandle:
    """Start a relay on ``node`` and return once it accepts connections.

    Raises SpecError (bad spec, before anything starts), CapabilityMissing (no
    compiler), BuildFailed, or RelayStartError (the daemon refused to start or
    did not listen within ``ready_timeout`` seconds; it is stopped then).
    """
    spec.validate()
    binary = build_on(node)
    argv = spec.argv(binary)
    # exec: the daemon replaces the shell, so the journal's process *is* the daemon
    # (for local nodes) and its exit status is the daemon's.
    proc = journal.start(node, "exec " + shlex.join(argv))
    deadline = time.monotonic() + ready_timeout
    try:
        while True:
            output = proc.output()
            ready = _listening(output)
            if ready is not None:
                pid = int(ready.fields["pid"])
                ticks = _start_ticks(node, pid)
                return RelayHandle(spec, node, journal, proc, pid, ticks, binary)
            status = proc.poll()
            if status is not None:
                output = proc.output()
                errors = error_lines(output) or [output.strip() or "(no output)"]
                raise RelayStartError(
                    f"relay on {node.name} ({spec.listen} -> {spec.target}) exited with status"
                    f" {status} at start: {'; '.join(errors)}",
                    _start_hint(errors[0]),
                )
            if time.monotonic() >= deadline:
                raise RelayStartError(
                    f"relay on {node.name} did not report listening on {spec.listen} within"
                    f" {ready_timeout:g}s; output so far: {output.strip()[-500:] or '(none)'}",
                    "the node may be overloaded; raise ready_timeout or check the output above",
                )
            time.sleep(0.01)
    except BaseException:
        journal.stop(proc)
        raise


def _start_hint(message: str) -> str:
    if "already listens" in message or "Address already in use" in message:
        return ("another process holds that port on the node: choose a free port in the spec,"
                " or stop the other process (`ss -ltnp` on the node shows it)")
    if "Cannot assign requested address" in message:
        return "listen on 0.0.0.0, :: or an address that the node really has (`ip addr`)"
    if "resolve" in message:
        return "use an IP address for the target, or a name the node can resolve"
    return "see the daemon's message above"


def _start_ticks(node: Node, pid: int) -> int:
    return parse_stat(node.read_text(f"/proc/{pid}/stat")).start_ticks


@contextmanager
def running_relay(
    journal: Journal, node: Node, spec: RelaySpec, *, ready_timeout: float = READY_TIMEOUT
) -> Iterator[RelayHandle]:
    """``start_relay`` as a context manager: the relay is stopped on exit, also on error."""
    handle = start_relay(journal, node, spec, ready_timeout=ready_timeout)
    try:
        yield handle
    finally:
        handle.stop()

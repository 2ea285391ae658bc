"""Exceptions the harness raises: each says what is wrong and how to fix it."""

from __future__ import annotations


class HarnessError(Exception):
    """Base class. ``hint`` tells the user what to do about it."""

    def __init__(self, message: str, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n  how to fix: {hint}")


class SpecError(HarnessError):
    """Invalid input, found before anything changes: a spec, topology, parameter, inventory,
    sweep file or configuration operation that cannot be done as asked."""


class CapabilityMissing(HarnessError):
    """A node lacks a kernel feature or tool that the study needs."""


class CeilingTooLow(CapabilityMissing):
    """A VM lab measured a ceiling below the rates its topology registers as fixed
    (:attr:`harness.topology.topology.Topology.fixed_rates`): refused before any point is
    measured. ``record``: what was measured and needed, for run.json's placement."""

    def __init__(self, message: str, hint: str | None = None, record: dict | None = None):
        super().__init__(message, hint)
        self.record = dict(record or {})


class NodeError(HarnessError):
    """A node could not be reached or a transport failed."""


class WireStalled(NodeError):
    """A VM lab's wire stopped carrying frames: QEMU's virtio-net TX queue stalled
    (:mod:`harness.vm.txstall`), not the system under test. ``record``: the stall, for
    run.json's ``wire_stall``."""

    def __init__(self, vm: str, stall, cause: BaseException | None = None):
        self.record = {"vm": vm, **stall.to_dict(),
                       "cause": None if cause is None else f"{type(cause).__name__}: {cause}"}
        super().__init__(
            f"VM {vm}: the transmit queue of its wire {stall.ifname!r} stalled at guest uptime "
            f"{stall.began_uptime_s:.0f}s and stayed stuck at least {stall.lasted_s:.0f}s "
            f"({stall.reports} NETDEV WATCHDOG / TX timeout lines on its console): this is "
            "QEMU's virtio-net TX stall on the dgram wire (qemu-project/qemu#1365), not the "
            "system under test; a measurement over that wire measures nothing of it",
            "this run is incomplete and every change it made is undone (run.json's `wire_stall` "
            "keeps the stall): run it again")


class CommandFailed(HarnessError):
    """A command exited non-zero where success was required."""

    def __init__(self, result, hint: str | None = None):
        self.result = result
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        detail = "\n    ".join(tail) if tail else "(no output)"
        super().__init__(
            f"on {result.node}: `{result.command}` exited with status {result.exit_status}"
            f" after {result.duration:.2f}s:\n    {detail}",
            hint,
        )


class CommandTimeout(HarnessError):
    """A command ran past its timeout and was killed."""


class ArchiveError(HarnessError):
    """An archived run would be overwritten or is malformed, or its disk refused a write."""


def write_failed(path, exc: OSError) -> ArchiveError:
    """One clear error for a failed write to the archive (a full disk above all)."""
    import errno

    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        what = f"the archive's disk is full: cannot write {path}"
    else:
        what = f"cannot write {path}: {exc.strerror or exc}"
    return ArchiveError(what, "free space on the data folder's file system (or point "
                        "HARNESS_DATA elsewhere) and run again; this run stays incomplete and "
                        "every change in its journal is undone on the way out")


class Interrupted(HarnessError):
    """The run was interrupted by a signal (SIGINT/SIGTERM)."""

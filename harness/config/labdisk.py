"""A lab disk (:class:`harness.topology.topology.DataDisk`) formatted and mounted on its machine.

One operation, :class:`LabDiskFs`: find the disk by its serial (``harness-<name>``,
read from ``/sys/block/*/serial``: the guest runs no udev, so there are no
``/dev/disk/by-id`` links), make a file system on it and mount it. Only a disk
the lab itself attached may be formatted: the serial must be a lab disk's, and a
device that is mounted or holds partitions is refused -- so the operation can
never format a disk that was there before. The undo unmounts it and removes the
mount point if this run made it; the disk itself goes with its VM (a sparse file
in the VM's per-boot directory).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..errors import SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import settle
from ..nodes import Node, Result
from .mounts import not_made
from .operation import UNKNOWN, Change, Fact, Operation

FSTYPES = ("ext4", "xfs")
_SERIAL_PREFIX = "harness-"


@dataclass(frozen=True)
class DiskState:
    device: str  # "/dev/vdb", "" when no disk has the serial
    mounted_at: tuple[str, ...]  # where the device is mounted now
    holders: int  # partitions or device-mapper users
    mountpoint_used: bool  # something is mounted on the mount point already
    mountpoint_exists: bool


def _probe(serial: str, mountpoint: str) -> str:
    s, m = shlex.quote(serial), shlex.quote(mountpoint)
    return (f'for d in /sys/block/*; do [ "$(cat $d/serial 2>/dev/null)" = {s} ] && '
            'echo "@dev /dev/${d##*/} $(ls $d | grep -c "^${d##*/}") $(ls $d/holders | wc -l)"; '
            f'done; echo @mounts; cat /proc/mounts; [ -d {m} ] && echo @exists; true')


def parse_disk_state(node: str, serial: str, mountpoint: str, res: Result) -> DiskState:
    device, holders = "", 0
    mounts: list[tuple[str, str]] = []
    section = ""
    for line in res.stdout.splitlines():
        if line.startswith("@dev "):
            _, device, parts, users = line.split()
            holders = int(parts) + int(users)
        elif line == "@mounts":
            section = "mounts"
        elif line == "@exists":
            section = "exists"
        elif section == "mounts" and len(line.split()) >= 2:
            mounts.append((line.split()[0], line.split()[1]))
    if not device:
        raise SpecError(f"{node}: no disk with serial {serial}",
                        "the lab attaches it when it boots the VM (DataDisk in the topology); "
                        "on real machines, give an existing file system instead")
    return DiskState(device, tuple(m for d, m in mounts if d == device), holders,
                     any(m == mountpoint for _d, m in mounts), "@exists" in res.stdout)


@dataclass
class LabDiskFs(Operation):
    """The lab disk ``serial`` on ``node`` with a fresh ``fstype`` mounted at ``mountpoint``."""

    node: Node
    serial: str
    mountpoint: str
    fstype: str = "ext4"

    def check(self) -> None:
        if not self.serial.startswith(_SERIAL_PREFIX) or not self.serial[len(_SERIAL_PREFIX):]:
            raise SpecError(f"disk serial {self.serial!r} is not a lab disk's",
                            f"only disks the lab attached ({_SERIAL_PREFIX}<name>) are formatted")
        if self.fstype not in FSTYPES:
            raise SpecError(f"file system type {self.fstype!r} is not supported",
                            f"use one of {', '.join(FSTYPES)}")
        if not self.mountpoint.startswith("/run/") or ".." in self.mountpoint.split("/"):
            raise SpecError(f"mount point {self.mountpoint!r} is not under /run",
                            "lab mounts live on the machine's tmpfs /run, gone with it")

    def facts(self) -> dict[str, Fact]:
        return {"disk": Fact(self.node, _probe(self.serial, self.mountpoint),
                             lambda res: parse_disk_state(self.node.name, self.serial,
                                                          self.mountpoint, res))}

    def diff(self, facts: dict) -> list[Change]:
        state = facts["disk"]
        after = f"{self.fstype} on lab disk {self.serial}, mounted"
        if state is UNKNOWN:
            return [Change(self.node, "lab-disk", self.mountpoint, UNKNOWN, after,
                           command=self.command("/dev/<disk>", False),
                           undo={"mountpoint": self.mountpoint, "made": True})]
        if state.mounted_at or state.holders or state.mountpoint_used:
            raise SpecError(f"{self.node.name}: disk {self.serial} ({state.device}) or mount "
                            f"point {self.mountpoint} is in use (mounted at "
                            f"{', '.join(state.mounted_at) or '-'}, {state.holders} holders)",
                            "it was not set up by this run: a lab disk is formatted only fresh")
        if state.mountpoint_exists:
            raise SpecError(f"{self.node.name}: mount point {self.mountpoint} exists already",
                            "the harness mounts a lab disk only on a folder it makes (and "
                            "removes after): remove it if it is left from an earlier run, or "
                            "give another path")
        return [Change(self.node, "lab-disk", self.mountpoint, "unformatted", after,
                       command=self.command(state.device, False),
                       undo={"mountpoint": self.mountpoint, "made": True})]

    def command(self, device: str, exists: bool) -> str:
        """Make the mount point (its parents as needed; it itself fails if it exists, so the
        record's ``made`` is never a lie), format, mount."""
        dev, m = shlex.quote(device), shlex.quote(self.mountpoint)
        parent = shlex.quote(self.mountpoint.rsplit("/", 1)[0] or "/")
        mkfs = (f"mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 {dev}"
                if self.fstype == "ext4" else f"mkfs.xfs -q -f {dev}")
        return " && ".join(([] if exists else [f"mkdir -p {parent}", f"mkdir {m}"])
                           + [mkfs, f"mount {dev} {m}"])


@undo_handler("lab-disk", gone_with_namespace=False)
def _unmount(node: Node, data: dict) -> None:
    """Unmount the lab disk and remove its mount point: only one the record says the harness
    made (issue 37; a record of before 2026-11-28 on a mount point that existed says
    ``made: false`` and is refused, saying how to clean by hand)."""
    path = undo_checks.clean_path("lab-disk", data.get("mountpoint"), "mountpoint")
    m = shlex.quote(path)
    if data.get("made") is not True:
        raise not_made("lab-disk", path, f"umount {m} if it holds the run's lab disk")
    mounted = f"awk -v m={m} '$2 == m {{f = 1}} END {{exit !f}}' /proc/mounts"
    settle(node, act=f"if {mounted}; then umount {m}; fi && if [ -d {m} ]; then rmdir {m}; fi",
           look=f"! {mounted} && [ ! -d {m} ]", what=f"lab disk mount {path} on {node.name}",
           finish=f"umount {m}; rmdir {m}", wait=5.0, timeout=60)

"""What a VM node is made of, and the host-side checks done before one boots.

Everything here is cheap and side-effect free: it runs before any process or
file is created, so bad input fails with a clear message and nothing to undo.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from dataclasses import dataclass

from ..errors import CapabilityMissing, SpecError
from ..topology.topology import DataDisk
from .wirekind import WireKind

#: Memory QEMU itself needs beyond the guest RAM: the process (~100 MiB) plus
#: the TCG translation cache, which we bound with ``tb-size`` (see qemu.py).
QEMU_OVERHEAD_MIB = 384

_KERNEL_PKG_HINT = (
    "install Debian's stock kernel for the guest: `apt-get install linux-image-amd64` "
    "(it provides /boot/vmlinuz-<ver> and the matching /lib/modules/<ver>)"
)


@dataclass(frozen=True)
class Wire:
    """A lab NIC of a VM, cabled straight to a NIC of another VM.

    QEMU's ``dgram`` netdev sends each Ethernet frame as one UDP datagram from
    ``127.0.0.1:local_port`` to ``127.0.0.1:remote_port``, where the peer VM's
    NIC listens: loopback only, no tap device, no bridge, no host route. The
    guest finds the NIC by ``mac``; a lab moves it into a namespace.

    ``kind`` (:mod:`.wirekind`) may carry the frames over TCP instead (``stream``): the
    side with ``listen`` listens on ``127.0.0.1:local_port``, the other connects to
    ``127.0.0.1:remote_port`` (the same port).
    """

    mac: str
    local_port: int
    remote_port: int
    kind: WireKind = WireKind()
    listen: bool = False  # stream only: this side's QEMU is the server

    def validate(self, vm: str) -> None:
        self.kind.validate()
        if not re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", self.mac) \
                or int(self.mac[:2], 16) & 1:
            raise SpecError(f"VM {vm}: wire MAC {self.mac!r} is not a unicast MAC address",
                            "use lower-case hex like 52:54:00:5e:00:01")
        for port in (self.local_port, self.remote_port):
            if not 1024 <= port <= 65535:
                raise SpecError(f"VM {vm}: wire port {port} is out of range", "use 1024..65535")


@dataclass(frozen=True)
class VM:
    """A VM node to boot.

    ``kernel`` is a path to a ``vmlinuz-<version>`` whose modules live in
    ``/lib/modules/<version>`` of this host (the guest shares the host root file
    system); empty means the newest such kernel in /boot.
    ``boot_timeout_s`` bounds the time from starting QEMU to a working SSH login.
    ``root_cache`` is the guest's 9p cache mode for the shared host root:
    ``loose`` (default) keeps file data and metadata in the guest page cache,
    several times faster under TCG, but a file changed on the host while the VM
    runs may be seen stale in the guest; ``none`` always reads through.
    """

    name: str = "vm"
    cpus: int = 2
    memory_mib: int = 2048
    kernel: str = ""
    boot_timeout_s: float = 90.0
    root_cache: str = "loose"
    wires: tuple[Wire, ...] = ()
    disks: tuple[DataDisk, ...] = ()  # emulated disks, rates capped by QEMU (see qemu.py)
    kernel_args: tuple[str, ...] = ()  # appended to the guest's command line (maxcpus=1)
    qmp: bool = False  # a QMP socket even without disks: a stalled wire's queues (queues.py)

    def validate(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", self.name):
            raise SpecError(
                f"VM name {self.name!r} is not a valid host name",
                "use letters, digits, '-', '_' or '.', at most 63 characters",
            )
        if not 1 <= self.cpus <= 64:
            raise SpecError(f"VM {self.name}: cpus={self.cpus} is out of range", "use 1..64")
        if not 256 <= self.memory_mib <= 1 << 20:
            raise SpecError(
                f"VM {self.name}: memory_mib={self.memory_mib} is out of range",
                "a stock Debian kernel with the host root over 9p needs at least 256 MiB; "
                "512-2048 is typical",
            )
        if self.root_cache not in ("loose", "mmap", "none"):
            raise SpecError(
                f"VM {self.name}: root_cache={self.root_cache!r} is not a 9p cache mode",
                "use 'loose' (fast, may see host edits late), 'mmap' or 'none' (always current)",
            )
        for wire in self.wires:
            wire.validate(self.name)
        for disk in self.disks:
            disk.validate(self.name)
        if len({d.name for d in self.disks}) != len(self.disks):
            raise SpecError(f"VM {self.name}: two disks share a name", "name each disk once")
        if len({w.mac for w in self.wires}) != len(self.wires):
            raise SpecError(f"VM {self.name}: two wires share a MAC address",
                            "give every wire NIC its own MAC")
        if not self.boot_timeout_s > 0:
            raise SpecError(
                f"VM {self.name}: boot_timeout_s={self.boot_timeout_s} must be positive",
                "TCG boots take 10-30 s on a busy 2-core machine; 90 is a safe bound",
            )


def kernel_version(kernel: str) -> str:
    """``/boot/vmlinuz-6.1.0-56-amd64`` -> ``6.1.0-56-amd64`` (Debian's naming)."""
    base = os.path.basename(kernel)
    if not base.startswith("vmlinuz-"):
        raise SpecError(
            f"cannot tell the version of kernel {kernel!r}",
            "point VM.kernel at a Debian kernel image named /boot/vmlinuz-<version>",
        )
    return base[len("vmlinuz-"):]


def _version_key(version: str) -> list:
    return [int(p) if p.isdigit() else p for p in re.split(r"[.-]", version)]


def resolve_kernel(kernel: str = "") -> tuple[str, str]:
    """Return (kernel path, version), checking the modules for it are installed.

    The guest loads modules (tipc, sctp, sch_netem, rdma_rxe, virtio_net, ...)
    from the shared host root, so ``/lib/modules/<version>`` must match the
    booted kernel exactly.
    """
    if not kernel:
        found = [
            k for k in glob.glob("/boot/vmlinuz-*")
            if os.path.isdir(f"/lib/modules/{kernel_version(k)}")
        ]
        if not found:
            raise CapabilityMissing("no kernel for VM nodes in /boot", _KERNEL_PKG_HINT)
        kernel = max(found, key=lambda k: _version_key(kernel_version(k)))
    if not os.path.isfile(kernel):
        raise CapabilityMissing(f"kernel image {kernel} does not exist", _KERNEL_PKG_HINT)
    if not os.access(kernel, os.R_OK):
        raise CapabilityMissing(
            f"kernel image {kernel} is not readable", "run as root (Debian's vmlinuz is mode 0600)"
        )
    version = kernel_version(kernel)
    if not os.path.isdir(f"/lib/modules/{version}"):
        raise CapabilityMissing(
            f"kernel {kernel} has no modules in /lib/modules/{version}", _KERNEL_PKG_HINT
        )
    return kernel, version


#: Host programs a VM boot needs, with the Debian package that provides each.
REQUIRED_PROGRAMS = {
    "qemu-system-x86_64": "qemu-system-x86",
    "ssh-keygen": "openssh-client",
    "busybox": "busybox-static",
}
GUEST_SSHD = "/usr/sbin/sshd"


def require_programs() -> dict[str, str]:
    """Paths of the host programs a boot needs; CapabilityMissing names the package."""
    paths = {}
    for program, package in REQUIRED_PROGRAMS.items():
        path = shutil.which(program)
        if path is None:
            raise CapabilityMissing(
                f"`{program}` is not installed (needed to boot VM nodes)",
                f"apt-get install {package}",
            )
        paths[program] = path
    if not os.access(GUEST_SSHD, os.X_OK):
        raise CapabilityMissing(
            f"{GUEST_SSHD} is missing: the guest runs the host's sshd from the shared root",
            "apt-get install openssh-server (its service need not run on the host)",
        )
    return paths


def mem_available_mib(meminfo: str = "/proc/meminfo") -> int:
    with open(meminfo) as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    raise CapabilityMissing(f"{meminfo} has no MemAvailable line", "use a Linux kernel >= 3.14")


def require_memory(spec: VM, meminfo: str = "/proc/meminfo") -> int:
    """Refuse to start a VM whose RAM (+ QEMU overhead) exceeds MemAvailable."""
    need = spec.memory_mib + QEMU_OVERHEAD_MIB
    have = mem_available_mib(meminfo)
    if have < need:
        raise CapabilityMissing(
            f"VM {spec.name} needs {need} MiB ({spec.memory_mib} guest + {QEMU_OVERHEAD_MIB} "
            f"QEMU) but only {have} MiB are available on this host",
            f"lower VM.memory_mib to at most {max(have - QEMU_OVERHEAD_MIB, 0)} "
            "or stop other VMs/programs first",
        )
    return have

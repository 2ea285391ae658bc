"""The QEMU command line of a VM node, built here so every device is deliberate.

Why drive ``qemu-system-x86_64`` directly instead of ``vng``: vng is a chain
of processes (vng -> sh -> virtme-run -> fork -> qemu), probes for virtiofsd
with its own temp files, and wires the guest console to its own terminal. We
need one process whose pid the journal records and kills, a network device
that only forwards a loopback port, and no helper that outlives an error. So
we borrow one piece of virtme-ng, its initramfs builder (busybox plus the 9p
modules; it mounts the host root and switches to our init, see guest.py),
and nothing of its runtime.

Devices:

* q35 without SATA/SMBus/USB/vmport: fewer devices for the guest to probe.
* the host root as a *read-only* 9p export (``readonly=on``: the guest cannot
  change the host however it is configured), twice: ``/dev/root`` for the
  initramfs (cache=none) and ``rootc``, which our init remounts with the guest
  page cache on (a 9p export serves one mount at a time), and the per-boot
  directory (keys, sshd config) as a third read-only export at /run/harness.
* user-mode networking (slirp) with ``restrict=on``: the guest can reach
  nothing outside the VM, and the only way in is a forward of one port on
  127.0.0.1 to guest port 22. No tap device, no bridge, no host routes.
* optional lab NICs ("wires", see machine.Wire): virtio-net devices on QEMU's
  ``dgram`` netdev, each sending its frames as UDP datagrams between two
  loopback ports -- straight to the NIC of a peer VM (or, by choice, over one
  loopback TCP connection: wirekind.py).
* the serial console goes to a file in the per-boot directory (boot
  diagnostics for error messages).
"""

from __future__ import annotations

import shlex
import socket
from dataclasses import dataclass

from .wirekind import device_arg, netdev_arg

#: Address slirp gives the guest; the guest init configures it statically
#: (no DHCP client needed) and the hostfwd rule targets it.
GUEST_ADDR = "10.0.2.15"
GUEST_PREFIX = 24
#: MAC of the management NIC (the slirp one); the guest init finds it by this.
MANAGEMENT_MAC = "52:54:00:12:34:56"

#: Bound on TCG's translation cache (MiB). QEMU's default reserves 1 GiB per
#: VM; 256 is plenty for a kernel plus a few user-space tools.
TCG_TB_SIZE_MIB = 256


@dataclass(frozen=True)
class QemuLaunch:
    qemu: str
    name: str
    accel: str  # "kvm" | "tcg"
    cpus: int
    memory_mib: int
    kernel: str
    initrd: str
    append: str
    boot_dir: str
    console_log: str
    ssh_port: int
    wires: tuple = ()  # machine.Wire
    disks: tuple = ()  # (topology.DataDisk, backing file path)
    qmp_socket: str = ""  # QEMU's machine protocol (QMP) on a Unix socket: disk rates


def disk_args(disks) -> list[str]:
    """A virtio disk per ``(DataDisk, path)``: a sparse raw file, its rates capped by QEMU's
    block throttling (``throttling.bps-read``/``-write``, bytes/s; changed at run time over
    QMP by :func:`harness.vm.qmp.set_disk_rates`). The guest finds it by its serial."""
    args: list[str] = []
    for i, (disk, path) in enumerate(disks):
        limits = "".join(f",throttling.bps-{what}={int(rate * 1e6)}" for what, rate in
                         (("read", disk.read_mbyte_s), ("write", disk.write_mbyte_s))
                         if rate is not None)
        args += ["-drive", f"file={path},if=none,id=disk{i},format=raw,cache=writeback,"
                           f"aio=threads,discard=unmap{limits}",
                 "-device", f"virtio-blk-pci,drive=disk{i},id=vdisk{i},serial={disk.serial}"]
    return args


def accel_args(accel: str) -> list[str]:
    if accel == "kvm":
        return ["-accel", "kvm", "-cpu", "host"]
    if accel == "tcg":
        # "-cpu max" under TCG: the static busybox of the initramfs aborted
        # with some reduced CPU models (seen with max,-svm), so keep max.
        return ["-accel", f"tcg,tb-size={TCG_TB_SIZE_MIB}", "-cpu", "max"]
    raise ValueError(f"unknown accelerator {accel!r}")


def qemu_argv(launch: QemuLaunch) -> list[str]:
    """The full argv for one VM (no shell, no daemonising: the pid is QEMU's)."""
    return [
        launch.qemu,
        # debug-threads: each vCPU thread named "CPU n/TCG" (or /KVM), so it can be pinned
        "-name", f"harness-{launch.name},process=harness-vm-{launch.name},debug-threads=on",
        "-no-user-config", "-nodefaults", "-no-reboot",
        "-machine", "q35,sata=off,smbus=off,usb=off,vmport=off",
        *accel_args(launch.accel),
        "-smp", str(launch.cpus),
        "-m", f"{launch.memory_mib}M",
        "-display", "none", "-vga", "none", "-monitor", "none", "-parallel", "none",
        "-chardev", f"file,id=con0,path={launch.console_log}",
        "-serial", "chardev:con0",
        "-fsdev", "local,id=root0,path=/,security_model=none,readonly=on,multidevs=remap",
        "-device", "virtio-9p-pci,fsdev=root0,mount_tag=/dev/root",
        "-fsdev", "local,id=root1,path=/,security_model=none,readonly=on,multidevs=remap",
        "-device", "virtio-9p-pci,fsdev=root1,mount_tag=rootc",
        "-fsdev", f"local,id=boot0,path={launch.boot_dir},security_model=none,readonly=on",
        "-device", "virtio-9p-pci,fsdev=boot0,mount_tag=harness",
        "-netdev",
        f"user,id=net0,restrict=on,ipv6=off,"
        f"hostfwd=tcp:127.0.0.1:{launch.ssh_port}-{GUEST_ADDR}:22",
        "-device", f"virtio-net-pci,netdev=net0,mac={MANAGEMENT_MAC},romfile=",
        *wire_args(launch.wires),
        *disk_args(launch.disks),
        *(["-qmp", f"unix:{launch.qmp_socket},server=on,wait=off"] if launch.qmp_socket else []),
        "-kernel", launch.kernel,
        "-initrd", launch.initrd,
        "-append", launch.append,
    ]


def wire_args(wires) -> list[str]:
    """A netdev and a virtio NIC per wire, as its kind says (:mod:`.wirekind`)."""
    args: list[str] = []
    for i, wire in enumerate(wires):
        args += ["-netdev", netdev_arg(i, wire), "-device", device_arg(i, wire)]
    return args


def free_udp_ports(count: int) -> list[int]:
    """``count`` distinct UDP ports on 127.0.0.1 that are free right now."""
    socks, ports = [], []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            socks.append(sock)
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
    finally:
        for sock in socks:
            sock.close()
    return ports


def qemu_command(launch: QemuLaunch) -> str:
    """A shell line that *execs* QEMU, so the spawned pid is QEMU's own pid."""
    return "exec " + shlex.join(qemu_argv(launch))


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now.

    There is a window before QEMU binds it; the boot retries with a new port
    when QEMU reports that it could not set up the forward.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


HOSTFWD_FAILED = "Could not set up host forwarding rule"
